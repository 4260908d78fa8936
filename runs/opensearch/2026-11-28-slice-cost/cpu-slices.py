"""Node CPU per query when every query is sliced at degree 1 (FM's table never sends a helper, mode all), by slice count, against mode none."""
import argparse, importlib.util, json, os, sys, time
from pathlib import Path
spec = importlib.util.spec_from_file_location("osl", "/work/main/scripts/opensearch-live.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
a = argparse.Namespace(scratch="/tmp/tailor-opensearch-live", port=9250, heap="2g", cores=2,
                       tailor="/work/main/target/release/tailor", segments=16, corpus=None,
                       gcide_dir="/usr/share/dictd", tailor_data="/root/.cache/tailor", query_count=2000)
out = Path(sys.argv[5]); out.mkdir(parents=True, exist_ok=True)
qfile = "/root/.cache/tailor/queries-gcide-16seg-2000q-seed1-mix2.jsonl"
table = Path(sys.argv[1]); rps = float(sys.argv[2]); n = int(sys.argv[3]); rounds = int(sys.argv[4])
node_cp, _ = m.build_jvm(a)
node = m.Node(a, out, node_cp, table)
def node_pid():
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                c = open(f"/proc/{p}/cmdline", "rb").read()
            except OSError:
                continue
            if b"BenchNode" in c:
                return int(p)
pid = node_pid()
tick = os.sysconf("SC_CLK_TCK")
def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick
m.MODES["fm"] = ("all", True)
cells = [("none", 16), ("fm", 16), ("fm", 4), ("fm", 2), ("fm", 1)]
res = {c: [] for c in cells}
try:
    http = node.http
    m.index_corpus(http, Path(a.scratch) / "gcide.jsonl", 16)
    for mode, sl in cells:
        m.set_mode(http, mode, sl); m.load(a, out, qfile, 100, 500, 3, "warm")
    for r in range(rounds):
        order = cells if r % 2 == 0 else list(reversed(cells))
        for mode, sl in order:
            m.set_mode(http, mode, sl)
            c0 = cpu()
            s = m.load(a, out, qfile, rps, n, 20 + r, f"{mode}-{sl}")
            c1 = cpu()
            lat = s.get("latency_ms", {})
            res[(mode, sl)].append(((c1 - c0) / n * 1e3, lat.get("mean"), lat.get("p99")))
            print(r, mode, sl, "node CPU ms/query %.3f" % ((c1 - c0) / n * 1e3), "mean", lat.get("mean"), "p99", lat.get("p99"), flush=True)
finally:
    node.stop()
for k, v in res.items():
    print(k, "CPU ms/query", [round(x[0], 3) for x in v], "mean ms", [x[1] for x in v])

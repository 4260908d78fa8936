"""CPU per query of the node in each mode, at a fixed rate, interleaved: FM's own cost."""
import argparse, importlib.util, json, os, sys, time
from pathlib import Path
spec = importlib.util.spec_from_file_location("osl", "/work/main/scripts/opensearch-live.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
a = argparse.Namespace(scratch="/tmp/tailor-opensearch-live", port=9250, heap="2g", cores=2,
                       tailor="/work/main/target/release/tailor", segments=16, corpus=None,
                       gcide_dir="/usr/share/dictd", tailor_data="/root/.cache/tailor", query_count=2000)
out = Path("/tmp/cpu/out"); out.mkdir(parents=True, exist_ok=True)
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
res = {"none": [], "fm": [], "all": []}
try:
    http = node.http
    m.index_corpus(http, Path(a.scratch) / "gcide.jsonl", 16)
    m.MODES["fm"] = (os.environ.get("FM_SEARCH_MODE", "auto"), True)
    for mode in ("none", "fm", "all"):
        m.set_mode(http, mode, 16); m.load(a, out, qfile, 100, 500, 3, "warm")
    for r in range(rounds):
        for mode in (["none", "fm", "all"] if r % 2 == 0 else ["all", "fm", "none"]):
            m.set_mode(http, mode, 16)
            c0 = cpu()
            s = m.load(a, out, qfile, rps, n, 20 + r, mode)
            c1 = cpu()
            res[mode].append(((c1 - c0) / n * 1e3, s.get("latency_ms", s).get("mean") if isinstance(s.get("latency_ms", s), dict) else None))
            print(r, mode, "node CPU ms/query %.3f" % ((c1 - c0) / n * 1e3), flush=True)
finally:
    node.stop()
for k, v in res.items():
    xs = sorted(x[0] for x in v)
    print(k, "median CPU ms/query %.3f" % xs[len(xs) // 2], [round(x, 3) for x in xs])

"""Each of the longest queries alone on an idle node, under modes none, all and FM in turn
(the order rotated per query and repeat), to see what speedup each parallel mode delivers when
nothing else runs. Paired per query; each time the median of --repeat sends.

    python3 probe.py TABLE OUT [--queries 60] [--repeat 3] [--fm-search-mode all] [--node-setting K=V]

TABLE is an FM table (the run's fm-table.json); the longest queries are read from the profile
beside it (profile-lucene.csv: row i is the file's i-th query)."""
import argparse, importlib.util, json, math, statistics, subprocess, time
from pathlib import Path

REPO = Path("/work/main")
spec = importlib.util.spec_from_file_location("osl", REPO / "scripts/opensearch-live.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
p = argparse.ArgumentParser()
p.add_argument("table"); p.add_argument("out")
p.add_argument("--queries", type=int, default=60); p.add_argument("--repeat", type=int, default=3)
p.add_argument("--fm-search-mode", default="all")
p.add_argument("--node-setting", action="append", default=[])
o = p.parse_args()
table = Path(o.table).resolve(); out = Path(o.out); out.mkdir(parents=True, exist_ok=True)
qfile = Path.home() / ".cache/tailor/queries-gcide-16seg-2000q-seed1-mix2.jsonl"
a = argparse.Namespace(scratch="/tmp/tailor-opensearch-live", port=9250, heap="2g", cores=2, fm_cores=None,
                       node_setting=o.node_setting, tailor=str(REPO / "target/release/tailor"), segments=16, corpus=None,
                       gcide_dir="/usr/share/dictd", tailor_data=str(Path.home() / ".cache/tailor"),
                       query_count=2000)
prof = [l.split(",") for l in (table.parent / "profile-lucene.csv").read_text().splitlines()[1:] if l.strip()]
t1 = {int(r[0][1:]) - 1: float(r[1]) for r in prof}
t2 = {int(r[0][1:]) - 1: float(r[2]) for r in prof}
longest = sorted(t1, key=lambda i: -t1[i])[:o.queries]
reqs = subprocess.run([a.tailor, "load", "--opensearch", "gcide", "--queries", str(qfile), "--print-requests"],
                      capture_output=True, text=True, check=True).stdout.splitlines()
bodies = {i: json.loads(reqs[i])["body"] for i in longest}
node_cp, _ = m.build_jvm(a)
node = m.Node(a, out, node_cp, table)
modes = ["none", "all", "fm"]
m.MODES["fm"] = (o.fm_search_mode, True)
rows = []
try:
    http = node.http
    m.index_corpus(http, Path(a.scratch) / "gcide.jsonl", 16)
    for mode in modes:  # warm-up, every mode
        m.set_mode(http, mode, 16)
        for i in longest:
            http.call("POST", "/gcide/_search?request_cache=false", bodies[i])
    for k, i in enumerate(longest):
        got = {md: [] for md in modes}
        fm = []
        for r in range(o.repeat):
            turn = modes[(k + r) % 3:] + modes[:(k + r) % 3]
            for md in turn:
                m.set_mode(http, md, 16)
                time.sleep(0.02)
                t0 = time.perf_counter()
                http.call("POST", "/gcide/_search?request_cache=false", bodies[i])
                got[md].append((time.perf_counter() - t0) * 1e3)
                if md == "fm":
                    rec = http.call("GET", "/_tailor/fm/stats?recent=1")["recent"]
                    fm.append((rec["run_us"][0], rec["degree"][0]))
        rows.append({"query": i, "t1_ms": t1[i], "t2_ms": t2[i], "kind": next(iter(bodies[i]["query"])),
                     **{f"{md}_ms": statistics.median(v) for md, v in got.items()},
                     "fm_run_us": statistics.median(x[0] for x in fm), "fm_degrees": [x[1] for x in fm]})
        print(json.dumps(rows[-1]), flush=True)
finally:
    node.stop()
(out / "rows.json").write_text(json.dumps(rows, indent=0))
g = lambda xs: math.exp(statistics.mean(math.log(x) for x in xs))
print(f"{len(rows)} queries alone, median of {o.repeat} each; geometric means of paired ratios:")
for x, y in (("all", "none"), ("fm", "none"), ("fm", "all")):
    print(f"  {x} / {y}: {g([r[f'{x}_ms'] / r[f'{y}_ms'] for r in rows]):.3f}")
print(f"  profile t2 / t1: {g([r['t2_ms'] / r['t1_ms'] for r in rows]):.3f}")
print(f"  none / profile t1: {g([r['none_ms'] / r['t1_ms'] for r in rows]):.3f}")
print(f"  FM at degree 2: {sum(d == 2 for r in rows for d in r['fm_degrees'])} of {sum(len(r['fm_degrees']) for r in rows)}")

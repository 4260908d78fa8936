"""Which queries miss degree 2 at low load: each query alone on the node (FM on, mode auto),
then FM's own record of it (GET /_tailor/fm/stats?recent=1), grouped by the query's kind.

    python3 probe.py RUN_DIR [N]   # RUN_DIR holds the fm-table.json to use
"""
import argparse, collections, importlib.util, json, sys, time
from pathlib import Path

spec = importlib.util.spec_from_file_location("osl", "/work/main/scripts/opensearch-live.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
run = Path(sys.argv[1]); n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
a = argparse.Namespace(scratch="/tmp/tailor-opensearch-live", port=9250, heap="2g", cores=2,
                       tailor="/work/main/target/release/tailor", segments=16, corpus=None,
                       gcide_dir="/usr/share/dictd", tailor_data="/root/.cache/tailor", query_count=2000)
out = Path("/tmp/probe2/out"); out.mkdir(parents=True, exist_ok=True)
qfile = "/root/.cache/tailor/queries-gcide-16seg-2000q-seed1-mix2.jsonl"
kinds = [json.loads(l)["kind"] for l in open(qfile)]
reqs = [json.loads(l) for l in open("/tmp/probe2/reqs.jsonl")]
node_cp, _ = m.build_jvm(a)
node = m.Node(a, out, node_cp, run / "fm-table.json")
rows = []
try:
    http = node.http
    m.index_corpus(http, Path(a.scratch) / "gcide.jsonl", 16)
    m.MODES["fm"] = ("auto", True)
    m.set_mode(http, "fm", 16)
    m.load(a, out, qfile, 20, 300, 7, "warm")
    for i in range(n):
        r = reqs[i]
        t0 = time.perf_counter()
        http.call(r["method"], r["path"], r["body"])
        e2e = (time.perf_counter() - t0) * 1e3
        rec = http.call("GET", "/_tailor/fm/stats?recent=1")["recent"]
        rows.append((rec["run_us"][0], rec["degree"][0], kinds[i], round(e2e, 3), i))
        time.sleep(0.01)
finally:
    node.stop()
json.dump(rows, open(run.parent / "2026-11-28-kind-probe" / "rows.json", "w"))
rows.sort()
top = rows[int(len(rows) * 0.95):]
half = rows[: len(rows) // 2]
print(f"{len(rows)} queries alone; longest 5% ({len(top)}) mean degree {sum(r[1] for r in top) / len(top):.2f}; "
      f"shortest half at degree 1: {sum(r[1] == 1 for r in half) / len(half):.1%}")
print("longest 5% at degree 1:", [(r[0], r[2], r[4]) for r in top if r[1] == 1])
by = collections.defaultdict(list)
for r in rows:
    by[r[2]].append(r)
print("kind, queries, mean run_us, share at degree 2, in the longest 5%")
for k, v in sorted(by.items()):
    print(k, len(v), round(sum(r[0] for r in v) / len(v)), f"{sum(r[1] == 2 for r in v) / len(v):.0%}",
          sum(1 for r in top if r[2] == k))

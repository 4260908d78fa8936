"""FM's split at low load with the per-query sliced/refused statistics: why a long query stays at degree 1."""
import argparse, importlib.util, json, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("osl", "/work/main/scripts/opensearch-live.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
a = argparse.Namespace(scratch="/tmp/tailor-opensearch-live", port=9250, heap="2g", cores=2,
                       tailor="/work/main/target/release/tailor", segments=16, corpus=None,
                       gcide_dir="/usr/share/dictd", tailor_data="/root/.cache/tailor", query_count=2000)
table = Path(sys.argv[1]); rps = float(sys.argv[2]); n = int(sys.argv[3]); out = Path(sys.argv[4])
out.mkdir(parents=True, exist_ok=True)
qfile = "/root/.cache/tailor/queries-gcide-16seg-2000q-seed1-mix2.jsonl"
node_cp, _ = m.build_jvm(a)
node = m.Node(a, out, node_cp, table)
try:
    http = node.http
    m.index_corpus(http, Path(a.scratch) / "gcide.jsonl", 16)
    m.set_mode(http, "fm", 16)
    m.load(a, out, qfile, 50, 500, 3, "warm")
    before = http.call("GET", "/_tailor/fm/stats")["queries"]
    m.load(a, out, qfile, rps, n, 11, "fm-low")
    split = m.fm_split(http, before)
finally:
    node.stop()
(out / "split.json").write_text(json.dumps(split, indent=1))
rec = split["recent"]
rows = sorted(zip(rec["run_us"], rec["degree"], rec["load"], rec["sliced"], rec["refused"]), reverse=True)
top = rows[: max(1, len(rows) // 20)]
print("queries", len(rows), "groups", json.dumps(split["groups"]))
print("longest 5%:", len(top), "at degree 1:", [r for r in top if r[1] < 2])
print("longest 5% not sliced:", sum(1 for r in top if not r[3]), "refused a helper:", sum(1 for r in top if r[4] > 0))
half = sorted(rows)[: len(rows) // 2]
print("shortest half sliced:", sum(1 for r in half if r[3]), "of", len(half))
print("all queries sliced:", sum(1 for r in rows if r[3]), "of", len(rows))

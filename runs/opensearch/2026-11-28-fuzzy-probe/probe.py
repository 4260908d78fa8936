"""Fuzzy queries two ways, each alone on the node (FM on, mode auto, inline-2's table):
OpenSearch's default scoring rewrite (top 1,024 terms, blended) against constant_score
(tantivy's semantics: every term, constant score, enumerated per segment). Paired per query."""
import argparse, copy, importlib.util, json, statistics, sys, time
from pathlib import Path
spec = importlib.util.spec_from_file_location("osl", "/work/main/scripts/opensearch-live.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
run = Path("/work/main/docs/opensearch-runs/2026-11-28-inline-2")
a = argparse.Namespace(scratch="/tmp/tailor-opensearch-live", port=9250, heap="2g", cores=2,
                       tailor="/work/main/target/release/tailor", segments=16, corpus=None,
                       gcide_dir="/usr/share/dictd", tailor_data="/root/.cache/tailor", query_count=2000)
out = Path("/tmp/probe3/out"); out.mkdir(parents=True, exist_ok=True)
qfile = "/root/.cache/tailor/queries-gcide-16seg-2000q-seed1-mix2.jsonl"
reqs = [json.loads(l) for l in open("/tmp/probe2/reqs.jsonl")]
fz = [r for r in reqs if "fuzzy" in r["body"]["query"]][: int(sys.argv[1]) if len(sys.argv) > 1 else 200]
node_cp, _ = m.build_jvm(a)
node = m.Node(a, out, node_cp, run / "fm-table.json")
rows = []
def one(http, body):
    t0 = time.perf_counter()
    res = http.call("POST", "/gcide/_search?request_cache=false", body)
    e2e = (time.perf_counter() - t0) * 1e3
    rec = http.call("GET", "/_tailor/fm/stats?recent=1")["recent"]
    return rec["run_us"][0], rec["degree"][0], round(e2e, 3), [h["_id"] for h in res["hits"]["hits"]]
try:
    http = node.http
    m.index_corpus(http, Path(a.scratch) / "gcide.jsonl", 16)
    m.MODES["fm"] = ("auto", True)
    m.set_mode(http, "fm", 16)
    m.load(a, out, qfile, 20, 300, 7, "warm")
    for i, r in enumerate(fz):
        c = copy.deepcopy(r["body"]); c["query"]["fuzzy"]["body"]["rewrite"] = "constant_score"
        pair = [("blended", r["body"]), ("constant", c)]
        if i % 2: pair.reverse()
        got = {}
        for tag, body in pair:
            got[tag] = one(http, body); time.sleep(0.01)
        rows.append({"i": i, "term": r["body"]["query"]["fuzzy"]["body"]["value"],
                     "d": r["body"]["query"]["fuzzy"]["body"]["fuzziness"],
                     **{f"{t}_{k}": v for t, g in got.items() for k, v in zip(("run_us", "degree", "e2e_ms", "ids"), g)}})
finally:
    node.stop()
json.dump(rows, open(out / "rows.json", "w"))
for t in ("blended", "constant"):
    run_us = [r[f"{t}_run_us"] for r in rows]; deg = [r[f"{t}_degree"] for r in rows]
    print(t, "mean run ms", round(statistics.mean(run_us) / 1e3, 2), "median", round(statistics.median(run_us) / 1e3, 2),
          "max", round(max(run_us) / 1e3, 2), "share at degree 2", round(sum(d >= 2 for d in deg) / len(deg), 2))
for t in ("blended", "constant"):
    top = sorted(rows, key=lambda r: r[f"{t}_run_us"])[-10:]
    print(t, "longest 10:", [(round(r[f"{t}_run_us"] / 1e3, 1), r[f"{t}_degree"]) for r in top])
print("same top ids", sum(r["blended_ids"] == r["constant_ids"] for r in rows), "of", len(rows))

import importlib.util, json, sys, time, argparse
from pathlib import Path
spec = importlib.util.spec_from_file_location("osl", "/work/main/scripts/opensearch-live.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
run = Path(sys.argv[1])  # a run dir with fm-table.json
a = argparse.Namespace(scratch="/tmp/tailor-opensearch-live", port=9250, heap="2g", cores=2, tailor="/work/main/target/release/tailor",
                       segments=16, corpus=None, gcide_dir="/usr/share/dictd", tailor_data="/root/.cache/tailor", query_count=2000)
out = Path("/tmp/probe/out"); out.mkdir(exist_ok=True)
node_cp, lucene_cp = m.build_jvm(a)
queries = "/root/.cache/tailor/queries-gcide-16seg-2000q-seed1-mix2.jsonl"
corpus = Path(a.scratch) / "gcide.jsonl"
node = m.Node(a, out, node_cp, run / "fm-table.json")
try:
    http = node.http
    m.index_corpus(http, corpus, 16)
    for mode in ("fm",):
        m.set_mode(http, "none", 16); m.load(a, out, queries, 20, 300, 7, "warm")
    res = {}
    for fm_mode in ("auto", "all"):
        m.MODES["fm"] = (fm_mode, True)
        m.set_mode(http, "fm", 16)
        m.load(a, out, queries, 20, 300, 7, "warm-" + fm_mode)
        before = http.call("GET", "/_tailor/fm/stats")
        m.load(a, out, queries, 5, 300, 11, "probe-" + fm_mode)
        after = http.call("GET", "/_tailor/fm/stats?recent=300")
        rec = after["recent"]
        rows = sorted(zip(rec["run_us"], rec["degree"], rec["load"]))
        top = rows[-15:]
        res[fm_mode] = {"helpers": {k: after["helpers"][k] - before["helpers"].get(k, 0) for k in ("sent", "refused_by_guard", "yielded")},
                        "deg2": sum(1 for r in rows if r[1] == 2), "top": top}
        print(fm_mode, json.dumps(res[fm_mode]), flush=True)
finally:
    node.stop()

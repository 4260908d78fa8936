#!/usr/bin/env python3
"""Issue 40's live check: OpenSearch 2.19.6 with tailor's FM plugin against OpenSearch's own
concurrent segment search (mode all) and sequential search (mode none), open-loop, on this
machine's cores.

What it does, in order (each step logged, results written under --out as they come):
1. Builds jvm/ (the plugin zip, tailor-lucene, the BenchNode harness) and the node's classpath:
   OpenSearch and netty4, without the plugin, whose jars come from its zip in plugins/.
2. The corpus (GCIDE, converted from Debian's dict-gcide as scripts/live-check.py does, or
   --corpus) and tailor's generated queries (`tailor profile --workload search` writes them).
3. A Lucene profile of the first --profile-queries queries at degrees 1..min(cores, 8)
   (dev.tailor.lucene.LuceneProfile, 16 segments), or the one --profile-csv names, and
   `tailor plan fm` on it: the table.
4. A node (BenchNode) with the plugin, the index `gcide` (1 shard, --segments segments: one
   refresh per equal chunk, merges held off) and a warm-up.
5. Capacity: sequential search (mode none) offered more than it can serve; what it sustains
   is the capacity the loads are fractions of.
6. FM at --low-load: the plugin's own per-query statistics (GET /_tailor/fm/stats?recent=N),
   from which the degree split of the longest 5% and the shortest half is read.
7. --rounds rounds; in each, every load of --loads, the three modes (four with --also-yield)
   in an order rotated per round and load; p99 per cell; the median of the rounds per mode and load. With --blocks K,
   each cell is sent in K blocks, the modes taking turns block by block, and its p99 is that of
   its blocks' latencies together (latencies.jsonl.gz keeps them).

    python3 scripts/opensearch-live.py [--quick] [--out DIR] [--rounds 3] [--seconds 20] [--blocks 1]

Needs Java 17 and Maven (jvm/), a release build of tailor (cargo build --release), and
dict-gcide (or --corpus). --quick is a small trial of every step (minutes, not a result).
"""

import argparse
import gzip
import importlib.util
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
JVM = REPO / "jvm"
PLUGIN_ZIP = JVM / "tailor-opensearch" / "target" / "tailor-opensearch-0.1.0.zip"
LUCENE_JAR = JVM / "tailor-lucene" / "target" / "tailor-lucene-0.1.0.jar"
TEST_CLASSES = JVM / "tailor-opensearch" / "target" / "test-classes"
INDEX = "gcide"
STEP_MS = 0.5
# Test-only jars the node must not see: OpenSearch's Randomness switches to randomizedtesting's
# context when that is on the classpath, and the plugin's own jars must come from its zip.
NOT_ON_NODE_CLASSPATH = ("tailor-lucene", "jackson-databind", "jackson-annotations", "randomizedtesting",
                         "/test/framework/", "lucene-test-framework", "/junit/", "hamcrest", "mockito",
                         "byte-buddy", "objenesis")
MODES = {
    # mode: (search.concurrent_segment_search.mode, tailor.fm.enabled)
    "none": ("none", False),
    "all": ("all", False),
    # FM in mode auto: its decider slices a query only if FM could send it a helper (FmDecider);
    # --fm-search-mode all slices every query, as runs before 2026-11-27 21:45 did.
    "fm": ("auto", True),
}
# FM's modes' tailor.fm.yield, set with the mode when --also-yield adds a second FM mode
# ("fm-cores" or "fm-row"), so that both rules run interleaved in one run.
FM_YIELD = {}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(args, timeout=None, **kw):
    args = [str(a) for a in args]
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=timeout, **kw)
    if r.returncode != 0:
        raise SystemExit(f"error: `{' '.join(args)[:200]}` exited {r.returncode}:\n{r.stderr[-2000:]}{r.stdout[-1000:]}")
    return r.stdout


def live_check_module():
    spec = importlib.util.spec_from_file_location("live_check", REPO / "scripts" / "live-check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Http:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method, path, body=None, ndjson=False, timeout=600):
        data = None
        headers = {}
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            headers["content-type"] = "application/x-ndjson" if ndjson else "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raise SystemExit(f"error: {method} {path} answered {e.code}: {e.read()[:1000]!r}")

    def up(self):
        try:
            with urllib.request.urlopen(self.base + "/", timeout=2) as r:
                return r.status == 200
        except (OSError, urllib.error.URLError):
            return False


def prebuilt_jvm(d):
    """The jars --pack put in d: the node's classpath, the profiler's, the plugin zip."""
    d = Path(d)
    for need in ("node-lib", "profile-lib", "classes", PLUGIN_ZIP.name):
        if not (d / need).exists():
            raise SystemExit(f"error: {d / need} is missing (make it with --pack {d} where Maven works)")
    node_jars = sorted((d / "node-lib").glob("*.jar"))
    node_cp = [str(j) for j in node_jars] + [str(d / "classes")]
    lucene_cp = [str(j) for j in sorted((d / "profile-lib").glob("*.jar"))] + [
        str(j) for j in node_jars if j.name.startswith(("lucene-core", "lucene-analysis-common", "jackson-core"))]
    return ":".join(node_cp), ":".join(lucene_cp), d / PLUGIN_ZIP.name


def copy_stored(src, dst):
    """Copies a jar or zip with its entries stored, not deflated, so that an xz archive of the pack
    compresses the classes themselves (about twice as well as xz over deflated jars)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            info.compress_type = zipfile.ZIP_STORED
            zout.writestr(info, data)


def pack_jvm(a, node_cp, lucene_cp):
    """Copies what a run needs into --pack DIR, for a machine without Maven or a network, and with
    --pack-xz also writes DIR as one xz archive (what a lent machine's carry can hold)."""
    d = Path(a.pack)
    shutil.rmtree(d, ignore_errors=True)
    node_jars = {Path(j).name for j in node_cp.split(":")}
    for sub, cp in (("node-lib", node_cp), ("profile-lib", lucene_cp)):
        (d / sub).mkdir(parents=True)
        for j in cp.split(":"):
            # The profiler's Lucene and jackson-core come from node-lib.
            if j.endswith(".jar") and (sub == "node-lib" or Path(j).name not in node_jars):
                copy_stored(j, d / sub / Path(j).name)
    shutil.copytree(TEST_CLASSES / "dev" / "tailor" / "opensearch" / "bench",
                    d / "classes" / "dev" / "tailor" / "opensearch" / "bench")
    copy_stored(PLUGIN_ZIP, d / PLUGIN_ZIP.name)
    size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
    log(f"packed {d}: {size / 2**20:.1f} MiB; run with --prebuilt {d}")
    if a.pack_xz:
        xz = Path(a.pack_xz)
        log(f"writing {xz} (xz -9, a minute or two)")
        with tarfile.open(xz, "w:xz", preset=9) as t:
            t.add(d, arcname=d.name)
        log(f"wrote {xz}: {xz.stat().st_size / 2**20:.1f} MiB; unpack with tar -xJf {xz} -C DIR, "
            f"then run with --prebuilt DIR/{d.name}")


def build_jvm(a):
    log("building jvm/ (plugin zip, tailor-lucene, BenchNode) and the node's classpath")
    cp_file = Path(a.scratch) / "maven-classpath.txt"
    sh(["mvn", "-B", "-q", "-f", JVM / "pom.xml", "-pl", "tailor-opensearch", "-am", "-DskipTests",
        "package", "dependency:build-classpath", f"-Dmdep.outputFile={cp_file}", "-Dmdep.includeScope=test"],
       timeout=1200)
    jars = [j for j in cp_file.read_text().strip().split(":") if j]
    node_cp = [j for j in jars if not any(x in j for x in NOT_ON_NODE_CLASSPATH)] + [str(TEST_CLASSES)]
    lucene_cp = [str(LUCENE_JAR)] + [j for j in jars if any(x in j for x in ("lucene-core", "lucene-analysis-common",
                                                                              "jackson-databind", "jackson-annotations",
                                                                              "jackson-core"))]
    return ":".join(node_cp), ":".join(lucene_cp)


def corpus_and_queries(a, out):
    corpus = Path(a.corpus) if a.corpus else Path(a.scratch) / "gcide.jsonl"
    if not a.corpus and not corpus.exists():
        lc = live_check_module()
        d = Path(a.gcide_dir)
        if not lc.gcide_present(d):
            raise SystemExit(f"error: no gcide.dict.dz and gcide.index in {d} (apt install dict-gcide, or --corpus FILE)")
        n = lc.convert_dictd(d / "gcide.dict.dz", d / "gcide.index", corpus)
        log(f"corpus: {n} GCIDE entries in {corpus}")
    # tailor generates its query file along with its (tantivy) index; one request is measured.
    # Without --corpus, tailor reads GCIDE itself (the same documents convert_dictd wrote).
    data = Path(a.tailor_data) if a.tailor_data else Path(a.scratch) / "tailor-data"
    own = ["--corpus", corpus] if a.corpus or Path(a.gcide_dir).resolve() != Path("/usr/share/dictd") else []
    err = subprocess.run([str(x) for x in [a.tailor, "profile", "--workload", "search", *own, "--data-dir", data,
                          "--segments", a.segments, "--query-count", a.query_count, "--degrees", "1..1",
                          "--repeat", "1", "--requests", "1", "--out", out / "tantivy-index-check.csv"]],
                         cwd=REPO, capture_output=True, text=True, timeout=1800)
    if err.returncode != 0:
        raise SystemExit(f"error: tailor profile (the query file) exited {err.returncode}: {err.stderr[-1500:]}")
    # It names its query file on stderr: "tailor: queries PATH reused" or "... written".
    named = [w for l in err.stderr.splitlines() if l.startswith("tailor: queries ") for w in l.split()[2:3]]
    if not named or not Path(named[-1]).is_file():
        raise SystemExit(f"error: tailor profile named no query file: {err.stderr[-800:]}")
    queries = [Path(named[-1])]
    log(f"queries: {queries[-1]}")
    return corpus, queries[-1]


def profile_and_plan(a, out, lucene_cp, corpus, queries):
    cores = a.cores
    deg = a.max_degree or min(cores, 8)
    profile = out / "profile-lucene.csv"
    if a.profile_csv:
        # A profile measured before (a run's profile-lucene.csv): the planner is deterministic,
        # so runs given the same profile follow the same table.
        src = Path(a.profile_csv)
        if not src.is_file():
            raise SystemExit(f"error: --profile-csv {src}: no such file")
        shutil.copy(src, profile)
        log(f"Lucene profile: {src} (given with --profile-csv, not measured)")
    else:
        log(f"Lucene profile: {a.profile_queries} queries, degrees 1..{deg}, {a.segments} segments, --repeat {a.repeat}")
        sh(["java", "-Xmx2g", "-cp", lucene_cp, "dev.tailor.lucene.LuceneProfile", "--corpus", corpus, "--queries",
            queries, "--out", profile, "--units-out", out / "units-lucene.csv", "--segments", a.segments,
            "--degrees", deg, "--repeat", a.repeat, "--limit", a.profile_queries], timeout=3600)
    t1 = [float(l.split(",")[1]) for l in profile.read_text().splitlines()[1:] if l.strip()]
    # y: the paper's, the longest request (§4.1), unless --max-interval-ms caps it.
    y = math.ceil(max(2.0, min(a.max_interval_ms or max(t1), max(t1))) / STEP_MS) * STEP_MS
    table = out / "fm-table.json"
    args = [a.tailor, "plan", "fm", "--profile", profile, "--cores", cores, "--max-degree", deg, "--step",
            f"{STEP_MS}ms", "--max-interval", f"{y}ms", "--percentile", "0.99", "--max-load", max(32, 4 * cores),
            "--target-parallelism", a.target_parallelism or search_pool(cores)]
    if a.keep_sequential is not None:
        args += ["--keep-sequential", a.keep_sequential]
    if getattr(a, "plan_bins", None):
        args += ["--bins", a.plan_bins]
    bound = None
    if a.latency_bound_share is not None:
        # Theorem 1's form (docs/fm-planner.md, "A latency bound"): the bound sits at this share
        # of the way from the least p99 any schedule reaches at load 1 (Fig. 7's row 1; with
        # --keep-sequential, any schedule that keeps its floor) to the sequential p99, so that
        # it can be met and still saves CPU.
        fig7 = out / "fm-table-fig7.json"
        sh(args + ["--no-check", "--out", fig7], timeout=1800)
        least = json.loads(fig7.read_text())["rows"][0]["tail_ms"]
        seq_p99 = sorted(t1)[math.ceil(0.99 * len(t1)) - 1]
        bound = round(least + a.latency_bound_share * max(0.0, seq_p99 - least), 3)
        args += ["--latency-bound", f"{bound}ms"]
    sh(args + ["--out", table], timeout=1800)
    log(f"planned {table.name}: mean t1 {statistics.mean(t1):.2f} ms, longest {max(t1):.1f} ms, y = {y} ms"
        + (f", latency bound {bound} ms" if bound else ""))
    return profile, table, " ".join(str(x) for x in args[1:] + ["--out", table.name]).replace(str(out) + "/", "")


def search_pool(cores):
    """OpenSearch's `search` thread pool size: the shard query phases a node runs at once
    (ThreadPool.searchThreadPoolSize: 3 * processors / 2 + 1)."""
    return 3 * cores // 2 + 1


class Node:
    def __init__(self, a, out, node_cp, table):
        self.home = Path(a.scratch) / "node"
        shutil.rmtree(self.home, ignore_errors=True)
        (self.home / "config").mkdir(parents=True)
        plug = self.home / "plugins" / "tailor-fm"
        plug.mkdir(parents=True)
        with zipfile.ZipFile(PLUGIN_ZIP) as z:
            z.extractall(plug)
        shutil.copy(table, self.home / "config" / "fm-table.json")
        self.http = Http(a.port)
        if self.http.up():
            raise SystemExit(f"error: something already answers on port {a.port} (--port)")
        cmd = ["java", f"-Xms{a.heap}", f"-Xmx{a.heap}", "-Djna.nosys=true", "-Djna.nounpack=true", "-cp", node_cp,
               "dev.tailor.opensearch.bench.BenchNode", self.home, f"http.port={a.port}",
               f"transport.port={a.port + 100}", f"path.data={self.home / 'data'}",
               "tailor.fm.table=fm-table.json", f"tailor.fm.cores={a.fm_cores or a.cores}", "tailor.fm.enabled=false",
               f"tailor.fm.decider={a.fm_decider}", f"tailor.fm.yield={a.fm_yield}"] + a.node_setting
        self.log = open(out / "node.log", "w")
        self.proc = subprocess.Popen([str(c) for c in cmd], stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + 180
        while not self.http.up():
            if self.proc.poll() is not None:
                raise SystemExit(f"error: the node exited {self.proc.returncode}; see {out / 'node.log'}")
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"error: the node did not answer within 180 s; see {out / 'node.log'}")
            time.sleep(0.5)
        log(f"node up on port {a.port} (plugin from {PLUGIN_ZIP.name} in plugins/)")

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def index_corpus(http, corpus, segments):
    http.call("PUT", f"/{INDEX}", {
        "settings": {
            "number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": -1,
            # No merges between the refreshes: every chunk stays its own segment.
            "merge.policy.segments_per_tier": max(2 * segments, 10),
            "merge.policy.max_merge_at_once": max(2 * segments, 10),
            "merge.policy.floor_segment": "1kb",
        },
        "mappings": {"properties": {"title": {"type": "text"}, "body": {"type": "text"}}},
    })
    docs = [l for l in corpus.read_text().splitlines() if l.strip()]
    per = math.ceil(len(docs) / segments)
    t = time.monotonic()
    for s in range(segments):
        chunk = docs[s * per:(s + 1) * per]
        for b in range(0, len(chunk), 5000):
            lines = []
            for i, d in enumerate(chunk[b:b + 5000]):
                lines.append(json.dumps({"index": {"_id": str(s * per + b + i)}}))
                lines.append(d)
            r = http.call("POST", f"/{INDEX}/_bulk", "\n".join(lines) + "\n", ndjson=True)
            if r.get("errors"):
                bad = next(i for i in r["items"] if "error" in i["index"])
                raise SystemExit(f"error: bulk indexing failed: {bad}")
        http.call("POST", f"/{INDEX}/_refresh")
    segs = http.call("GET", f"/_cat/segments/{INDEX}?format=json")
    n = len(segs)
    log(f"indexed {len(docs)} documents in {time.monotonic() - t:.0f} s: {n} segments")
    if n != segments:
        log(f"warning: {n} segments, not {segments}")
    return len(docs), n


def set_mode(http, mode, slices=None):
    m, fm = MODES[mode]
    settings = {"search.concurrent_segment_search.mode": m, "tailor.fm.enabled": fm}
    if mode in FM_YIELD:
        settings["tailor.fm.yield"] = FM_YIELD[mode]
    if slices is not None:
        settings["search.concurrent.max_slice_count"] = slices
    http.call("PUT", "/_cluster/settings", {"transient": settings})


def load(a, out, queries, rps, requests, seed, tag, latencies=False):
    """`tailor load` against the node; its JSON summary (with each measured request's latency
    under "latencies_ms" if `latencies`, which load-runs.jsonl leaves out)."""
    each = out / "latencies.txt"
    args = [a.tailor, "load", "--format", "json", "--url", f"http://127.0.0.1:{a.port}", "--opensearch", INDEX, "--queries", queries,
            "--rps", f"{rps:.2f}", "--requests", requests, "--seed", seed] + (["--latencies", each] if latencies else [])
    t = time.monotonic()
    r = subprocess.run([str(x) for x in args], cwd=REPO, capture_output=True, text=True,
                       timeout=max(120, 4 * requests / rps + 60))
    wall = time.monotonic() - t
    if r.returncode != 0:
        raise SystemExit(f"error: tailor load ({tag}) exited {r.returncode}: {r.stderr[-1500:]}")
    summary = json.loads(r.stdout[r.stdout.index("{"):])
    summary["wall_s"] = wall
    with open(out / "load-runs.jsonl", "a") as f:
        f.write(json.dumps({"tag": tag, "rps": rps, "requests": requests, "seed": seed, "summary": summary}) + "\n")
    if latencies:
        summary["latencies_ms"] = [float(x) for x in each.read_text().split()]
        each.unlink()
    return summary


def degree_split(runs):
    """The issue's split of (run_us, degree) pairs: the longest 5%'s mean degree, and the share of
    the shortest half that stayed at degree 1."""
    runs = sorted(runs)
    top = runs[-max(1, len(runs) // 20):]
    half = runs[:max(1, len(runs) // 2)]
    return {"queries": len(runs), "longest_5pct_mean_degree": statistics.mean(d for _, d in top),
            "longest_5pct_min_run_ms": top[0][0] / 1000,
            "shortest_half_at_degree_1": sum(1 for _, d in half if d == 1) / len(half),
            "shortest_half_max_run_ms": half[-1][0] / 1000}


RECENT_KEYS = ("run_us", "degree", "load", "sliced", "refused")


def fm_recent(http, k=None, before=None):
    """The plugin's record of the last k queries it finished (or of those since its query count
    was `before`), key by key (RECENT_KEYS; sliced and refused are absent from plugins built
    before 2026-11-28 23:45); its statistics; and k."""
    st = http.call("GET", "/_tailor/fm/stats?recent=10000")
    k = st["queries"] - before if k is None else k
    rec = st["recent"]
    n = min(max(k, 0), len(rec["run_us"]))
    return {key: (rec[key][len(rec[key]) - n:] if n else []) for key in RECENT_KEYS if key in rec}, st, k


def fm_split(http, before, recent=None, finished=None):
    """FM's own statistics of the queries since `before` finished (or of `recent`, gathered
    block by block): the split over them all, and by the table row they followed (the load they
    found on arrival: row 1, or rows 2 and up). `finished`: how many queries `recent` should
    have held (more than it holds if the plugin's record was cut)."""
    if recent is None:
        recent, st, k = fm_recent(http, before=before)
    else:
        st = http.call("GET", "/_tailor/fm/stats")
        k = len(recent.get("run_us", [])) if finished is None else finished
    rows = list(zip(recent.get("run_us", []), recent.get("degree", []), recent.get("load", [])))
    groups = {"all rows": [(r, d) for r, d, _ in rows],
              "row 1": [(r, d) for r, d, l in rows if l == 1],
              "rows 2+": [(r, d) for r, d, l in rows if l >= 2]}
    return {"queries": k, "truncated": k > len(rows),
            "groups": {g: degree_split(v) for g, v in groups.items() if v},
            "recent": recent,
            "stats": {x: st[x] for x in ("degrees", "admissions_waited", "helpers")}}


def failures(s):
    return sum(int(s.get(k, 0) or 0) for k in ("unavailable", "errors", "failed"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tailor", default=str(REPO / "target" / "release" / "tailor"))
    p.add_argument("--out", default=None, help="results directory (default runs/opensearch/DATE)")
    p.add_argument("--corpus", default=None, help="JSON lines with title and body (default: GCIDE)")
    p.add_argument("--gcide-dir", default="/usr/share/dictd")
    p.add_argument("--tailor-data", default=None, help="tailor's data directory (default SCRATCH/tailor-data)")
    p.add_argument("--scratch", default="/tmp/tailor-opensearch-live",
                   help="the corpus, the node's home and index, tailor's data (large; not results)")
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--fm-cores", type=int, default=None,
                   help="the plugin's tailor.fm.cores (default: --cores). A diagnostic: a value above the "
                        "machine's cores loosens FM's guard (more helpers, fewer yields); the table is still "
                        "planned for --cores")
    p.add_argument("--segments", type=int, default=16)
    p.add_argument("--fm-search-mode", choices=("auto", "all"), default="auto",
                   help="search.concurrent_segment_search.mode while FM is on: auto (FM's decider slices only "
                        "queries FM could help) or all (every query sliced)")
    p.add_argument("--fm-decider", choices=("core", "row"), default="core",
                   help="the plugin's tailor.fm.decider, in --fm-search-mode auto: core slices a query that "
                        "finds a core of its own and a row that adds threads; row, one whose row adds threads")
    p.add_argument("--fm-yield", choices=("cores", "row", "mean"), default="cores",
                   help="the plugin's tailor.fm.yield: cores, a helper leaves its query at its next slice once "
                        "an arrival leaves more threads than cores (the guard); row, it stays while the table's "
                        "row for the load then still gives its query that thread; mean, as row with the row of "
                        "the larger of the load then and the mean load arrivals found lately")
    p.add_argument("--also-yield", choices=("cores", "row", "mean"), default=None,
                   help="a fourth mode, fm-RULE: FM with this tailor.fm.yield, interleaved with the "
                        "others (the same table and decider), so that the two rules compare within one run")
    p.add_argument("--max-degree", type=int, default=None,
                   help="the table's maximum degree, and the profile's degrees 1..N (default: min(cores, 8)); "
                        "1 plans a table that never sends a helper: FM's path at degree 1, for comparison")
    p.add_argument("--max-slice-count", type=int, default=None,
                   help="search.concurrent.max_slice_count for every mode (default: OpenSearch's 0, "
                        "Lucene's slicing; 16 gives one slice per segment, as the profile has)")
    p.add_argument("--max-interval-ms", type=float, default=None,
                   help="cap y, the table's largest interval (default: the longest profiled query)")
    p.add_argument("--latency-bound-share", type=float, default=None,
                   help="plan in Theorem 1's form, the p99 bound at this share of the way from the least "
                        "p99 a schedule reaches at load 1 (0) to the sequential p99 (1)")
    p.add_argument("--keep-sequential", type=float, default=None, metavar="PCT",
                   help="tailor plan fm --keep-sequential: no helper before the profiled time by which "
                        "this percent of the profile's queries finish at degree 1 (the node's queries run "
                        "longer than the profile's, so 50 may send helpers to the node's shortest half)")
    p.add_argument("--target-parallelism", type=float, default=None,
                   help="the table's target_p (default: the search pool's size, 3 * cores / 2 + 1)")
    p.add_argument("--query-count", type=int, default=2000)
    p.add_argument("--profile-queries", type=int, default=400)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--plan-bins", type=int, default=None, metavar="K",
                   help="tailor plan fm --bins K: plan on K demand bins of the profile, each with its members' "
                        "mean times (the paper's approximation, §4.1), which averages out a noisy query's speedup")
    p.add_argument("--profile-csv", default=None, metavar="FILE",
                   help="plan from this Lucene profile (a run's profile-lucene.csv) instead of measuring one; "
                        "the planner is deterministic, so runs given the same profile follow the same table")
    p.add_argument("--loads", default="0.3,0.45,0.6,0.75")
    p.add_argument("--capacity", type=float,
                   help="queries/s the loads are fractions of (default: probed, mode none overloaded)")
    p.add_argument("--low-load", type=float, default=0.1)
    p.add_argument("--low-queries", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=20.0, help="length of each cell")
    p.add_argument("--blocks", type=int, default=1,
                   help="send each cell in this many blocks, the modes taking turns block by block "
                        "(1: each cell in one piece, as runs before 2026-11-29 did)")
    p.add_argument("--heap", default="2g")
    p.add_argument("--node-setting", action="append", default=[], metavar="KEY=VALUE",
                   help="an extra setting for the node, every mode (repeatable), e.g. "
                        "thread_pool.index_searcher.size=1, which caps mode all's threads per search")
    p.add_argument("--port", type=int, default=9250)
    p.add_argument("--quick", action="store_true", help="a small trial of every step, not a result")
    p.add_argument("--pack", default=None, metavar="DIR",
                   help="only build and copy the jars, the plugin zip and BenchNode into DIR (about 50 MiB)")
    p.add_argument("--pack-xz", default=None, metavar="FILE",
                   help="with --pack: also write the pack as one .tar.xz (for a lent machine's carry)")
    p.add_argument("--prebuilt", default=None, metavar="DIR", help="use what --pack wrote instead of Maven")
    p.add_argument("--summarize", nargs="+", metavar="DIR", default=None,
                   help="only rewrite report.md of earlier runs from their results.json")
    a = p.parse_args()
    if a.pack_xz and not a.pack:
        p.error("--pack-xz needs --pack DIR")
    if a.keep_sequential is not None and not 0 < a.keep_sequential <= 100:  # percent: 1 is 1%
        p.error(f"--keep-sequential {a.keep_sequential}: expected a percent above 0 and at most 100")
    if a.blocks < 1:
        p.error(f"--blocks {a.blocks}: expected 1 or more")
    if a.fm_cores is not None and a.fm_cores < 1:
        p.error(f"--fm-cores {a.fm_cores}: expected 1 or more")
    for kv in a.node_setting:
        if "=" not in kv or kv.startswith("="):
            p.error(f"--node-setting {kv!r}: expected KEY=VALUE")
    if a.summarize:
        for d in a.summarize:
            res = json.loads((Path(d) / "results.json").read_text())
            res["median_p99"] = summarize(res["cells"])
            (Path(d) / "results.json").write_text(json.dumps(res, indent=1))
            write_report(Path(d), res)
        return
    if a.quick:
        a.profile_queries, a.repeat, a.rounds, a.seconds, a.low_queries = 60, 1, 1, 4, 200
        a.loads = "0.3,0.75"
    MODES["fm"] = (a.fm_search_mode, True)
    if a.also_yield:
        if a.also_yield == a.fm_yield:
            raise SystemExit(f"error: --also-yield {a.also_yield} is --fm-yield's rule already")
        MODES[f"fm-{a.also_yield}"] = (a.fm_search_mode, True)
        FM_YIELD.update({"fm": a.fm_yield, f"fm-{a.also_yield}": a.also_yield})
    loads = [float(x) for x in a.loads.split(",")]
    out = Path(a.out) if a.out else REPO / "runs" / "opensearch" / time.strftime("%Y-%m-%d")
    out.mkdir(parents=True, exist_ok=True)
    (out / "load-runs.jsonl").unlink(missing_ok=True)
    (out / "latencies.jsonl.gz").unlink(missing_ok=True)
    (out / "fm-recent.jsonl.gz").unlink(missing_ok=True)
    if not Path(a.tailor).is_file():
        raise SystemExit(f"error: no tailor binary at {a.tailor} (cargo build --release)")
    t0 = time.monotonic()
    Path(a.scratch).mkdir(parents=True, exist_ok=True)
    global PLUGIN_ZIP
    if a.prebuilt:
        node_cp, lucene_cp, PLUGIN_ZIP = prebuilt_jvm(a.prebuilt)
    else:
        node_cp, lucene_cp = build_jvm(a)
    if a.pack:
        pack_jvm(a, node_cp, lucene_cp)
        return
    corpus, queries = corpus_and_queries(a, out)
    profile, table, plan_cmd = profile_and_plan(a, out, lucene_cp, corpus, queries)
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": a.cores, "segments": a.segments,
           "max_slice_count": a.max_slice_count,
           "plan": plan_cmd, "quick": a.quick, "args": vars(a)}
    node = Node(a, out, node_cp, table)
    try:
        http = node.http
        res["documents"], res["segments_indexed"] = index_corpus(http, corpus, a.segments)
        # Warm-up, every mode.
        for mode in MODES:
            set_mode(http, mode, a.max_slice_count)
            load(a, out, queries, 20, 200 if a.quick else 600, 7, f"warmup-{mode}")
        # Capacity: sequential search offered more than it can serve.
        set_mode(http, "none", a.max_slice_count)
        low = load(a, out, queries, 10, 100 if a.quick else 300, 8, "service")
        mean_ms = low["latency_ms"]["mean"]
        if a.capacity:
            # Given (an earlier run's), so that one slow minute of the machine during the probe
            # does not set every load of the run.
            cap = a.capacity
            res["capacity"] = {"service_mean_ms": mean_ms, "offered_rps": None, "capacity_rps": cap,
                               "given": True}
            log(f"capacity (given): {cap:.1f} queries/s; mean at 10/s {mean_ms:.2f} ms")
        else:
            # Offered well past the estimate (cores / mean latency at 10/s, whose HTTP time makes
            # it low), so that the node is overloaded and what it serves is its capacity.
            offered = 3.0 * a.cores * 1000 / mean_ms
            n = int(offered * (3 if a.quick else 8))
            s = load(a, out, queries, offered, n, 9, "capacity")
            # Overloaded, the run ends when the node has served every request: what it sustained
            # is the answers over the run's wall time (the client's start-up, well under a second,
            # included).
            if failures(s):
                raise SystemExit(f"error: the capacity run had {failures(s)} failed requests")
            cap = s["completed"] / s["wall_s"]
            if cap > 0.9 * offered:
                log(f"warning: the capacity run was not overloaded ({cap:.0f} of {offered:.0f}/s served)")
            res["capacity"] = {"service_mean_ms": mean_ms, "offered_rps": offered, "requests": n,
                               "wall_s": s["wall_s"], "capacity_rps": cap}
            log(f"capacity (mode none, offered {offered:.0f}/s): {cap:.1f} queries/s; mean at 10/s {mean_ms:.2f} ms")
        # FM at low load: the plugin's own per-query statistics.
        set_mode(http, "fm", a.max_slice_count)
        before = http.call("GET", "/_tailor/fm/stats")["queries"]
        load(a, out, queries, a.low_load * cap, a.low_queries, 11, "fm-low")
        split = fm_split(http, before)
        split["load"] = a.low_load
        res["low_load_split"] = split
        for k, g in split["groups"].items():
            log(f"FM at {a.low_load:.0%}, {k}: {g['queries']} queries, longest 5% mean degree "
                f"{g['longest_5pct_mean_degree']:.2f}, shortest half at degree 1: {g['shortest_half_at_degree_1']:.1%}")
        (out / "results.json").write_text(json.dumps(res, indent=1))
        # The rounds.
        cells = []
        for r in range(a.rounds):
            for li, ld in enumerate(loads):
                for cell in round_cells(a, out, http, queries, r, li, ld, cap):
                    cells.append(cell)
                    log(f"round {r + 1} {ld:.0%} {cell['mode']:4} {cell['rps']:6.1f}/s p99 {cell['p99_ms']:7.2f} ms "
                        f"mean {cell['mean_ms']:6.2f} ms failures {cell['failures']}")
                res["cells"] = cells
                (out / "results.json").write_text(json.dumps(res, indent=1))
        res["median_p99"] = summarize(cells)
        res["wall_s"] = time.monotonic() - t0
        (out / "results.json").write_text(json.dumps(res, indent=1))
        write_report(out, res)
    finally:
        node.stop()


def nearest_rank(xs, q):
    """The q-quantile of xs by nearest rank: the smallest value with at least q of them at or
    below it (what HdrHistogram's valueAtPercentile gives, without its 3-digit buckets)."""
    xs = sorted(xs)
    return xs[max(0, math.ceil(q * len(xs)) - 1)]


def round_cells(a, out, http, queries, r, li, ld, cap):
    """One round's cells at one load: every mode offered ld * cap for --seconds, in an order
    rotated per round and load. With --blocks K, each mode's requests are sent in K blocks, the
    modes taking turns block by block (the order rotated each block), and a cell's statistics
    come from its K blocks' latencies together: the modes then share the round's stretch of
    machine time, and a few seconds of hypervisor steal land on all of them alike."""
    order = list(MODES)
    rps = ld * cap
    n = max(200, int(rps * a.seconds))
    per_block = math.ceil(n / a.blocks)
    acc = {m: {"lat": [], "failures": 0, "steal_ms": 0.0, "p99s": []} for m in order}
    # Each FM mode's counters and its queries, block by block (two FM modes interleave).
    fm_acc = {m: {"recent": {}} for m in order if MODES[m][1]}
    for b in range(a.blocks):
        rot = (r + li + b) % len(order)
        for mode in order[rot:] + order[:rot]:
            set_mode(http, mode, a.max_slice_count)
            fm0 = http.call("GET", "/_tailor/fm/stats")
            seed = 1000 + r * 10 + li if a.blocks == 1 else (1000 + r * 10 + li) * 100 + b
            tag = f"r{r + 1}-{ld}-{mode}" + (f"-b{b + 1}" if a.blocks > 1 else "")
            s = load(a, out, queries, rps, per_block, seed, tag, latencies=a.blocks > 1)
            if mode in fm_acc:
                recent, fm1, k = fm_recent(http, before=fm0["queries"])
                fm_acc[mode]["finished"] = fm_acc[mode].get("finished", 0) + k
                if k > len(recent.get("run_us", [])):
                    log(f"  warning: {tag}: the plugin kept {len(recent.get('run_us', []))} of its {k} queries")
                for key, v in recent.items():
                    fm_acc[mode]["recent"].setdefault(key, []).extend(v)
            if a.blocks > 1:
                log(f"  {tag}: {per_block} requests, p99 {s['latency_ms']['p99']:.1f} ms")
            c = acc[mode]
            c["failures"] += failures(s)
            # The host's steal over the cell: CPU the VM was owed and did not get
            # (scripts/opensearch-null.py compares modes at equal steal).
            steal = (s.get("host") or {}).get("steal_ms")
            c["steal_ms"] = None if steal is None or c["steal_ms"] is None else c["steal_ms"] + steal
            c["lat"].append(s.get("latencies_ms", []))
            c["p99s"].append(s["latency_ms"]["p99"])
            c["summary"] = s
            if mode in fm_acc:
                fa = fm_acc[mode]
                fa["degrees"] = {d: fa.get("degrees", {}).get(d, 0) + fm1["degrees"][d] - fm0["degrees"][d]
                                 for d in fm1["degrees"]}
                for key, f in (("fm_waited", lambda st: st["admissions_waited"]["total"]),
                               ("fm_refused", lambda st: st["helpers"]["refused_by_guard"]),
                               ("fm_helpers_sent", lambda st: st["helpers"]["sent"]),
                               ("fm_helpers_yielded", lambda st: st["helpers"].get("yielded", 0)),
                               ("fm_helpers_stayed", lambda st: st["helpers"].get("stayed", 0))):
                    fa[key] = fa.get(key, 0) + f(fm1) - f(fm0)
                # The mean load arrivals found, at the block's end (tailor.fm.yield mean reads it).
                if fm1.get("mean_load") is not None:
                    fa.setdefault("fm_mean_load", []).append(round(fm1["mean_load"], 2))
    cells = []
    for mode in order:
        c = acc[mode]
        if a.blocks == 1:
            lat = c["summary"]["latency_ms"]
            stats = {"p99_ms": lat["p99"], "p50_ms": lat.get("p50"), "mean_ms": lat["mean"]}
        else:
            lat = [x for block in c["lat"] for x in block]
            if not lat:
                raise SystemExit(f"error: round {r + 1}, load {ld}, mode {mode}: no request was answered")
            stats = {"p99_ms": nearest_rank(lat, 0.99), "p50_ms": nearest_rank(lat, 0.5),
                     "mean_ms": statistics.mean(lat), "measured": len(lat),
                     "blocks": a.blocks, "block_p99_ms": c["p99s"]}
            # Each block's latencies in send order (opensearch-null.py --edges trims them).
            with gzip.open(out / "latencies.jsonl.gz", "at") as f:
                f.write(json.dumps({"round": r + 1, "load": ld, "mode": mode, "blocks_ms": c["lat"]}) + "\n")
        cell = {"round": r + 1, "load": ld, "mode": mode, "rps": rps, "requests": per_block * a.blocks,
                **stats, "failures": c["failures"], "steal_ms": c["steal_ms"]}
        if mode in fm_acc:
            fa = fm_acc[mode]
            cell["fm_degrees"] = fa["degrees"]
            cell.update({k: v for k, v in fa.items() if k not in ("degrees", "recent", "finished")})
            split = fm_split(http, None, fa["recent"], fa.get("finished"))
            cell["fm_split"] = split["groups"]
            # The cell's queries one by one (run time, degree, load, sliced, refused), apart
            # from results.json: why a long query stayed at degree 1 can be read from them.
            with gzip.open(out / "fm-recent.jsonl.gz", "at") as f:
                f.write(json.dumps({"round": r + 1, "load": ld, "mode": mode, "truncated": split["truncated"],
                                    "queries": split["recent"]}) + "\n")
        cells.append(cell)
    return cells


def summarize(cells):
    """Per load: each mode's median p99 over the rounds, and the medians of FM's ratios to each
    mode paired within a round (the rounds drift together, so a pair shares its round's state)."""
    summary = []
    for ld in sorted({c["load"] for c in cells}):
        at = [c for c in cells if c["load"] == ld]
        # The run's own modes (a run with --also-yield has a second FM mode, also under --summarize).
        modes = [m for m in MODES if any(c["mode"] == m for c in at)] + sorted(
            {c["mode"] for c in at} - set(MODES))
        med = {m: statistics.median(c["p99_ms"] for c in at if c["mode"] == m) for m in modes}
        by_round = {}
        for c in at:
            by_round.setdefault(c["round"], {})[c["mode"]] = c["p99_ms"]
        pairs = [r for r in by_round.values() if len(r) == len(modes)]
        summary.append({"load": ld, "p99_ms": med, "fm_over_all": med["fm"] / med["all"],
                        "fm_over_none": med["fm"] / med["none"],
                        "paired_fm_over_all": statistics.median(r["fm"] / r["all"] for r in pairs),
                        "paired_fm_over_none": statistics.median(r["fm"] / r["none"] for r in pairs),
                        "paired_fm_over_all_each": [round(r["fm"] / r["all"], 3) for r in pairs],
                        "paired_fm_over_none_each": [round(r["fm"] / r["none"], 3) for r in pairs]})
        # A second FM mode (--also-yield): its ratios, and FM's paired ratio to it.
        for m in (m for m in modes if m.startswith("fm-")):
            summary[-1].setdefault("others", {})[m] = {
                "over_all": med[m] / med["all"], "over_none": med[m] / med["none"],
                "paired_over_all": statistics.median(r[m] / r["all"] for r in pairs),
                "paired_over_none": statistics.median(r[m] / r["none"] for r in pairs),
                "paired_fm_over_it_each": [round(r["fm"] / r[m], 3) for r in pairs]}
    return summary


def write_report(out, res):
    lines = [f"# OpenSearch with tailor-fm, live ({res['date']}, {res['cores']} cores)", "",
             f"- {res['documents']} documents in {res['segments_indexed']} segments, "
             f"search.concurrent.max_slice_count {res.get('max_slice_count') or '0 (Lucene slicing)'}; "
             f"FM's search mode {res['args'].get('fm_search_mode', 'all')}"
             + (f", decider {res['args'].get('fm_decider', 'core')}"
                if res['args'].get('fm_search_mode', 'all') == "auto" else "")
             + (f", yield {res['args']['fm_yield']}" if res['args'].get('fm_yield', 'cores') != "cores" else "")
             + "; "
             + (f"FM's cores setting {res['args']['fm_cores']} (not the machine's); "
                if res['args'].get('fm_cores') else "")
             + "".join(f"node setting {kv}; " for kv in res['args'].get('node_setting') or [])
             +
             f"table: `tailor {res['plan']}`",
             f"- capacity (mode none): {res['capacity']['capacity_rps']:.1f} queries/s "
             + (f"(given with --capacity)" if res['capacity'].get('given')
                else f"(offered {res['capacity']['offered_rps']:.0f}/s)"),
             f"- FM at {res['low_load_split']['load']:.0%} load, {res['low_load_split']['queries']} queries "
             "(the plugin's statistics, by the table row each query followed):",
             *[f"  - {k}: {g['queries']} queries; longest 5% at mean degree {g['longest_5pct_mean_degree']:.2f}; "
               f"shortest half at degree 1: {g['shortest_half_at_degree_1']:.1%}"
               for k, g in res['low_load_split']['groups'].items()], "",
             "| load | none p99 | all p99 | FM p99 | FM / all | FM / none | paired FM / all | paired FM / none |",
             "|---|---|---|---|---|---|---|---|"]
    for s in res["median_p99"]:
        m = s["p99_ms"]
        lines.append(f"| {s['load']:.0%} | {m['none']:.1f} | {m['all']:.1f} | {m['fm']:.1f} | "
                     f"{s['fm_over_all']:.2f} | {s['fm_over_none']:.2f} | {s['paired_fm_over_all']:.2f} | "
                     f"{s['paired_fm_over_none']:.2f} |")
    others = sorted({m for s in res["median_p99"] for m in s.get("others", {})})
    for m in others:
        lines += ["", f"{m}: FM with tailor.fm.yield {m[3:]}, interleaved with the modes above "
                  f"(`fm` has yield {res['args'].get('fm_yield', 'cores')}).", "",
                  f"| load | {m} p99 | {m} / all | {m} / none | paired {m} / all | paired {m} / none | "
                  f"fm / {m} (rounds) |", "|---|---|---|---|---|---|---|"]
        for s in res["median_p99"]:
            o = s["others"][m]
            lines.append(f"| {s['load']:.0%} | {s['p99_ms'][m]:.1f} | {o['over_all']:.2f} | {o['over_none']:.2f} | "
                         f"{o['paired_over_all']:.2f} | {o['paired_over_none']:.2f} | "
                         + ", ".join(f"{x:.2f}" for x in o["paired_fm_over_it_each"]) + " |")
    blocks = res["args"].get("blocks", 1)
    lines += ["", f"Medians of {max(c['round'] for c in res['cells'])} interleaved rounds (each mode's p99, and FM's "
              f"ratios paired within a round)"
              + (f"; each cell sent in {blocks} blocks, the modes taking turns" if blocks > 1 else "")
              + f"; wall {res.get('wall_s', 0):.0f} s."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

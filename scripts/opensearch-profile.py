#!/usr/bin/env python3
"""Profiles a node's own searches for `tailor plan fm`: each request of a --raw file run alone on
an idle node at degrees 1..N, timed at the client, written as tailor's profile CSV
(request,t1_ms,...,tN_ms; shared/spec/formats.md).

    python3 scripts/opensearch-profile.py --url http://127.0.0.1:9200 --raw searches.jsonl \
        --degrees 2 --out profile.csv [--repeat 3] [--limit 400]
    tailor plan fm --profile profile.csv --cores C --step-ms 0.5 --max-interval-ms Y \
        --percentile 0.99 --max-load Q --out fm-table.json

The --raw file is `tailor load`'s: JSON lines {"method", "path", "body"}. Capture the node's
searches from the application (or its slow log at threshold 0) in that form; `tailor load
--queries F --opensearch INDEX --print-requests` writes tailor's generated queries so.

Degree 1 is `search.concurrent_segment_search.mode: none`; degree d > 1 is mode `all` with
`search.concurrent.max_slice_count: d`, so a query's segments fall into d slices, as the FM paper
measured each request at every degree offline (Haque et al., ASPLOS 2015, §6). FM is off while it
measures (`tailor.fm.enabled: false`, when the plugin is installed). The cluster's transient
settings are restored at the end. Each time is the median of --repeat runs after a warm-up pass,
less the time of an empty search on the same connection (the 10th percentile of one every ten
requests: the HTTP and parsing cost every degree pays alike). Run it on an idle node: other
traffic would be measured with the queries.
"""

import argparse
import http.client
import json
import statistics
import sys
import time
from urllib.parse import urlparse

EMPTY = {"size": 0, "query": {"match_none": {}}}
KEYS = ("search.concurrent_segment_search.mode", "search.concurrent.max_slice_count", "tailor.fm.enabled")


class Conn:
    def __init__(self, url):
        u = urlparse(url)
        if u.scheme != "http" or not u.hostname:
            raise SystemExit(f"error: --url {url}: expected http://HOST:PORT")
        self.c = http.client.HTTPConnection(u.hostname, u.port or 9200, timeout=120)

    def call(self, method, path, body=None):
        data = None if body is None else (body if isinstance(body, str) else json.dumps(body))
        headers = {"content-type": "application/json"} if data is not None else {}
        self.c.request(method, path, body=data, headers=headers)
        r = self.c.getresponse()
        payload = r.read()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path} answered {r.status}: {payload[:300]!r}")
        return payload

    def timed(self, method, path, body):
        t = time.perf_counter()
        self.call(method, path, body)
        return (time.perf_counter() - t) * 1000


def read_raw(path, limit):
    out = []
    for i, line in enumerate(open(path), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            m, p = r["method"], r["path"]
        except (ValueError, KeyError) as e:
            raise SystemExit(f"error: {path}:{i}: expected {{\"method\", \"path\", \"body\"}}: {e}")
        if not p.startswith("/"):
            raise SystemExit(f"error: {path}:{i}: the path must start with /, found {p[:80]!r}")
        out.append((m, p, r.get("body")))
        if limit and len(out) == limit:
            break
    if not out:
        raise SystemExit(f"error: {path}: no requests")
    return out


def settings_for(degree, fm_present):
    s = {KEYS[0]: "none" if degree == 1 else "all", KEYS[1]: None if degree == 1 else degree}
    if fm_present:
        s[KEYS[2]] = False
    return s


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--raw", required=True)
    p.add_argument("--degrees", type=int, required=True, help="measure degrees 1..N")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--limit", type=int, default=0, help="the first K requests only")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    if a.degrees < 1 or a.repeat < 1:
        raise SystemExit("error: --degrees and --repeat must be at least 1")
    reqs = read_raw(a.raw, a.limit)
    c = Conn(a.url)
    before = json.loads(c.call("GET", "/_cluster/settings?flat_settings=true"))["transient"]
    fm_present = True
    try:
        c.call("GET", "/_tailor/fm/stats")
    except RuntimeError:
        fm_present = False
    first_path = next((pth for m, pth, _ in reqs if "_search" in pth), None)
    times = [[[] for _ in range(a.degrees)] for _ in reqs]
    base = []
    try:
        for rep in range(a.repeat + 1):  # pass 0 warms up
            for d in range(1, a.degrees + 1):
                c.call("PUT", "/_cluster/settings", {"transient": settings_for(d, fm_present)})
                for i, (m, pth, body) in enumerate(reqs):
                    if first_path and i % 10 == 0 and rep > 0:
                        base.append(c.timed("POST", first_path, EMPTY))
                    t = c.timed(m, pth, body)
                    if rep > 0:
                        times[i][d - 1].append(t)
            print(f"pass {rep}/{a.repeat} done", file=sys.stderr, flush=True)
    finally:
        restore = {k: before.get(k) for k in KEYS if fm_present or k != KEYS[2]}
        c.call("PUT", "/_cluster/settings", {"transient": restore})
    # The cost every request pays whatever its degree: a low quantile of the empty searches,
    # so that a moment of contention does not inflate it.
    overhead = sorted(base)[len(base) // 10] if base else 0.0
    t1 = statistics.median(statistics.median(t[0]) for t in times)
    if overhead > 0.5 * t1:
        print(f"warning: an empty search takes {overhead:.3f} ms, more than half the median query's "
              f"{t1:.3f} ms: the times are mostly HTTP and parsing (is the node busy?)", file=sys.stderr)
    with open(a.out, "w") as f:
        f.write("request," + ",".join(f"t{d}_ms" for d in range(1, a.degrees + 1)) + "\n")
        for i, ts in enumerate(times):
            row = [max(0.01, statistics.median(t) - overhead) for t in ts]
            f.write(f"q{i + 1:05d}," + ",".join(f"{x:.4f}" for x in row) + "\n")
    print(f"{len(reqs)} requests at degrees 1..{a.degrees}, {a.repeat} runs each; an empty search took "
          f"{overhead:.3f} ms (subtracted); wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

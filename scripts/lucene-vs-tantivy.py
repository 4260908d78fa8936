#!/usr/bin/env python3
"""Issue 40's side-by-side: the same queries on the same corpus, measured on Lucene
(dev.tailor.lucene.LuceneProfile) and on tailor's tantivy workload (`tailor profile --workload
search`), each query alone at degrees 1..N with one slice per segment; then FM planned from each
profile and simulated against SEQ.

    python3 scripts/lucene-vs-tantivy.py --lucene P.csv --lucene-units U.csv \
        --tantivy P.csv --tantivy-units U.csv --queries queries.jsonl --cores 2 [--out report.md]

Prints markdown: the demand of each engine (mean, median, p99 of t1), by query kind; the speedup
at each degree; how far a query's slices are from equal (the longest slice over the mean); the
per-query agreement (Pearson on log t1); and FM's simulated p99 over SEQ's for each engine.
"""

import argparse
import csv
import json
import math
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def read_profile(path):
    rows = list(csv.reader(open(path)))
    degs = len(rows[0]) - 1
    return [(r[0], [float(x) for x in r[1:]]) for r in rows[1:] if r], degs


def read_units(path):
    """Each query's slice times at degree 1, in the order the file lists the queries (tailor names
    them by number, LuceneProfile by the profile's request name)."""
    units = defaultdict(list)
    for r in list(csv.reader(open(path)))[1:]:
        if r:
            units[r[0]].append(float(r[2]))
    return list(units.values())


def kinds(queries, n):
    out = []
    for line in open(queries):
        if not line.strip():
            continue
        q = json.loads(line)
        k = q["kind"]
        if k in ("and", "or"):
            k += str(len(q["terms"]))
        elif k == "fuzzy":
            k += str(q["distance"])
        out.append(k)
        if len(out) == n:
            break
    return out


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(p * len(xs)) - 1))]


def pearson(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (sx * sy)


def skew(units, n):
    """Median over the first n queries of the longest slice over the mean slice (1 = even)."""
    r = []
    for u in units[:n]:
        if u and sum(u) > 0:
            r.append(max(u) / statistics.mean(u))
    return statistics.median(r) if r else float("nan")


def simulate(tailor, profile, table, cores, loads, mean_ms, requests, seed):
    out = {}
    for ld in loads:
        rps = ld * cores * 1000 / mean_ms
        res = {}
        for pol in ("seq", "fm"):
            args = [tailor, "simulate", "--cores", str(cores), "--policy", pol, "--demand", f"profile:{profile}",
                    "--arrivals", "poisson", "--rps", f"{rps:.3f}", "--requests", str(requests), "--seed", str(seed)]
            if pol == "fm":
                args += ["--table", str(table)]
            r = subprocess.run(args + ["--format", "json"], cwd=REPO, capture_output=True, text=True)
            if r.returncode != 0:
                r = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"error: tailor simulate failed: {r.stderr[-800:]}")
            s = json.loads(r.stdout[r.stdout.index("{"):])
            res[pol] = s["latency_ms"]["p99"]
        out[ld] = res
    return out


def plan(tailor, profile, cores, out):
    t1 = [t[0] for _, t in read_profile(profile)[0]]
    y = math.ceil(min(25.0, max(2.0, max(t1))) / 0.5) * 0.5
    args = [tailor, "plan", "fm", "--profile", str(profile), "--cores", str(cores), "--max-degree", str(min(cores, 8)),
            "--step-ms", "0.5", "--max-interval-ms", str(y), "--percentile", "0.99", "--max-load",
            str(max(32, 4 * cores)), "--out", str(out)]
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"error: tailor plan fm failed: {r.stderr[-800:]}")
    return json.load(open(out))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lucene", required=True)
    p.add_argument("--lucene-units", required=True)
    p.add_argument("--tantivy", required=True)
    p.add_argument("--tantivy-units", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--tailor", default=str(REPO / "target" / "release" / "tailor"))
    p.add_argument("--loads", default="0.3,0.45,0.6,0.75")
    p.add_argument("--requests", type=int, default=100000)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    lp, ldeg = read_profile(a.lucene)
    tp, tdeg = read_profile(a.tantivy)
    n = min(len(lp), len(tp))
    lp, tp = lp[:n], tp[:n]
    deg = min(ldeg, tdeg)
    ks = kinds(a.queries, n)
    lu, tu = read_units(a.lucene_units), read_units(a.tantivy_units)
    L = []
    add = L.append
    add(f"{n} queries (the first of `{Path(a.queries).name}`), each alone, one slice per segment.")
    add("")
    add("| | Lucene 9.12.3 | tantivy (tailor) | Lucene / tantivy |")
    add("|---|---|---|---|")
    for name, f in (("mean t1 (ms)", statistics.mean), ("median t1 (ms)", statistics.median),
                    ("p99 t1 (ms)", lambda xs: pct(xs, 0.99)), ("longest t1 (ms)", max)):
        lv, tv = f([t[0] for _, t in lp]), f([t[0] for _, t in tp])
        add(f"| {name} | {lv:.2f} | {tv:.2f} | {lv / tv:.2f} |")
    for d in range(2, deg + 1):
        lv = sum(t[0] for _, t in lp) / sum(t[d - 1] for _, t in lp)
        tv = sum(t[0] for _, t in tp) / sum(t[d - 1] for _, t in tp)
        add(f"| speedup at degree {d} (work-weighted) | {lv:.2f} | {tv:.2f} | |")
    ls, ts = skew(lu, n), skew(tu, n)
    add(f"| longest slice / mean slice (median query) | {ls:.2f} | {ts:.2f} | |")
    r = pearson([math.log(t[0]) for _, t in lp], [math.log(t[0]) for _, t in tp])
    add(f"| per-query agreement: Pearson r of log t1 | {r:.2f} | | |")
    add("")
    add(f"| kind | queries | Lucene mean t1 | tantivy mean t1 | Lucene / tantivy | Lucene speedup at {deg} | tantivy speedup at {deg} |")
    add("|---|---|---|---|---|---|---|")
    by = defaultdict(list)
    for i, k in enumerate(ks):
        by[k].append(i)
    for k in sorted(by, key=lambda k: -len(by[k])):
        idx = by[k]
        l1 = sum(lp[i][1][0] for i in idx)
        t1 = sum(tp[i][1][0] for i in idx)
        lsd = l1 / sum(lp[i][1][deg - 1] for i in idx)
        tsd = t1 / sum(tp[i][1][deg - 1] for i in idx)
        add(f"| {k} | {len(idx)} | {l1 / len(idx):.2f} | {t1 / len(idx):.2f} | {l1 / t1:.2f} | {lsd:.2f} | {tsd:.2f} |")
    add("")
    # FM planned from each profile, simulated against SEQ (the FM paper's model, uncalibrated).
    loads = [float(x) for x in a.loads.split(",")]
    out_dir = Path(a.out).parent if a.out else Path("/tmp")
    sims = {}
    for eng, prof in (("Lucene", a.lucene), ("tantivy", a.tantivy)):
        table = plan(a.tailor, prof, a.cores, out_dir / f"fm-table-{eng.lower()}.json")
        mean = statistics.mean(t[0] for _, t in read_profile(prof)[0])
        sims[eng] = (table, simulate(a.tailor, prof, out_dir / f"fm-table-{eng.lower()}.json", a.cores, loads, mean,
                                     a.requests, 1))
    add(f"FM planned from each profile (`tailor plan fm --cores {a.cores}`), simulated against SEQ on "
        f"{a.cores} modelled cores, {a.requests} Poisson requests, loads as fractions of each engine's own "
        "capacity (cores / mean t1):")
    add("")
    add("| load | Lucene FM / SEQ p99 | tantivy FM / SEQ p99 |")
    add("|---|---|---|")
    for ld in loads:
        cells = [sims[e][1][ld]["fm"] / sims[e][1][ld]["seq"] for e in ("Lucene", "tantivy")]
        add(f"| {ld:.0%} | {cells[0]:.2f} | {cells[1]:.2f} |")
    add("")
    for eng in ("Lucene", "tantivy"):
        rows = sims[eng][0]["rows"][:4]
        add(f"- {eng}'s table, loads 1-4: " + "; ".join(
            f"{r['load']}: {r['intervals_ms']}{' on exit' if r['admit_on_exit'] else ''}" for r in rows))
    text = "\n".join(L) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Issue #24's two remaining simulated questions, in the fan-out simulator:

1. Tail amplification: the p99 of one server against the p99 of a query over S shards,
   as S grows (one replica per shard, so no reissue), with the prediction for
   independent shards: the query's p99 is one shard's 0.99^(1/S) quantile.
2. Combining policies: each replica runs SEQ or FM (planned for the replica by `tailor
   plan fm`, the paper's defaults), with no reissue or with SingleR planned by `tailor
   plan reissue` for the budget from a log under the same server policy (iterated once).

    cargo build --release && python3 scripts/fanout-combine.py [--quick]

Writes runs/fanout/<date>-amplification.{txt,json} and <date>-combine.{txt,json}.
"""

import argparse
import csv
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

TAILOR = "target/release/tailor"


def sh(*args):
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, args))}\n{out.stderr}")
    return out.stdout


def quantile(values, q):
    """The q-quantile of values (nearest rank, as the summaries' percentiles)."""
    v = sorted(values)
    i = min(len(v) - 1, max(0, int(-(-q * len(v) // 1)) - 1))
    return v[i]


def fan(shards, replicas, cores, policy, demand, rps, queries, seed, noise, reissue="none",
        records=None, tables=()):
    args = [TAILOR, "simulate", "--shards", shards, "--replicas", replicas, "--cores", cores,
            "--policy", policy, "--demand", demand, "--arrivals", "poisson", "--rps", rps,
            "--requests", queries, "--seed", seed, "--reissue", reissue]
    if noise and noise != "none":
        args += ["--noise", noise]
    if records:
        args += ["--records", records]
    for t in tables:
        args += ["--table", t]
    return json.loads(sh(*args))


def amplification(o, tmp, started):
    lines = [f"# Tail amplification: S shards x 1 replica of {o.cores} cores, SEQ, `{o.demand}`, "
             f"noise {o.noise}, {int(100 * o.load)}% utilization per server, "
             f"min({o.amplify_queries}, 10^7 / shards) queries, seed {o.seed}",
             f"# {started:%Y-%m-%d %H:%M} UTC", "",
             "| shards | queries | query p50 ms | query p99 ms | p99 / one server's p99 | predicted p99 (independent shards) |",
             "|---|---|---|---|---|---|"]
    rps = o.load * o.cores * 1000.0 / o.mean_ms
    one = os.path.join(tmp, "one.csv")
    # Long runs, so that each replica sees many stalls (0.1 a second is 4 in 100,000
    # queries at 2,400 a second): up to --amplify-queries, at most 10 million shard
    # requests.
    base = fan(1, 1, o.cores, "seq", o.demand, rps, o.amplify_queries, o.seed, o.noise, records=one)
    with open(one) as f:
        lat = [float(r["latency_ms"]) for r in csv.DictReader(f)]
    rows = []
    for s in o.amplify:
        queries = min(o.amplify_queries, 10_000_000 // s)
        r = base if s == 1 else fan(s, 1, o.cores, "seq", o.demand, rps, queries, o.seed, o.noise)
        predicted = quantile(lat, 0.99 ** (1.0 / s))
        rows.append({"shards": s, "queries": queries, "p50_ms": r["latency_ms"]["p50"],
                     "p99_ms": r["latency_ms"]["p99"], "predicted_p99_ms": predicted})
        lines.append(f"| {s} | {queries} | {r['latency_ms']['p50']:.2f} | {r['latency_ms']['p99']:.2f} | "
                     f"{r['latency_ms']['p99'] / base['latency_ms']['p99']:.2f}x | {predicted:.2f} |")
        print(lines[-1], file=sys.stderr)
    return lines, rows


def combine(o, tmp, started):
    profile = os.path.join(tmp, "lucene.csv")
    sh(TAILOR, "profile", "generate", "--demand", o.combine_demand, "--requests", 10000,
       "--max-degree", 4, "--seed", 1, "--out", profile)
    desc = sh(TAILOR, "profile", "describe", profile)
    mean = float(next(l for l in desc.splitlines() if l.startswith("work_ms mean")).split()[-1])
    fm = os.path.join(tmp, "fm.json")
    sh(TAILOR, "plan", "fm", "--profile", profile, "--max-degree", 4, "--step-ms", 5,
       "--max-interval-ms", 500, "--percentile", 0.99, "--max-load", 60, "--cores", o.cores,
       "--out", fm)
    demand = f"profile:{profile}"
    lines = [f"# Combining: {o.shards} shards x {o.replicas} replicas of {o.cores} cores, "
             f"`{o.combine_demand}` per shard request (mean {mean:.1f} ms, degrees 1-4), "
             f"noise {o.noise}, budget {o.budget}, {o.queries} queries, seed {o.seed}",
             f"# {started:%Y-%m-%d %H:%M} UTC", "",
             "| load | SEQ | SEQ + SingleR | FM | FM + SingleR | best |",
             "|---|---|---|---|---|---|"]
    rows = []
    for load in o.loads:
        # Each replica serves 1/R of its shard's requests: per-server utilization `load`.
        rps = load * o.cores * 1000.0 / mean * o.replicas
        cells = {}
        for policy in ["seq", "fm"]:
            tables = [fm] if policy == "fm" else []
            log = os.path.join(tmp, f"{policy}-{load}.csv")
            none = fan(o.shards, o.replicas, o.cores, policy, demand, rps, o.queries, o.seed,
                       o.noise, records=log, tables=tables)
            plan = json.loads(sh(TAILOR, "plan", "reissue", "--records", log, "--budget", o.budget))
            log2 = os.path.join(tmp, f"{policy}-{load}-2.csv")
            fan(o.shards, o.replicas, o.cores, policy, demand, rps, o.queries, o.seed + 100, o.noise,
                reissue=plan["policy"], records=log2, tables=tables)
            plan = json.loads(sh(TAILOR, "plan", "reissue", "--records", log2, "--budget", o.budget))
            single = fan(o.shards, o.replicas, o.cores, policy, demand, rps, o.queries, o.seed,
                         o.noise, reissue=plan["policy"], tables=tables)
            cells[policy] = none
            cells[policy + "+sr"] = single
            cells[policy + "+sr"]["planned"] = plan["policy"]
        p99 = {k: v["latency_ms"]["p99"] for k, v in cells.items()}
        best = min(p99, key=p99.get)
        rows.append({"load": load, "rps": rps, **{k: {"p99_ms": p99[k],
                     "reissue_rate": cells[k].get("reissue_rate"),
                     "planned": cells[k].get("planned")} for k in cells}})
        fmt = lambda k: (f"{p99[k]:.1f}" + (f" ({100 * cells[k]['reissue_rate']:.1f}%)"
                                              if k.endswith("+sr") else ""))
        lines.append(f"| {int(100 * load)}% | {fmt('seq')} | {fmt('seq+sr')} | {fmt('fm')} | "
                     f"{fmt('fm+sr')} | {best} |")
        print(lines[-1], file=sys.stderr)
    return lines, rows


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--cores", type=int, default=16)
    a.add_argument("--demand", default="scale:0.0075:shape:lucene")
    a.add_argument("--mean-ms", type=float, default=2.0, help="the amplification demand's mean work")
    a.add_argument("--noise", default="0.1:100")
    a.add_argument("--load", type=float, default=0.3)
    a.add_argument("--amplify", default="1,2,5,10,20,50,100")
    a.add_argument("--amplify-queries", type=int, default=1_000_000)
    a.add_argument("--tag", default="", help="appended to the output files' names")
    a.add_argument("--shards", type=int, default=10)
    a.add_argument("--replicas", type=int, default=3)
    a.add_argument("--combine-demand", default="scale:0.075:shape:lucene")
    a.add_argument("--loads", default="0.3,0.5,0.7")
    a.add_argument("--budget", type=float, default=0.05)
    a.add_argument("--queries", type=int, default=100_000)
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--quick", action="store_true")
    a.add_argument("--only", choices=["amplification", "combine"])
    o = a.parse_args()
    o.amplify = [int(x) for x in o.amplify.split(",")]
    o.loads = [float(x) for x in o.loads.split(",")]
    if o.quick:
        o.queries, o.amplify_queries, o.amplify, o.loads = 10_000, 10_000, [1, 10], [0.3]
    started = datetime.datetime.now(datetime.timezone.utc)
    stem = f"runs/fanout/{started:%Y-%m-%d}"
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in [("amplification", amplification), ("combine", combine)]:
            if o.only and o.only != name:
                continue
            lines, rows = fn(o, tmp, started)
            text = "\n".join(lines) + "\n"
            print(text)
            if not o.quick:
                with open(f"{stem}-{name}{o.tag}.txt", "w") as f:
                    f.write(text)
                with open(f"{stem}-{name}{o.tag}.json", "w") as f:
                    json.dump({"settings": vars(o), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

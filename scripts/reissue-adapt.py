#!/usr/bin/env python3
"""Issue #39's acceptance for the adaptive reissue planner: SingleR planned with
`tailor plan reissue --adapt` against hedging held to the same budget, on S shards x R
replicas of M cores with replica stalls, at a few utilizations.

    cargo build --release && python3 scripts/reissue-adapt.py [--quick]
    # the acceptance run of docs/fanout.md: --queries 1000000 --seeds 3

Per utilization: a run without reissue (seed 1000) logs every shard request; `tailor plan
reissue` plans SingleR from it as is, and again with --adapt, which simulates the
fan-out under each candidate (seeds 1001.., --adapt-seeds of them) until the reissue rate
is within 90-100% of the budget; hedging takes the least percentile (to 0.05, by bisection)
whose rate stays within the budget on seed 1001 (docs/fanout.md's "hedging at the
budget"), hedging as `tailor fanout` does it (tower's hedge: per shard, the previous
period's percentile; --hedge-period-s 1 here, so that its first period falls in the
warm-up); then each policy runs with seeds 1..--seeds, and the table shows the median
p99 and reissue rate. Writes runs/fanout/<date>-adapt.{txt,json}.
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

TAILOR = "target/release/tailor"


def run(args):
    out = subprocess.run([TAILOR, *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--shards", type=int, default=10)
    a.add_argument("--replicas", type=int, default=3)
    a.add_argument("--cores", type=int, default=16)
    a.add_argument("--demand", default="lognormal:2:3")
    a.add_argument("--mean-ms", type=float, default=2.0, help="the demand's mean work")
    a.add_argument("--noise", default="0.2:100")
    a.add_argument("--budget", type=float, default=0.05)
    a.add_argument("--queries", type=int, default=100_000)
    a.add_argument("--log-queries", type=int, default=300_000,
                   help="queries in the log planned from (at most this and --queries; a shard log "
                        "of 10 shards x 300,000 queries is about 100 MB, and input files stop at 256 MiB)")
    a.add_argument("--seeds", type=int, default=3)
    a.add_argument("--adapt-seeds", type=int, default=1)
    a.add_argument("--loads", default="0.3,0.6")
    a.add_argument("--hedge-period-s", type=float, default=1.0,
                   help="hedging's histogram period in the simulations (tailor fanout's default is 5 s)")
    a.add_argument("--quick", action="store_true")
    a.add_argument("--out", default=None)
    args = a.parse_args()
    if args.quick:
        args.queries, args.seeds = 20_000, 1
    fanout = ["--shards", str(args.shards), "--replicas", str(args.replicas), "--cores", str(args.cores),
              "--demand", args.demand, "--noise", args.noise]

    def sim(rps, seed, reissue, records=None):
        n = min(args.log_queries, args.queries) if records else args.queries
        extra = ["--records", records] if records else []
        if reissue.startswith("hedge:"):
            # tower's hedge waits a whole period before its first hedge; a 1 s period
            # keeps that start inside the default warm-up (5% of the queries) at these
            # rates, with thousands of latencies per shard per period.
            extra += ["--hedge-period-s", str(args.hedge_period_s)]
        return run(["simulate", *fanout, "--policy", "seq", "--arrivals", "poisson", "--rps", str(rps),
                    "--seed", str(seed), "--reissue", reissue, "--requests", str(n), *extra])

    tmp = tempfile.mkdtemp(prefix="tailor-adapt-")
    lines = [f"fan-out: {args.shards} shards x {args.replicas} replicas of {args.cores} cores, seq, demand "
             f"{args.demand}, noise {args.noise}, budget {args.budget:.0%}, p99 of {args.queries} queries, "
             f"median of seeds 1-{args.seeds}; adapted on seeds 1001-{1000 + args.adapt_seeds}",
             f"{'load':>5} {'rps':>8} | {'none':>7} | {'hedging at the budget':>30} | {'SingleR (plan)':>34} | "
             f"{'SingleR (adapted)':>44} | r/h    r/none"]
    rows = []
    for load in [float(x) for x in args.loads.split(",")]:
        rps = round(load * args.cores * args.replicas * 1000.0 / args.mean_ms, 3)
        log = os.path.join(tmp, f"log-{load}.csv")
        sim(rps, 1000, "none", log)
        plan_cmd = ["plan", "reissue", "--records", log, "--budget", str(args.budget)]
        first = run(plan_cmd)
        adapt_cmd = [*plan_cmd, "--adapt", *fanout[2:], "--requests", str(args.queries), "--rps", str(rps), "--seed", "1001",
                     "--seeds", str(args.adapt_seeds)]
        adapted = run(adapt_cmd)
        # Hedging at the budget: the least percentile, to 0.05, whose rate on seed 1001
        # stays within the budget (the rate falls as the percentile grows).
        low, high = 90.0, 99.95
        while high - low > 0.05 + 1e-9:
            mid = round((low + high) / 2 / 0.05) * 0.05
            if mid in (low, high):
                break
            if sim(rps, 1001, f"hedge:{mid:g}")["reissue_rate"] <= args.budget:
                high = mid
            else:
                low = mid
        hedge = f"hedge:{high:g}"
        policies = {"none": "none", "hedge": hedge, "plan": first["policy"], "adapted": adapted["policy"]}
        result = {"load": load, "rps": rps, "planned": {"plan": first, "adapted": adapted},
                  "policies": policies, "adapt_command": "tailor " + " ".join(adapt_cmd), "runs": {}}
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
            jobs = {(name, seed): pool.submit(sim, rps, seed, policy)
                    for name, policy in policies.items() for seed in range(1, args.seeds + 1)}
        for name in policies:
            runs = [jobs[(name, seed)].result() for seed in range(1, args.seeds + 1)]
            result["runs"][name] = {
                "p99": statistics.median(r["latency_ms"]["p99"] for r in runs),
                "rate": statistics.median(r["reissue_rate"] for r in runs),
                "runs": [[r["latency_ms"]["p99"], r["reissue_rate"]] for r in runs],
            }
        n, h, f, r = (result["runs"][k]["p99"] for k in ("none", "hedge", "plan", "adapted"))
        pct = lambda k: f"{100 * result['runs'][k]['rate']:4.2f}%"
        info = adapted["adapt"]
        lines.append(f"{100 * load:>4.0f}% {rps:>8.1f} | {n:>7.2f} | {h:>7.2f} ({pct('hedge')}, {hedge:>10}) | "
                     f"{f:>7.2f} ({pct('plan')}, {first['policy']}) | {r:>7.2f} ({pct('adapted')}, "
                     f"{adapted['policy']}, x{info['budget_multiplier']:.2f} in {info['iterations']}) | "
                     f"{r / h:5.3f} {r / n:5.3f}")
        print(lines[-1], flush=True)
        rows.append(result)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d-%H%M")
    out = args.out or f"runs/fanout/{stamp}-adapt"
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".txt", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(out + ".json", "w") as f:
        json.dump({"args": vars(args), "rows": rows}, f, indent=1)
    print(f"wrote {out}.txt and .json")


if __name__ == "__main__":
    main()

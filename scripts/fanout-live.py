#!/usr/bin/env python3
"""Issue #24's live experiment: S shards x R replicas of `tailor serve --workload search
--shard I/S` on this machine, one replica stalling at random (--noise), `tailor fanout`
in front, `tailor load` driving it; no reissue, SingleR and SingleD planned by `tailor
plan reissue` for a budget, and tower's hedging at the budget's percentile.

    cargo build --release && python3 scripts/fanout-live.py [--rounds 3]

Per round: a run without reissue logs every shard request (the planning log), `tailor
plan reissue` plans for --margin x the budget, and the plan is re-planned --iterations
times from a log taken under it (the paper's adaptation to the load reissues add);
then each policy runs once, in a shuffled order, each against a fresh front end over the same
replicas. The replicas restart every round (their stalls seeded by the round). Every
query must be answered 2xx or refused with a reason: the script fails otherwise.
Writes runs/fanout/<date>-live.{txt,json}.
"""

import argparse
import csv
import datetime
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

TAILOR = "target/release/tailor"
ADDR = re.compile(r"http://([0-9.]+:[0-9]+)")


def start(args, log):
    """Starts a tailor service with `args`; returns the process and its address."""
    err = open(log, "w+")
    p = subprocess.Popen([TAILOR, *args], stderr=err, stdout=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline:
        err.seek(0)
        text = err.read()
        m = ADDR.search(text)
        if m:
            return p, m.group(1)
        if p.poll() is not None:
            sys.exit(f"{' '.join(args)} exited: {text.strip()}")
        time.sleep(0.05)
    p.kill()
    sys.exit(f"{' '.join(args)}: no address after 300 s")


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def load(addr, queries, rps, count, seed):
    out = subprocess.run([TAILOR, "load", "--format", "json", "--url", f"http://{addr}", "--queries", queries,
                          "--rps", str(rps), "--requests", str(count), "--seed", str(seed),
                          "--timeout-s", "10"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"load: {out.stderr.strip()}")
    return json.loads(out.stdout)


def reissue_rate(records):
    with open(records) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return 0.0, 0
    return sum(r["reissued"] == "true" for r in rows) / len(rows), len(rows)


def run_policy(shards, policy, queries, rps, count, seed, tmp, tag):
    records = os.path.join(tmp, f"{tag}.csv")
    front, addr = start(["fanout", "--listen", "127.0.0.1:0", "--reissue", policy,
                         "--seed", str(seed), "--records", records,
                         *[a for s in shards for a in ("--shard", ",".join(s))]],
                        os.path.join(tmp, f"{tag}.log"))
    try:
        summary = load(addr, queries, rps, count, seed)
    finally:
        stop(front)
    answered = summary["completed"] + summary["unavailable"] + summary["errors"]
    if summary["failed"] or answered != summary["requests"]:
        sys.exit(f"{policy}: {summary['failed']} queries without an answer: {summary}")
    rate, rows = reissue_rate(records)
    return {"policy": policy, "p99_ms": summary["latency_ms"]["p99"],
            "p50_ms": summary["latency_ms"]["p50"], "mean_ms": summary["latency_ms"]["mean"],
            "completed": summary["completed"], "refused": summary["unavailable"] + summary["errors"],
            "reissue_rate": rate, "shard_requests": rows,
            "steal_ms": (summary.get("host") or {}).get("steal_ms"),
            "max_hiccup_ms": (summary.get("host") or {}).get("max_hiccup_ms"),
            "records": records}


def plan(records, budget, shards):
    out = subprocess.run([TAILOR, "plan", "reissue", "--records", records, "--budget", str(budget),
                          "--shards", str(shards)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stderr.strip())
    return json.loads(out.stdout)


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--shards", type=int, default=2)
    a.add_argument("--replicas", type=int, default=2)
    a.add_argument("--noise", default="0.5:100", help="RATE_PER_S:LENGTH_MS of the noisy replica")
    a.add_argument("--noisy", type=int, default=1, help="replicas with noise (shard 0's first ones)")
    a.add_argument("--budget", type=float, default=0.05)
    a.add_argument("--margin", type=float, default=0.9,
                   help="plan SingleR and SingleD for margin x budget (runs scatter around the plan)")
    a.add_argument("--iterations", type=int, default=1,
                   help="re-plans from a log taken under the previous plan")
    a.add_argument("--rps", type=float, default=40.0)
    a.add_argument("--queries", type=int, default=2400, help="queries per run")
    a.add_argument("--rounds", type=int, default=3)
    a.add_argument("--query-file", default=os.path.expanduser(
        "~/.cache/tailor/queries-gcide-16seg-2000q-seed1-mix2.jsonl"))
    a.add_argument("--out", default=None)
    o = a.parse_args()
    if not os.path.exists(o.query_file):
        sys.exit(f"{o.query_file}: no such file (run `tailor demo --quick` once, or give --query-file)")
    # tower's hedge has no budget: its percentile is the budget's, unplanned.
    hedge_p = round(100 * (1 - o.budget), 4)
    results = []
    started = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(1, o.rounds + 1):
            procs, shards = [], []
            for s in range(o.shards):
                urls = []
                for r in range(o.replicas):
                    noisy = s * o.replicas + r < o.noisy
                    args = ["serve", "--workload", "search", "--shard", f"{s}/{o.shards}",
                            "--policy", "seq", "--cores", "1", "--workers", "1",
                            "--listen", "127.0.0.1:0", "--seed", str(rnd * 100 + s * 10 + r)]
                    if noisy:
                        args += ["--noise", o.noise]
                    p, addr = start(args, os.path.join(tmp, f"serve-{rnd}-{s}-{r}.log"))
                    procs.append(p)
                    urls.append(f"http://{addr}")
                shards.append(urls)
            try:
                base = run_policy(shards, "none", o.query_file, o.rps, o.queries, rnd, tmp, f"log-{rnd}")
                planned = plan(base["records"], o.margin * o.budget, o.shards)
                for it in range(o.iterations):
                    # The paper's adaptation: re-plan from a log taken under the plan.
                    under = run_policy(shards, planned["policy"], o.query_file, o.rps, o.queries,
                                       rnd + 1000 * (it + 1), tmp, f"log-{rnd}-{it + 1}")
                    planned = plan(under["records"], o.margin * o.budget, o.shards)
                if not planned.get("single_d"):
                    sys.exit(f"the planner named no SingleD within the budget: {planned}")
                policies = ["none", planned["policy"], planned["single_d"]["policy"], f"hedge:{hedge_p}"]
                order = policies[:]
                random.Random(rnd).shuffle(order)
                print(f"round {rnd}: planned {planned['policy']} and {planned['single_d']['policy']} "
                      f"from a log with p99 {base['p99_ms']:.1f} ms; order {order}", file=sys.stderr)
                for i, policy in enumerate(order):
                    r = run_policy(shards, policy, o.query_file, o.rps, o.queries, rnd + 10 * i, tmp,
                                   f"{rnd}-{i}")
                    r["round"] = rnd
                    r["kind"] = ["none", "single-r", "single-d", "hedge"][policies.index(policy)]
                    del r["records"]
                    results.append(r)
                    print(f"  {r['kind']:9} {policy:28} p99 {r['p99_ms']:7.2f} ms  p50 {r['p50_ms']:5.2f}  "
                          f"reissued {100 * r['reissue_rate']:.2f}%  refused {r['refused']}  "
                          f"steal {r['steal_ms']} ms", file=sys.stderr)
            finally:
                for p in procs:
                    stop(p)
    kinds = ["none", "single-r", "single-d", "hedge"]
    med = {k: statistics.median(r["p99_ms"] for r in results if r["kind"] == k) for k in kinds}
    rate = {k: statistics.median(r["reissue_rate"] for r in results if r["kind"] == k) for k in kinds}
    lines = [f"# Live fan-out: {o.shards} shards x {o.replicas} replicas of `serve --workload search "
             f"--policy seq --workers 1`, noise {o.noise} on {o.noisy} replica(s), {o.rps} queries/s, "
             f"{o.queries} queries per run, budget {o.budget} (planned at {o.margin} of it, "
             f"re-planned {o.iterations} time(s) under the plan), {o.rounds} rounds",
             f"# {started:%Y-%m-%d %H:%M} UTC to {datetime.datetime.now(datetime.timezone.utc):%H:%M} UTC; "
             f"machine: {os.cpu_count()} CPUs", "",
             "| policy | p99 ms per round | median p99 ms | vs none | median reissue rate |",
             "|---|---|---|---|---|"]
    for k in kinds:
        per = ", ".join(f"{r['p99_ms']:.2f}" for r in results if r["kind"] == k)
        lines.append(f"| {k} | {per} | {med[k]:.2f} | {med[k] / med['none']:.2f}x | {100 * rate[k]:.2f}% |")
    verdict = med["single-r"] <= 0.8 * med["none"]
    lines += ["", f"SingleR at most 0.8x no reissue (median of {o.rounds}): "
              f"{'yes' if verdict else 'no'} ({med['single-r'] / med['none']:.2f}x)"]
    text = "\n".join(lines) + "\n"
    print(text)
    out = o.out or f"runs/fanout/{started:%Y-%m-%d}-live"
    with open(out + ".txt", "w") as f:
        f.write(text)
    with open(out + ".json", "w") as f:
        json.dump({"settings": vars(o), "runs": results}, f, indent=1)


if __name__ == "__main__":
    main()

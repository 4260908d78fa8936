#!/usr/bin/env python3
"""What a thread really costs, on this machine: live against every thread model (issue #38).

Search on 16 segments: SEQ, FIX-4, FIX-16, FM with a degree-16 table planned with
parallelism priced at zero (`--thread-model busy`, as the 16-core projection planned it)
under the core guard, and the same table on the FM paper's unguarded runtime, live at
30%, 45% and 60% of SEQ's capacity measured here, in interleaved rounds. Beside every
cell the simulator under each thread model: the FM paper's `held` (d threads), `busy`
(s(d) threads) and the charged model calibrated from the SEQ runs (`tailor calibrate`).
This is the check that would have caught, on 2 cores, the collapse seen at 16.

Writes DIR/cells.jsonl (each live summary with `label`, `load`, `round`, and `sim`, the
simulated summaries by model) and DIR/report.md.

    scripts/threads-2core.py [--rounds 3] [--requests 4000] [--out DIR] [--quick]
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOADS = [0.3, 0.45, 0.6]
MODELS = ["held", "busy", "charged"]


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


def tailor(args, cmd, check=True):
    r = subprocess.run([args.tailor] + cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit(f"tailor {' '.join(cmd)} failed:\n{r.stderr}")
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tailor", default=os.path.join(ROOT, "target/release/tailor"))
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=4000)
    p.add_argument("--queries", type=int, default=400)
    p.add_argument("--quantum-ms", type=float, default=0.5)
    p.add_argument("--out", default=time.strftime("threads-2core-%Y%m%d-%H%M%S"))
    p.add_argument("--resimulate", action="store_true",
                   help="keep the live cells of an earlier run in --out; calibrate and simulate again")
    p.add_argument("--quick", action="store_true", help="1 round, 1,000 requests, 100 queries")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.requests, args.queries = 1, 1000, 100
    os.makedirs(args.out, exist_ok=True)
    out = lambda name: os.path.join(args.out, name)
    m = args.cores

    profile = out("profile.csv")
    if args.resimulate:
        return resimulate(args, out, profile)
    log("profiling the queries at degrees 1..16")
    tailor(args, ["profile", "--workload", "search", "--degrees", "1..16", "--repeat", "3",
                  "--requests", str(args.queries), "--out", profile])
    rows = [line.split(",") for line in open(profile).read().split("\n")[1:] if line]
    mean_t1 = statistics.mean(float(r[1]) for r in rows)
    common = ["--workload", "search", "--search-profile", profile, "--cores", str(m),
              "--quantum-ms", str(args.quantum_ms)]

    # SEQ's capacity: the throughput sustained offered 98% of the cores' nominal rate.
    nominal = m * 1000.0 / mean_t1
    records = out("capacity-records.csv")
    tailor(args, ["run", "--policy", "seq", "--rps", f"{0.98 * nominal:.1f}", "--requests",
                  str(max(1000, int(nominal * 3))), "--seed", "99", "--records", records]
           + common)
    rec = [line.split(",") for line in open(records).read().split("\n")[1:] if line]
    capacity = len(rec) / (max(float(x[3]) for x in rec) - min(float(x[1]) for x in rec)) * 1000
    json.dump({"capacity_rps": capacity, "nominal_rps": nominal, "mean_t1_ms": mean_t1},
              open(out("capacity.json"), "w"))
    log(f"SEQ's capacity {capacity:.0f}/s ({capacity / nominal:.2f} of {m} cores / "
        f"{mean_t1:.2f} ms)")

    tailor(args, ["plan", "fm", "--profile", profile, "--cores", str(m), "--max-degree", "16",
                  "--degrees", "1,2,4,8,16", "--step-ms", "0.5", "--max-interval-ms", "22.5",
                  "--percentile", "0.99", "--max-load", "32", "--thread-model", "busy",
                  "--no-check", "--out", out("fm-busy-16.json")])
    policies = policies_for(out)
    cells = []
    rng = random.Random(38)
    for rnd in range(args.rounds):
        todo = [(label, li) for label in policies for li in range(len(LOADS))]
        rng.shuffle(todo)
        for label, li in todo:
            load = LOADS[li]
            seed = 1000 * (rnd + 1) + li
            r = tailor(args, ["run", "--rps", f"{load * capacity:.1f}", "--requests",
                              str(args.requests), "--seed", str(seed)] + policies[label] + common)
            s = json.loads(r.stdout)
            s.update(label=label, load=load, round=rnd, sim={})
            cells.append(s)
            log(f"round {rnd + 1} {label:13s} {load:.0%}: p99 {s['latency_ms']['p99']:.2f} ms")
        report(args, cells, capacity)
    simulate_cells(args, out, profile, cells, capacity)


def policies_for(out):
    table = ["--table", out("fm-busy-16.json")]
    return {
        "SEQ": ["--policy", "seq"],
        "FIX-4": ["--policy", "fix:4"],
        "FIX-16": ["--policy", "fix:16"],
        "FM": ["--policy", "fm"] + table,
        "FM-unguarded": ["--policy", "fm"] + table + ["--no-guard"],
    }


def resimulate(args, out, profile):
    cells = [json.loads(line) for line in open(out("cells.jsonl"))]
    for c in cells:
        c["sim"] = {}
    args.requests = cells[0]["requests"]
    capacity = json.load(open(out("capacity.json")))["capacity_rps"]
    simulate_cells(args, out, profile, cells, capacity)


def simulate_cells(args, out, profile, cells, capacity):
    m = args.cores
    policies = policies_for(out)
    seq_runs = out("seq-runs.jsonl")
    with open(seq_runs, "w") as fh:
        for c in cells:
            if c["label"] == "SEQ":
                fh.write(json.dumps({k: v for k, v in c.items() if k != "sim"}) + "\n")
    cal = out("calibration.json")
    r = tailor(args, ["calibrate", "--profile", profile, "--runs", seq_runs, "--units", "16",
                      "--out", cal], check=False)
    log(r.stderr.strip())
    for c in cells:
        pol = policies[c["label"]]
        for model in MODELS:
            if model == "charged":
                if r.returncode != 0:
                    continue
                extra = ["--calibration", cal] + pol[2:]
            else:
                if "--no-guard" in pol:
                    continue  # the fluid models have no guard: FM there is the paper's
                extra = ["--thread-model", model] + pol[2:]
            cmd = ["simulate", "--cores", str(m), "--policy", pol[1], "--demand",
                   f"profile:{profile}", "--arrivals", "poisson", "--rps", str(c["rps"]),
                   "--requests", str(args.requests), "--seed", str(c["seed"]), "--quantum-ms",
                   str(args.quantum_ms)] + extra
            s = tailor(args, cmd, check=False)
            if s.returncode == 0:
                c["sim"][model] = json.loads(s.stdout)
    with open(out("cells.jsonl"), "w") as fh:
        for c in cells:
            fh.write(json.dumps(c) + "\n")
    report(args, cells, capacity)
    print(open(out("report.md")).read())


def report(args, cells, capacity):
    lines = [f"# Thread models against live runs at {args.cores} cores\n",
             f"Search on 16 segments; SEQ's measured capacity {capacity:.0f}/s; "
             f"{max(c['round'] for c in cells) + 1} round(s) of {args.requests} requests per "
             "cell, interleaved. p99 in ms: live (median over rounds, each round's value in "
             "brackets), then the simulator under each thread model and its ratio to live. "
             "FM: the degree-16 table planned with `--thread-model busy`, under the core guard; "
             "FM-unguarded: the same on the FM paper's runtime (the fluid models have no guard).\n",
             "| load | policy | live p99 | rounds | " + " | ".join(f"{m}" for m in MODELS) + " |",
             "|---|---|---|---|" + "---|" * len(MODELS)]
    for load in LOADS:
        for label in ["SEQ", "FIX-4", "FIX-16", "FM", "FM-unguarded"]:
            mine = [c for c in cells if c["label"] == label and c["load"] == load]
            if not mine:
                continue
            live = statistics.median(c["latency_ms"]["p99"] for c in mine)
            rounds = ", ".join(f"{c['latency_ms']['p99']:.1f}" for c in mine)
            row = f"| {load:.0%} | {label} | {live:.1f} | {rounds} |"
            for model in MODELS:
                sims = [c["sim"][model]["latency_ms"]["p99"] for c in mine if model in c["sim"]]
                if sims:
                    s = statistics.median(sims)
                    row += f" {s:.1f} ({s / live:.2f}) |"
                else:
                    row += " - |"
            lines.append(row)
    open(os.path.join(args.out, "report.md"), "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

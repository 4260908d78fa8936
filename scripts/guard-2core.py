#!/usr/bin/env python3
"""FM's core guard on this machine, live and simulated (issue #38, acceptance "Guard").

FM gets a table that sends every request to its maximum degree at once, planned as if
speedup were linear, on synthetic work whose real speedup is far lower (Amdahl, serial
fraction 0.5 by default). SEQ, guarded FM and the FM paper's unguarded runtime run live at
30%, 60% and 75% of SEQ's capacity as measured here, in interleaved rounds (cells
shuffled per round, the same seed for every policy of a round and load). Then the
machine is calibrated from the SEQ runs (`tailor calibrate`) and every cell is simulated
under the charged model beside its live result.

Writes DIR/cells.jsonl (each live summary with `label`, `load`, `round`, and `sim`, the
simulated summary) and DIR/report.md, rewritten after every round.

    scripts/guard-2core.py [--rounds 3] [--requests 10000] [--out DIR] [--quick]
"""

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOADS = [0.3, 0.6, 0.75]


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


def tailor(args, cmd, capture=True):
    r = subprocess.run([args.tailor] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"tailor {' '.join(cmd)} failed:\n{r.stderr}")
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tailor", default=os.path.join(ROOT, "target/release/tailor"))
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=10000)
    p.add_argument("--mean-ms", type=float, default=3.0)
    p.add_argument("--serial", type=float, default=0.5)
    p.add_argument("--max-degree", type=int, default=8)
    p.add_argument("--quantum-ms", type=float, default=0.5)
    p.add_argument("--out", default=time.strftime("guard-2core-%Y%m%d-%H%M%S"))
    p.add_argument("--resimulate", action="store_true",
                   help="keep the live cells of an earlier run in --out; calibrate and simulate again")
    p.add_argument("--quick", action="store_true", help="1 round of 1,500 requests")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.requests = 1, 1500
    os.makedirs(args.out, exist_ok=True)
    out = lambda name: os.path.join(args.out, name)
    m, mean, f = args.cores, args.mean_ms, args.serial
    demand = f"exp:{mean}"
    workload = f"synthetic:{demand}:amdahl:{f}"

    if args.resimulate:
        cells = [json.loads(line) for line in open(out("cells.jsonl"))]
        args.requests = cells[0]["requests"]
        capacity = json.load(open(out("capacity.json")))["capacity_rps"]
        policies = {
            "SEQ": ["--policy", "seq"],
            "FM": ["--policy", "fm", "--table", out("fm-table.json")],
            "FM-unguarded": ["--policy", "fm", "--table", out("fm-table.json"), "--no-guard"],
        }
        return simulate_cells(args, out, cells, capacity, policies)
    # The real profile (Amdahl) and the one the table is planned from (linear).
    for name, speedup in [("real", f"amdahl:{f}"), ("linear", "linear")]:
        tailor(args, ["profile", "generate", "--demand", demand, "--speedup", speedup,
                      "--requests", "2000", "--max-degree", str(args.max_degree),
                      "--seed", "1", "--out", out(f"profile-{name}.csv")])
    # Planned as if speedup were linear, with room for every thread: degree n at once.
    tailor(args, ["plan", "fm", "--profile", out("profile-linear.csv"),
                  "--max-degree", str(args.max_degree), "--target-parallelism", "100000",
                  "--step-ms", "1", "--max-interval-ms", "4", "--percentile", "0.99",
                  "--max-load", "64", "--no-check", "--out", out("fm-table.json")])
    table = json.load(open(out("fm-table.json")))
    assert all(not r["admit_on_exit"] and not any(r["intervals_ms"]) for r in table["rows"]), \
        "the table does not send every request to its maximum degree at once"

    # One spin rate for every process, so requests are alike across runs.
    r = tailor(args, ["run", "--workload", workload, "--policy", "seq", "--cores", str(m),
                      "--rps", "50", "--requests", "50", "--seed", "1"])
    rate = re.search(r"spin loop at ([0-9.]+) iterations/us", r.stderr).group(1)
    common = ["--workload", workload, "--cores", str(m), "--quantum-ms", str(args.quantum_ms),
              "--spin-rate", rate]

    # SEQ's capacity under concurrency: the throughput it sustains offered 98% of the
    # cores' nominal rate (the most `tailor run` accepts as not overloaded), which on a
    # real machine, with its hand-offs and slowdown, is more than it can serve.
    nominal = m * 1000.0 / mean
    records = out("capacity-records.csv")
    n = max(1000, int(nominal * 3))
    tailor(args, ["run", "--policy", "seq", "--rps", f"{0.98 * nominal:.1f}", "--requests",
                  str(n), "--seed", "99", "--records", records] + common)
    rows = [line.split(",") for line in open(records).read().split("\n")[1:] if line]
    first = min(float(x[1]) for x in rows)
    last = max(float(x[3]) for x in rows)
    capacity = len(rows) / (last - first) * 1000.0
    json.dump({"capacity_rps": capacity, "nominal_rps": nominal}, open(out("capacity.json"), "w"))
    log(f"SEQ's capacity {capacity:.0f}/s ({capacity / nominal:.2f} of {m} cores / {mean} ms)")

    policies = {
        "SEQ": ["--policy", "seq"],
        "FM": ["--policy", "fm", "--table", out("fm-table.json")],
        "FM-unguarded": ["--policy", "fm", "--table", out("fm-table.json"), "--no-guard"],
    }
    cells = []
    rng = random.Random(38)
    for rnd in range(args.rounds):
        todo = [(label, li) for label in policies for li in range(len(LOADS))]
        rng.shuffle(todo)
        for label, li in todo:
            load = LOADS[li]
            rps = load * capacity
            seed = 1000 * (rnd + 1) + li
            r = tailor(args, ["run", "--rps", f"{rps:.1f}", "--requests", str(args.requests),
                              "--seed", str(seed)] + policies[label] + common)
            s = json.loads(r.stdout)
            s.update(label=label, load=load, round=rnd, sim=None)
            cells.append(s)
            log(f"round {rnd + 1} {label:13s} {load:.0%}: p99 {s['latency_ms']['p99']:.2f} ms")
        report(args, cells, capacity, None)
    simulate_cells(args, out, cells, capacity, policies)


def simulate_cells(args, out, cells, capacity, policies):
    """Calibrates from the SEQ cells and simulates every cell beside its live result."""
    m, mean, f = args.cores, args.mean_ms, args.serial
    demand = f"exp:{mean}"
    for c in cells:
        c["sim"] = None
    # Calibrate from the SEQ runs and simulate every cell.
    seq_runs = out("seq-runs.jsonl")
    with open(seq_runs, "w") as fh:
        for c in cells:
            if c["label"] == "SEQ":
                fh.write(json.dumps({k: v for k, v in c.items() if k != "sim"}) + "\n")
    cal = out("calibration.json")
    r = subprocess.run([args.tailor, "calibrate", "--profile", out("profile-real.csv"),
                        "--runs", seq_runs, "--unit-ms", "0.25", "--out", cal],
                       capture_output=True, text=True)
    log(r.stderr.strip())
    if r.returncode == 0:
        for c in cells:
            extra = policies[c["label"]][2:]
            cmd = ["simulate", "--cores", str(m), "--policy", policies[c["label"]][1],
                   "--demand", demand, "--speedup", f"amdahl:{f}", "--arrivals", "poisson",
                   "--rps", str(c["rps"]), "--requests", str(args.requests), "--seed",
                   str(c["seed"]), "--quantum-ms", str(args.quantum_ms), "--calibration", cal]
            c["sim"] = json.loads(tailor(args, cmd + extra).stdout)
    with open(out("cells.jsonl"), "w") as fh:
        for c in cells:
            fh.write(json.dumps(c) + "\n")
    report(args, cells, capacity, cal if r.returncode == 0 else None)
    print(open(out("report.md")).read())


def report(args, cells, capacity, cal):
    lines = [f"# FM's core guard at {args.cores} cores\n",
             f"Synthetic exp:{args.mean_ms} work, Amdahl serial fraction {args.serial}; FM's "
             f"table sends every request to degree {args.max_degree} at once (planned as if "
             f"speedup were linear). SEQ's measured capacity {capacity:.0f}/s. "
             f"{max(c['round'] for c in cells) + 1} round(s) of {args.requests} requests per "
             "cell, interleaved. p99 in ms, the median over rounds (each round's value in "
             "brackets); sim: the charged model with the calibration from the SEQ runs.\n",
             "| load | policy | live p99 | rounds | sim p99 | sim / live | vs SEQ live |",
             "|---|---|---|---|---|---|---|"]
    for load in LOADS:
        seq = [c["latency_ms"]["p99"] for c in cells if c["label"] == "SEQ" and c["load"] == load]
        for label in ["SEQ", "FM", "FM-unguarded"]:
            mine = [c for c in cells if c["label"] == label and c["load"] == load]
            if not mine:
                continue
            live = statistics.median(c["latency_ms"]["p99"] for c in mine)
            sims = [c["sim"]["latency_ms"]["p99"] for c in mine if c["sim"]]
            sim = statistics.median(sims) if sims else None
            vs = live / statistics.median(seq) if seq else float("nan")
            rounds = ", ".join(f"{c['latency_ms']['p99']:.2f}" for c in mine)
            lines.append(
                f"| {load:.0%} | {label} | {live:.2f} | {rounds} | "
                + (f"{sim:.2f} | {sim / live:.2f}" if sim else "- | -")
                + f" | {vs:.2f}x |")
    if cal:
        lines.append("\nCalibration: `" + json.dumps(json.load(open(cal))["dispatch_ms"]) + "` "
                     "hand-off, `" + json.dumps(json.load(open(cal))["slowdown"]) + "` slowdown.")
    open(os.path.join(args.out, "report.md"), "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

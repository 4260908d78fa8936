#!/usr/bin/env python3
"""The charged model against the 16-core machine of 2026-11-27 (issue #38, acceptance 2-3).

Calibrates from that machine's profile and its live SEQ runs only
(shared/data/live16-2026-11-27), then simulates every policy it ran live at 30%, 45% and
60% of its nominal capacity (16 / mean t1 = 4,733 queries/s) with the same tables and
quantum, median p99 over seeds 1-3 of 20,000 requests, beside the live median of its two
rounds. Then FM with the new planner defaults (`tailor plan fm --profile P --cores 16`
plus the grid flags, with and without the calibration) under the core guard, against
the best of SEQ, FIX-2, FIX-4 and Adaptive in the same model.

    scripts/validate-shared16.py [--data DIR] [--out DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPACITY = 4733.0
LOADS = [0.3, 0.45, 0.6]
SEEDS = [1, 2, 3]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tailor", default=os.path.join(ROOT, "target/release/tailor"))
    p.add_argument("--data", default=os.path.join(ROOT, "../shared/data/live16-2026-11-27"))
    p.add_argument("--out", default="/tmp/validate-shared16")
    p.add_argument("--requests", type=int, default=20000)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    d = lambda f: os.path.join(args.data, f)
    o = lambda f: os.path.join(args.out, f)

    def tailor(cmd):
        r = subprocess.run([args.tailor] + cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"tailor {' '.join(cmd)}:\n{r.stderr}")
        return r

    live = {}
    with open(o("seq-runs.jsonl"), "w") as seq:
        for line in open(d("search.jsonl")):
            run = json.loads(line)
            live.setdefault((run["label"], run["load"]), []).append(run["latency_ms"]["p99"])
            if run["label"] == "SEQ":
                seq.write(line)
    r = tailor(["calibrate", "--profile", d("search-profile-16.csv"), "--runs", o("seq-runs.jsonl"),
                "--units", "16", "--out", o("calibration.json")])
    print(r.stderr.strip(), file=sys.stderr)
    cal = o("calibration.json")
    profile = "profile:" + d("search-profile-16.csv")

    def p99(policy, extra, rps):
        got = []
        for seed in SEEDS:
            r = tailor(["simulate", "--cores", "16", "--policy", policy, "--demand", profile,
                        "--arrivals", "poisson", "--rps", f"{rps:.1f}", "--requests",
                        str(args.requests), "--seed", str(seed), "--quantum-ms", "0.5",
                        "--calibration", cal] + extra)
            got.append(json.loads(r.stdout)["latency_ms"]["p99"])
        return statistics.median(got)

    adaptive = ["--table", d("adaptive-table.json")]
    policies = [("SEQ", "seq", []), ("FIX-2", "fix:2", []), ("FIX-4", "fix:4", []),
                ("Adaptive", "adaptive", adaptive), ("FIX-16", "fix:16", []),
                ("FM busy table, paper's runtime", "fm",
                 ["--table", d("fm-table-busy.json"), "--no-guard"])]
    lines = ["# The charged model against the 16-core machine of 2026-11-27\n",
             "Calibrated from the profile and the SEQ runs only. p99 in ms: simulated (median "
             "of seeds 1-3, 20,000 requests), live (median of the two rounds, and each round), "
             "simulated over live.\n",
             "| load | policy | sim | live | rounds | sim / live |", "|---|---|---|---|---|---|"]
    results = {}
    for load in LOADS:
        rps = load * CAPACITY
        for label, pol, extra in policies:
            sim = p99(pol, extra, rps)
            key = "FM" if label.startswith("FM") else label
            rounds = live.get((key, load), [])
            lv = statistics.median(rounds) if rounds else float("nan")
            results[(label, load)] = (sim, lv)
            lines.append(f"| {load:.0%} | {label} | {sim:.1f} | {lv:.1f} | "
                         f"{', '.join(f'{x:.1f}' for x in rounds)} | {sim / lv:.2f} |")
        print(f"{load:.0%} done", file=sys.stderr)
    lines.append("")

    # The new defaults: FM planned with the planner's defaults, run under the guard.
    base = ["plan", "fm", "--profile", d("search-profile-16.csv"), "--cores", "16", "--step-ms",
            "0.5", "--max-interval-ms", "22.5", "--percentile", "0.99", "--max-load", "32",
            "--no-check"]
    tailor(base + ["--out", o("fm-default.json")])
    tailor(base + ["--calibration", cal, "--out", o("fm-calibrated.json")])
    lines += ["New defaults, FM under the core guard, simulated with the calibration (p99 ms, "
              "and over the best of SEQ, FIX-2, FIX-4 and Adaptive, and over SEQ):\n",
              "| load | best peer | FM, default table | vs best | vs SEQ | FM, calibrated table | vs best | vs SEQ |",
              "|---|---|---|---|---|---|---|---|"]
    for load in LOADS:
        rps = load * CAPACITY
        peers = {k: results[(k, load)][0] for k in ["SEQ", "FIX-2", "FIX-4", "Adaptive"]}
        best_label = min(peers, key=peers.get)
        best = peers[best_label]
        row = f"| {load:.0%} | {best_label} {best:.1f} |"
        for table in ["fm-default.json", "fm-calibrated.json"]:
            fm = p99("fm", ["--table", o(table)], rps)
            row += f" {fm:.1f} | {fm / best:.2f}x | {fm / peers['SEQ']:.2f}x |"
        lines.append(row)
    text = "\n".join(lines) + "\n"
    open(o("report.md"), "w").write(text)
    print(text)


if __name__ == "__main__":
    main()

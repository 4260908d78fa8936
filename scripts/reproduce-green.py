#!/usr/bin/env python3
"""The green schedulers' comparisons (Haque's dissertation, appendices A and B; issue 43) on generated inputs.

Usage:
  python3 scripts/reproduce-green.py sla [--seeds 1,2,3] [--out DIR]
      # Fig. A.5 (Grid5k, Medium days) and Fig. A.7 (High and Low days), Intrepid too:
      # profit, green energy, admitted jobs and Green SLA violations of SA, LP, FF and SGP,
      # and SA-All against SA (§A.5.2)
  python3 scripts/reproduce-green.py par [--seeds 1,2,3] [--out DIR]
      # Fig. B.7 (Grid5k, High day) and Intrepid: brown and green energy, VMs and runtime
      # of Baseline, Reactive, Aggressive, Offline and Nebulous; and §B.5's sensitivity
      # (F = 1, F = 1.5, runtime estimates 25% long or short)
  python3 scripts/reproduce-green.py all ...

Inputs come from `tailor green generate` (docs/green.md says which facts shape them and
what is invented); each point is the median over the seeds. Markdown tables go to stdout;
the summaries (JSON lines), the inputs and SVG charts of one seed's power profiles go
under DIR (default runs/green/<today>/).
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

TAILOR = os.environ.get("TAILOR", "./target/release/tailor")
SLA_POLICIES = ["sa", "lp", "ff", "sgp"]
PAR_POLICIES = ["baseline", "reactive", "aggressive", "offline", "nebulous"]


def sh(args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{out.stderr}")
    return out.stdout


class Runner:
    def __init__(self, out, mode):
        os.makedirs(out, exist_ok=True)
        self.out = out
        self.log = open(os.path.join(out, f"{mode}.jsonl"), "w")

    def inputs(self, workload, day, system, seed):
        d = os.path.join(self.out, "inputs", f"{system}-{workload}-{day}-s{seed}")
        if not os.path.exists(os.path.join(d, "prediction.csv")):
            sh([TAILOR, "green", "generate", "--workload", workload, "--day", day,
                "--system", system, "--seed", str(seed), "--out-dir", d])
        return d

    def simulate(self, d, system, policy, extra=(), chart=None, tag=""):
        args = [TAILOR, "green", "simulate", "--system", system, "--policy", policy,
                "--jobs", os.path.join(d, "jobs.csv"), "--solar", os.path.join(d, "solar.csv"),
                "--prediction", os.path.join(d, "prediction.csv"), *extra]
        if chart:
            args += ["--chart", chart]
        t0 = time.time()
        s = json.loads(sh(args).strip().splitlines()[-1])
        s["wall_s"] = round(time.time() - t0, 2)
        s["inputs"], s["tag"] = d, tag
        s.pop("job_results", None)  # per job: in the summary, not worth keeping here
        self.log.write(json.dumps(s) + "\n")
        self.log.flush()
        return s


def med(runs, key):
    return statistics.median(r[key] for r in runs)


def sla_mode(args):
    r = Runner(args.out, "sla")
    seeds = [int(x) for x in args.seeds.split(",")]
    # Grid5k on every day (Figs. A.5 and A.7); Intrepid on the Medium days.
    cases = [("grid5k", day) for day in ["medium", "high", "low"]] + [("intrepid", "medium")]
    for workload, day in cases:
        runs = {p: [] for p in SLA_POLICIES}
        for seed in seeds:
            d = r.inputs(workload, day, "sla", seed)
            for p in SLA_POLICIES:
                chart = (os.path.join(args.out, f"sla-{workload}-{day}-{p}.svg")
                         if seed == seeds[0] and p in ("sa", "ff") else None)
                runs[p].append(r.simulate(d, "sla", p, chart=chart))
        sa = med(runs["sa"], "profit")
        sa_green = med(runs["sa"], "green_kwh")
        print(f"\n#### Green SLAs, {workload}, {day} days (median of seeds {args.seeds})\n")
        print("| policy | profit $ | profit / SA's | green kWh / SA's | brown kWh | admitted | "
              "rejected | Green SLA violations | wall s (max) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for p in SLA_POLICIES:
            rs = runs[p]
            print(f"| {p} | {med(rs, 'profit'):.0f} | {med(rs, 'profit') / sa:.2f} | "
                  f"{med(rs, 'green_kwh') / sa_green:.2f} | {med(rs, 'brown_kwh'):.0f} | "
                  f"{med(rs, 'admitted'):.0f} | {med(rs, 'rejected'):.0f} | "
                  f"{med(rs, 'violations'):.0f} | {max(x['wall_s'] for x in rs):.1f} |")
        if workload == "grid5k" and day == "medium":
            check_sla(runs)
            # §A.5.2: SA-All, SA without its 30-job limit.
            rs = [r.simulate(r.inputs(workload, day, "sla", seed), "sla", "sa",
                             ["--sa-jobs", "all"], tag="sa-all") for seed in seeds]
            ratio = statistics.median(x["profit"] / y["profit"] for x, y in zip(rs, runs["sa"]))
            slower = statistics.median(x["wall_s"] / y["wall_s"] for x, y in zip(rs, runs["sa"]))
            print(f"- SA-All (no 30-job limit): profit {ratio:.3f}x SA's, {slower:.1f}x its wall "
                  f"time (median of seed pairs; the appendix: 1.035x, 28x)")


def check_sla(runs):
    """Issue 43's acceptance on the Medium days (Fig. A.5's ordering)."""
    profit = {p: med(runs[p], "profit") for p in SLA_POLICIES}
    viol = {p: med(runs[p], "violations") for p in SLA_POLICIES}
    verdict(min(profit["sa"], profit["lp"]) > max(profit["ff"], profit["sgp"]),
            "SA and LP each earn more profit than FF and SGP")
    verdict(viol["ff"] == max(viol.values()), f"FF violates the most Green SLAs ({viol})")
    verdict(viol["sgp"] == min(viol.values()), "SGP violates the fewest")
    gap = abs(profit["sa"] - profit["lp"]) / max(profit["sa"], profit["lp"])
    verdict(gap <= 0.05, f"SA and LP within 5% of each other in profit ({gap:.1%})")


def verdict(ok, text):
    print(f"- {'PASS' if ok else 'MISS'} {text}")


def par_mode(args):
    r = Runner(args.out, "par")
    seeds = [int(x) for x in args.seeds.split(",")]
    for workload in ["grid5k", "intrepid"]:
        for day in ["high", "medium", "low"]:
            runs = {p: [] for p in PAR_POLICIES}
            for seed in seeds:
                d = r.inputs(workload, day, "par", seed)
                for p in PAR_POLICIES:
                    chart = (os.path.join(args.out, f"par-{workload}-{day}-{p}.svg")
                             if seed == seeds[0] and day == "high" else None)
                    runs[p].append(r.simulate(d, "par", p, chart=chart))
            print_par(runs, f"GreenPar, {workload}, {day} day", args.seeds)
            if workload == "grid5k" and day == "high":
                check_par(runs, seeds)
    print("\n#### GreenPar's sensitivity, grid5k, high day (§B.5)\n")
    print("| case | policy | brown vs Baseline | mean runtime vs Baseline | F violations |")
    print("|---|---|---|---|---|")
    for name, extra in [("F = 1", ["--slowdown", "1"]), ("F = 1.5", ["--slowdown", "1.5"]),
                        ("runtimes 25% long", ["--runtime-error", "0.25"]),
                        ("runtimes 25% short", ["--runtime-error", "-0.25"])]:
        base, pol = [], {p: [] for p in ["aggressive", "offline", "reactive"]}
        for seed in seeds:
            d = r.inputs("grid5k", "high", "par", seed)
            base.append(r.simulate(d, "par", "baseline", extra, tag=name))
            for p in pol:
                pol[p].append(r.simulate(d, "par", p, extra, tag=name))
        for p, rs in pol.items():
            b = [x["brown_kwh"] / y["brown_kwh"] - 1 for x, y in zip(rs, base)]
            t = [x["mean_runtime_h"] / y["mean_runtime_h"] - 1 for x, y in zip(rs, base)]
            print(f"| {name} | {p} | {statistics.median(b):+.1%} | {statistics.median(t):+.1%} | "
                  f"{sum(x['sla_violations'] for x in rs)} |")


def print_par(runs, title, seeds):
    off_brown = med(runs["offline"], "brown_kwh")
    base_rt = med(runs["baseline"], "mean_runtime_h")
    base_brown = med(runs["baseline"], "brown_kwh")
    print(f"\n#### {title} (median of seeds {seeds})\n")
    print("| policy | brown kWh | brown / Offline's | brown vs Baseline | green kWh | VMs | "
          "mean runtime h | runtime vs Baseline | F violations |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in PAR_POLICIES:
        rs = runs[p]
        print(f"| {p} | {med(rs, 'brown_kwh'):.2f} | {med(rs, 'brown_kwh') / off_brown:.3f} | "
              f"{med(rs, 'brown_kwh') / base_brown - 1:+.1%} | {med(rs, 'green_kwh'):.2f} | "
              f"{med(rs, 'total_vms'):.0f} | {med(rs, 'mean_runtime_h'):.2f} | "
              f"{med(rs, 'mean_runtime_h') / base_rt - 1:+.1%} | "
              f"{sum(x['sla_violations'] for x in rs)} |")


def check_par(runs, seeds):
    """Issue 43's acceptance on the High day, seed by seed."""
    for i, seed in enumerate(seeds):
        base = runs["baseline"][i]
        for p in PAR_POLICIES[1:]:
            s = runs[p][i]
            verdict(s["brown_kwh"] < base["brown_kwh"] and s["mean_runtime_h"] < base["mean_runtime_h"],
                    f"seed {seed}: {p} uses less brown ({s['brown_kwh']:.3f} < "
                    f"{base['brown_kwh']:.3f} kWh) and runs shorter ({s['mean_runtime_h']:.3f} < "
                    f"{base['mean_runtime_h']:.3f} h) than Baseline")
        a, o = runs["aggressive"][i]["brown_kwh"], runs["offline"][i]["brown_kwh"]
        verdict(a <= 1.05 * o, f"seed {seed}: Aggressive's brown is {a / o:.3f}x Offline's "
                               f"(the appendix: 1.01x)")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["sla", "par", "all"])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--out", default=os.path.join("runs", "green",
                                                  datetime.date.today().isoformat()))
    args = ap.parse_args()
    if args.mode in ("sla", "all"):
        sla_mode(args)
    if args.mode in ("par", "all"):
        par_mode(args)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""DVFS for the tail (issue 42; the model and policies are in docs/dvfs.md) in simulation.

Usage:
  python3 scripts/reproduce-dvfs.py accept [--requests N] [--seeds N] [--static both|fixed|voltage] [--out DIR]
      # issue 42's simulated acceptance: 9 DVFS cores, P-states 1:1,1.5:3.375,2:8,
      # eetl-dvfs, tl-dvfs, pegasus, schedutil and max, with PASS/MISS lines
  python3 scripts/reproduce-dvfs.py amp    [--requests N] [--seeds N] [--static ...] [--out DIR]
      # asymmetric EETL on 8 slow + 1 fast cores against eetl-dvfs on 9 DVFS cores whose
      # top state (1:1,2:8) equals the fast core: the talk's "AMP beats DVFS" claim
  python3 scripts/reproduce-dvfs.py all  ...   # both

The work is issue 42's: Lucene's shape scaled so that its p99 work is just beyond a
speed-1 core's reach of the 200 ms target (as scripts/reproduce-as2f.py's search), at
10, 30, ..., 130 rps, Poisson arrivals. Each mode prints Markdown tables (for
docs/dvfs.md and docs/reproduction.md) and keeps every run summary as JSON lines, and the
EETL plans, under DIR (default runs/dvfs/<today>/). With --seeds N each point is the
median over seeds S..S+N-1 (p99 and energy taken separately). Energy is per request, in
units of a speed-1 core's dynamic power times ms.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

TAILOR = os.environ.get("TAILOR", "./target/release/tailor")
DEMAND = "scale:0.22:shape:lucene"
TARGET = 200.0
LOADS = [10, 30, 50, 70, 90, 110, 130]
DVFS_CORES = 9
ACCEPT_PSTATES = "1:1,1.5:3.375,2:8"
AMP_PSTATES = "1:1,2:8"  # top state = the asymmetric chip's fast core
AMP_CORES = "8@1,1@2"
STATIC_SHARE = 0.2  # of the chip's peak power (crates/core/src/hetero.rs)
DVFS_POLICIES = [f"eetl-dvfs:{TARGET:g}", "tl-dvfs", f"pegasus:{TARGET:g}", "schedutil", "max"]
HEADS = ["eetl-dvfs", "tl-dvfs", "pegasus", "schedutil", "max"]


def sh(args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{out.stderr}")
    return out.stdout


class Runner:
    def __init__(self, args, mode):
        os.makedirs(args.out, exist_ok=True)
        self.out, self.requests, self.seed, self.seeds = args.out, args.requests, args.seed, args.seeds
        # Each run of a mode rewrites its log: the summaries behind the tables it prints.
        self.log = open(os.path.join(args.out, f"{mode}.jsonl"), "w")

    def plan(self, name, cores, pstates=None, static=None):
        """`tailor plan eetl` over the sweep's load range, kept as DIR/plan-NAME.json."""
        path = os.path.join(self.out, f"plan-{name}.json")
        args = [TAILOR, "plan", "eetl", "--demand", DEMAND, "--cores", cores,
                "--target-ms", f"{TARGET:g}", "--rps", f"{LOADS[0]}:{LOADS[-1]}",
                "--seed", str(self.seed), "--out", path]
        if pstates:
            args += ["--pstates", pstates, "--static-power", static]
        sh(args)
        return path

    def sweep(self, cores, policies, table, tag, pstates=None, static=None):
        """One `tailor simulate` sweep over LOADS; {(policy, rps): median summary}."""
        args = [TAILOR, "simulate", "--cores", cores, "--demand", DEMAND, "--arrivals", "poisson",
                "--rps", f"{LOADS[0]}:{LOADS[-1]}:{LOADS[1] - LOADS[0]}",
                "--requests", str(self.requests), "--seed", str(self.seed),
                "--seeds", str(self.seeds), "--target-ms", f"{TARGET:g}", "--format", "json",
                "--table", table]
        if pstates:
            args += ["--pstates", pstates, "--static-power", static]
        for p in policies:
            args += ["--policy", p]
        runs = {}
        for line in sh(args).strip().splitlines():
            s = json.loads(line)
            s["tag"] = tag
            self.log.write(json.dumps(s) + "\n")
            runs.setdefault((s["policy"].split(":")[0], round(s["rps"])), []).append(s)
        self.log.flush()
        return {key: {"p99": statistics.median(s["latency_ms"]["p99"] for s in ss),
                      "energy": statistics.median(s["energy"]["per_request"] for s in ss)}
                for key, ss in runs.items()}


def parse_pstates(text):
    return sorted((float(s), float(p)) for s, p in (x.split(":") for x in text.split(",")))


def busy_power_per_work(pstates, static):
    """Each state's busy power over its speed: its dynamic power and its share of the
    static power, 0.25 x the top's dynamic power per core (static is 20% of the chip's
    peak), scaled by speed over the top's under the `voltage` rule (docs/dvfs.md)."""
    states = parse_pstates(pstates)
    s_top, p_top = states[-1]
    share = p_top * STATIC_SHARE / (1 - STATIC_SHARE)
    return [(p + share * (s / s_top if static == "voltage" else 1.0)) / s for s, p in states]


def energy_floor(pstates, static):
    """The least energy per unit of work over the states, over the top's: no policy can
    use less than this fraction of `max`'s energy for the same work."""
    per_work = busy_power_per_work(pstates, static)
    return min(per_work) / per_work[-1]


def cell(x, p99):
    """A p99 or energy cell, bold where the point misses the target."""
    return f"**{x:.1f}**" if p99 > TARGET else f"{x:.1f}"


def capacity(runs, policy):
    ok = [rps for rps in LOADS if runs[(policy, rps)]["p99"] <= TARGET]
    return f"{max(ok)} rps" if ok else "none"


def verdict(ok, text):
    print(f"- {'PASS' if ok else 'MISS'} {text}")


def accept_rule(r, static):
    table = r.plan(f"eetl-dvfs-{static}", str(DVFS_CORES), ACCEPT_PSTATES, static)
    runs = r.sweep(str(DVFS_CORES), DVFS_POLICIES, table, f"accept-{static}", ACCEPT_PSTATES, static)
    plan = json.load(open(table))
    floor = energy_floor(ACCEPT_PSTATES, static)
    print(f"\n#### Static power `{static}`: eetl-dvfs t* = "
          f"{[round(t, 1) for t in plan['thresholds_ms']]} ms; energy floor {floor:.3f} "
          "(least energy per unit of work over the states, over the top's)\n")
    print("| rps | " + " | ".join(f"{h} p99 ms" for h in HEADS) + " | "
          + " | ".join(f"{h} energy" for h in HEADS) + " | eetl-dvfs / max energy |")
    print("|" + "---|" * (2 * len(HEADS) + 2))
    for rps in LOADS:
        pts = [runs[(h, rps)] for h in HEADS]
        ratio = runs[("eetl-dvfs", rps)]["energy"] / runs[("max", rps)]["energy"]
        print(f"| {rps} | " + " | ".join(cell(p["p99"], p["p99"]) for p in pts) + " | "
              + " | ".join(cell(p["energy"], p["p99"]) for p in pts) + f" | {ratio:.3f} |")
    print("| capacity | " + " | ".join(capacity(runs, h) for h in HEADS) + " |"
          + " |" * (len(HEADS) + 1))
    print(f"\nBold: misses the {TARGET:g} ms target. Acceptance (issue 42):\n")
    meets = lambda pol, rps: runs[(pol, rps)]["p99"] <= TARGET
    max_met = [rps for rps in LOADS if meets("max", rps)]
    bad = [rps for rps in max_met if not meets("eetl-dvfs", rps)]
    verdict(not bad, f"(a) eetl-dvfs meets {TARGET:g} ms at every load where max does "
            f"(max meets it at {max_met}; eetl-dvfs misses at {bad or 'none'} of those)")
    low = LOADS[0]
    ratio = runs[("eetl-dvfs", low)]["energy"] / runs[("max", low)]["energy"]
    verdict(ratio <= 0.6, f"(b) at {low} rps eetl-dvfs uses {ratio:.3f} x max's energy "
            f"(goal at most 0.6; the floor under `{static}` is {floor:.3f})")
    both = [rps for rps in LOADS if all(meets(p, rps) for p in ["eetl-dvfs", "pegasus", "schedutil"])]
    e = lambda pol, rps: runs[(pol, rps)]["energy"]
    bad = [rps for rps in both
           if not (e("eetl-dvfs", rps) < e("pegasus", rps) and e("eetl-dvfs", rps) < e("schedutil", rps))]
    verdict(not bad, f"(c) eetl-dvfs uses less energy than pegasus and schedutil wherever "
            f"all three meet the target ({both or 'no load: vacuous'}; not less at {bad or 'none'})")
    miss = [rps for rps in LOADS if not meets("schedutil", rps)]
    verdict(len([k for k in runs if k[0] == "schedutil"]) == len(LOADS),
            f"(d) schedutil's p99 and energy listed at all {len(LOADS)} loads "
            f"(misses the target at {miss or 'none'})")


def accept_mode(args):
    r = Runner(args, "accept")
    print(f"Issue 42's acceptance: {DVFS_CORES} DVFS cores, P-states `{ACCEPT_PSTATES}`, "
          f"`{DEMAND}`, target p99 {TARGET:g} ms, {args.requests} requests per point, "
          f"seed {args.seed}" + (f" (median of {args.seeds} seeds)" if args.seeds > 1 else "")
          + ", Poisson arrivals; energy per request.")
    for static in rules(args):
        accept_rule(r, static)


def amp_mode(args):
    r = Runner(args, "amp")
    amp_table = r.plan("eetl-amp", AMP_CORES)
    amp = r.sweep(AMP_CORES, [f"eetl:{TARGET:g}"], amp_table, "amp-eetl")
    dvfs = {}
    for static in rules(args):
        table = r.plan(f"eetl-dvfs-amp-{static}", str(DVFS_CORES), AMP_PSTATES, static)
        dvfs[static] = r.sweep(str(DVFS_CORES), [f"eetl-dvfs:{TARGET:g}", "max"], table,
                               f"amp-dvfs-{static}", AMP_PSTATES, static)
    first = rules(args)[0]
    print(f"Asymmetric against DVFS: EETL on `{AMP_CORES}` against eetl-dvfs on {DVFS_CORES} "
          f"DVFS cores with P-states `{AMP_PSTATES}`, `{DEMAND}`, target p99 {TARGET:g} ms, "
          f"{args.requests} requests per point"
          + (f", median of {args.seeds} seeds" if args.seeds > 1 else "")
          + f"; energy per request; max on DVFS under `{first}`.\n")
    print("| rps | AMP EETL p99 ms | AMP EETL energy | "
          + " | ".join(f"DVFS eetl-dvfs p99 ms ({s}) | DVFS eetl-dvfs energy ({s})" for s in dvfs)
          + " | DVFS max p99 ms | DVFS max energy | "
          + " | ".join(f"DVFS / AMP energy ({s})" for s in dvfs) + " |")
    print("|" + "---|" * (5 + 3 * len(dvfs)))
    for rps in LOADS:
        a = amp[("eetl", rps)]
        ds = [dvfs[s][("eetl-dvfs", rps)] for s in dvfs]
        m = dvfs[first][("max", rps)]
        print(f"| {rps} | {cell(a['p99'], a['p99'])} | {cell(a['energy'], a['p99'])} | "
              + " | ".join(f"{cell(d['p99'], d['p99'])} | {cell(d['energy'], d['p99'])}" for d in ds)
              + f" | {cell(m['p99'], m['p99'])} | {cell(m['energy'], m['p99'])} | "
              + " | ".join(f"{d['energy'] / a['energy']:.2f}" for d in ds) + " |")
    print(f"\nBold: misses the {TARGET:g} ms target.\n")
    print(f"Capacity at {TARGET:g} ms (the highest load of the sweep that meets it): "
          f"AMP EETL {capacity(amp, 'eetl')}; "
          + "; ".join(f"eetl-dvfs ({s}) {capacity(d, 'eetl-dvfs')}" for s, d in dvfs.items())
          + f"; max {capacity(dvfs[first], 'max')}.")
    for s, d in dvfs.items():
        if s != first and any(abs(d[("max", rps)]["energy"] - dvfs[first][("max", rps)]["energy"])
                              > 1e-6 * dvfs[first][("max", rps)]["energy"] for rps in LOADS):
            print(f"Note: max's energy under `{s}` differs from `{first}`'s: see {r.log.name}.")
    for s, d in dvfs.items():
        both = [rps for rps in LOADS
                if amp[("eetl", rps)]["p99"] <= TARGET and d[("eetl-dvfs", rps)]["p99"] <= TARGET]
        ratios = [d[("eetl-dvfs", rps)]["energy"] / amp[("eetl", rps)]["energy"] for rps in both]
        span = f"DVFS / AMP energy {min(ratios):.2f} to {max(ratios):.2f}" if ratios else "none"
        print(f"Both meet the target under `{s}` at {both or 'no load'}: {span}.")
    # Why: per core, the AMP chip's static power is 0.25 x its mean core's peak dynamic
    # power (cubic in speed), the DVFS chip's 0.25 x the top state's.
    types = [(int(c), float(x)) for c, x in (t.split("@") for t in AMP_CORES.split(","))]
    static = (STATIC_SHARE / (1 - STATIC_SHARE) * sum(c * x ** 3 for c, x in types)
              / sum(c for c, _ in types))
    print("\nBusy power per unit of work: AMP " + ", ".join(f"{(x ** 3 + static) / x:.2f}"
                                                          for _, x in types) + "; "
          + "; ".join(f"DVFS `{s}` " + ", ".join(f"{x:.2f}" for x in busy_power_per_work(AMP_PSTATES, s))
                      + f" (floor {energy_floor(AMP_PSTATES, s):.2f})" for s in dvfs) + ".")


def rules(args):
    return ["fixed", "voltage"] if args.static == "both" else [args.static]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["accept", "amp", "all"])
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--seed", type=int, default=1, help="the first seed (plans use it too)")
    ap.add_argument("--seeds", type=int, default=1, help="seeds per point; the median is shown")
    ap.add_argument("--static", choices=["both", "fixed", "voltage"], default="both",
                    help="how static power follows the P-state (tailor simulate --static-power)")
    ap.add_argument("--out", default=os.path.join("runs", "dvfs", datetime.date.today().isoformat()))
    args = ap.parse_args()
    if args.mode in ("accept", "all"):
        accept_mode(args)
    if args.mode == "all":
        print()
    if args.mode in ("amp", "all"):
        amp_mode(args)


if __name__ == "__main__":
    main()

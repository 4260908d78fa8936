#!/usr/bin/env python3
"""DVFS for the tail (issue 42; the model and policies are in docs/dvfs.md) in simulation.

Usage:
  python3 scripts/reproduce-dvfs.py accept [--requests N] [--seeds N] [--static both|fixed|voltage] [--out DIR]
      # issue 42's simulated acceptance: 9 DVFS cores, P-states 1:1,1.5:3.375,2:8,
      # eetl-dvfs, tl-dvfs, pegasus, schedutil and max, with PASS/MISS lines
  python3 scripts/reproduce-dvfs.py amp    [--requests N] [--seeds N] [--static ...] [--out DIR]
      # asymmetric EETL on 8 slow + 1 fast cores against eetl-dvfs on 9 DVFS cores whose
      # top state (1:1,2:8) equals the fast core: the talk's "AMP beats DVFS" claim
  python3 scripts/reproduce-dvfs.py governors [--requests N] [--static fixed|voltage]
      # pegasus and schedutil on a fine table of 9 P-states (is Pegasus's loss its steps?)
  python3 scripts/reproduce-dvfs.py all  ...   # all three
  python3 scripts/reproduce-dvfs.py live [--live-seeds 3,4,5] [--rps R] [--live-requests N]
                                         [--target MS] [--static fixed|voltage] [--out DIR]
      # issue 42's live check on this machine: 2 emulated DVFS cores (1:1,2:8, the top
      # state the host's own speed), eetl-dvfs against max on `--workload asian:6`,
      # interleaved seed by seed, median of the seeds (about 100 s per run)

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
                "--seeds", str(self.seeds), "--target-ms", f"{TARGET:g}", "--format", "json"]
        if table:
            args += ["--table", table]
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


def busy_powers(pstates, static):
    """Each state's busy power: dynamic plus its static share under `static`."""
    return [bp * s for bp, (s, _) in zip(busy_power_per_work(pstates, static),
                                           parse_pstates(pstates))]


def reprice(summary, pstates, run_rule, rule):
    """A DVFS summary's energy per request under another static rule: the busy time per
    state is the same, only its price changes."""
    shares = summary["energy"]["busy_share"]
    unit = sum(x * bp for x, bp in zip(shares, busy_powers(pstates, run_rule)))
    busy = summary["energy"]["per_request"] / unit
    return busy * sum(x * bp for x, bp in zip(shares, busy_powers(pstates, rule)))


def busy_power_per_work(pstates, static):
    """Each state's busy power over its speed: its dynamic power and its share of the
    static power, 0.25 x the top's dynamic power per core (static is 20% of the chip's
    peak), scaled by speed over the top's under the `voltage` rule (docs/dvfs.md)."""
    states = parse_pstates(pstates)
    s_top, p_top = states[-1]
    share = p_top * STATIC_SHARE / (1 - STATIC_SHARE)
    if static.startswith("busy:"):
        return [(p + float(static[5:])) / s for s, p in states]
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


# Nine cubic states from 1 to 2 in steps of 1/8: a table fine enough that a budget cut
# does not drop a whole third of the speed (Pegasus on RAPL has fine steps).
FINE_PSTATES = ",".join(f"{1 + i / 8:g}:{(1 + i / 8) ** 3:g}" for i in range(9))


def governors_mode(args):
    """The all-core governors on a fine table (9 states): whether Pegasus's loss on the
    3-state table comes from its coarse steps."""
    r = Runner(args, "governors")
    static = "voltage" if args.static == "both" else args.static
    runs = r.sweep(str(DVFS_CORES), [f"pegasus:{TARGET:g}", "schedutil", "max"], None,
                   "governors-fine", FINE_PSTATES, static)
    print(f"The all-core governors on {DVFS_CORES} DVFS cores with 9 P-states `{FINE_PSTATES}` "
          f"(static `{static}`), `{DEMAND}`, target p99 {TARGET:g} ms, {args.requests} "
          f"requests per point; energy per request.\n")
    print("| rps | pegasus p99 ms | pegasus energy | pegasus / max | schedutil p99 ms | "
          "schedutil energy | schedutil / max | max energy |")
    print("|---|---|---|---|---|---|---|---|")
    for rps in LOADS:
        p, u, m = (runs[(n, rps)] for n in ("pegasus", "schedutil", "max"))
        print(f"| {rps} | {cell(p['p99'], p['p99'])} | {p['energy']:.1f} | "
              f"{p['energy'] / m['energy']:.3f} | {cell(u['p99'], u['p99'])} | "
              f"{u['energy']:.1f} | {u['energy'] / m['energy']:.3f} | {m['energy']:.1f} |")


def amp_static_per_core():
    """The asymmetric chip's static power per busy core: 20% of its peak, shared equally
    (crates/core/src/hetero.rs)."""
    types = [(int(c), float(x)) for c, x in (t.split("@") for t in AMP_CORES.split(","))]
    return (STATIC_SHARE / (1 - STATIC_SHARE) * sum(c * x ** 3 for c, x in types)
            / sum(c for c, _ in types))


def amp_mode(args):
    r = Runner(args, "amp")
    amp_table = r.plan("eetl-amp", AMP_CORES)
    amp = r.sweep(AMP_CORES, [f"eetl:{TARGET:g}"], amp_table, "amp-eetl")
    dvfs = {}
    # With both rules, also the DVFS chip at the asymmetric chip's static power per core:
    # what the comparison is without the bigger chip's leakage.
    equal = [f"busy:{amp_static_per_core():.6f}"] if args.static == "both" else []
    for static in rules(args) + equal:
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
        if s != first and not s.startswith("busy:") and any(abs(d[("max", rps)]["energy"] - dvfs[first][("max", rps)]["energy"])
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
    static = amp_static_per_core()
    print("\nBusy power per unit of work: AMP " + ", ".join(f"{(x ** 3 + static) / x:.2f}"
                                                          for _, x in types) + "; "
          + "; ".join(f"DVFS `{s}` " + ", ".join(f"{x:.2f}" for x in busy_power_per_work(AMP_PSTATES, s))
                      + f" (floor {energy_floor(AMP_PSTATES, s):.2f})" for s in dvfs) + ".")


def rules(args):
    return ["voltage", "fixed"] if args.static == "both" else [args.static]


LIVE_PSTATES = "1:1,2:8"
LIVE_CORES = "2"


def live_mode(args):
    """eetl-dvfs against max on 2 emulated DVFS cores, one seed at a time, the order of the
    two alternating, so that the machine's drift falls on both."""
    os.makedirs(args.out, exist_ok=True)
    static = "voltage" if args.static == "both" else args.static
    profile = os.path.join(args.out, "asian-6-live-profile.csv")
    if not os.path.exists(profile):
        # The plan's demand is what a request takes in this runtime at the top state (its
        # thread, pinning and placement included), from a calibration run of `max` on
        # another seed: `tailor profile` times the work alone, about 30% less.
        print(f"calibration run: max, seed 7, {args.rps:g} rps", file=sys.stderr)
        records = os.path.join(args.out, "calibration-records.csv")
        sh([TAILOR, "run", "--workload", "asian:6", "--policy", "max", "--cores", LIVE_CORES,
            "--pstates", LIVE_PSTATES, "--static-power", static, "--rps", f"{args.rps:g}",
            "--requests", str(args.live_requests), "--seed", "7", "--records", records])
        import csv
        with open(records) as f, open(profile, "w") as out:
            out.write("request,t1_ms\n")
            for r in csv.DictReader(f):
                t1 = float(r["finish_ms"]) - float(r["start_ms"])
                out.write(f"q{int(r['request']):05d},{t1:.6f}\n")
    # The profile is at the host's speed, the top state's; work counts at speed 1.
    demand = f"scale:2:profile:{profile}"
    plan = os.path.join(args.out, f"plan-live-{static}.json")
    sh([TAILOR, "plan", "eetl", "--demand", demand, "--cores", LIVE_CORES, "--pstates",
        LIVE_PSTATES, "--static-power", static, "--target-ms", f"{args.target:g}",
        "--rps", "10:100", "--seed", str(args.seed), "--out", plan])
    eetl = f"eetl-dvfs:{args.target:g}"
    log = open(os.path.join(args.out, f"live-{static}.jsonl"), "a")
    runs = {}
    seeds = [int(x) for x in args.live_seeds.split(",")]
    for i, seed in enumerate(seeds):
        order = ["max", eetl] if i % 2 == 0 else [eetl, "max"]
        for pol in order:
            print(f"running {pol}, seed {seed}, {args.rps:g} rps", file=sys.stderr)
            out = sh([TAILOR, "run", "--workload", "asian:6", "--policy", pol, "--cores",
                      LIVE_CORES, "--pstates", LIVE_PSTATES, "--static-power", static,
                      "--table", plan, "--rps", f"{args.rps:g}", "--requests",
                      str(args.live_requests), "--seed", str(seed), "--target-ms",
                      f"{args.target:g}"])
            s = json.loads(out.strip().splitlines()[-1])
            log.write(json.dumps(s) + "\n")
            log.flush()
            runs[(pol, seed)] = s
    print(f"Live, 2 emulated DVFS cores (P-states `{LIVE_PSTATES}`, static `{static}`), "
          f"`--workload asian:6` at {args.rps:g} rps, {args.live_requests} requests per run, "
          f"target p99 {args.target:g} ms; energy per request (model units over measured busy "
          f"time).\n")
    other = "fixed" if static != "fixed" else "voltage"
    print("| seed | max p99 ms | max energy | eetl-dvfs p99 ms | eetl-dvfs energy | "
          f"eetl-dvfs / max energy | the same under `{other}` | busy at the top (eetl-dvfs) |")
    print("|---|---|---|---|---|---|---|---|")
    priced = lambda s: reprice(s, LIVE_PSTATES, static, other)
    for seed in seeds:
        m, e = runs[("max", seed)], runs[(eetl, seed)]
        print(f"| {seed} | {m['latency_ms']['p99']:.1f} | {m['energy']['per_request']:.1f} | "
              f"{e['latency_ms']['p99']:.1f} | {e['energy']['per_request']:.1f} | "
              f"{e['energy']['per_request'] / m['energy']['per_request']:.2f} | "
              f"{priced(e) / priced(m):.2f} | {e['energy']['busy_share'][-1]:.0%} |")
    med = lambda pol, f: statistics.median(f(runs[(pol, s)]) for s in seeds)
    p99 = lambda s: s["latency_ms"]["p99"]
    energy = lambda s: s["energy"]["per_request"]
    mp, me, ep, ee = med("max", p99), med("max", energy), med(eetl, p99), med(eetl, energy)
    mo, eo = med("max", priced), med(eetl, priced)
    print(f"| median | {mp:.1f} | {me:.1f} | {ep:.1f} | {ee:.1f} | {ee / me:.2f} | "
          f"{eo / mo:.2f} | |\n")
    t = args.target
    if mp <= t:
        verdict(ep <= t, f"eetl-dvfs's median p99 {ep:.1f} ms against the {t:g} ms target "
                         f"that max meets ({mp:.1f} ms)")
    else:
        print(f"- max's median p99 {mp:.1f} ms misses {t:g} ms: the check needs a target max meets")
    verdict(ee < me, f"eetl-dvfs's median energy {ee:.1f} against max's {me:.1f} "
                     f"({ee / me:.2f}x; {eo / mo:.2f}x under `{other}`)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["accept", "amp", "governors", "all", "live"])
    ap.add_argument("--live-seeds", default="3,4,5", help="live: the seeds, comma-separated")
    ap.add_argument("--rps", type=float, default=20.0, help="live: the load")
    ap.add_argument("--live-requests", type=int, default=2000, help="live: requests per run")
    ap.add_argument("--target", type=float, default=130.0, help="live: the p99 target, ms")
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--seed", type=int, default=1, help="the first seed (plans use it too)")
    ap.add_argument("--seeds", type=int, default=1, help="seeds per point; the median is shown")
    ap.add_argument("--static", choices=["both", "fixed", "voltage"], default="both",
                    help="how static power follows the P-state (tailor simulate --static-power)")
    ap.add_argument("--out", default=os.path.join("runs", "dvfs", datetime.date.today().isoformat()))
    args = ap.parse_args()
    if args.mode == "live":
        return live_mode(args)
    if args.mode in ("accept", "all"):
        accept_mode(args)
    if args.mode == "all":
        print()
    if args.mode in ("amp", "all"):
        amp_mode(args)
    if args.mode == "all":
        print()
    if args.mode in ("governors", "all"):
        governors_mode(args)


if __name__ == "__main__":
    main()

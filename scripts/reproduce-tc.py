#!/usr/bin/env python3
"""Tail-control's experiments (Li et al., PPoPP 2016, §5, Figs. 6-15) with tailor.

Usage:
  python3 scripts/reproduce-tc.py sim  [--requests N] [--out DIR]   # 16 simulated cores
  python3 scripts/reproduce-tc.py live [--requests N] [--out DIR]   # this machine's cores
  python3 scripts/reproduce-tc.py agree [--requests N] [--out DIR]  # sim vs live, 2 cores
  python3 scripts/reproduce-tc.py calibrate [--requests N]          # the executor's costs, 2 cores
  python3 scripts/reproduce-tc.py trace [--out DIR]                 # Fig. 15 chart (SVG)
  python3 scripts/reproduce-tc.py fig2 [--requests N] [--out DIR]   # Fig. 2, bimodal work
  python3 scripts/reproduce-tc.py fig12 [--seeds 1,2,3] [--targets 20,25,30,40]  # Fig. 12 by seed
  python3 scripts/reproduce-tc.py resim --from DIR --wake-ms W      # agree's runs re-simulated
  python3 scripts/reproduce-tc.py heavy [--executor]                # #21's 16-core acceptance

Each mode prints Markdown tables (pasted into docs/reproduction.md) and keeps every run
summary as JSON lines under DIR (default runs/tail-control/). Targets are steal-first's 97.5,
98.5, 99, 99.5 and 99.75th percentiles at the same setting (the paper's footnote 4); the
tail-control table is planned for each target from the workload's DEMAND.
"""

import argparse
import csv
import math
import statistics
import json
import os
import subprocess
import sys
import tempfile

TAILOR = os.environ.get("TAILOR", "./target/release/tailor")
PERCENTILES = [97.5, 98.5, 99.0, 99.5, 99.75]
POLICIES = ["steal-first", "admit-first", "random-admit", "tail-control", "tail-control:lazy",
            "tail-control-clairvoyant"]
# Work distributions of §5 and their mean work in ms (for loads as utilization).
WORKLOADS = {
    "bing": ("shape:bing", 10.45),
    # Built from the paper's Fig. 1 facts: smallest 5 ms (40x below the largest, 200 ms),
    # 3.5% of requests between 55 and 200 ms, mean 10 ms (examples/README.md).
    "bing-fig1": ("distribution:examples/tc-bing-fig1.csv", 10.0),
    "finance": ("shape:finance", 15.93),
    "lognormal": ("lognormal:10:13", 10.0),
}
# Light, medium and heavy load as utilization; heavy is the paper's 1200 rps at 10 ms
# mean on 16 cores (75%).
LOADS = {"light": 0.55, "medium": 0.65, "heavy": 0.75}


def sh(args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{out.stderr}")
    return out.stdout


def latencies_from_records(path, warmup_frac=0.05):
    """The measured requests' latencies (the first 5% are warm-up, as in the summaries)."""
    rows = list(csv.DictReader(open(path)))
    rows = rows[int(len(rows) * warmup_frac):]
    return sorted(float(r["finish_ms"]) - float(r["arrival_ms"]) for r in rows)


def percentiles_from_records(path):
    lat = latencies_from_records(path)
    return [lat[min(len(lat) - 1, int(p / 100 * len(lat)))] for p in PERCENTILES]


class Runner:
    def __init__(self, mode, cores, requests, out_dir, seed=1):
        self.mode, self.cores, self.requests, self.seed = mode, cores, requests, seed
        # Extra `tailor simulate` arguments (the calibrated executor costs: `--wake-ms`).
        self.sim_args = []
        self.tmp = tempfile.mkdtemp(prefix="tailor-tc-")
        os.makedirs(out_dir, exist_ok=True)
        self.log = open(os.path.join(out_dir, f"{mode}-{cores}c.jsonl"), "a")
        if mode == "live" and not os.environ.get("SPIN_RATE"):
            # Calibrate the spin loop once, so every run's requests have one length.
            out = subprocess.run([TAILOR, "run", "--workload", "synthetic:const:1", "--policy", "seq",
                                  "--rps", "100", "--requests", "20", "--seed", "1"],
                                 capture_output=True, text=True)
            rate = out.stderr.split("spin loop at ")[1].split()[0]
            os.environ["SPIN_RATE"] = rate
            print(f"(spin loop calibrated once at {rate} iterations/us)")

    def plan(self, demand, rps, target, seq_fraction=0.0, plan_demand=None, max_active=None):
        """The tail-control table; `max_active` defaults to max(40, 4 x cores) rows (the
        paper's rule of thumb, twice the mean active count, is the `q2x` policies')."""
        max_active = max_active or max(40, 4 * self.cores)
        key = (demand, rps, target, seq_fraction, plan_demand, max_active)
        path = os.path.join(self.tmp, f"tc-{abs(hash(key))}.json")
        if not os.path.exists(path):
            sh([TAILOR, "plan", "tail-control", "--demand", plan_demand or demand,
                "--cores", str(self.cores), "--rps", f"{rps:.3f}", "--target-ms", f"{target:.3f}",
                "--max-active", str(max_active), "--sequential-fraction", str(seq_fraction),
                "--out", path])
        return path

    def run(self, policy, demand, rps, target=None, table=None, speedup="linear",
            arrivals="poisson", records=None, trace=None, speed_trace=None, tag=""):
        # `speed_trace`: live, where to write the run's work speed over time; simulated,
        # the trace to replay.
        # `tail-control:lazy` is tail-control with TBB's lazy dissolving.
        # `:q2x` only changes the table (see `misses`).
        label, dissolve = policy, "prompt"
        policy = policy.replace(":q2x", "")
        if policy.endswith(":lazy"):
            policy, dissolve = policy[: -len(":lazy")], "lazy"
        if self.mode == "sim":
            args = [TAILOR, "simulate", "--cores", str(self.cores), "--policy", policy,
                    "--demand", demand, "--speedup", speedup, "--arrivals", arrivals,
                    "--rps", f"{rps:.3f}", "--requests", str(self.requests), "--seed", str(self.seed)]
            if trace:
                args += ["--trace", trace]
            args += self.sim_args
        else:
            workload = f"synthetic:{demand}:{speedup}" if speedup != "linear" else f"synthetic:{demand}"
            args = [TAILOR, "run", "--workload", workload, "--policy", policy, "--cores", str(self.cores),
                    "--arrivals", arrivals, "--rps", f"{rps:.3f}", "--requests", str(self.requests),
                    "--seed", str(self.seed)]
            if os.environ.get("SPIN_RATE"):
                args += ["--spin-rate", os.environ["SPIN_RATE"]]
        if policy.startswith("tail-control"):
            args += ["--dissolve", dissolve]
        if target is not None:
            args += ["--target-ms", f"{target:.3f}"]
        if table:
            args += ["--table", table]
        if records:
            args += ["--records", records]
        if speed_trace:
            args += ["--speed-trace", speed_trace]
        summary = json.loads(sh(args).strip().splitlines()[-1])
        summary["policy"] = label
        summary["tag"] = tag
        self.log.write(json.dumps(summary) + "\n")
        self.log.flush()
        return summary

    def misses(self, demand, rps, percentiles=PERCENTILES, speedup="linear", arrivals="poisson",
               seq_fraction=0.0, policies=POLICIES, tag=""):
        """Targets from steal-first's percentiles; each policy's miss ratio at each."""
        rec = os.path.join(self.tmp, "sf.csv")
        sf = self.run("steal-first", demand, rps, speedup=speedup, arrivals=arrivals, records=rec,
                      tag=tag)
        targets = [t for p, t in zip(PERCENTILES, percentiles_from_records(rec)) if p in percentiles]
        rows = [{"target": t} for t in targets]
        # The paper's table size (§4.1): twice the mean active count, by Little's law from
        # steal-first's mean latency.
        q2x = max(1, math.ceil(2 * rps / 1000 * sf["latency_ms"]["mean"]))
        for p in policies:
            if p.startswith("tail"):
                # The table depends on the target: one run per target.
                for row in rows:
                    table = self.plan(demand, rps, row["target"], seq_fraction,
                                      max_active=q2x if ":q2x" in p else None)
                    s = self.run(p, demand, rps, row["target"], table, speedup=speedup,
                                 arrivals=arrivals, tag=tag)
                    row[p] = s["miss_ratio"]
            else:
                # One run; its records give the miss ratio at every target.
                rec = os.path.join(self.tmp, "p.csv")
                self.run(p, demand, rps, speedup=speedup, arrivals=arrivals, records=rec, tag=tag)
                lat = latencies_from_records(rec)
                for row in rows:
                    row[p] = sum(1 for l in lat if l > row["target"]) / len(lat)
        return rows


def pct(x):
    return "n/a" if x is None else f"{100 * x:.2f}"


def improvement(tc, base):
    if base is None or tc is None or base == 0:
        return "n/a"
    return f"{100 * (base - tc) / base:+.0f}%"


def ratio(x, row):
    """x over the better of steal-first and admit-first."""
    best = min(row.get("steal-first", float("inf")), row.get("admit-first", float("inf")))
    if x is None or not best or best == float("inf"):
        return "n/a"
    return f"{x / best:.2f}"


def misses_table(title, rows, policies=POLICIES):
    print(f"\n#### {title}\n")
    heads = ["target ms"] + [f"{p} %" for p in policies] + ["TC vs SF", "TC vs AF",
                                                          "TC / better", "lazy / better"]
    print("| " + " | ".join(heads) + " |")
    print("|" + "---|" * len(heads))
    for r in rows:
        cells = [f"{r['target']:.1f}"] + [pct(r.get(p)) for p in policies]
        cells += [improvement(r.get("tail-control"), r.get("steal-first")),
                  improvement(r.get("tail-control"), r.get("admit-first")),
                  ratio(r.get("tail-control"), r), ratio(r.get("tail-control:lazy"), r)]
        print("| " + " | ".join(cells) + " |")


def sim_mode(args):
    r = Runner("sim", 16, args.requests, args.out)
    print("### Simulation, 16 cores (`tailor simulate`, seed 1, "
          f"{args.requests} requests per point, Poisson arrivals unless noted)")
    for name, (demand, mean) in WORKLOADS.items():
        for load, u in LOADS.items():
            rps = u * 16 * 1000 / mean
            misses_table(f"{name}, {load} load ({rps:.0f} rps, utilization {u:.0%}), miss ratio",
                         r.misses(demand, rps, tag=f"{name}-{load}"))
    # Finance with the paper's table size (twice the mean active count) beside the default.
    fin = ["steal-first", "admit-first", "tail-control", "tail-control:lazy", "tail-control:q2x",
           "tail-control:lazy:q2x"]
    demand, mean = WORKLOADS["finance"]
    for load, u in LOADS.items():
        rps = u * 16 * 1000 / mean
        misses_table(f"finance, {load} load, tables of twice the mean active count (q2x)",
                     r.misses(demand, rps, policies=fin, tag=f"finance-q2x-{load}"), fin)
    rps = 1200
    misses_table("Fig. 9: log-normal work and log-normal arrivals (sd 1.09 ms), 1200 rps",
                 r.misses("lognormal:10:13", rps, arrivals="lognormal:1.09", tag="fig9"))
    rps = 0.75 * 16 * 1000 / 10.45
    misses_table(f"Fig. 10: Bing, 10% of each request sequential, {rps:.0f} rps "
                 "(table planned with --sequential-fraction 0.1)",
                 r.misses("shape:bing", rps, speedup="amdahl:0.1", seq_fraction=0.1, tag="fig10"))
    # Fig. 11: an inaccurate input distribution.
    print("\n#### Fig. 11: log-normal (sd 13) at 1200 rps, target 28 ms, "
          "table planned from a wrong sd\n")
    print("| table planned from | tail-control misses % | serialized |")
    print("|---|---|---|")
    for plan_sd in [10, 13, 17]:
        table = r.plan("lognormal:10:13", 1200, 28.0, plan_demand=f"lognormal:10:{plan_sd}")
        s = r.run("tail-control", "lognormal:10:13", 1200, 28.0, table, tag="fig11")
        print(f"| lognormal:10:{plan_sd} | {pct(s['miss_ratio'])} | {s.get('serialized')} |")
    for p in ["steal-first", "admit-first"]:
        s = r.run(p, "lognormal:10:13", 1200, 28.0, tag="fig11")
        print(f"| ({p}) | {pct(s['miss_ratio'])} | |")
    # Fig. 12: capacity at the 99.5th percentile, on both Bing distributions.
    print("\n#### Fig. 12: Bing capacity: the highest rps (by bisection, to 10 rps) at which "
          "99.5% of requests meet the target\n")
    print("| work | target ms | steal-first | admit-first | tail-control | tail-control:lazy | "
          "TC / SF | TC / better |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ["bing", "bing-fig1"]:
        demand = WORKLOADS[name][0]
        for target in [20.0, 30.0, 40.0]:
            caps = {p: capacity(r, p, demand, target)
                    for p in ["steal-first", "admit-first", "tail-control", "tail-control:lazy"]}
            best = max(caps["steal-first"], caps["admit-first"])
            print(f"| {name} | {target:.0f} | " + " | ".join(str(c) for c in caps.values())
                  + f" | {caps['tail-control'] / caps['steal-first']:.3f}"
                  + f" | {caps['tail-control'] / best:.3f} |", flush=True)


# The executor's own mechanics in the model (validated against it at 2 cores by `agree`
# and `resim`): held joins and lazy binary splitting's steal size.
EXECUTOR_MECHANICS = ["--joins", "held", "--steal-size", "last-split"]


def heavy_mode(args):
    """Issue #21's first acceptance point: 16 cores, heavy load (75%), shape:bing,
    bing-fig1 and log-normal work, targets at steal-first's p99 and p99.5 in the same
    model; with `--executor`, in the model of the executor's own mechanics."""
    r = Runner("sim", 16, args.requests, args.out)
    r.sim_args = EXECUTOR_MECHANICS if args.executor else []
    model = "held joins, lazy binary splitting's steals" if args.executor else "the default model"
    for name in ["bing", "bing-fig1", "lognormal"]:
        demand, mean = WORKLOADS[name]
        rps = LOADS["heavy"] * 16 * 1000 / mean
        misses_table(f"{name}, heavy load ({rps:.0f} rps), {model}, miss ratio",
                     r.misses(demand, rps, percentiles=[99, 99.5], tag=f"heavy-{name}"))


def fig12_mode(args):
    """Fig. 12 on both Bing distributions, seed by seed: the capacity at 99.5% within each
    target for steal-first, admit-first and tail-control, and the medians of the ratios."""
    seeds = [int(x) for x in args.seeds.split(",")]
    targets = [float(x) for x in args.targets.split(",")]
    print(f"#### Fig. 12 by seed: capacity (rps, to 10) at 99.5% within the target, 16 cores, "
          f"{args.requests} requests per point, seeds {args.seeds}\n")
    print("| work | target ms | seed | steal-first | admit-first | tail-control | TC / SF "
          "| TC / better |")
    print("|---|---|---|---|---|---|---|---|")
    med = statistics.median
    for name in ["bing-fig1", "bing"]:
        demand = WORKLOADS[name][0]
        for target in targets:
            sf_ratio, best_ratio = [], []
            for seed in seeds:
                r = Runner("sim", 16, args.requests, args.out, seed=seed)
                r.sim_args = EXECUTOR_MECHANICS if args.executor else []
                caps = {p: capacity(r, p, demand, target)
                        for p in ["steal-first", "admit-first", "tail-control"]}
                best = max(caps["steal-first"], caps["admit-first"])
                sf_ratio.append(caps["tail-control"] / caps["steal-first"])
                best_ratio.append(caps["tail-control"] / best)
                print(f"| {name} | {target:.0f} | {seed} | "
                      + " | ".join(str(c) for c in caps.values())
                      + f" | {sf_ratio[-1]:.3f} | {best_ratio[-1]:.3f} |", flush=True)
            print(f"| {name} | {target:.0f} | median | | | | **{med(sf_ratio):.3f}** "
                  f"| **{med(best_ratio):.3f}** |", flush=True)


def capacity(r, policy, demand, target, lo=500, hi=1500):
    """The highest rps, to 10 rps, at which `policy` keeps 99.5% within `target`; the miss
    ratio is taken to grow with the load (bisection)."""
    while hi - lo > 10:
        mid = (lo + hi) // 2
        table = r.plan(demand, mid, target) if policy.startswith("tail") else None
        if r.run(policy, demand, mid, target, table, tag="fig12")["miss_ratio"] <= 0.005:
            lo = mid
        else:
            hi = mid
    return lo


def bimodal(path, small, large):
    """A two-point work distribution: 98% at `small` ms and 2% at `large` ms (bins of
    width 0.1% around each, since a bin's work is uniform below its largest)."""
    with open(path, "w") as f:
        f.write("work_ms,probability\n")
        f.write(f"{small * 0.999:.6f},0\n{small:.6f},0.98\n{large * 0.999:.6f},0\n{large:.6f},0.02\n")
    return f"distribution:{path}"


def fig2_mode(args):
    """Fig. 2 (§3): 98% small requests and 2% large ones at 5x (short tail) or 100x (long
    tail), mean work 10 ms, 65% utilization on 16 cores; and the planner on it."""
    r = Runner("sim", 16, args.requests, args.out)
    print(f"### Fig. 2: bimodal work, 16 cores, 65% utilization, {args.requests} requests, seed 1")
    for name, ratio in [("short tail (large = 5x small)", 5), ("long tail (large = 100x small)", 100)]:
        small = 10.0 / (0.98 + 0.02 * ratio)
        demand = bimodal(os.path.join(r.tmp, f"bimodal-{ratio}.csv"), small, small * ratio)
        rps = 0.65 * 16 * 1000 / 10.0
        misses_table(f"{name}: {small:.2f} ms and {small * ratio:.1f} ms, {rps:.0f} rps, miss ratio",
                     r.misses(demand, rps, policies=["steal-first", "admit-first", "tail-control",
                                                     "tail-control:lazy"], tag=f"fig2-{ratio}"),
                     ["steal-first", "admit-first", "tail-control", "tail-control:lazy"])
        # The table's thresholds at the p99 target: the largest bin means "never serialize".
        rec = os.path.join(r.tmp, "sf.csv")
        r.run("steal-first", demand, rps, records=rec, tag=f"fig2-{ratio}")
        target = percentiles_from_records(rec)[2]
        table = json.load(open(r.plan(demand, rps, target)))
        rows = table["rows"]
        print(f"\nthresholds at the p99 target ({target:.1f} ms), active 1, 4, 16, 32, 64: "
              + ", ".join(f"{rows[min(q, len(rows)) - 1]['threshold_ms']:.1f}" for q in (1, 4, 16, 32, 64)))


def svg_trace(path, panels, window, target):
    """Fig. 15 as SVG: per policy, active requests (line) and each request's latency
    (dots at its arrival; red above the target) over the window."""
    w, h, pad = 900, 260, 50
    t0, t1 = window
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h * len(panels)}" '
           'font-family="sans-serif" font-size="12">']
    for k, (label, trace, records) in enumerate(panels):
        y0 = k * h
        pts = [(t, q) for t, q in trace if t0 <= t <= t1]
        lat = [(a, l) for a, l in records if t0 <= a <= t1]
        qmax = max([q for _, q in pts] + [1])
        lmax = max([l for _, l in lat] + [target * 1.5])
        sx = lambda t: pad + (t - t0) / (t1 - t0) * (w - 2 * pad)
        sq = lambda q: y0 + h - pad - q / qmax * (h - 2 * pad)
        sl = lambda l: y0 + h - pad - min(l, lmax) / lmax * (h - 2 * pad)
        misses = sum(1 for _, l in lat if l > target)
        out.append(f'<text x="{pad}" y="{y0 + 20}">{label}: {misses} of {len(lat)} miss '
                   f'{target:.1f} ms (line: active requests, 0-{qmax}; dots: latency by arrival, '
                   f'0-{lmax:.0f} ms)</text>')
        out.append(f'<rect x="{pad}" y="{y0 + pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" '
                   'fill="none" stroke="#888"/>')
        out.append(f'<line x1="{pad}" x2="{w - pad}" y1="{sl(target)}" y2="{sl(target)}" '
                   'stroke="#c00" stroke-dasharray="4 3"/>')
        for a, l in lat:
            color = "#c00" if l > target else "#39c"
            out.append(f'<circle cx="{sx(a):.1f}" cy="{sl(l):.1f}" r="1.6" fill="{color}"/>')
        line = " ".join(f"{sx(t):.1f},{sq(q):.1f}" for t, q in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="#222" stroke-width="1"/>')
        out.append(f'<text x="{pad}" y="{y0 + h - pad + 16}">{t0:.0f} ms</text>')
        out.append(f'<text x="{w - pad - 60}" y="{y0 + h - pad + 16}">{t1:.0f} ms</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out))


def trace_mode(args):
    """Fig. 15: a trace of active requests and latency under steal-first and tail-control."""
    r = Runner("sim", 16, 30000, args.out)
    demand, rps = "shape:bing", 0.75 * 16 * 1000 / 10.45
    rec = os.path.join(r.tmp, "sf.csv")
    r.run("steal-first", demand, rps, records=rec, tag="fig15")
    target = percentiles_from_records(rec)[3]
    table = r.plan(demand, rps, target)
    panels = []
    for p in ["steal-first", "tail-control"]:
        trace, records = os.path.join(r.tmp, p + "-trace.csv"), os.path.join(r.tmp, p + "-rec.csv")
        r.run(p, demand, rps, target, table if p == "tail-control" else None, records=records,
              trace=trace, tag="fig15")
        tr = [(float(x["time_ms"]), int(x["in_system"])) for x in csv.DictReader(open(trace))]
        rc = [(float(x["arrival_ms"]), float(x["finish_ms"]) - float(x["arrival_ms"]))
              for x in csv.DictReader(open(records))]
        panels.append((p, tr, rc))
    # The 800 ms window around steal-first's highest active count (after warm-up).
    sf_trace = [x for x in panels[0][1] if x[0] > 2000]
    peak = max(sf_trace, key=lambda x: x[1])[0]
    window = (max(0.0, peak - 400), peak + 400)
    path = os.path.join(args.out, "fig15-trace.svg")
    svg_trace(path, panels, window, target)
    print(f"wrote {path}: window {window[0]:.0f}-{window[1]:.0f} ms, target {target:.1f} ms")
    for label, _, rc in panels:
        lat = [l for a, l in rc if window[0] <= a <= window[1]]
        print(f"{label}: {sum(1 for l in lat if l > target)} of {len(lat)} requests miss")


def live_mode(args):
    cores = os.cpu_count() or 2
    r = Runner("live", cores, args.requests, args.out, seed=args.seed)
    print(f"### Live, {cores} cores (`tailor run`, seed {args.seed}, {args.requests} requests per point)")
    pols = POLICIES + ["rayon"]
    for name, (demand, mean) in WORKLOADS.items():
        u = LOADS["heavy"]
        rps = u * cores * 1000 / mean
        misses_table(f"{name}, heavy load ({rps:.0f} rps, utilization {u:.0%}), miss ratio",
                     r.misses(demand, rps, percentiles=[97.5, 99.0, 99.5], policies=pols,
                              tag=f"{name}-heavy"), pols)


# The calibration runs' seed: the validation (seeds 1-3) never uses it.
CALIBRATION_SEED = 7


def calibrate(live, sim, requests):
    """The two executor costs the model leaves out unless told, measured at 2 cores on
    runs the validation does not use (log-normal work, seed 7, steal-first):
    - the wake-up of a sleeping worker: at light load (10%), the median time from arrival
      to start of the requests that the model, with no wake-up cost, starts at once;
    - the executor's efficiency on parallel work (splitting, stealing, the per-unit checks
      and time stamps): the factor on every request's work at which the simulated mean
      latency at heavy load (75%) equals the live one, found by bisection.
    Returns (wake_ms, work_scale)."""
    demand, mean = WORKLOADS["lognormal"]
    live.seed = sim.seed = CALIBRATION_SEED
    light_rps = 0.10 * 2 * 1000 / mean
    light = 1500
    lrec, srec = os.path.join(live.tmp, "cal-live.csv"), os.path.join(sim.tmp, "cal-sim.csv")
    live.requests = sim.requests = light
    live.run("steal-first", demand, light_rps, records=lrec, tag="calibrate")
    sim.run("steal-first", demand, light_rps, records=srec, tag="calibrate")
    live.requests = sim.requests = requests
    simulated = {r["request"]: r for r in csv.DictReader(open(srec))}
    delays = [float(r["start_ms"]) - float(r["arrival_ms"]) for r in csv.DictReader(open(lrec))
              if float(simulated[r["request"]]["start_ms"]) - float(simulated[r["request"]]["arrival_ms"]) < 1e-6]
    wake = statistics.median(delays)
    sim.sim_args = ["--wake-ms", f"{wake:.4f}"]
    heavy_rps = LOADS["heavy"] * 2 * 1000 / mean
    target = live.run("steal-first", demand, heavy_rps, tag="calibrate")["latency_ms"]["mean"]
    lo, hi = 0.9, 1.2
    for _ in range(14):
        mid = (lo + hi) / 2
        got = sim.run("steal-first", f"scale:{mid:.5f}:{demand}", heavy_rps,
                      tag="calibrate")["latency_ms"]["mean"]
        lo, hi = (mid, hi) if got < target else (lo, mid)
    scale = (lo + hi) / 2
    print(f"(calibrated on log-normal work, seed {CALIBRATION_SEED}, steal-first: wake-up "
          f"{wake:.3f} ms from {len(delays)} requests at {light_rps:.0f} rps; work scale "
          f"{scale:.4f}, live mean latency {target:.2f} ms at {heavy_rps:.0f} rps, "
          f"{requests} requests)", flush=True)
    live.seed = sim.seed = 1
    return wake, scale


def calibrate_mode(args):
    sim = Runner("sim", 2, args.requests, args.out)
    live = Runner("live", 2, args.requests, args.out)
    calibrate(live, sim, args.requests)


def agree_mode(args):
    """The same settings in the simulator and live at 2 cores, heavy load (75%), on three
    seeds; the medians of the live and of the simulated runs, policy by policy.

    Beside the nominal simulation it runs two with the executor's wake-up cost measured
    first on seed-7 runs that the comparison does not use (`calibrate`):
    - `sim@r`: every request's work scaled by the work scale of the live run it is
      compared with: the wall time the run's calibrated spin loop took over the time
      asked of it (`host.work_scale` in the live summary), that is, how fast the VM ran
      the work during that run against the spin loop's calibration at the start. It is
      a measured input (what the work cost the machine in that run), not a fit to the
      latencies.
    - `sim@t`: the live run's speed replayed over time: its work scale in 100 ms
      windows (`tailor run --speed-trace`, `tailor simulate --speed-trace`), since the
      miss ratio is convex in the speed and a run's mean speed understates its misses.
      Also measured, not fitted.
    - `sim@x`: as `sim@t`, in the model of the executor's own mechanics: held joins and
      lazy binary splitting's steal size (`EXECUTOR_MECHANICS`).
    (Earlier versions printed `sim@c`, the work scaled by one factor fitted to the
    mean latency of a seed-7 run; sim@r and sim@t replaced it.)
    Within each seed the policies run in a shuffled order (seeded), so that a drift of
    the VM's speed does not always fall on the same policy."""
    import random
    seeds = [args.seed, args.seed + 1, args.seed + 2]
    print(f"### Simulator against the live executor, 2 cores, heavy load (75%), "
          f"{args.requests} requests, seeds {seeds[0]}-{seeds[-1]}, medians of the three")
    sim = Runner("sim", 2, args.requests, args.out)
    live = Runner("live", 2, args.requests, args.out)
    wake, scale = calibrate(live, sim, args.requests)
    calibrated = Runner("sim", 2, args.requests, args.out)
    calibrated.sim_args = ["--wake-ms", f"{wake:.4f}"]
    sim.sim_args = []
    print("\n`sim` is the nominal simulation; `sim@r` has the measured wake-up "
          f"({wake:.3f} ms) and each live run's own work scale (its spin loop's wall time "
          "over the time asked); `sim@t` the same wake-up and the live run's work scale "
          "over time, in 100 ms windows; `sim@x` as `sim@t` with the executor's held joins "
          "and lazy binary splitting's steals.")
    cols = ["live", "sim", "sim@r", "sim@t", "sim@x"]
    mechanics = Runner("sim", 2, args.requests, args.out)
    mechanics.sim_args = ["--wake-ms", f"{wake:.4f}"] + EXECUTOR_MECHANICS
    print("\n| workload | policy | target ms | live miss % | "
          + " | ".join(f"{c} miss % | diff" for c in cols[1:]) + " | live p99 | "
          + " | ".join(f"{c} p99 | diff" for c in cols[1:]) + " | run scales |")
    print("|---|---|---|---|" + "---|---|" * (len(cols) - 1) + "---|"
          + "---|---|" * (len(cols) - 1) + "---|")
    med = statistics.median
    diff = lambda a, b: f"{100 * (a - b) / b:+.0f}%" if b else "n/a"
    order = random.Random(args.seed)
    traces = os.path.join(args.out, "speed-traces")
    os.makedirs(traces, exist_ok=True)
    for name in ["lognormal", "bing"]:
        demand, mean = WORKLOADS[name]
        rps = LOADS["heavy"] * 2 * 1000 / mean
        rec = os.path.join(sim.tmp, "sf.csv")
        sim.seed = seeds[0]
        sim.run("steal-first", demand, rps, records=rec, tag="agree")
        target = percentiles_from_records(rec)[2]  # steal-first's p99 in simulation
        table = sim.plan(demand, rps, target)
        runs = {p: {c: [] for c in cols + ["scale"]} for p in POLICIES}
        for seed in seeds:
            live.seed = sim.seed = calibrated.seed = mechanics.seed = seed
            policies = list(POLICIES)
            order.shuffle(policies)
            for p in policies:
                t = table if p.startswith("tail") else None
                got = runs[p]
                speed = os.path.join(traces, f"{name}-{p.replace(':', '-')}-seed{seed}.csv")
                got["live"].append(live.run(p, demand, rps, target, t, speed_trace=speed,
                                            tag="agree"))
                got["sim"].append(sim.run(p, demand, rps, target, t, tag="agree"))
                delivered = got["live"][-1]["host"]["work_scale"]
                got["scale"].append(delivered)
                got["sim@r"].append(calibrated.run(p, f"scale:{delivered:.5f}:{demand}", rps,
                                                   target, t, tag="agree-run-scale"))
                got["sim@t"].append(calibrated.run(p, demand, rps, target, t, speed_trace=speed,
                                                   tag="agree-speed-trace"))
                got["sim@x"].append(mechanics.run(p, demand, rps, target, t, speed_trace=speed,
                                                  tag="agree-executor-mechanics"))
        for p in POLICIES:
            miss = [med(x["miss_ratio"] for x in runs[p][c]) for c in cols]
            p99 = [med(x["latency_ms"]["p99"] for x in runs[p][c]) for c in cols]
            scales = ", ".join(f"{x:.3f}" for x in runs[p]["scale"])
            print(f"| {name} | {p} | {target:.1f} | {pct(miss[0])} "
                  + " ".join(f"| {pct(m)} | {diff(miss[0], m)}" for m in miss[1:])
                  + f" | {p99[0]:.1f} "
                  + " ".join(f"| {x:.1f} | {diff(p99[0], x)}" for x in p99[1:])
                  + f" | {scales} |", flush=True)


def resim_mode(args):
    """The simulated columns of an earlier `agree` run again, from what it kept in
    `--from DIR` (the live summaries, `live-2c.jsonl`, and each live run's speed trace,
    `speed-traces/`): every live run against the simulation with its own speed trace and
    the wake-up `--wake-ms` (printed by that run's calibration), with free and with held
    joins (`tailor simulate --joins`), and with held joins and lazy binary splitting's
    steal size (`--steal-size last-split`), the executor's own mechanics. With
    `--mean-scale`, each run's mean work scale (`host.work_scale`) replaces its trace,
    for runs made before traces were kept. No live run is repeated."""
    med = statistics.median
    diff = lambda a, b: f"{100 * (a - b) / b:+.0f}%" if b else "n/a"
    live = [json.loads(line) for line in open(os.path.join(args.source, "live-2c.jsonl"))]
    live = [x for x in live if x.get("tag") == "agree"]
    base = "sim@r" if args.mean_scale else "sim@t"
    variants = {base: [], f"{base}+held": ["--joins", "held"],
                f"{base}+held+lbs": ["--joins", "held", "--steal-size", "last-split"]}
    print(f"### The agree run in {args.source} re-simulated: each live run's "
          + ("mean work scale" if args.mean_scale else "speed trace")
          + f", wake-up {args.wake_ms} ms; free joins, held joins, and held joins with "
          "lazy binary splitting's steal size (`+held+lbs`)\n")
    print("| workload | policy | target ms | live miss % | " + " | ".join(
        f"{v} miss % | diff" for v in variants) + " | live p99 | " + " | ".join(
        f"{v} p99 | diff" for v in variants) + " |")
    print("|---|---|---|---|" + "---|---|" * len(variants) + "---|" + "---|---|" * len(variants))
    sim = Runner("sim", 2, args.requests, args.out)
    for name in ["lognormal", "bing"]:
        demand, mean = WORKLOADS[name]
        rps = LOADS["heavy"] * 2 * 1000 / mean
        mine = [x for x in live if abs(x["rps"] - rps) < 0.01]
        if not mine:
            continue
        target = mine[0]["target_ms"]
        table = sim.plan(demand, rps, target)
        for p in POLICIES:
            runs = [x for x in mine if x["policy"] == p]
            got = {v: [] for v in variants}
            for x in runs:
                trace = os.path.join(args.source, "speed-traces",
                                     f"{name}-{p.replace(':', '-')}-seed{x['seed']}.csv")
                work = demand
                if args.mean_scale:
                    trace, work = None, f"scale:{x['host']['work_scale']:.5f}:{demand}"
                sim.seed, sim.requests = x["seed"], x["requests"]
                for v, extra in variants.items():
                    sim.sim_args = ["--wake-ms", f"{args.wake_ms}"] + extra
                    got[v].append(sim.run(p, work, rps, target,
                                          table if p.startswith("tail") else None,
                                          speed_trace=trace, tag=f"resim-{v}"))
            live_miss = med(x["miss_ratio"] for x in runs)
            live_p99 = med(x["latency_ms"]["p99"] for x in runs)
            miss = [med(y["miss_ratio"] for y in got[v]) for v in variants]
            p99 = [med(y["latency_ms"]["p99"] for y in got[v]) for v in variants]
            print(f"| {name} | {p} | {target:.1f} | {pct(live_miss)} "
                  + " ".join(f"| {pct(m)} | {diff(live_miss, m)}" for m in miss)
                  + f" | {live_p99:.1f} "
                  + " ".join(f"| {x:.1f} | {diff(live_p99, x)}" for x in p99) + " |",
                  flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["sim", "live", "agree", "calibrate", "trace", "fig2",
                                     "fig12", "resim", "heavy"])
    ap.add_argument("--executor", action="store_true",
                    help="heavy, fig12: model the executor's held joins and lazy binary "
                         "splitting's steals")
    ap.add_argument("--from", dest="source", default="runs/tail-control",
                    help="resim: the --out directory of the agree run to re-simulate")
    ap.add_argument("--mean-scale", action="store_true",
                    help="resim: each live run's mean work scale instead of its speed trace")
    ap.add_argument("--wake-ms", type=float, default=0.1,
                    help="resim: the wake-up the agree run's calibration measured")
    ap.add_argument("--seeds", default="1,2,3", help="fig12: the seeds")
    ap.add_argument("--targets", default="20,25,30,40", help="fig12: the targets, ms")
    ap.add_argument("--requests", type=int, default=None)
    ap.add_argument("--out", default="runs/tail-control")
    ap.add_argument("--seed", type=int, default=1, help="the workload seed (live and agree)")
    args = ap.parse_args()
    if args.requests is None:
        args.requests = {"sim": 100_000, "fig2": 100_000, "fig12": 100_000,
                         "heavy": 100_000}.get(args.mode, 2000)
    {"sim": sim_mode, "live": live_mode, "agree": agree_mode, "calibrate": calibrate_mode,
     "trace": trace_mode, "fig2": fig2_mode, "fig12": fig12_mode,
     "resim": resim_mode, "heavy": heavy_mode}[args.mode](args)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Adaptive Slow-to-Fast's experiments (Haque's dissertation, ch. 5, Figs. 5.6-5.12) in simulation.

Usage:
  python3 scripts/reproduce-as2f.py two   [--requests N] [--out DIR]  # Figs. 5.6, 5.7, 5.9
  python3 scripts/reproduce-as2f.py step  [--out DIR]                 # Fig. 5.8 (SVG chart)
  python3 scripts/reproduce-as2f.py three [--requests N] [--out DIR]  # Fig. 5.11
  python3 scripts/reproduce-as2f.py heat  [--requests N] [--out DIR]  # Fig. 5.12
  python3 scripts/reproduce-as2f.py live-step [--workload asian|search] [--target MS] [--seed N]
                                              [--policies eetl,rtl,ee] [--plan sim|live]
                                              [--margin M] [--compare rtl,ee] [--label L]
                                                                      # live load step, 2 cores
  python3 scripts/reproduce-as2f.py live-aba [--workload asian|search] [--seeds 5,6,7]
                                             [--plan sim|live] [--label L]
                                                  # RTL, EETL, RTL again: EETL against noise
  python3 scripts/reproduce-as2f.py live-sweep [--workload asian|search] [--target MS] [--seed N]
                                                                      # Figs. 5.6/5.7 live

Each mode prints Markdown tables (pasted into docs/reproduction.md) and keeps every run
summary as JSON lines under DIR (default runs/as2f/). Energy is normalized, as the
dissertation does, to EE's energy per request at the lowest load on 8 slow + 1 fast cores.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

TAILOR = os.environ.get("TAILOR", "./target/release/tailor")
SLOW_FAST = "8@1,1@2"
# Work on a speed-1 (slow) core. Lucene's shape scaled so that its p99 work (290 ms) is
# just above the slow core's reach of a 200 ms target and within the fast core's, as the
# dissertation's Lucene is (EE never below 291 ms); finance's shape scaled the same way
# for a 100 ms target.
WORKLOADS = {
    "search": ("scale:0.22:shape:lucene", 200.0, [10, 30, 50, 70, 90, 110, 130]),
    "finance": ("scale:3.5:shape:finance", 100.0, [10, 30, 50, 70, 90, 110, 130, 150]),
}
# Table 5.4, with Table 5.3's speeds.
CONFIGS = {
    "All Slow": "16@1",
    "SlowFast": "8@1,1@2",
    "SlowMediumFast": "5@1,1@1.44,1@2",
    "SlowMedium+Fast": "4@1,1@1.59,1@2",
    "SlowMedium++Fast": "3@1,1@1.71,1@2",
    "All Fast": "2@2",
}


def sh(args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{out.stderr}")
    return out.stdout


class Runner:
    def __init__(self, out_dir, mode, requests):
        os.makedirs(out_dir, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="tailor-as2f-")
        # Each run of a mode rewrites its log: the summaries behind the tables it prints.
        self.log = open(os.path.join(out_dir, f"{mode}.jsonl"), "w")
        self.requests = requests

    def plan(self, demand, cores, target, rps_range):
        path = os.path.join(self.tmp, f"eetl-{abs(hash((demand, cores, target, rps_range)))}.json")
        if not os.path.exists(path):
            sh([TAILOR, "plan", "eetl", "--demand", demand, "--cores", cores,
                "--target-ms", str(target), "--rps", f"{rps_range[0]}:{rps_range[1]}",
                "--samples", "100000", "--out", path])
        return path

    def sweep(self, demand, cores, policies, rps_list, target, table=None, arrivals="poisson",
              requests=None, tag="", seed=1):
        """One `tailor simulate` sweep; {(policy, rps): summary}."""
        args = [TAILOR, "simulate", "--cores", cores, "--demand", demand, "--arrivals", arrivals,
                "--requests", str(requests or self.requests), "--seed", str(seed),
                "--target-ms", str(target), "--format", "json"]
        if len(rps_list) == 1:
            args += ["--rps", str(rps_list[0])]
        else:
            step = rps_list[1] - rps_list[0]
            args += ["--rps", f"{rps_list[0]}:{rps_list[-1]}:{step}"]
        for p in policies:
            args += ["--policy", p]
        if table:
            args += ["--table", table]
        out = {}
        for line in sh(args).strip().splitlines():
            s = json.loads(line)
            s["tag"] = tag
            self.log.write(json.dumps(s) + "\n")
            out[(s["policy"], round(s["rps"], 6))] = s
        self.log.flush()
        return out


def energy(s):
    return s["energy"]["per_request"]


def best_rc(r, demand, cores, rps, target, bounds):
    """RC's work bound chosen per load (§5.2.6): least energy meeting the target, else
    the lowest tail."""
    runs = r.sweep(demand, cores, [f"rc-hetero:{w}" for w in bounds], [rps], target, tag="rc")
    ok = [s for s in runs.values() if s["latency_ms"]["p99"] <= target]
    if ok:
        return min(ok, key=energy)
    return min(runs.values(), key=lambda s: s["latency_ms"]["p99"])


def low_load_oracle(r, demand, target, rps, table, t_star):
    """EETL against the best fixed threshold (1 ms grid up to 2 t*) that meets the target,
    both as a fraction of RTL's energy at `rps`, on three arrival seeds: how much of the
    "at most half of RTL's energy" goal any fixed threshold could reach."""
    print(f"\nAt {rps} rps, energy / RTL's on three seeds (best fixed: the threshold "
          f"on a 1 ms grid with the least energy whose p99 meets {target:g} ms):\n")
    print("| seed | RTL p99 ms | EETL p99 ms | EETL / RTL | best fixed | its p99 ms | its / RTL |")
    print("|---|---|---|---|---|---|---|")
    grid = [f"s2f:{t}" for t in range(0, int(2 * t_star) + 1)]
    for seed in [1, 2, 3]:
        runs = r.sweep(demand, SLOW_FAST, [f"eetl:{target:g}", "rtl", *grid], [rps], target,
                       table, tag="oracle", seed=seed)
        rtl = energy(runs[("rtl", float(rps))])
        eetl = runs[(f"eetl:{target:g}", float(rps))]
        ok = [runs[(p, float(rps))] for p in grid
              if runs[(p, float(rps))]["latency_ms"]["p99"] <= target]
        best = min(ok, key=energy) if ok else None
        fixed = (f"{best['policy']} | {best['latency_ms']['p99']:.1f} | "
                 f"{energy(best) / rtl:.3f}" if best else "none | - | -")
        print(f"| {seed} | {runs[('rtl', float(rps))]['latency_ms']['p99']:.1f} | "
              f"{eetl['latency_ms']['p99']:.1f} | {energy(eetl) / rtl:.3f} | {fixed} |")


def two_mode(args):
    r = Runner(args.out, "two", args.requests)
    print(f"Settings: {SLOW_FAST} (8 slow, 1 fast), `tailor simulate`, seed 1, "
          f"{args.requests} requests per point, Poisson arrivals.")
    for name, (demand, target, loads) in WORKLOADS.items():
        table = r.plan(demand, SLOW_FAST, target, (loads[0], loads[-1]))
        plan = json.load(open(table))
        runs = r.sweep(demand, SLOW_FAST, [f"eetl:{target:g}", "rtl", "ee", "oblivious"], loads,
                       target, table, tag=name)
        base = energy(runs[("ee", loads[0])])
        rc = {rps: best_rc(r, demand, SLOW_FAST, rps, target, list(range(40, 320, 20)))
              for rps in loads}
        pols = [f"eetl:{target:g}", "rtl", "ee", "oblivious"]
        heads = ["EETL", "RTL", "EE", "Oblivious", "RC"]
        print(f"\n#### {name} (`{demand}`), p99 target {target:g} ms; EETL t* = "
              f"{[round(t, 1) for t in plan['thresholds_ms']]} ms\n")
        for title, pick in [("p99 ms", lambda s: f"{s['latency_ms']['p99']:.1f}"),
                            ("mean ms", lambda s: f"{s['latency_ms']['mean']:.1f}"),
                            ("energy (EE at lowest load = 1)", lambda s: f"{energy(s) / base:.2f}")]:
            print(f"| rps | " + " | ".join(f"{h} {title}" for h in heads) + " |")
            print("|" + "---|" * (len(heads) + 1))
            for rps in loads:
                cells = [pick(runs[(p, float(rps))]) for p in pols] + [pick(rc[rps])]
                print(f"| {rps} | " + " | ".join(cells) + " |")
            print()
        print("RC's work bound per load (ms): " +
              ", ".join(f"{rps}: {rc[rps]['policy'].split(':')[1]}" for rps in loads))
        low = loads[0]
        e, t = energy(runs[(f"eetl:{target:g}", float(low))]), energy(runs[("rtl", float(low))])
        print(f"\nAt {low} rps RTL uses {t / e:.2f}x EETL's energy (EETL/RTL = {e / t:.2f}).")
        met = [rps for rps in loads if runs[("rtl", float(rps))]["latency_ms"]["p99"] <= target]
        bad = [rps for rps in met
               if runs[(f"eetl:{target:g}", float(rps))]["latency_ms"]["p99"] > target]
        print(f"RTL meets the target at {met} rps; EETL misses it at {bad or 'none'} of those.")
        low_load_oracle(r, demand, target, low, table, plan["thresholds_ms"][0])
    # Fig. 5.9: sensitivity to the target (search).
    demand, _, loads = WORKLOADS["search"]
    print("\n#### Fig. 5.9: search, EETL at three targets (p99 ms / energy, EE at lowest load = 1)\n")
    base = None
    rows = {}
    for target in [175.0, 200.0, 225.0]:
        table = r.plan(demand, SLOW_FAST, target, (loads[0], loads[-1]))
        runs = r.sweep(demand, SLOW_FAST, [f"eetl:{target:g}", "ee"], loads, target, table,
                       tag="fig5.9")
        base = base or energy(runs[("ee", float(loads[0]))])
        rows[target] = runs
    print("| rps | " + " | ".join(f"target {t:g}" for t in rows) + " |")
    print("|" + "---|" * (len(rows) + 1))
    for rps in loads:
        cells = [f"{runs[(f'eetl:{t:g}', float(rps))]['latency_ms']['p99']:.1f} / "
                 f"{energy(runs[(f'eetl:{t:g}', float(rps))]) / base:.2f}" for t, runs in rows.items()]
        print(f"| {rps} | " + " | ".join(cells) + " |")


def svg_epochs(path, epochs, target, phases):
    """Fig. 5.8 as SVG: each epoch's p99 (dots) and the slow-to-fast threshold (line)."""
    w, h, pad = 900, 320, 55
    t1 = max(e["time_ms"] for e in epochs)
    pmax = max(max(e["p99_ms"] for e in epochs), target) * 1.15
    tmax = max(max(e["thresholds_ms"][0] for e in epochs), 1.0) * 1.15
    sx = lambda t: pad + t / t1 * (w - 2 * pad)
    sp = lambda p: h - pad - p / pmax * (h - 2 * pad)
    st = lambda t: h - pad - t / tmax * (h - 2 * pad)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           'font-family="sans-serif" font-size="12">',
           f'<text x="{pad}" y="20">EETL, load {phases}: p99 of each 2000-request '
           f'epoch (dots, 0-{pmax:.0f} ms), target {target:g} ms (dashed), threshold '
           f'(line, 0-{tmax:.0f} ms)</text>',
           f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" '
           'fill="none" stroke="#888"/>',
           f'<line x1="{pad}" x2="{w - pad}" y1="{sp(target)}" y2="{sp(target)}" '
           'stroke="#c00" stroke-dasharray="4 3"/>']
    line = " ".join(f"{sx(e['time_ms']):.1f},{st(e['thresholds_ms'][0]):.1f}" for e in epochs)
    out.append(f'<polyline points="{line}" fill="none" stroke="#393" stroke-width="1.2"/>')
    for e in epochs:
        color = "#c00" if e["p99_ms"] > target else "#36c"
        out.append(f'<circle cx="{sx(e["time_ms"]):.1f}" cy="{sp(e["p99_ms"]):.1f}" r="2.5" '
                   f'fill="{color}"/>')
    out.append(f'<text x="{pad}" y="{h - pad + 16}">0 s</text>')
    out.append(f'<text x="{w - pad - 50}" y="{h - pad + 16}">{t1 / 1000:.0f} s</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out))


def step_mode(args):
    """Fig. 5.8: EETL under load alternating low and high."""
    r = Runner(args.out, "step", 0)
    demand, target, loads = WORKLOADS["search"]
    table = r.plan(demand, SLOW_FAST, target, (loads[0], loads[-1]))
    phases = "20*20000,70*20000,20*20000,70*20000"
    out = sh([TAILOR, "simulate", "--cores", SLOW_FAST, "--demand", demand, "--arrivals",
              f"phases:{phases}", "--rps", "20", "--requests", "80000", "--seed", "1",
              "--target-ms", str(target), "--policy", f"eetl:{target:g}", "--table", table])
    s = json.loads(out.strip().splitlines()[-1])
    r.log.write(json.dumps(s) + "\n")
    path = os.path.join(args.out, "fig5.8-load-step.svg")
    svg_epochs(path, s["epochs"], target, phases)
    print(f"wrote {path}")
    print("\n| phase | rps | p99 ms | mean ms |\n|---|---|---|---|")
    for i, p in enumerate(s["phases"]):
        print(f"| {i + 1} | {p['rps']:g} | {p['p99_ms']:.1f} | {p['mean_ms']:.1f} |")
    over = [e for e in s["epochs"] if e["p99_ms"] > target]
    print(f"\n{len(over)} of {len(s['epochs'])} epochs have a p99 above {target:g} ms; "
          f"the worst is {max(e['p99_ms'] for e in s['epochs']):.1f} ms.")


# The live workloads: what `tailor run` takes, the profile that stands for it in the
# simulator (and how to measure it), the load step, and the plan's load range.
LIVE = {
    "asian": {
        "workload": ["--workload", "asian:6"],
        "profile": "asian-6-profile.csv",
        "measure": ["--workload", "asian:6", "--degrees", "1..1", "--repeat", "1",
                    "--requests", "2000", "--seed", "7"],
        "phases": "20*4000,50*4000,20*4000,50*4000",
        "plan_rps": "10:100",
        "target": 130.0,
        "loads": [10, 30, 50],
        "rc_bounds": list(range(10, 210, 10)),
        "prefix": "",
    },
    "search": {
        "workload": ["--workload", "search"],
        "profile": "search-profile.csv",
        "measure": ["--workload", "search", "--degrees", "1..1", "--repeat", "10",
                    "--requests", "400"],
        "phases": "50*4000,150*4000,50*4000,150*4000",
        "plan_rps": "25:175",
        "target": 25.0,
        "loads": [50, 100, 150],
        "rc_bounds": list(range(2, 32, 2)),
        "prefix": "search-",
    },
}


def live_step_mode(args):
    """A live load step on this machine: 1 slow (emulated) + 1 fast core, EETL planned
    from a measured profile, and each of `--policies` run through the same step on the
    same requests (Asian: about 10 minutes each; search: about 3)."""
    wl = LIVE[args.workload]
    out, target = args.out, args.target or wl["target"]
    _, table, profile = live_setup(out, target, args.workload, args.plan, args.margin)
    # `eetl-sim` runs EETL with the simulator-identified plan next to the live one.
    tables = {"eetl": table,
              "eetl-sim": os.path.join(out, f"{wl['prefix']}eetl-{target:g}.json")}
    phases = wl["phases"]
    extra = ["--search-profile", profile] if args.workload == "search" else []
    runs = {}
    for pol in args.policies.split(","):
        runs[pol] = run_live_step(args, wl, pol, tables.get(pol, table), extra, args.label)
    for pol in args.compare.split(",") if args.compare else []:
        # An earlier run of the same step and seed, kept with its chart points.
        tag = os.path.join(out, f"{wl['prefix']}step-{pol}-{target:g}-s{args.seed}")
        if pol not in runs and os.path.exists(tag + ".windows.json"):
            summary = open(tag + ".json").read().strip().splitlines()[-1]
            runs[pol] = (json.loads(summary), [tuple(w) for w in json.load(open(tag + ".windows.json"))])
        elif pol not in runs:
            sys.exit(f"--compare {pol}: no earlier run at {tag}.json with its .windows.json")
    report_live_step(runs, out, target, phases, args.seed,
                     wl["prefix"] + ("live-plan-" if args.plan == "live" else "")
                     + (margin_tag(args.margin)[1:] + "-" if args.margin is not None else ""),
                     args.label)


def run_live_step(args, wl, pol, table, extra, label):
    """Runs policy `pol` through the workload's live step at `args.seed`; keeps its summary
    and chart points under `args.out`; returns (summary, windows)."""
    target = args.target or wl["target"]
    name = f"eetl:{target:g}" if pol.startswith("eetl") else pol
    records = os.path.join(tempfile.mkdtemp(prefix="tailor-live-step-"), f"{pol}.csv")
    print(f"running {name} through the step, seed {args.seed}", file=sys.stderr)
    summary = sh([TAILOR, "run", *wl["workload"], *extra, "--policy", name,
                  "--cores", "1@1,1@2", "--arrivals", f"phases:{wl['phases']}", "--rps", "20",
                  "--requests", "16000", "--seed", str(args.seed), "--target-ms",
                  str(target), "--table", table, "--records", records])
    plan = "-live" if pol == "eetl" and args.plan == "live" else ""
    plan += margin_tag(args.margin) if pol.startswith("eetl") else ""
    tag = f"{wl['prefix']}step-{pol}{plan}-{target:g}-s{args.seed}{label}"
    open(os.path.join(args.out, tag + ".json"), "w").write(summary)
    ws = windows(records, 1000)
    # The chart's points, so that a later run can draw this one next to it.
    json.dump(ws, open(os.path.join(args.out, tag + ".windows.json"), "w"))
    return json.loads(summary.strip().splitlines()[-1]), ws


# A phase whose run had a hiccup at least this long is marked: the machine, not the
# policy, held every thread for that long (crates/bench/src/host.rs).
STALL_MS = 10.0


def live_aba_mode(args):
    """EETL judged against the machine's own noise: for each seed, RTL, EETL and RTL
    again, back to back through the same step. A phase counts for EETL when both RTL runs
    meet the target there; how often the second RTL run misses where the first met is the
    noise floor. Phases whose run had a stall of STALL_MS or more are marked."""
    wl = LIVE[args.workload]
    target = args.target or wl["target"]
    _, table, profile = live_setup(args.out, target, args.workload, args.plan, args.margin)
    extra = ["--search-profile", profile] if args.workload == "search" else []
    totals = {"both_rtl_met": 0, "eetl_missed": 0, "eetl_missed_unstalled": 0,
              "rtl_a_met": 0, "rtl_b_missed": 0, "eetl_met": 0, "energy": []}
    rows = []
    for seed in [int(x) for x in args.seeds.split(",")]:
        args.seed = seed
        a = run_live_step(args, wl, "rtl", table, extra, args.label + "a")
        e = run_live_step(args, wl, "eetl", table, extra, args.label)
        b = run_live_step(args, wl, "rtl", table, extra, args.label + "b")
        runs = {"rtl": a, "eetl": e, "rtl-b": b}
        report_live_step(runs, args.out, target, wl["phases"], seed,
                         wl["prefix"] + ("live-plan-" if args.plan == "live" else "") + "aba-",
                         args.label)
        for i, ph in enumerate(e[0]["phases"]):
            cell = lambda run: run[0]["phases"][i]
            pa, pe, pb = cell(a), cell(e), cell(b)
            stalled = [n for n, p in (("RTL", pa), ("EETL", pe), ("RTL again", pb))
                       if (p.get("host") or {}).get("max_hiccup_ms", 0) >= STALL_MS]
            rows.append((seed, i + 1, ph["rps"], pa, pe, pb, stalled))
            met = lambda p: p["p99_ms"] <= target
            if met(pa):
                totals["rtl_a_met"] += 1
                totals["rtl_b_missed"] += not met(pb)
            if met(pa) and met(pb):
                totals["both_rtl_met"] += 1
                totals["eetl_met"] += met(pe)
                totals["eetl_missed"] += not met(pe)
                totals["eetl_missed_unstalled"] += not met(pe) and "EETL" not in stalled
        totals["energy"].append(e[0]["energy"]["per_request"] /
                                (0.5 * (a[0]["energy"]["per_request"] + b[0]["energy"]["per_request"])))
    host = lambda p: (f"{p['p99_ms']:.1f} ({(p.get('host') or {}).get('max_hiccup_ms', 0):.0f}, "
                      f"{(p.get('host') or {}).get('steal_ms') or 0:.0f})")
    print(f"\nTarget {target:g} ms. Each phase's p99 ms (longest hiccup ms, steal ms); "
          f"runs with a hiccup of {STALL_MS:g} ms or more are named.\n")
    print("| seed | phase | rps | RTL | EETL | RTL again | stalled runs |")
    print("|---|---|---|---|---|---|---|")
    for seed, i, rps, pa, pe, pb, stalled in rows:
        print(f"| {seed} | {i} | {rps:g} | {host(pa)} | {host(pe)} | {host(pb)} | "
              f"{', '.join(stalled) or '-'} |")
    t = totals
    print(f"\n- RTL's second run missed {t['rtl_b_missed']} of the {t['rtl_a_met']} phases its "
          f"first run met (the noise floor).")
    print(f"- Both RTL runs met {t['both_rtl_met']} phases; EETL met {t['eetl_met']} of them "
          f"and missed {t['eetl_missed']} ({t['eetl_missed_unstalled']} without a stall in "
          f"EETL's run).")
    print("- EETL's energy per request over the mean of the two RTL runs': " +
          ", ".join(f"{x:.2f}" for x in t["energy"]))


def margin_tag(margin):
    """The file-name mark of a plan made with a setpoint margin other than the default."""
    return "" if margin is None else f"-m{margin:g}"


# Open-loop epochs per load interval when the plant is identified live (`--plan live`),
# and the identification runs' seed (the same plan serves every step seed).
IDENTIFY_EPOCHS = 14
IDENTIFY_SEED = 5


def live_setup(out, target, workload="asian", plan="sim", margin=None):
    """The workload's profile (measured once) as simulator demand, and EETL's plan for
    1 slow + 1 fast core: (demand, plan path, profile path). With plan="live" each load
    interval's model is identified from an open-loop run on this machine at the
    interval's mid-point (`tailor run --open-loop`; runs kept and reused), and only t*
    comes from the simulator's low-load problem."""
    wl = LIVE[workload]
    os.makedirs(out, exist_ok=True)
    profile = os.path.join(out, wl["profile"])
    if not os.path.exists(profile):
        sh([TAILOR, "profile", *wl["measure"], "--out", profile])
    # The profile is at the machine's speed, the fast core's; work is counted on the slow
    # (half-speed) core.
    demand = f"scale:2:profile:{profile}"
    table = os.path.join(out, f"{wl['prefix']}eetl-{target:g}{margin_tag(margin)}.json")
    plan_args = [TAILOR, "plan", "eetl", "--demand", demand, "--cores", "1@1,1@2",
                 "--target-ms", str(target), "--rps", wl["plan_rps"]]
    if margin is not None:
        plan_args += ["--margin", str(margin)]
    sh([*plan_args, "--out", table])
    if plan == "sim":
        return demand, table, profile
    lo, hi = (float(x) for x in wl["plan_rps"].split(":"))
    extra = ["--search-profile", profile] if workload == "search" else []
    runs = []
    for i in range(3):
        rps = lo + (i + 0.5) * (hi - lo) / 3
        # Kept and reused: delete them after changing IDENTIFY_EPOCHS or the profile.
        path = os.path.join(out, f"{wl['prefix']}identify-{target:g}-{rps:g}-s{IDENTIFY_SEED}.json")
        if not os.path.exists(path):
            print(f"identifying the live plant at {rps:g} rps", file=sys.stderr)
            summary = sh([TAILOR, "run", *wl["workload"], *extra, "--policy",
                          f"eetl:{target:g}", "--table", table, "--open-loop", "--cores",
                          "1@1,1@2", "--rps", f"{rps:g}", "--requests",
                          str(2000 * (IDENTIFY_EPOCHS + 1)), "--seed", str(IDENTIFY_SEED)])
            open(path, "w").write(summary)
        runs.append(path)
    table = os.path.join(out, f"{wl['prefix']}eetl-{target:g}-live{margin_tag(margin)}.json")
    # The fitted models and any warnings go to stderr: show them.
    out = subprocess.run([*plan_args, "--live-runs", ",".join(runs), "--out", table],
                         capture_output=True, text=True)
    print(out.stderr, file=sys.stderr, end="")
    if out.returncode != 0:
        sys.exit("failed: tailor plan eetl --live-runs")
    return demand, table, profile


def live_sweep_mode(args):
    """Figs. 5.6/5.7 live on this machine: a workload at three loads, every policy,
    1 slow (emulated) + 1 fast core. RC's work bound is picked per load on the simulator,
    as in `two` (Asian: about 5 minutes per policy; search: about 1)."""
    wl = LIVE[args.workload]
    out, target = args.out, args.target or wl["target"]
    demand, table, profile = live_setup(out, target, args.workload, args.plan)
    extra = ["--search-profile", profile] if args.workload == "search" else []
    r = Runner(out, f"{wl['prefix']}live-sweep-sim", 20000)
    loads, requests = wl["loads"], 2000
    runs = {}
    for rps in loads:
        rc = best_rc(r, demand, "1@1,1@2", rps, target, wl["rc_bounds"])["policy"]
        for pol in [f"eetl:{target:g}", "rtl", "ee", "oblivious", rc]:
            print(f"running {pol} at {rps} rps", file=sys.stderr)
            summary = sh([TAILOR, "run", *wl["workload"], *extra, "--policy", pol,
                          "--cores", "1@1,1@2", "--rps", str(rps), "--requests", str(requests),
                          "--seed", str(args.seed), "--target-ms", str(target),
                          "--table", table])
            runs[(pol.split(":")[0], rps)] = json.loads(summary.strip().splitlines()[-1])
    plan = "live-plan-" if args.plan == "live" else ""
    name = f"{wl['prefix']}{plan}sweep-{target:g}-s{args.seed}.jsonl"
    with open(os.path.join(out, name), "w") as f:
        for s in runs.values():
            f.write(json.dumps(s) + "\n")
    base = energy(runs[("ee", loads[0])])
    print(f"Live, `{' '.join(wl['workload'][1:])}`, target {target:g} ms, seed {args.seed}, "
          f"{requests} requests per point; energy per request with EE at {loads[0]} rps = 1.\n")
    print("| rps | policy | p99 ms | mean ms | energy | busy on fast core | migrations per request |")
    print("|---|---|---|---|---|---|---|")
    for rps in loads:
        for name in ["eetl", "rtl", "ee", "oblivious", "rc-hetero"]:
            s = runs[(name, rps)]
            print(f"| {rps} | {s['policy']} | {s['latency_ms']['p99']:.1f} | "
                  f"{s['latency_ms']['mean']:.1f} | {energy(s) / base:.2f} | "
                  f"{s['energy']['busy_share'][-1]:.0%} | {s['migrations_per_request']:.2f} |")


def windows(records, size):
    """(mean finish time in s, p99 latency in ms) of each `size` requests in arrival order."""
    import csv
    rows = sorted(csv.DictReader(open(records)), key=lambda r: int(r["request"]))
    out = []
    for i in range(0, len(rows) - size + 1, size):
        w = rows[i:i + size]
        lat = sorted(float(r["finish_ms"]) - float(r["arrival_ms"]) for r in w)
        t = sum(float(r["finish_ms"]) for r in w) / len(w) / 1000.0
        out.append((t, lat[min(len(lat) - 1, int(0.99 * len(lat)))]))
    return out


COLORS = {"eetl": "#36c", "eetl-sim": "#96c", "rtl": "#c60", "rtl-b": "#e9a", "ee": "#393"}


def svg_live_step(path, runs, target, phases):
    """The p99 of every 1000 requests against the target, one line per policy, and EETL's
    threshold."""
    w, h, pad = 900, 340, 55
    t1 = max([t for _, ws in runs.values() for t, _ in ws] +
             [e["time_ms"] / 1000 for s, _ in runs.values() for e in s.get("epochs", [])])
    # Clip at 2.5 x the target so that one burst does not flatten the rest; clipped
    # points are labelled with their value.
    top = max(max(p for _, ws in runs.values() for _, p in ws), target)
    pmax = min(top, 2.5 * target) * 1.1
    sx = lambda t: pad + t / t1 * (w - 2 * pad)
    sp = lambda p: h - pad - min(p, pmax) / pmax * (h - 2 * pad)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           'font-family="sans-serif" font-size="12">',
           f'<text x="{pad}" y="20">Live, 1 slow + 1 fast core, load {phases}: p99 of each '
           f'1000 requests (0-{pmax:.0f} ms); target {target:g} ms dashed</text>',
           f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" '
           'fill="none" stroke="#888"/>',
           f'<line x1="{pad}" x2="{w - pad}" y1="{sp(target)}" y2="{sp(target)}" '
           'stroke="#c00" stroke-dasharray="4 3"/>']
    for k, (pol, (s, ws)) in enumerate(runs.items()):
        color = COLORS.get(pol, "#666")
        line = " ".join(f"{sx(t):.1f},{sp(p):.1f}" for t, p in ws)
        out.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        for t, p in ws:
            if p > pmax:
                out.append(f'<text x="{sx(t) - 40:.1f}" y="{pad + 30 + 14 * k}" '
                           f'fill="{color}">{p:.0f} ms</text>')
        label = s["policy"] + {"eetl-sim": " (sim plan)", "rtl-b": " again"}.get(pol, "")
        out.append(f'<text x="{pad + 10 + 130 * k}" y="{pad + 16}" fill="{color}">'
                   f'{label}</text>')
        if pol == "eetl" and s.get("epochs"):
            tmax = max(max(e["thresholds_ms"][0] for e in s["epochs"]), 1.0)
            st = lambda x: h - pad - x / tmax * 0.25 * (h - 2 * pad)
            pts = " ".join(f"{sx(e['time_ms'] / 1000):.1f},{st(e['thresholds_ms'][0]):.1f}"
                           for e in s["epochs"])
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" '
                       'stroke-dasharray="2 2"/>')
            out.append(f'<text x="{pad + 10}" y="{h - pad - 4}" fill="{color}">EETL threshold '
                       f'per epoch, dotted (bottom quarter, 0-{tmax:.0f} ms)</text>')
    out.append(f'<text x="{pad - 50}" y="{sp(target) + 4:.1f}">{target:g} ms</text>')
    t = 0.0
    for ph in phases.split(","):  # phase bounds, RATE*COUNT each
        rate, count = ph.split("*")
        out.append(f'<text x="{sx(t) + 4:.1f}" y="{pad - 5}" fill="#888">{rate} rps</text>')
        t += float(count) / float(rate)
        out.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{pad}" y2="{h - pad}" '
                   'stroke="#bbb"/>')
    out.append(f'<text x="{pad}" y="{h - pad + 16}">0 s</text>')
    out.append(f'<text x="{w - pad - 50}" y="{h - pad + 16}">{t1:.0f} s</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out))


def report_live_step(runs, out, target, phases, seed, prefix="", label=""):
    path = os.path.join(out, f"{prefix}live-load-step-{target:g}-s{seed}{label}.svg")
    svg_live_step(path, runs, target, phases)
    print(f"wrote {path}")
    pols = list(runs)
    print(f"\nTarget {target:g} ms, seed {seed}: each phase's p99 ms (mean ms)\n")
    print("| phase | rps | " + " | ".join(runs[p][0]["policy"] for p in pols) + " |")
    print("|---|---|" + "---|" * len(pols))
    for i, ph in enumerate(runs[pols[0]][0]["phases"]):
        cells = [f"{runs[p][0]['phases'][i]['p99_ms']:.1f} ({runs[p][0]['phases'][i]['mean_ms']:.1f})"
                 for p in pols]
        print(f"| {i + 1} | {ph['rps']:g} | " + " | ".join(cells) + " |")
    print("| all | | " + " | ".join(f"{runs[p][0]['latency_ms']['p99']:.1f}" for p in pols) + " |")
    print("| energy per request | | " +
          " | ".join(f"{runs[p][0]['energy']['per_request']:.1f}" for p in pols) + " |")
    if "eetl" in runs:
        s = runs["eetl"][0]
        print("\n| epoch | ends at s | p99 ms | load estimate rps | threshold ms |\n|---|---|---|---|---|")
        for i, e in enumerate(s["epochs"]):
            print(f"| {i + 1} | {e['time_ms'] / 1000:.0f} | {e['p99_ms']:.1f} | "
                  f"{e['rps_estimate']:.1f} | {e['thresholds_ms'][0]:.1f} |")


def exhaustive(r, demand, cores, rps, target, step, top):
    """The best fixed pair of thresholds on a `step` ms grid (§5.3.4's Exhaustive)."""
    grid = [i * step for i in range(int(top / step) + 1)]
    pols = [f"s2f:{a:g}:{b:g}" for a in grid for b in grid if b >= a]
    runs = r.sweep(demand, cores, pols, [rps], target, tag="exhaustive")
    ok = [s for s in runs.values() if s["latency_ms"]["p99"] <= target]
    return min(ok, key=energy) if ok else None


def three_mode(args):
    """Fig. 5.11: EETL, Exhaustive and Reactive on three core types."""
    r = Runner(args.out, "three", args.requests)
    demand, target, _ = WORKLOADS["search"]
    loads = [10, 30, 50, 70]
    base = energy(r.sweep(demand, SLOW_FAST, ["ee"], [loads[0]], target)[("ee", float(loads[0]))])
    print(f"Search (`{demand}`), target {target:g} ms, {args.requests} requests per point; "
          f"Exhaustive on a 5 ms grid up to 200 ms; energy with EE on {SLOW_FAST} at "
          f"{loads[0]} rps = 1.")
    for name in ["SlowMediumFast", "SlowMedium+Fast", "SlowMedium++Fast"]:
        cores = CONFIGS[name]
        table = r.plan(demand, cores, target, (loads[0], 110))
        plan = json.load(open(table))
        runs = r.sweep(demand, cores, [f"eetl:{target:g}", f"reactive:{target:g}"], loads,
                       target, table, tag=name)
        print(f"\n#### {name} (`{cores}`), t* = {[round(t, 1) for t in plan['thresholds_ms']]} ms\n")
        print("| rps | EETL p99 / energy | Exhaustive p99 / energy (thresholds) | Reactive p99 / energy | EETL / Exhaustive |")
        print("|---|---|---|---|---|")
        for rps in loads:
            e = runs[(f"eetl:{target:g}", float(rps))]
            x = runs[(f"reactive:{target:g}", float(rps))]
            ex = exhaustive(r, demand, cores, rps, target, 5.0, 200.0)
            exs = (f"{ex['latency_ms']['p99']:.1f} / {energy(ex) / base:.2f} ({ex['policy'][4:]})"
                   if ex else "none meets it")
            ratio = f"{energy(e) / energy(ex):.3f}" if ex else "n/a"
            print(f"| {rps} | {e['latency_ms']['p99']:.1f} / {energy(e) / base:.2f} | {exs} | "
                  f"{x['latency_ms']['p99']:.1f} / {energy(x) / base:.2f} | {ratio} |")


def heat_mode(args):
    """Fig. 5.12: the configuration of Table 5.4 with the least energy meeting each
    (target, load), under EETL (EE on the one-type configurations)."""
    r = Runner(args.out, "heat", args.requests)
    demand, _, _ = WORKLOADS["search"]
    loads = [10, 30, 50, 70, 90, 110]
    targets = [150.0, 175.0, 200.0, 250.0, 300.0, 350.0]
    base = energy(r.sweep(demand, SLOW_FAST, ["ee"], [loads[0]], 200.0)[("ee", float(loads[0]))])
    best = {}
    for target in targets:
        for name, cores in CONFIGS.items():
            if "," in cores:
                table = r.plan(demand, cores, target, (loads[0], loads[-1]))
                pol = f"eetl:{target:g}"
            else:
                table, pol = None, "ee"
            runs = {}
            for rps in loads:
                try:
                    runs.update(r.sweep(demand, cores, [pol], [rps], target, table, tag=name))
                except SystemExit:
                    break  # overloaded from here up
            for rps in loads:
                s = runs.get((pol, float(rps)))
                if s and s["latency_ms"]["p99"] <= target:
                    e = energy(s) / base
                    if (target, rps) not in best or e < best[(target, rps)][1]:
                        best[(target, rps)] = (name, e)
    print(f"Search (`{demand}`), {args.requests} requests per point; each cell: the "
          "configuration with the least energy that meets the target, and that energy "
          f"(EE on {SLOW_FAST} at {loads[0]} rps = 1); '-' where none does.\n")
    print("| target ms | " + " | ".join(f"{rps} rps" for rps in loads) + " |")
    print("|" + "---|" * (len(loads) + 1))
    for target in targets:
        cells = [f"{best[(target, rps)][0]} {best[(target, rps)][1]:.2f}"
                 if (target, rps) in best else "-" for rps in loads]
        print(f"| {target:g} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["two", "step", "three", "heat", "live-step", "live-aba",
                                     "live-sweep"])
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--out", default="runs/as2f")
    ap.add_argument("--target", type=float, help="live: the p99 target, ms (asian 130, search 25)")
    ap.add_argument("--plan", choices=["sim", "live"], default="sim",
                    help="live: identify EETL's plant on the simulator or on open-loop live runs")
    ap.add_argument("--seed", type=int, default=5, help="live: the requests' seed")
    ap.add_argument("--seeds", default="5,6,7", help="live-aba: the seeds, comma-separated")
    ap.add_argument("--workload", choices=list(LIVE), default="asian",
                    help="live-step, live-sweep: the workload")
    ap.add_argument("--policies", default="eetl,rtl,ee",
                    help="live-step: policies run through the step, comma-separated")
    ap.add_argument("--compare", default="",
                    help="live-step: policies whose earlier run of this step and seed "
                         "(kept with its chart points) is drawn and tabled too")
    ap.add_argument("--label", default="",
                    help="live-step: appended to the names of this run's files, so that a "
                         "repeat keeps the earlier ones")
    ap.add_argument("--margin", type=float,
                    help="live: EETL's setpoint margin (tailor plan eetl --margin; default 0.03)")
    args = ap.parse_args()
    if args.mode.startswith("live") and args.out == "runs/as2f":
        args.out = "runs/as2f-live"
    {"two": two_mode, "step": step_mode, "three": three_mode, "heat": heat_mode,
     "live-step": live_step_mode, "live-aba": live_aba_mode,
     "live-sweep": live_sweep_mode}[args.mode](args)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How long a CPU sat idle while one of tailor's threads waited to run, from a kernel trace.

Record a live run with the kernel's scheduler tracepoints (root; tracefs mounted at
/sys/kernel/tracing):

    T=/sys/kernel/tracing
    echo 65536 > $T/buffer_size_kb; echo > $T/trace
    for e in sched_switch sched_wakeup sched_wakeup_new sched_migrate_task; do
        echo 1 > $T/events/sched/$e/enable; done
    echo 1 > $T/tracing_on; tailor run ... ; echo 0 > $T/tracing_on
    cat $T/trace > run.trace; echo 0 > $T/events/enable

Usage: python3 scripts/sched-idle.py run.trace [--all]

It replays the trace: each CPU's current thread (sched_switch), and every runnable
thread's run queue (woken onto target_cpu, moved by sched_migrate_task, preempted with
state R, leaving the queue when it sleeps). From the first switch to a `tailor-*` thread
it sums the time during which some CPU runs its idle task while a request thread
(`tailor-N`, `tailor-boost-N`, `tailor-rayon-N`, `tailor-s2f-request`, `tantivy-search*`;
with --all, any thread whose name starts with `tailor`, the harness's too) is runnable
and not running:
  - on a busy CPU's queue ("behind another thread"): the load balancer has not moved
    it to the idle CPU;
  - on the idle CPU's own queue ("waking"): the idle CPU has not yet switched to it.
A work-conserving scheduler, which the simulator assumes, has neither.
"""
import re
import sys

LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$")
REQUEST = re.compile(r"^(tailor-(\d+|boost-\d+|rayon-\d+|s2f-request)|tantivy-search)")


def fields(rest):
    return dict(re.findall(r"(\w+)=(\S+)", rest.replace(" ==> ", " ")))


def main(path, everyone):
    def counted(name):
        return name.startswith("tailor") if everyone else bool(REQUEST.match(name))

    current = {}  # cpu -> pid running (0: idle)
    queue = {}  # runnable pid -> cpu
    comm = {}
    start = last = None
    totals = {"behind": 0.0, "waking": 0.0}
    episodes = []  # lengths of "behind" episodes
    behind_since = None

    def state():
        idle = {c for c, p in current.items() if p == 0}
        waiting = [c for p, c in queue.items()
                   if current.get(c) != p and counted(comm.get(p, ""))]
        behind = bool(idle) and any(c not in idle for c in waiting)
        waking = any(c in idle for c in waiting)
        return behind, waking

    for line in open(path):
        m = LINE.match(line)
        if not m:
            continue
        _, _, cpu, ts, event, rest = m.groups()
        cpu, ts, f = int(cpu), float(ts), fields(rest)
        current.setdefault(cpu, 0)
        if start is not None:
            behind, waking = state()
            totals["behind"] += (ts - last) if behind else 0.0
            totals["waking"] += (ts - last) if waking and not behind else 0.0
        if event == "sched_switch":
            prev, nxt = int(f["prev_pid"]), int(f["next_pid"])
            comm[prev], comm[nxt] = f["prev_comm"], f["next_comm"]
            if f["prev_state"].startswith("R"):
                queue[prev] = cpu
            else:
                queue.pop(prev, None)
            current[cpu] = nxt
            if nxt:
                queue[nxt] = cpu
            if start is None and f["next_comm"].startswith("tailor-"):
                start = ts
        elif event in ("sched_wakeup", "sched_wakeup_new"):
            pid = int(f["pid"])
            comm[pid] = f["comm"]
            queue[pid] = int(f["target_cpu"])
        elif event == "sched_migrate_task":
            pid = int(f["pid"])
            comm[pid] = f["comm"]
            if pid in queue:
                queue[pid] = int(f["dest_cpu"])
        if start is not None:
            behind, _ = state()
            if behind and behind_since is None:
                behind_since = ts
            elif not behind and behind_since is not None:
                episodes.append(ts - behind_since)
                behind_since = None
        last = ts
    if start is None:
        sys.exit(f"{path}: no tailor-* thread ran in this trace")
    wall = last - start
    episodes.sort()
    print(f"{path}: {wall:.2f} s traced")
    print(f"  a CPU idle while a {'tailor' if everyone else 'request'} thread waited behind another thread: "
          f"{totals['behind'] * 1000:.0f} ms ({100 * totals['behind'] / wall:.1f}% of the time), "
          f"{sum(e > 1e-3 for e in episodes)} episodes over 1 ms, longest "
          f"{1000 * (episodes[-1] if episodes else 0):.1f} ms")
    print(f"  a CPU idle with a {'tailor' if everyone else 'request'} thread on its own queue (waking): "
          f"{totals['waking'] * 1000:.0f} ms ({100 * totals['waking'] / wall:.1f}%)")


if __name__ == "__main__":
    args = sys.argv[1:]
    everyone = "--all" in args
    args = [a for a in args if a != "--all"]
    if len(args) != 1:
        sys.exit(__doc__)
    main(args[0], everyone)

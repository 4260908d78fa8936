#!/usr/bin/env python3
"""Writes the FM paper's Lucene interval table (Haque et al., ASPLOS 2015, Table 2) as a
tailor FM table file, to run it as a reference policy in the simulator.

Usage: python3 scripts/paper-table2.py {arrival|executed} OUT.json

Table 2 gives, per load, pairs (t, dK). The first time is the wait v0 (or e1); the text
says each later time is the request's "execution thus far", but in rows 13 to 17 each
first increase comes exactly 100 ms after the wait (100, 110-10, 130-30, 140-40, 160-60),
which reads more naturally as time since arrival. `arrival` takes later times as time
since arrival (v1 = t1 - t0); `executed` takes them as executed time (v1 = t1). Rows from
25 on are (e1, d1) followed by the load-24 increases. The planner's predictions
(tail_ms, mean_ms, parallelism) are not part of the paper's table and are written as 0.
"""

import json
import sys

# load: [(t, degree), ...] as printed; None for e1.
ROWS = {
    7: [(0, 3), (75, 4)],
    8: [(0, 2), (25, 3), (150, 4)],
    9: [(0, 2), (50, 3), (150, 4)],
    10: [(0, 1), (25, 2), (100, 3), (175, 4)],
    11: [(0, 1), (25, 2), (125, 3), (175, 4)],
    12: [(0, 1), (75, 2), (150, 3), (200, 4)],
    13: [(0, 1), (100, 2), (175, 3), (225, 4)],
    14: [(10, 1), (110, 2), (210, 3), (235, 4)],
    15: [(30, 1), (130, 2), (205, 3), (255, 4)],
    16: [(40, 1), (140, 2), (240, 3), (265, 4)],
    17: [(60, 1), (160, 2), (245, 3), (285, 4)],
    18: [(60, 1), (185, 2), (260, 3), (310, 4)],
    19: [(70, 1), (195, 2), (270, 3), (320, 4)],
    20: [(70, 1), (220, 2), (295, 3), (370, 4)],
    21: [(80, 1), (255, 2), (305, 3), (375, 4)],
    22: [(80, 1), (280, 2), (330, 3), (380, 4)],
    23: [(90, 1), (290, 2), (365, 3), (415, 4)],
    24: [(90, 1), (315, 2), (390, 3), (440, 4)],
    25: [(None, 1), (315, 2), (390, 3), (440, 4)],
}
MAX_DEGREE, Y_MS, MAX_LOAD = 4, 500, 60


def schedule(pairs, reading):
    """(v0, v1, v2, v3) for one printed row."""
    wait = pairs[0][0]
    v = [wait if wait is not None else Y_MS] + [0] * (MAX_DEGREE - 1)
    # Time (in the row's reading) at which the current degree began.
    base = 0 if (reading == "executed" or wait is None) else wait
    if reading == "arrival" and wait is None:
        base = 90  # e1 rows repeat load 24's increases, whose wait was 90 ms
    degree = pairs[0][1]
    for t, d in pairs[1:]:
        # Degree `degree` runs from `base` to t; degrees skipped at the start run 0 ms.
        v[degree] = t - base
        base, degree = t, d
    return v


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("arrival", "executed"):
        sys.exit(__doc__)
    reading, out = sys.argv[1], sys.argv[2]
    rows = []
    for load in range(1, MAX_LOAD + 1):
        pairs = ROWS.get(min(load, 25)) if load >= 7 else [(0, 4)]
        rows.append({
            "load": load,
            "intervals_ms": schedule(pairs, reading),
            "admit_on_exit": load >= 25,
            "tail_ms": 0, "mean_ms": 0, "parallelism": 0,
        })
    table = {
        "kind": "fm-interval-table", "max_degree": MAX_DEGREE, "target_parallelism": 24,
        "percentile": 0.99, "step_ms": 5, "max_interval_ms": Y_MS, "rows": rows,
    }
    with open(out, "w") as f:
        json.dump(table, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""SEQ's live service times against the profile (issue #22's 2-core model check).

Runs the search workload live under SEQ with the demo's profile and compares each
query's service time (start to finish, on one thread) with its profiled t1, by t1
quantile: whether long queries cost more in a running service than alone.

Usage: python3 scripts/seq-service.py PROFILE RPS REQUESTS SEED [POLICY]
"""
import csv, os, sys, subprocess, json, statistics as st
T=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "release", "tailor")
prof=sys.argv[1]; rps=sys.argv[2]; n=sys.argv[3]; seed=sys.argv[4]; pol=sys.argv[5] if len(sys.argv)>5 else "seq"
rec=f"/tmp/seq-service-{pol}-{rps}-{seed}.csv"
out=subprocess.run([T,"run","--workload","search","--search-profile",prof,"--policy",pol,"--cores","2","--arrivals","poisson","--rps",rps,"--requests",n,"--seed",seed,"--records",rec],capture_output=True,text=True)
if out.returncode: print(out.stderr); sys.exit(1)
summ=json.loads(out.stdout.strip().splitlines()[-1])
rows=list(csv.DictReader(open(rec)))[int(int(n)*0.05):]
pairs=[(float(r["work_ms"]), float(r["finish_ms"])-float(r["start_ms"]), float(r["finish_ms"])-float(r["arrival_ms"])) for r in rows]
pairs.sort()
k=len(pairs)
print(f"{pol} rps {rps} seed {seed}: p99 live {summ['latency_ms']['p99']:.2f} mean {summ['latency_ms']['mean']:.2f} mean_threads {summ.get('mean_threads')}")
for lo,hi in [(0,.5),(.5,.8),(.8,.9),(.9,.95),(.95,.99),(.99,1.0)]:
    seg=pairs[int(lo*k):int(hi*k)]
    w=sum(p[0] for p in seg); s=sum(p[1] for p in seg)
    print(f"  t1 quantile {lo:.2f}-{hi:.2f}: t1 {seg[0][0]:.2f}-{seg[-1][0]:.2f} ms, service/t1 = {s/w:.3f}, median ratio {st.median(p[1]/p[0] for p in seg):.3f}")
w=sum(p[0] for p in pairs); s=sum(p[1] for p in pairs)
print(f"  all: service/t1 {s/w:.3f}")
# p99 of service vs p99 of t1
sv=sorted(p[1] for p in pairs); t1=sorted(p[0] for p in pairs)
print(f"  p99 service {sv[int(.99*k)]:.2f} vs p99 t1 {t1[int(.99*k)]:.2f}; p99 latency {sorted(p[2] for p in pairs)[int(.99*k)]:.2f}")

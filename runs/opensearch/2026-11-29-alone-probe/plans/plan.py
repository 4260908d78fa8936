import json, math, subprocess, sys
prof = sys.argv[1]; T = "/work/main/target/release/tailor"
t1 = [float(l.split(",")[1]) for l in open(prof).read().splitlines()[1:] if l.strip()]
y = math.ceil(max(2.0, max(t1)) / 0.5) * 0.5
args = [T, "plan", "fm", "--profile", prof, "--cores", "2", "--max-degree", "2", "--step", "0.5ms", "--max-interval", f"{y}ms",
        "--percentile", "0.99", "--max-load", "32", "--target-parallelism", "4"]
subprocess.run(args + ["--no-check", "--out", "/tmp/fig7.json"], check=True, capture_output=True)
least = json.load(open("/tmp/fig7.json"))["rows"][0]["tail_ms"]
seq = sorted(t1)[math.ceil(0.99 * len(t1)) - 1]
print("fig7", [(r["load"], r["intervals_ms"][:2]) for r in json.load(open("/tmp/fig7.json"))["rows"][:5]], "least", round(least,1), "seq p99", round(seq,1))
for share in [float(x) for x in sys.argv[2].split(",")]:
    b = round(least + share * max(0.0, seq - least), 3)
    subprocess.run(args + ["--latency-bound", f"{b}ms", "--out", f"/tmp/t{share}.json"], check=True, capture_output=True)
    t = json.load(open(f"/tmp/t{share}.json"))
    print(share, b, [(r["load"], r["intervals_ms"][:2], r["tail_ms"]) for r in t["rows"][:5]])

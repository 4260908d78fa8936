#!/usr/bin/env python3
"""Probes a built `tailor` the way issue #23's hostile client did, and prints what it
measured for each acceptance point: stalled bodies, regex-heavy queries, a client that
goes away, absurd flags, a double SIGTERM, and endless or huge inputs.

    cargo build --release && python3 scripts/probe-serve.py [--tailor target/release/tailor]

Needs the search data `tailor serve --workload search` keeps (built on first use).
"""

import argparse
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

PROBLEMS = []


def note(ok, what):
    print(("ok      " if ok else "FAILED  ") + what, flush=True)
    if not ok:
        PROBLEMS.append(what)


def start(tailor, *flags):
    """Starts `tailor serve` on a free port; returns (process, host, port)."""
    p = subprocess.Popen(
        [tailor, "serve", "--listen", "127.0.0.1:0", *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 600
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            raise SystemExit("the server exited before listening")
        m = re.search(r"http://([\d.]+):(\d+)", line)
        if m:
            threading.Thread(target=lambda: p.stderr.read(), daemon=True).start()
            return p, m.group(1), int(m.group(2))
    raise SystemExit("the server did not start")


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()


def get(host, port, path, timeout=30):
    t = time.time()
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode(), time.time() - t
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), time.time() - t


def stalled_bodies(tailor):
    p, host, port = start(
        tailor, "--workload", "synthetic:exp:2", "--policy", "seq", "--max-connections", "50"
    )
    began = time.time()
    socks = []
    for _ in range(60):
        s = socket.create_connection((host, port))
        s.sendall(b"POST /work HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{")
        socks.append(s)
    status, _, _ = get(host, port, "/healthz", timeout=30)
    answered = time.time() - began
    closed_by = []
    for s in socks:
        s.settimeout(max(0.1, 30 - (time.time() - began)))
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
        closed_by.append(time.time() - began)
        s.close()
    note(status == 200 and answered <= 12, f"60 stalled bodies vs --max-connections 50: /healthz {status} after {answered:.1f} s (at most 12)")
    note(max(closed_by) <= 12, f"every stalled connection closed by {max(closed_by):.1f} s (at most 12)")
    stop(p)


def regex_queries(tailor):
    p, host, port = start(tailor, "--workload", "search", "--policy", "fix:2")
    heavy = "+".join(f"body:/.*{c}.*/" for c in "abcdefghijklmnopqrstuvwxyz")
    results = {}

    def send(name, path):
        results[name] = get(host, port, path)

    threads = [threading.Thread(target=send, args=(f"heavy{i}", f"/search?q={heavy}")) for i in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.01)
    send("horse", "/search?q=horse")
    for t in threads:
        t.join()
    for i in range(2):
        status, body, took = results[f"heavy{i}"]
        note(400 <= status < 500, f"26-term regex query {i + 1}: {status} in {took * 1000:.0f} ms: {body.strip()[:100]}")
    status, _, took = results["horse"]
    note(status == 200 and took <= 1, f"q=horse meanwhile: {status} in {took * 1000:.0f} ms (at most 1000)")
    status, body, took = get(host, port, "/search?q=body:/.*a.*/+body:/.*e.*/")
    print(f"        two regex terms (the most allowed): {status} in {took * 1000:.0f} ms")
    stop(p)


def client_goes_away(tailor):
    p, host, port = start(
        tailor, "--workload", "synthetic:exp:2", "--policy", "seq", "--workers", "1"
    )
    body = b'{"work_ms": 2000}'
    s = socket.create_connection((host, port))
    s.sendall(b"POST /work HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    time.sleep(0.1)
    s.close()
    t = time.time()
    req = urllib.request.Request(f"http://{host}:{port}/work", data=b'{"work_ms": 1}', headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        status = r.status
    took = time.time() - t
    note(status == 200 and took <= 0.3, f"--workers 1, a 2,000 ms request whose client left after 100 ms, then a 1 ms request: answered in {took * 1000:.0f} ms (at most 300)")
    stop(p)


def absurd_flags(tailor):
    cases = [
        ["serve", "--workload", "synthetic:exp:2", "--policy", "seq", "--spin-rate", "1e300"],
        ["serve", "--workload", "synthetic:exp:2", "--policy", "seq", "--max-connections", "0"],
        ["serve", "--workload", "synthetic:exp:2", "--policy", "seq", "--workers", "0"],
        ["run", "--workload", "synthetic:exp:2", "--policy", "seq", "--rps", "1e-9", "--requests", "100", "--seed", "1"],
        ["run", "--workload", "synthetic:exp:2", "--policy", "seq", "--rps", "100", "--requests", "1000000000", "--seed", "1"],
        ["simulate", "--cores", "4", "--policy", "seq", "--demand", "exp:2", "--arrivals", "poisson", "--rps", "100", "--requests", "1000000000", "--seed", "1"],
        ["load", "--url", "http://127.0.0.1:9", "--rps", "100", "--requests", "0"],
        ["run", "--workload", "synthetic:exp:2", "--policy", "seq", "--rps", "100", "--requests", "10", "--seed", "1", "--spin-rate", "1e300"],
        ["serve", "--workload", "synthetic:exp:2", "--policy", "seq", "--request-timeout-s", "1e300"],
        ["serve", "--workload", "synthetic:exp:2", "--policy", "seq", "--drain-s", "nan"],
        ["load", "--url", "http://127.0.0.1:9", "--rps", "100", "--requests", "10", "--connections", "1000000000"],
    ]
    simulate = ["simulate", "--cores", "4", "--policy", "seq", "--demand", "exp:2", "--arrivals", "poisson", "--rps", "100", "--requests", "100", "--seed", "1"]
    for flag, value in [
        ("--rps", "inf"), ("--rps", "nan"), ("--rps", "1e300"), ("--cores", "99999999"), ("--seeds", "0"),
        ("--policy", "interval:1e300:4"), ("--policy", "rc:1e300:2"), ("--policy", "fix:99999999999"),
        ("--demand", "exp:1e300"), ("--demand", "scale:1e300:exp:1"), ("--arrivals", "lognormal:1e300"),
        ("--arrivals", "phases:1e-300*10"), ("--arrivals", "phases:100*99999999999"), ("--quantum-ms", "1e-300"),
    ]:
        args = list(simulate)
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
        cases.append(args)
    for args in cases:
        t = time.time()
        r = subprocess.run([tailor, *args], capture_output=True, text=True, timeout=60)
        first = (r.stderr.strip().splitlines() or [""])[0]
        absurd = next((a for a in args if re.search(r"1e300|1e-300|1e-9|nan|inf|^0$|9999999|1000000000", a)), args[-1])
        flag = args[args.index(absurd) - 1] if absurd in args[1:] and args[args.index(absurd) - 1].startswith("--") else ""
        note(r.returncode != 0 and time.time() - t < 10, f"tailor {args[0]} {flag} {absurd}: exit {r.returncode} in {time.time() - t:.2f} s: {first[:110]}")


def double_sigterm(tailor):
    p, host, port = start(tailor, "--workload", "synthetic:exp:2", "--policy", "seq", "--workers", "1", "--drain-s", "60")
    body = b'{"work_ms": 30000}'
    s = socket.create_connection((host, port))
    s.sendall(b"POST /work HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    time.sleep(0.3)
    t = time.time()
    p.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(10)
        note(time.time() - t <= 2, f"SIGTERM twice during a 30 s request (--drain-s 60): exited {p.returncode} after {time.time() - t:.2f} s (at most 2)")
    except subprocess.TimeoutExpired:
        p.kill()
        note(False, "SIGTERM twice: still running after 10 s")
    s.close()


def endless_input(tailor):
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    t = time.time()
    r = subprocess.run(
        [tailor, "plan", "fm", "--profile", "/dev/zero", "--cores", "4", "--max-degree", "2", "--step-ms", "1",
         "--max-interval-ms", "10", "--percentile", "0.99", "--max-load", "4"],
        capture_output=True, text=True, timeout=60, preexec_fn=limited,
    )
    took = time.time() - t
    first = (r.stderr.strip().splitlines() or [""])[0]
    note(r.returncode == 1 and took <= 10, f"plan fm --profile /dev/zero under a 1 GiB address-space limit: exit {r.returncode} in {took:.2f} s: {first[:120]}")


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--tailor", default="target/release/tailor")
    args = a.parse_args()
    for probe in (absurd_flags, endless_input, double_sigterm, client_goes_away, regex_queries, stalled_bodies):
        print(f"-- {probe.__name__}", flush=True)
        probe(args.tailor)
    print(f"{len(PROBLEMS)} problem(s)")
    sys.exit(1 if PROBLEMS else 0)


if __name__ == "__main__":
    main()

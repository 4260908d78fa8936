#!/usr/bin/env python3
"""Probes a built `tailor fanout` the way issue #39's hostile client did, and prints what
it measured for each case and acceptance point: stalled bodies and slow heads, a replica
killed under load and restarted, a second SIGTERM with a shard's replicas stopped, wrong
topologies, two replicas building one index together, malformed HTTP, overload, bad
flags and bad searches. (The issue's reissue-budget point is scripts/reissue-adapt.py.)

    cargo build --release && python3 scripts/probe-fanout.py [--tailor target/release/tailor]

The set-up is the issue's: 2 shards x 2 replicas of `tailor serve --workload search
--shard I/2 --policy seq --workers 1` (search data from ~/.cache/tailor, built on first
use), the front end with its defaults. Exits 1 if any check failed.
"""

import argparse
import http.client
import os
import re
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

PROBLEMS = []
WORDS = ["horse", "water", "king", "light", "stone", "river", "green", "house", "music", "night"]


def note(ok, what):
    print(("ok      " if ok else "FAILED  ") + what, flush=True)
    if not ok:
        PROBLEMS.append(what)


def start(cmd, wait_s=900):
    """Starts a server that prints 'on http://HOST:PORT'; returns (process, host, port)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + wait_s
    lines = []
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            raise SystemExit(f"{' '.join(cmd)} exited before listening:\n" + "".join(lines[-10:]))
        lines.append(line)
        m = re.search(r"on http://([\d.]+):(\d+)", line)
        if m:
            threading.Thread(target=p.stderr.read, daemon=True).start()
            return p, m.group(1), int(m.group(2))
    raise SystemExit(f"{' '.join(cmd)} did not start within {wait_s} s")


def stop(p, sig=signal.SIGTERM):
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def request(host, port, method, path, timeout=10):
    """One request on a fresh connection: (status, headers, body, seconds)."""
    t = time.time()
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode(errors="replace"), time.time() - t
    except OSError as e:
        return None, {}, str(e), time.time() - t
    finally:
        c.close()


def metric(host, port, name, label=None):
    """The sum of metric `name` (whose labels contain `label`, if given) in /metrics."""
    status, _, body, _ = request(host, port, "GET", "/metrics")
    if status != 200:
        return None
    total = 0.0
    for line in body.splitlines():
        if line.startswith(name) and (label is None or label in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


def raw(host, port, data, timeout=5):
    """Sends raw bytes on a fresh connection and reads until it closes or goes quiet."""
    t = time.time()
    s = socket.create_connection((host, port), timeout=timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
            if data.startswith(b"GET") and out.count(b"HTTP/1.1 ") >= data.count(b"GET /"):
                break
    except OSError:
        pass
    s.close()
    return out.decode(errors="replace"), time.time() - t


class Cluster:
    """2 shards x 2 replicas of `tailor serve --workload search`."""

    def __init__(self, tailor, data_dir=None):
        self.tailor = tailor
        self.extra = ["--data-dir", data_dir] if data_dir else []
        self.procs = [[None, None], [None, None]]
        self.ports = [[0, 0], [0, 0]]
        for shard in range(2):
            for r in range(2):
                self.up(shard, r)

    def replica_cmd(self, shard, port):
        return [self.tailor, "serve", "--workload", "search", "--shard", f"{shard}/2", "--policy", "seq",
                "--workers", "1", "--listen", f"127.0.0.1:{port}", *self.extra]

    def up(self, shard, r):
        p, _, port = start(self.replica_cmd(shard, self.ports[shard][r]))
        self.procs[shard][r], self.ports[shard][r] = p, port
        return p

    def url(self, shard, r):
        return f"http://127.0.0.1:{self.ports[shard][r]}"

    def shard_flags(self):
        return [f for s in range(2) for f in ("--shard", f"{self.url(s, 0)},{self.url(s, 1)}")]

    def front(self, *flags):
        """A front end over the replicas, once it is ready (it asks every replica's
        /healthz after it prints its address)."""
        p, host, port = start([self.tailor, "fanout", "--listen", "127.0.0.1:0", *self.shard_flags(), *flags], 60)
        deadline = time.time() + 30
        while request(host, port, "GET", "/readyz", 2)[0] != 200:
            if time.time() > deadline:
                raise SystemExit("the front end did not get ready within 30 s")
            time.sleep(0.05)
        return p, host, port

    def close(self):
        for row in self.procs:
            for p in row:
                if p is not None:
                    try:
                        p.send_signal(signal.SIGCONT)
                    except ProcessLookupError:
                        pass
                    stop(p)


def slow_clients(cluster, n_bodies=600, n_heads=600):
    """600 stalled POST /work bodies and 600 heads trickled at a byte a second against a
    front end with its defaults; an ordinary query every 0.2 s from 0.5 s on."""
    front, host, port = cluster.front()
    timeout = 5.0  # the front end's default --header-timeout-s and --body-timeout-s
    began = time.time()
    sel = selectors.DefaultSelector()
    conns = {}  # socket -> dict(kind, opened, last_sent, first_reply, closed)
    for i in range(n_bodies + n_heads):
        s = socket.create_connection((host, port))
        kind = "body" if i < n_bodies else "head"
        if kind == "body":
            s.sendall(b"POST /work HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000\r\n\r\n{")
        else:
            s.sendall(b"G")
        now = time.time()
        s.setblocking(False)
        conns[s] = {"kind": kind, "opened": now, "last_sent": now, "reply": b"", "closed": None, "pos": 1}
        sel.register(s, selectors.EVENT_READ)
    opened_by = time.time() - began
    rest = b"ET /search?q=horse HTTP/1.1\r\nHost: trickle\r\nX-Slow: " + b"x" * 40 + b"\r\n\r\n"

    def trickle():
        while time.time() - began < 30:
            time.sleep(1.0)
            for s, c in list(conns.items()):
                if c["kind"] == "head" and c["closed"] is None and c["pos"] <= len(rest):
                    try:
                        s.send(rest[c["pos"] - 1:c["pos"]])
                        c["pos"] += 1
                        c["last_sent"] = time.time()
                    except OSError:
                        pass

    ordinary = []

    def queries():
        time.sleep(max(0.0, began + 0.5 - time.time()))
        i = 0
        while time.time() - began < 9:
            status, _, _, took = request(host, port, "GET", f"/search?q={WORDS[i % len(WORDS)]}", 5)
            ordinary.append((time.time() - began, status, took))
            i += 1
            time.sleep(0.2)

    threads = [threading.Thread(target=trickle, daemon=True), threading.Thread(target=queries)]
    for t in threads:
        t.start()
    while time.time() - began < 30 and any(c["closed"] is None for c in conns.values()):
        for key, _ in sel.select(0.1):
            s, c = key.fileobj, conns[key.fileobj]
            try:
                chunk = s.recv(4096)
            except OSError:
                chunk = b""
            if chunk:
                c["reply"] += chunk
            else:
                c["closed"] = time.time()
                sel.unregister(s)
                s.close()
    threads[1].join()
    print(f"        {n_bodies + n_heads} connections opened in {opened_by:.2f} s")
    worst = max(took for _, _, took in ordinary)
    bad = [(round(t, 2), s) for t, s, _ in ordinary if s != 200]
    note(not bad and worst <= 1.0,
         f"{len(ordinary)} ordinary queries from 0.5 s to 9 s: slowest {worst * 1000:.0f} ms (at most 1000), "
         f"not 200: {bad or 'none'}")
    for kind in ("body", "head"):
        group = [c for c in conns.values() if c["kind"] == kind]
        open_left = sum(c["closed"] is None for c in group)
        got_408 = sum(c["reply"].startswith(b"HTTP/1.1 408") for c in group)
        # Its timeout runs from the connection's start (head) or its last byte (body).
        late = [c["closed"] - (c["opened"] if kind == "head" else c["last_sent"]) for c in group
                if c["closed"] is not None]
        shed = sum(b"slowest client" in c["reply"] for c in group)
        note(open_left == 0 and got_408 == len(group) and max(late) <= timeout + 1,
             f"{len(group)} stalled {kind}s: {got_408} answered 408 ({shed} shed at the bound), "
             f"{open_left} still open, the last closed {max(late):.2f} s after its timeout began "
             f"(at most {timeout + 1:.0f})")
    for s in list(conns):
        if conns[s]["closed"] is None:
            s.close()
    stop(front)


def dead_replica(cluster, rps=200.0):
    """Under 200 queries/s with --reissue none, SIGKILL one of shard 0's replicas, then
    restart it on the same port."""
    front, host, port = cluster.front("--reissue", "none")
    victim = cluster.url(0, 1)
    label = f'replica="{victim}"'
    began = time.time()
    sent = []  # (t, status, body)
    lock = threading.Lock()
    done = threading.Event()

    def one(t, word):
        status, _, body, _ = request(host, port, "GET", f"/search?q={word}", 15)
        with lock:
            sent.append((t, status, body[:160]))

    def load():
        i = 0
        while not done.is_set():
            due = began + i / rps
            time.sleep(max(0.0, due - time.time()))
            threading.Thread(target=one, args=(time.time(), WORDS[i % len(WORDS)]), daemon=True).start()
            i += 1

    polls = []  # (t, first copies to the victim, readyz status, healthz status field)

    def poll():
        while not done.is_set():
            firsts = metric(host, port, "tailor_fanout_first_copies", label)
            ready = request(host, port, "GET", "/readyz", 2)[0]
            body = request(host, port, "GET", "/healthz", 2)[2]
            m = re.search(r'"status"\s*:\s*"(\w+)"', body)
            polls.append((time.time(), firsts, ready, m.group(1) if m else None))
            time.sleep(0.1)

    workers = [threading.Thread(target=load), threading.Thread(target=poll)]
    for w in workers:
        w.start()
    time.sleep(5)
    cluster.procs[0][1].kill()
    cluster.procs[0][1].wait()
    killed = time.time()
    time.sleep(12)
    relisten_start = time.time()
    cluster.up(0, 1)
    relisten = time.time()
    time.sleep(12)
    done.set()
    for w in workers:
        w.join()
    time.sleep(1)

    after = [p for p in polls if p[0] >= killed]
    last_rise = killed
    for a, b in zip(after, after[1:]):
        if b[0] > relisten_start and a[0] > relisten_start:
            break
        if b[1] is not None and a[1] is not None and b[1] > a[1] and b[0] <= relisten_start:
            last_rise = b[0]
    note(last_rise - killed <= 2.0,
         f"first copies to the killed replica stop {last_rise - killed:.2f} s after the kill (at most 2, polled "
         f"every ~{(after[-1][0] - after[0][0]) / max(1, len(after) - 1):.2f} s)")
    for lo, hi, what in ((0, 2, "in the 2 s after the kill"), (2, 12, "over the next 10 s")):
        window = [s for s in sent if killed + lo <= s[0] < killed + hi]
        bad = [(round(t - killed, 2), st, b) for t, st, b in window if st is None or not 200 <= st < 300]
        note(not bad, f"{len(window)} queries sent {what}: {len(window) - len(bad)} answered 2xx"
                      + (f"; first failures: {bad[:3]}" if bad else ""))
    dead = [p for p in polls if killed + 2 <= p[0] < relisten_start]
    not_ready = [p for p in polls if killed <= p[0] < relisten_start and p[2] != 200]
    note(not not_ready, f"/readyz 200 in all {len([p for p in polls if killed <= p[0] < relisten_start])} polls "
                        f"while the replica was dead" + (f" (not: {len(not_ready)})" if not_ready else ""))
    states = sorted({p[3] for p in dead})
    note(states == ["degraded"], f"/healthz status from 2 s after the kill to the restart: {states}")
    back = [p for p in polls if p[0] >= relisten and p[1] is not None]
    base = back[0][1] if back else None
    used = next((p[0] for p in back if p[1] > base), None)
    note(used is not None and used - relisten <= 10,
         "the restarted replica (listening "
         f"{relisten - relisten_start:.1f} s after its start) gets first copies again "
         + (f"{used - relisten:.1f} s after it listens (at most 10)" if used else "never"))
    total = len(sent)
    ok = sum(1 for s in sent if s[1] is not None and 200 <= s[1] < 300)
    print(f"        the whole run: {ok} of {total} queries 2xx at {rps:.0f}/s")
    stop(front)


def second_sigterm(cluster):
    """A second SIGTERM while both of shard 0's replicas are stopped and a query waits."""
    front, host, port = cluster.front()
    for r in range(2):
        cluster.procs[0][r].send_signal(signal.SIGSTOP)
    waiting = threading.Thread(target=request, args=(host, port, "GET", "/search?q=horse", 30), daemon=True)
    waiting.start()
    time.sleep(0.3)
    front.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    second = time.time()
    front.send_signal(signal.SIGTERM)
    try:
        code = front.wait(10)
    except subprocess.TimeoutExpired:
        code = None
    took = time.time() - second
    for r in range(2):
        cluster.procs[0][r].send_signal(signal.SIGCONT)
    note(code is not None and took <= 0.5,
         f"second SIGTERM with shard 0's replicas stopped: exit {code} after {took * 1000:.0f} ms (at most 500)")
    if code is None:
        front.kill()


def refused(tailor, flags, needle, what, wait_s=20):
    t = time.time()
    try:
        out = subprocess.run([tailor, "fanout", "--listen", "127.0.0.1:0", *flags], capture_output=True,
                             text=True, timeout=wait_s)
        code, err = out.returncode, out.stderr.strip().splitlines()
    except subprocess.TimeoutExpired:
        code, err = None, ["(still running)"]
    last = err[-1] if err else ""
    note(code not in (0, None) and needle in "\n".join(err),
         f"{what}: exit {code} in {time.time() - t:.2f} s: {last[:150]}")


def topologies(cluster):
    a, b, c, d = cluster.url(0, 0), cluster.url(0, 1), cluster.url(1, 0), cluster.url(1, 1)
    refused(cluster.tailor, ["--shard", f"{a},{a}", "--shard", f"{c},{d}"], a, "the same replica twice in a shard")
    refused(cluster.tailor, ["--shard", f"{a},{b}", "--shard", f"{a},{d}"], a, "one replica for two shards")
    refused(cluster.tailor, ["--shard", f"{c},{b}", "--shard", f"{a},{d}"], c, "shard 1's replica given for shard 0")
    refused(cluster.tailor, ["--shard", "http://127.0.0.1:1", "--shard", f"{c},{d}"], "127.0.0.1:1",
            "a replica never up")
    for r in range(2):
        _, _, body, _ = request("127.0.0.1", cluster.ports[1][r], "GET", "/healthz")
        note('"shard":"1/2"' in body.replace(" ", "") and "search" in body,
             f"replica {cluster.url(1, r)} /healthz names its shard and workload: {body.strip()[:140]}")


def index_build(tailor):
    """Two replicas of shard 0 started together on an empty data directory."""
    data = tempfile.mkdtemp(prefix="tailor-probe-data-")
    t = time.time()
    cmd = lambda: [tailor, "serve", "--workload", "search", "--shard", "0/2", "--policy", "seq", "--workers", "1",
                   "--listen", "127.0.0.1:0", "--data-dir", data]
    results = [None, None]

    def one(i):
        try:
            results[i] = start(cmd())
        except SystemExit as e:
            results[i] = str(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    up = [r for r in results if isinstance(r, tuple)]
    note(len(up) == 2, f"two replicas of shard 0 on an empty data directory: {len(up)} of 2 up after "
                       f"{time.time() - t:.1f} s" + "".join(f"; {r[-200:]}" for r in results if isinstance(r, str)))
    for r in up:
        stop(r[0])
    shutil.rmtree(data, ignore_errors=True)


def malformed(cluster):
    front, host, port = cluster.front()
    for data, want, what in (
        (b"NONSENSE\r\n\r\n", "400", "a garbage request line"),
        (b"GET /search?q=horse HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n", "431", "a 70 kB head"),
        (b"GET /nope HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", "404", "an unknown path"),
        (b"DELETE /search?q=horse HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", "405", "DELETE /search"),
    ):
        out, took = raw(host, port, data)
        status = out[9:12]
        note(status == want, f"{what}: {status or 'nothing'} in {took * 1000:.1f} ms (want {want})")
    out, took = raw(host, port, b"GET /search?q=horse HTTP/1.1\r\nHost: t\r\n\r\n"
                               b"GET /search?q=water HTTP/1.1\r\nHost: t\r\n\r\n")
    note(out.count("HTTP/1.1 200") == 2, f"two pipelined queries: {out.count('HTTP/1.1 200')} answered 200")
    out, took = raw(host, port, b"GET /search?q=horse HTTP/1.0\r\n\r\n")
    note(" 200 " in out[:20], f"HTTP/1.0: {out[:15]!r} in {took * 1000:.1f} ms, then closed")
    before = metric(host, port, "tailor_fanout_shard_requests_total")
    for q, what in (("body:(", "a syntax error"), ("nofield:horse", "an unknown field"),
                    ("body:/.*a.*/+body:/.*e.*/+body:/.*i.*/", "three regular expressions")):
        status, _, body, took = request(host, port, "GET", "/search?q=" + q.replace("+", "%20"))
        note(status == 400, f"search with {what}: {status} in {took * 1000:.1f} ms: {body.strip()[:100]}")
    after = metric(host, port, "tailor_fanout_shard_requests_total")
    note(before is not None and after == before, f"shard requests before and after the bad searches: {before} and {after}")
    stop(front)


def overload_and_timeout(cluster):
    """Shard 1's replicas stopped: the first queries time out (504 naming the shard), the
    rest find the front end full (503 with Retry-After)."""
    front, host, port = cluster.front("--max-inflight", "2", "--timeout-ms", "1500")
    for r in range(2):
        cluster.procs[1][r].send_signal(signal.SIGSTOP)
    results = []

    def one():
        results.append(request(host, port, "GET", "/search?q=horse", 10))

    first = [threading.Thread(target=one) for _ in range(2)]
    for th in first:
        th.start()
    time.sleep(0.3)
    rest = [threading.Thread(target=one) for _ in range(20)]
    for th in rest:
        th.start()
    for th in first + rest:
        th.join()
    for r in range(2):
        cluster.procs[1][r].send_signal(signal.SIGCONT)
    timed_out = [r for r in results if r[0] == 504]
    full = [r for r in results if r[0] == 503]
    note(len(timed_out) == 2 and all("shard 1" in r[2] for r in timed_out),
         f"queries stuck on a stopped shard: {len(timed_out)} answered 504"
         + (f" in {max(r[3] for r in timed_out):.2f} s: {timed_out[0][2].strip()[:100]}" if timed_out else ""))
    note(len(full) == 20 and all("Retry-After" in r[1] or "retry-after" in r[1] for r in full),
         f"queries beyond --max-inflight 2: {len(full)} of 20 answered 503, "
         f"{sum(('Retry-After' in r[1]) or ('retry-after' in r[1]) for r in full)} with Retry-After")
    stop(front)


def bad_flags(cluster):
    shards = cluster.shard_flags()
    for flags, needle in (
        (["--max-inflight", "0"], "--max-inflight"),
        (["--timeout-ms", "0"], "--timeout-ms"),
        (["--reissue", "single-r:5:2"], "single-r"),
        (["--reissue", "hedge:120"], "hedge"),
        (["--header-timeout-s", "0"], "--header-timeout-s"),
        (["--body-timeout-s=-1"], "--body-timeout-s"),
        (["--hedge-period-s", "0"], "--hedge-period-s"),
        (["--route", "fastest"], "--route"),
    ):
        refused(cluster.tailor, [*shards, *flags], needle, " ".join(flags), 5)
    refused(cluster.tailor, ["--shard", "ftp://127.0.0.1:1"], "ftp://", "--shard ftp://127.0.0.1:1", 5)


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--tailor", default="target/release/tailor")
    a.add_argument("--skip-index-build", action="store_true", help="skip building an index from scratch")
    args = a.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    began = time.time()
    cluster = Cluster(args.tailor)
    print(f"        2 shards x 2 replicas up in {time.time() - began:.1f} s", flush=True)
    try:
        print("slow clients", flush=True)
        slow_clients(cluster)
        print("a dead replica", flush=True)
        dead_replica(cluster)
        print("shutdown", flush=True)
        second_sigterm(cluster)
        print("topology", flush=True)
        topologies(cluster)
        print("malformed HTTP and bad searches", flush=True)
        malformed(cluster)
        print("overload and a hung shard", flush=True)
        overload_and_timeout(cluster)
        print("bad flags", flush=True)
        bad_flags(cluster)
    finally:
        cluster.close()
    if not args.skip_index_build:
        print("index build", flush=True)
        index_build(args.tailor)
    print(f"{len(PROBLEMS)} problems in {time.time() - began:.0f} s")
    raise SystemExit(1 if PROBLEMS else 0)


if __name__ == "__main__":
    main()

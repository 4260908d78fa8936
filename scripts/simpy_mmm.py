"""The M/M/m peer model in SimPy, for BENCHMARKS.md: m servers, FIFO, Poisson arrivals,
exponential service. Prints requests simulated per second of wall time and the mean
response, so the speed comparison with `tailor simulate --policy seq` is like for like."""
import math
import random
import sys
import time

import simpy


def erlang_c_mean(m, rho, mean_ms):
    a = rho * m
    below = sum(a**k / math.factorial(k) for k in range(m))
    top = a**m / math.factorial(m) / (1 - rho)
    return top / (below + top) / (m / mean_ms - a / mean_ms) + mean_ms


def run(m, rps, mean_ms, n, seed):
    rng = random.Random(seed)
    env = simpy.Environment()
    servers = simpy.Resource(env, capacity=m)
    total = [0.0]

    def request(env):
        arrived = env.now
        with servers.request() as slot:
            yield slot
            yield env.timeout(rng.expovariate(1.0 / mean_ms))
        total[0] += env.now - arrived

    def source(env):
        for _ in range(n):
            yield env.timeout(rng.expovariate(rps / 1000.0))
            env.process(request(env))

    env.process(source(env))
    env.run()
    return total[0] / n


if __name__ == "__main__":
    m, rps, mean_ms, n = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    start = time.perf_counter()
    mean = run(m, rps, mean_ms, n, seed=1)
    wall = time.perf_counter() - start
    theory = erlang_c_mean(m, rps * mean_ms / 1000.0 / m, mean_ms)
    print(f"simpy: {n} requests in {wall:.2f} s = {n / wall:,.0f} requests/s; "
          f"mean response {mean:.3f} ms (Erlang C {theory:.3f} ms)")

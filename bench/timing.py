"""The timing loop the standalone bench scripts share (compile, amp,
distributions): median over rounds of the mean time per call, after warm-up
calls; and reading a brisk bench binary's `key value` lines."""
import statistics
import subprocess
import time


def time_ms(f, rounds, iters=1, warmup=2):
    for _ in range(warmup):
        f()
    t = []
    for _ in range(rounds):
        a = time.perf_counter()
        for _ in range(iters):
            f()
        t.append((time.perf_counter() - a) * 1e3 / iters)
    return statistics.median(t)


def run_brisk(cmd):
    """The `key value` lines of a brisk bench binary (values ending in
    `version` stay strings)."""
    r = {}
    for line in subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines():
        k, v = line.split()
        r[k] = v if k.endswith("version") else float(v)
    return r

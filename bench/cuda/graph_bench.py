#!/usr/bin/env python3
"""CUDA graphs (issue 17): brisk against PyTorch on a GPU, the same cases as
bench/cuda/brisk_graph_bench.cpp, eager and graph replay on both sides.

    python3 bench/cuda/graph_bench.py --brisk BUILD/bench/brisk_graph_bench

Prints the two sets of figures and a markdown table (microseconds; lower is
better) with brisk / PyTorch for each, and the replay speedups over eager.
PyTorch's host figures include its Python interpreter (a Python program's
cost); brisk's are a C++ program's.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from timing import time_ms  # noqa: E402  (bench/timing.py)


def per_call_us(f, n, rounds=7):
    """Time per call of f, back to back: the median of `rounds` rounds of n
    calls and one synchronize each, after a warm-up round."""
    def one_round():
        for _ in range(n):
            f()
        torch.cuda.synchronize()
    return time_ms(one_round, rounds, warmup=1) * 1e3 / n


def host_us(f, n=50):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    return statistics.median(t)


def capture(body, warmup=3):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            body()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    torch.cuda.synchronize()
    return g


def torch_figures():
    dev = torch.device("cuda")
    torch.manual_seed(0)
    r = {}
    with torch.no_grad():
        m = torch.nn.Sequential(torch.nn.Linear(1000, 5000), torch.nn.ReLU(), torch.nn.Linear(5000, 10000),
                                torch.nn.ReLU(), torch.nn.Linear(10000, 10000)).to(dev)
        x = torch.randn(1, 1000, device=dev)
        out = {}

        def fwd():
            out["y"] = m(x)
        r["seed_b1_eager_host_us"] = host_us(fwd)
        r["seed_b1_eager_step_us"] = per_call_us(fwd, 50)
        g = capture(fwd)
        r["seed_b1_replay_host_us"] = host_us(g.replay)
        r["seed_b1_replay_step_us"] = per_call_us(g.replay, 50)

        lin = [torch.nn.Linear(512, 512).to(dev) for _ in range(8)]
        ln = [torch.nn.LayerNorm(512).to(dev) for _ in range(8)]
        for b in (1, 2, 4, 8):
            xb = torch.randn(b, 512, device=dev)

            def blocks():
                h = xb
                for i in range(8):
                    h = ln[i](F.gelu(lin[i](h)))
                out["y"] = h
            r[f"blocks8_b{b}_eager_us"] = per_call_us(blocks, 100)
            g = capture(blocks)
            r[f"blocks8_b{b}_replay_us"] = per_call_us(g.replay, 100)

    m = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(64, 784, device=dev)
    t = torch.randint(0, 10, (64,), device=dev)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(m(x), t)
        loss.backward()
        opt.step()
        out["loss"] = loss.detach()  # (keeping the graph alive would pin eager's AccumulateGrad streams)
    r["mnist_b64_eager_us"] = per_call_us(step, 100)
    g = capture(step)
    r["mnist_b64_replay_us"] = per_call_us(g.replay, 100)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", required=True, help="path to brisk_graph_bench")
    ap.add_argument("--profile", action="store_true", help="print brisk's kernel table of the blocks at batch 1")
    a = ap.parse_args()
    proc = subprocess.run([a.brisk] + (["--profile"] if a.profile else []), capture_output=True, text=True)
    print(proc.stdout, end="")
    if a.profile:
        print(proc.stderr)
    if proc.returncode != 0:
        print(proc.stderr)
        raise SystemExit("brisk_graph_bench failed")
    b = {}
    device = ""
    for line in proc.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "device":
            device = " ".join(parts[1:])
        elif len(parts) == 3:
            b[parts[0]] = float(parts[1])
    t = torch_figures()
    for k, v in t.items():
        print(f"torch {k} {v:.2f} us")
    print()
    print(f"GPU: {device}; PyTorch {torch.__version__} (Python), brisk (C++); medians, microseconds")
    print()
    print("| case | brisk | PyTorch | brisk / PyTorch |")
    print("| --- | ---: | ---: | ---: |")
    for k in t:
        if k in b:
            print(f"| {k} | {b[k]:.2f} | {t[k]:.2f} | {b[k] / t[k]:.2f} |")
    print()
    print("| speedup of replay over eager | brisk | PyTorch |")
    print("| --- | ---: | ---: |")
    for k in t:
        if "_eager_" in k:
            rk = k.replace("_eager_", "_replay_")
            if rk in t and k in b and rk in b:
                print(f"| {k.replace('_eager', '')} | {b[k] / b[rk]:.2f}x | {t[k] / t[rk]:.2f}x |")


if __name__ == "__main__":
    main()

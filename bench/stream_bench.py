#!/usr/bin/env python3
"""Eager elementwise ops over 2^24 float32, brisk next to PyTorch eager at
the same thread count (Note [Prefetching in the eager loops]).

    /work/venv-torch/bin/python bench/stream_bench.py --brisk build/bench215/bench/brisk_stream_bench --threads 1
"""
import argparse

from timing import run_brisk, time_ms

CASES = ["add", "mul_scalar", "add_inplace", "erf", "exp", "sigmoid", "gelu_chain"]
LABELS = {"add": "z = x + y", "mul_scalar": "z = x * 2.5", "add_inplace": "x.add_(y)", "erf": "erf(x)",
          "exp": "exp(x)", "sigmoid": "sigmoid(x)", "gelu_chain": "x * 0.5 * (1 + erf(x / 1.41421)) (allocating)"}


def torch_side(threads):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    n = 1 << 24
    x, y, w, z = torch.rand(n) * 4 - 2, torch.rand(n) + 1, torch.rand(n), torch.empty(n)
    # single ops write into z (out=): brisk's caching allocator hands its
    # allocating calls a warm buffer, while PyTorch's 64 MiB results would go
    # back to the kernel and come back as fresh pages on every call (that
    # costs ~20 ms here, more than the loop); the chain allocates on both sides
    fns = {
        "add": lambda: torch.add(x, y, out=z),
        "mul_scalar": lambda: torch.mul(x, 2.5, out=z),
        "add_inplace": lambda: w.add_(y),
        "erf": lambda: torch.erf(x, out=z),
        "exp": lambda: torch.exp(x, out=z),
        "sigmoid": lambda: torch.sigmoid(x, out=z),
        "gelu_chain": lambda: x * 0.5 * (1.0 + torch.erf(x / 1.41421)),
    }
    r = {"torch_version": torch.__version__}
    with torch.no_grad():
        for k in CASES:
            r[k] = time_ms(fns[k], 9)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", required=True)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    b = run_brisk([a.brisk, "--threads", str(a.threads)])
    t = torch_side(a.threads)
    print(f"threads {a.threads}, PyTorch {t['torch_version']}, 2^24 float32")
    print("| op | brisk ms | PyTorch ms | brisk / PyTorch time |")
    print("|---|---|---|---|")
    for k in CASES:
        print(f"| `{LABELS[k]}` | {b[k + '_ms']:.2f} | {t[k]:.2f} | {b[k + '_ms'] / t[k]:.2f} |")


if __name__ == "__main__":
    main()

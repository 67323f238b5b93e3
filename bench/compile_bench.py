#!/usr/bin/env python3
"""brisk::compile next to PyTorch eager and torch.compile (issue 15's cases).

    /work/venv-torch/bin/python bench/compile_bench.py --brisk build/bench215/bench/brisk_compile_bench \
        --threads 1 [--quick]

Runs the brisk side (brisk_compile_bench, its `key value` lines) and the same
cases in PyTorch (eager, and torch.compile with the default inductor
backend, CPU), at the same thread count, and prints one markdown table with
the ratios. Medians over rounds after warm-up calls; the compile times are
the first call's.
"""
import argparse
import time

from timing import run_brisk, time_ms




def torch_side(threads, quick):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    rounds = 3 if quick else 7
    r = {"torch_version": torch.__version__}

    def gelu_chain(x):
        return x * 0.5 * (1.0 + torch.erf(x / 1.41421))

    with torch.no_grad():
        x = torch.randn(1 << 24)
        c = torch.compile(gelu_chain)
        a = time.perf_counter()
        c(x)
        r["gelu_torch_compile_first_ms"] = (time.perf_counter() - a) * 1e3
        r["gelu_torch_eager_ms"] = time_ms(lambda: gelu_chain(x), rounds, 1)
        r["gelu_torch_compiled_ms"] = time_ms(lambda: c(x), rounds, 1)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(384, 1536)
            self.fc2 = torch.nn.Linear(1536, 384)
            self.norm = torch.nn.LayerNorm(384)

        def forward(self, x):
            return self.norm(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))

    block = Block()
    x = torch.randn(8 * 128, 384)
    with torch.no_grad():
        cb = torch.compile(block)
        a = time.perf_counter()
        cb(x)
        r["mlp_torch_compile_first_ms"] = (time.perf_counter() - a) * 1e3
        r["mlp_fwd_torch_eager_ms"] = time_ms(lambda: block(x), rounds, 2 if quick else 5)
        r["mlp_fwd_torch_compiled_ms"] = time_ms(lambda: cb(x), rounds, 2 if quick else 5)
    gy = torch.randn(8 * 128, 384)

    def step(m):
        for p in block.parameters():
            p.grad = None
        m(x).backward(gy)

    cbt = torch.compile(block)
    step(cbt)
    r["mlp_fwdbwd_torch_eager_ms"] = time_ms(lambda: step(block), rounds, 2 if quick else 5)
    r["mlp_fwdbwd_torch_compiled_ms"] = time_ms(lambda: step(cbt), rounds, 2 if quick else 5)

    n = 200
    p = [torch.randn(10000) for _ in range(n)]
    g = [torch.randn(10000) for _ in range(n)]
    m = [torch.zeros(10000) for _ in range(n)]
    v = [torch.zeros(10000) for _ in range(n)]
    lr, b1, b2, eps, wd = 1e-3, 0.9, 0.999, 1e-8, 1e-2
    step_size = torch.tensor(1e-3 / (1 - 0.9))
    bc2 = torch.tensor((1 - 0.999) ** 0.5)

    def adam(p, g, m, v, step_size, bc2):
        for i in range(len(p)):
            p[i].mul_(1 - lr * wd)
            m[i].mul_(b1).add_(g[i], alpha=1 - b1)
            v[i].mul_(b2).addcmul_(g[i], g[i], value=1 - b2)
            denom = (v[i].sqrt() / bc2).add_(eps)
            p[i].sub_(m[i] / denom * step_size)

    with torch.no_grad():
        ca = torch.compile(adam)
        a = time.perf_counter()
        ca(p, g, m, v, step_size, bc2)
        r["adam_torch_compile_first_ms"] = (time.perf_counter() - a) * 1e3
        r["adam_plain_torch_eager_ms"] = time_ms(lambda: adam(p, g, m, v, step_size, bc2), rounds, 5)
        r["adam_plain_torch_compiled_ms"] = time_ms(lambda: ca(p, g, m, v, step_size, bc2), rounds, 5)

    s, mask = torch.randn(8, 512, 512), torch.randn(512, 512)
    x, res, w, bb = torch.randn(1024, 768), torch.randn(1024, 768), torch.randn(768), torch.randn(768)

    def attn(s, m):
        return torch.softmax(s * 0.125 + m, -1)

    def ln(x, r, w, b):
        return torch.nn.functional.layer_norm(x + r, (768,), w, b)

    with torch.no_grad():
        cat, cln = torch.compile(attn), torch.compile(ln)
        cat(s, mask)
        cln(x, res, w, bb)
        r["softmax_torch_eager_ms"] = time_ms(lambda: attn(s, mask), rounds, 3)
        r["softmax_torch_compiled_ms"] = time_ms(lambda: cat(s, mask), rounds, 3)
        r["layernorm_torch_eager_ms"] = time_ms(lambda: ln(x, res, w, bb), rounds, 10)
        r["layernorm_torch_compiled_ms"] = time_ms(lambda: cln(x, res, w, bb), rounds, 10)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", required=True, help="path of brisk_compile_bench")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    cmd = [a.brisk, "--threads", str(a.threads)] + (["--quick"] if a.quick else [])
    b = run_brisk(cmd)
    t = torch_side(a.threads, a.quick)
    print(f"threads {a.threads}, PyTorch {t['torch_version']}")
    print("| case | brisk eager | brisk compiled | PyTorch eager | torch.compile | compiled vs eager brisk | vs torch.compile |")
    print("|---|---|---|---|---|---|---|")

    def ratio(other, compiled):
        r = other / compiled  # above 1: compiled is faster
        return f"{r:.2f}x faster" if r >= 1 else f"{compiled / other:.2f}x slower"

    def row(name, be, bc, te, tc, unit="ms"):
        print(f"| {name} | {be:.2f} {unit} | {bc:.2f} {unit} | {te:.2f} {unit} | {tc:.2f} {unit} | "
              f"{ratio(be, bc)} | {ratio(tc, bc)} |")

    row("gelu chain, 2^24 float32", b["gelu_eager_ms"], b["gelu_compiled_ms"], t["gelu_torch_eager_ms"],
        t["gelu_torch_compiled_ms"])
    row("MLP block forward (8x128x384)", b["mlp_fwd_eager_ms"], b["mlp_fwd_compiled_ms"],
        t["mlp_fwd_torch_eager_ms"], t["mlp_fwd_torch_compiled_ms"])
    row("MLP block forward+backward", b["mlp_fwdbwd_eager_ms"], b["mlp_fwdbwd_compiled_ms"],
        t["mlp_fwdbwd_torch_eager_ms"], t["mlp_fwdbwd_torch_compiled_ms"])
    row("Adam with plain ops, 200 x 10k", b["adam_plain_eager_ms"], b["adam_plain_compiled_ms"],
        t["adam_plain_torch_eager_ms"], t["adam_plain_torch_compiled_ms"])
    row("softmax(s * 0.125 + mask), 8x512x512", b["softmax_eager_ms"], b["softmax_compiled_ms"],
        t["softmax_torch_eager_ms"], t["softmax_torch_compiled_ms"])
    row("layer_norm(x + r), 1024x768", b["layernorm_eager_ms"], b["layernorm_compiled_ms"],
        t["layernorm_torch_eager_ms"], t["layernorm_torch_compiled_ms"])
    print()
    print(f"- first call (trace / compile): gelu brisk {b['gelu_trace_ms']:.0f} ms vs torch.compile "
          f"{t['gelu_torch_compile_first_ms']:.0f} ms; MLP torch.compile {t['mlp_torch_compile_first_ms']:.0f} ms; "
          f"Adam brisk {b['adam_trace_ms']:.0f} ms vs torch.compile {t['adam_torch_compile_first_ms']:.0f} ms")
    print(f"- gelu chain: unfused replay {b['gelu_unfused_replay_ms']:.2f} ms; copy floor (clone) {b['gelu_clone_ms']:.2f} ms")
    print(f"- Adam: brisk's fused AdamW {b['adamw_fused_ms']:.2f} ms; compiled plain-op Adam is "
          f"{b['adam_plain_compiled_ms'] / b['adamw_fused_ms']:.2f}x its time")
    if "gelu_autotuned_ms" in b:
        print(f"- MaxAutotune: gelu chain {b['gelu_autotuned_ms']:.2f} ms, plain-op Adam {b['adam_plain_autotuned_ms']:.2f} ms")
    print(f"- host cost of a cache-hit call, 10 ops on 3x3: compiled {b['host10_compiled_us']:.2f} us, "
          f"eager {b['host10_eager_us']:.2f} us")
    if "compile_cold_dir_ms" in b:
        print(f"- compile cost (gelu chain on 1,000 elements, a fresh cache directory): first function "
              f"{b['compile_cold_dir_ms']:.0f} ms (builds the precompiled header), a new function "
              f"{b['compile_new_kernel_ms']:.0f} ms, a new process finding it on disk {b['compile_disk_hit_ms']:.1f} ms")


if __name__ == "__main__":
    main()

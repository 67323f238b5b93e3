#!/usr/bin/env python3
"""Mixed precision: brisk's autocast next to PyTorch's (issue 16).

    /work/venv-torch/bin/python bench/amp_bench.py --brisk build/bench215/bench/brisk_amp_bench \
        --threads 1 [--quick]
    python3 bench/amp_bench.py --brisk $BIN/brisk_amp_bench --device cuda [--quick]

--device cpu (the default): runs brisk_amp_bench (its `key value` lines) and
the same steps in PyTorch (float32, and under torch.autocast("cpu",
dtype=torch.bfloat16)) at the same thread count, and prints one markdown
table: milliseconds per step, the bfloat16 speed-up over float32 in each
library, and brisk's time against PyTorch's.

--device cuda: runs `brisk_amp_bench --device cuda` and the same steps in
PyTorch on the GPU (the MLP at batch 4096, the encoder layer at batch 64 x
128 tokens): float32 with TF32 off, torch.autocast("cuda", torch.float16)
with torch.amp.GradScaler("cuda") (the encoder, which has no optimizer:
scale(loss).backward() only), and torch.autocast("cuda", torch.bfloat16)
without a scaler. Every timed step ends with torch.cuda.synchronize(). The
table gives brisk's and PyTorch's milliseconds per step, their ratio, and
each library's speed-up over its own float32 step.
"""
import argparse
import subprocess
import sys

from timing import run_brisk, time_ms

CUDA_VARIANTS = ("fp32", "fp16_scaler", "bf16")


def torch_side(threads, quick):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    rounds = 3 if quick else 5
    r = {"torch_version": torch.__version__}

    mlp = torch.nn.Sequential(torch.nn.Linear(1000, 5000), torch.nn.ReLU(), torch.nn.Linear(5000, 10000),
                              torch.nn.ReLU(), torch.nn.Linear(10000, 10))
    opt = torch.optim.SGD(mlp.parameters(), lr=1e-3)
    x = torch.randn(64, 1000)
    y = torch.randint(0, 10, (64,))

    def mlp_step(amp):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(mlp(x), y)
        loss.backward()
        opt.step()

    r["mlp_step_fp32_ms"] = time_ms(lambda: mlp_step(False), rounds)
    r["mlp_step_bf16_ms"] = time_ms(lambda: mlp_step(True), rounds)

    layer = torch.nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048, dropout=0.0, batch_first=True)
    xe = torch.randn(16, 128, 512)

    def enc_step(amp):
        layer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = layer(xe).float().square().mean()
        loss.backward()

    r["encoder_fwd_bwd_fp32_ms"] = time_ms(lambda: enc_step(False), rounds)
    r["encoder_fwd_bwd_bf16_ms"] = time_ms(lambda: enc_step(True), rounds)
    return r


def torch_side_cuda(threads, quick):
    """brisk_amp_bench --device cuda's steps in PyTorch: same sizes, same
    rounds, iterations per round and warm-up steps."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rounds, iters, warmup = (3, 2, 3) if quick else (10, 5, 5)
    dev = torch.device("cuda")
    r = {"torch_version": torch.__version__, "torch_cuda": torch.version.cuda,
         "device_name": torch.cuda.get_device_name(dev)}

    def timed(f):
        def g():
            f()
            torch.cuda.synchronize()
        return time_ms(g, rounds, iters, warmup)

    # dtype None: float32 (autocast off).
    batch = 4096
    mlp = torch.nn.Sequential(torch.nn.Linear(1000, 5000), torch.nn.ReLU(), torch.nn.Linear(5000, 10000),
                              torch.nn.ReLU(), torch.nn.Linear(10000, 10)).to(dev)
    opt = torch.optim.SGD(mlp.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    x = torch.randn(batch, 1000, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)

    def mlp_step(dtype, use_scaler):
        opt.zero_grad()
        with torch.autocast("cuda", dtype=dtype or torch.float16, enabled=dtype is not None):
            loss = F.cross_entropy(mlp(x), y)
        if use_scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    r["mlp_step_fp32_ms"] = timed(lambda: mlp_step(None, False))
    r["mlp_step_fp16_scaler_ms"] = timed(lambda: mlp_step(torch.float16, True))
    r["mlp_step_bf16_ms"] = timed(lambda: mlp_step(torch.bfloat16, False))

    layer = torch.nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048, dropout=0.0, batch_first=True).to(dev)
    enc_scaler = torch.amp.GradScaler("cuda")
    xe = torch.randn(64, 128, 512, device=dev)

    def enc_step(dtype, use_scaler):
        layer.zero_grad()
        with torch.autocast("cuda", dtype=dtype or torch.float16, enabled=dtype is not None):
            loss = layer(xe).float().square().mean()
        if use_scaler:
            enc_scaler.scale(loss).backward()
        else:
            loss.backward()

    r["encoder_fwd_bwd_fp32_ms"] = timed(lambda: enc_step(None, False))
    r["encoder_fwd_bwd_fp16_scaler_ms"] = timed(lambda: enc_step(torch.float16, True))
    r["encoder_fwd_bwd_bf16_ms"] = timed(lambda: enc_step(torch.bfloat16, False))
    return r


def print_cpu_table(a, b, t):
    print("threads %d, PyTorch %s" % (a.threads, t["torch_version"]))
    print()
    print("| step | brisk fp32 ms | brisk bf16 ms | brisk speed-up | torch fp32 ms | torch bf16 ms | torch speed-up |"
          " brisk/torch bf16 |")
    print("|---|---|---|---|---|---|---|---|")
    for case in ("mlp_step", "encoder_fwd_bwd"):
        bf, bb = b[case + "_fp32_ms"], b[case + "_bf16_ms"]
        tf, tb = t[case + "_fp32_ms"], t[case + "_bf16_ms"]
        print("| %s | %.1f | %.1f | %.2fx | %.1f | %.1f | %.2fx | %.2f |" % (case, bf, bb, bf / bb, tf, tb, tf / tb,
                                                                          bb / tb))


def print_cuda_table(b, t):
    print("GPU %s, PyTorch %s (CUDA %s); MLP 1000-5000-10000-10 SGD step at batch 4096, encoder layer "
          "512/8/2048 forward + backward at batch 64 x 128; float32 with TF32 off; medians, ms per step"
          % (t["device_name"], t["torch_version"], t["torch_cuda"]))
    print()
    print("| step | variant | brisk ms | torch ms | brisk/torch | brisk speed-up over fp32 |"
          " torch speed-up over fp32 |")
    print("|---|---|---|---|---|---|---|")
    for case in ("mlp_step", "encoder_fwd_bwd"):
        bf, tf = b[case + "_fp32_ms"], t[case + "_fp32_ms"]
        for v in CUDA_VARIANTS:
            bv, tv = b["%s_%s_ms" % (case, v)], t["%s_%s_ms" % (case, v)]
            print("| %s | %s | %.2f | %.2f | %.2f | %.2fx | %.2fx |" % (case, v, bv, tv, bv / tv, bf / bv, tf / tv))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    a = ap.parse_args()
    cmd = [a.brisk, "--threads", str(a.threads)] + (["--quick"] if a.quick else [])
    if a.device == "cuda":
        cmd += ["--device", "cuda"]
    try:
        b = run_brisk(cmd)
    except subprocess.CalledProcessError as e:
        sys.stderr.write(e.stderr or "")
        sys.exit("amp_bench.py: %s failed with status %d" % (" ".join(cmd), e.returncode))
    if a.device == "cuda":
        t = torch_side_cuda(a.threads, a.quick)
        print_cuda_table(b, t)
    else:
        t = torch_side(a.threads, a.quick)
        print_cpu_table(a, b, t)


if __name__ == "__main__":
    main()

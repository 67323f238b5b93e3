#!/usr/bin/env python3
"""Mixed precision on the CPU: brisk's autocast next to PyTorch's (issue 16).

    /work/venv-torch/bin/python bench/amp_bench.py --brisk build/bench215/bench/brisk_amp_bench \
        --threads 1 [--quick]

Runs brisk_amp_bench (its `key value` lines) and the same steps in PyTorch
(float32, and under torch.autocast("cpu", dtype=torch.bfloat16)) at the same
thread count, and prints one markdown table: milliseconds per step, the
bfloat16 speed-up over float32 in each library, and brisk's time against
PyTorch's.
"""
import argparse

from timing import run_brisk, time_ms




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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    cmd = [a.brisk, "--threads", str(a.threads)] + (["--quick"] if a.quick else [])
    b = run_brisk(cmd)
    t = torch_side(a.threads, a.quick)
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


if __name__ == "__main__":
    main()

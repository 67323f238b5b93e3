#!/usr/bin/env python3
"""Distributions (issue 18): brisk against PyTorch's torch.distributions.

    /work/venv-torch/bin/python bench/distributions_bench.py \
        --brisk build/bench215/bench/brisk_distributions_bench --threads 1

Runs brisk_distributions_bench (brisk, and libtorch's hand-written
softmax + multinomial and Normal formulas in the same process) and the same
calls through Python's torch.distributions at the same thread count; prints
one markdown table.
"""
import argparse

from timing import run_brisk, time_ms




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    cmd = [a.brisk, "--threads", str(a.threads)] + (["--quick"] if a.quick else [])
    b = run_brisk(cmd)

    import torch
    import torch.distributions as D
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    rounds = 3 if a.quick else 7
    with torch.no_grad():
        logits = torch.randn(64, 1000)
        py_cat = time_ms(lambda: D.Categorical(logits=logits).sample(), rounds, 200)
        loc, scale = torch.randn(1 << 20), torch.rand(1 << 20) + 0.5

        def normal():
            n = D.Normal(loc, scale)
            n.log_prob(n.rsample())

        py_normal = time_ms(normal, rounds, 20)
        alpha, rate = torch.rand(1 << 20) * 5 + 0.1, torch.rand(1 << 20) * 30
        count, prob = (torch.rand(1 << 20) * 100).floor(), torch.rand(1 << 20)
        ones = torch.ones_like(alpha)
        py_gamma = time_ms(lambda: D.Gamma(alpha, ones, validate_args=False).sample(), rounds, 3)
        py_poisson = time_ms(lambda: D.Poisson(rate, validate_args=False).sample(), rounds, 3)
        py_binomial = time_ms(lambda: D.Binomial(count, probs=prob, validate_args=False).sample(), rounds, 3)
    print("threads %d, PyTorch %s (Python), libtorch %s" % (a.threads, torch.__version__,
                                                             b.get("libtorch_version", "not built")))
    print()
    print("| case | brisk ms | PyTorch (Python) ms | libtorch by hand ms | PyTorch / brisk | libtorch / brisk |")
    print("|---|---|---|---|---|---|")
    for name, key, py in (("Categorical(logits [64, 1000]).sample()", "categorical_sample_ms", py_cat),
                          ("Normal(loc, scale): rsample + log_prob, 1M", "normal_rsample_log_prob_ms", py_normal),
                          ("Gamma(alpha in [0.1, 5.1), 1).sample(), 1M", "gamma_sample_ms", py_gamma),
                          ("Poisson(rate in [0, 30)).sample(), 1M", "poisson_sample_ms", py_poisson),
                          ("Binomial(count in [0, 100), p).sample(), 1M", "binomial_sample_ms", py_binomial)):
        br = b["brisk_" + key]
        lt = b.get("libtorch_" + key)
        print("| %s | %.4f | %.4f | %s | %.2fx | %s |" % (name, br, py, "%.4f" % lt if lt else "-", py / br,
                                                          "%.2fx" % (lt / br) if lt else "-"))


if __name__ == "__main__":
    main()

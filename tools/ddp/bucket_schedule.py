#!/usr/bin/env python3
"""A simulation of DistributedDataParallel's bucket schedule (issue 19's
paper study; docs/design/distributed.md, "8 nodes of 8 GPUs").

    python3 tools/ddp/bucket_schedule.py

The backward produces each parameter's gradient in reverse registration
order, at a time proportional to the layer's FLOPs. Gradients fill buckets
(the first first_mb, then cap_mb, as brisk's and PyTorch's DDP); a bucket's
all-reduce starts when its last gradient is ready and the previous bucket's
all-reduce is done (one communication stream). An all-reduce of B bytes over
a ring of n ranks costs alpha + 2 (n - 1) / n * B / bw (latency alpha, bus
bandwidth bw). The step ends when the backward and the last all-reduce are
done; the optimizer step is left out (the same with or without DDP).

Cost models: "loopback" is this machine's Gloo measured by bench/ddp_bench.cpp
(2 ranks: 0.2 ms latency, about 1.6 GB/s); the cluster rows are assumptions
written down, not measurements: NCCL on 8 nodes of 8 H100s, NVLink inside a
node and 4 x 200 Gb/s InfiniBand between nodes, modelled as a hierarchical
ring whose bus bandwidth is bounded by the inter-node links (about 45 GB/s
per GPU at large messages) and a latency of 30 us per all-reduce plus 10 us
per node hop.
"""


def gpt2_small():
    """(name, parameters) in registration order: GPT-2 small (124M)."""
    layers = [("wte", 50257 * 768), ("wpe", 1024 * 768)]
    for i in range(12):
        layers += [("h%d.ln_1" % i, 2 * 768), ("h%d.attn.c_attn" % i, 768 * 2304 + 2304),
                   ("h%d.attn.c_proj" % i, 768 * 768 + 768), ("h%d.ln_2" % i, 2 * 768),
                   ("h%d.mlp.c_fc" % i, 768 * 3072 + 3072), ("h%d.mlp.c_proj" % i, 3072 * 768 + 768)]
    layers.append(("ln_f", 2 * 768))
    return layers


def simulate(layers, backward_ms, alpha_ms, bw_gbs, n, cap_mb, first_mb, bytes_per=4, overlap=True):
    total = sum(p for _, p in layers)
    # gradient ready times: reverse order, each layer's share of the backward
    t, ready = 0.0, []
    for name, p in reversed(layers):
        t += backward_ms * p / total
        ready.append((t, p * bytes_per))
    buckets, cur, cur_bytes, cap = [], 0.0, 0, first_mb * 2**20
    for when, b in ready:
        cur_bytes += b
        cur = when
        if cur_bytes >= cap:
            buckets.append((cur, cur_bytes))
            cur_bytes, cap = 0, cap_mb * 2**20
    if cur_bytes:
        buckets.append((cur, cur_bytes))
    comm_free = 0.0
    comm_total = 0.0
    for when, b in buckets:
        cost = alpha_ms + 2 * (n - 1) / n * b / (bw_gbs * 1e9) * 1e3
        start = max(when if overlap else backward_ms, comm_free)
        comm_free = start + cost
        comm_total += cost
    return max(backward_ms, comm_free), comm_total, len(buckets)


def main():
    layers = gpt2_small()
    params = sum(p for _, p in layers)
    print("model: GPT-2 small, %.1fM parameters, %.0f MB of float32 gradients" % (params / 1e6, params * 4 / 2**20))
    # backward of one H100 at batch 8 x 1024 tokens: 4 * params * tokens FLOPs at 40% of 990 TFLOP/s (bf16)
    tokens = 8 * 1024
    backward_ms = 4 * params * tokens / (0.4 * 990e12) * 1e3
    configs = [
        ("loopback Gloo, 2 ranks (measured)", 2, 0.2, 1.6, 40.0),
        ("1 node x 8 H100, NVLink (assumed)", 8, 0.03, 150.0, backward_ms),
        ("8 nodes x 8 H100, IB 4x200Gb (assumed)", 64, 0.03 + 0.01 * 8, 45.0, backward_ms),
    ]
    print("| setting | backward ms | bucket cap MB | buckets | all-reduce ms in all | step ms, overlapped | "
          "step ms, after the backward | hidden |")
    print("|---|---|---|---|---|---|---|---|")
    for name, n, alpha, bw, bwd in configs:
        for cap in (1, 5, 25, 100, 1000):
            s_over, comm, nb = simulate(layers, bwd, alpha, bw, n, cap, min(1, cap))
            s_seq, _, _ = simulate(layers, bwd, alpha, bw, n, cap, min(1, cap), overlap=False)
            hidden = (s_seq - s_over) / comm if comm else 0
            print("| %s | %.1f | %d | %d | %.1f | %.1f | %.1f | %.0f%% |" % (name, bwd, cap, nb, comm, s_over, s_seq,
                                                                        100 * hidden))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes tests/amp/autocast_policies.txt: for every row of brisk's op table,
what PyTorch's autocast does with the op on the CPU and on CUDA.

Run with the PyPI torch (2.x): `python tools/amp/autocast_policies.py`.
The CUDA policy is read from the lists in torch's own header
(ATen/autocast_mode.h: AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32, ...);
the CPU lists live in torch's .cpp, so the CPU policy of every op with an
AutocastCPU kernel is found by running it under torch.autocast("cpu") and
looking at the output dtype. Rows map to ATen ops by name (ALIASES below for
the rest); a row whose op PyTorch implements as a composite of listed ops
(cross_entropy, hstack) takes the policy of the listed op it runs.
"""
import os
import re
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# brisk row -> ATen ops (overload names where needed), first listed one wins.
ALIASES = {
    "pow": ["pow.Tensor_Scalar"],
    "max": ["max.dim"],
    "min": ["min.dim"],
    "norm": ["norm.ScalarOpt_dim"],
    "softmax": ["softmax.int"],
    "log_softmax": ["log_softmax.int"],
    "where": ["where.self"],
    "conv_transpose2d": ["conv_transpose2d.input"],
    "conv_transpose3d": ["conv_transpose3d.input"],
    "cross_entropy": ["cross_entropy_loss", "log_softmax.int"],  # CUDA: log_softmax then nll_loss, both fp32
    "hstack": ["cat"], "vstack": ["cat"], "dstack": ["cat"],   # composites of cat
    "interpolate": ["upsample_nearest2d"],                      # every mode is an upsample_* op
    "reflection_pad": ["reflection_pad2d"],
    "replication_pad": ["replication_pad2d"],
    "index": ["index.Tensor"],
    "scatter": ["scatter.src"],
    "masked_fill": ["masked_fill.Scalar"],
    "add": ["add.Tensor"], "sub": ["sub.Tensor"], "mul": ["mul.Tensor"], "div": ["div.Tensor"],
    "clamp": ["clamp"],
}

# CPU: one call per op that has an AutocastCPU kernel, float32 and bfloat16
# inputs mixed where the policy could be promote.
f32 = lambda *s: torch.randn(*s)
b16 = lambda *s: torch.randn(*s).bfloat16()
CPU_PROBES = {
    "conv1d": lambda: torch.conv1d(f32(1, 2, 5), f32(3, 2, 2)),
    "conv2d": lambda: torch.conv2d(f32(1, 2, 5, 5), f32(3, 2, 2, 2)),
    "conv3d": lambda: torch.conv3d(f32(1, 2, 3, 3, 3), f32(3, 2, 2, 2, 2)),
    "conv_transpose1d": lambda: torch.conv_transpose1d(f32(1, 2, 5), f32(2, 3, 2)),
    "conv_transpose3d.input": lambda: torch.conv_transpose3d(f32(1, 2, 3, 3, 3), f32(2, 3, 2, 2, 2)),
    "conv_transpose2d.input": lambda: torch.conv_transpose2d(f32(1, 2, 5, 5), f32(2, 3, 2, 2)),
    "addmm": lambda: torch.addmm(f32(2, 2), f32(2, 3), f32(3, 2)),
    "matmul": lambda: torch.matmul(f32(2, 3), f32(3, 2)),
    "mm": lambda: torch.mm(f32(2, 3), f32(3, 2)),
    "bmm": lambda: torch.bmm(f32(1, 2, 3), f32(1, 3, 2)),
    "linear": lambda: torch.nn.functional.linear(f32(2, 3), f32(4, 3)),
    "scaled_dot_product_attention": lambda: torch.nn.functional.scaled_dot_product_attention(
        f32(1, 2, 4), f32(1, 2, 4), f32(1, 2, 4)),
    "prod": lambda: torch.prod(b16(4)),
    "mse_loss": lambda: torch.nn.functional.mse_loss(b16(4), b16(4)),
    "l1_loss": lambda: torch.nn.functional.l1_loss(b16(4), b16(4)),
    "nll_loss": lambda: torch.nn.functional.nll_loss(b16(2, 3), torch.tensor([0, 1])),
    "cross_entropy_loss": lambda: torch.nn.functional.cross_entropy(b16(2, 3), torch.tensor([0, 1])),
    "smooth_l1_loss": lambda: torch.nn.functional.smooth_l1_loss(b16(4), b16(4)),
    "huber_loss": lambda: torch.nn.functional.huber_loss(b16(4), b16(4)),
    "kl_div": lambda: torch.nn.functional.kl_div(b16(4), b16(4)),
    "binary_cross_entropy": lambda: torch.nn.functional.binary_cross_entropy(b16(4).sigmoid(), b16(4).sigmoid()),
    "binary_cross_entropy_with_logits": lambda: torch.nn.functional.binary_cross_entropy_with_logits(b16(4), b16(4)),
    "cat": lambda: torch.cat([f32(2), b16(2)]),
    "stack": lambda: torch.stack([f32(2), b16(2)]),
    "reflection_pad2d": lambda: torch.nn.functional.pad(b16(1, 1, 3, 3), (1, 1, 1, 1), mode="reflect"),
    "replication_pad2d": lambda: torch.nn.functional.pad(b16(1, 1, 3, 3), (1, 1, 1, 1), mode="replicate"),
}


def rows():
    table = open(os.path.join(ROOT, "src/core/op_table.h")).read()
    unary = open(os.path.join(ROOT, "include/brisk/detail/unary_ops.h")).read()
    names = re.findall(r"^\s*X\(ctx, (\w+),", unary, re.M)
    body = table[table.index("#define BRISK_FORALL_OP_ROWS"):]
    names += re.findall(r"^\s*X\((\w+),", body, re.M)
    return names


def cuda_lists():
    hdr = os.path.join(os.path.dirname(torch.__file__), "include/ATen/autocast_mode.h")
    text = open(hdr).read()
    out = {}
    for macro, policy in [("AT_FORALL_LOWER_PRECISION_FP", "Lower"), ("AT_FORALL_FP32", "Fp32"),
                          ("AT_FORALL_FP32_SET_OPT_DTYPE", "Fp32"), ("AT_FORALL_PROMOTE", "Promote")]:
        m = re.search(r"#define %s\(_\)(.*?)\n\n" % macro, text, re.S)
        for op, overload in re.findall(r"_\((\w+)(?:,\s*(\w+))?\)", m.group(1)):
            out[op + ("." + overload if overload else "")] = policy
            out.setdefault(op, policy)
    out["norm.ScalarOpt_dim"] = out["norm"] = "Fp32"  # AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE (fp32_append_dtype)
    out["binary_cross_entropy"] = "Banned"             # the CUDA autocast kernel raises
    return out


def registered(op, key):
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key("aten::" + op, key)
    except RuntimeError:
        return False


def cpu_policy(op):
    probe = CPU_PROBES.get(op)
    if probe is None:
        sys.exit("%s has an AutocastCPU kernel but no probe in CPU_PROBES: add one" % op)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        r = probe()
    if op in ("cat", "stack"):
        return "Promote" if r.dtype == torch.float32 else "Keep"
    if r.dtype == torch.bfloat16:
        return "Lower"
    if r.dtype == torch.float32:
        return "Fp32"
    sys.exit("unexpected dtype %s for %s" % (r.dtype, op))


def main():
    cuda = cuda_lists()
    lines = ["# row cpu cuda: what torch.autocast does with the op (torch %s)." % torch.__version__,
             "# Written by tools/amp/autocast_policies.py; read by tests/amp/test_autocast.cpp."]
    for row in rows():
        ops = ALIASES.get(row, [row])
        cpu, cu = "Keep", "Keep"
        for op in ops:
            if registered(op, "AutocastCPU"):
                cpu = cpu_policy(op)
                break
        for op in ops:
            if registered(op, "AutocastCUDA"):
                cu = cuda.get(op) or cuda.get(op.split(".")[0])
                if cu is None:
                    sys.exit("%s has an AutocastCUDA kernel but is on no list of the header" % op)
                break
        lines.append("%s %s %s" % (row, cpu, cu))
    path = os.path.join(ROOT, "tests/amp/autocast_policies.txt")
    open(path, "w").write("\n".join(lines) + "\n")
    print("wrote", path, len(lines) - 2, "rows")


if __name__ == "__main__":
    main()

"""Comparison of brisk's result line with PyTorch's, and divergence signatures.

Per output: dtype, shape, requires_grad, NaN positions, +-inf positions,
values (exact for integers and bool; for floats |a - b| <= f * (rtol |b| +
atol * max(1, max |ref|)) with the dtype's (rtol, atol) below and the op's
factor f), and the sign of zeros for pointwise ops. Errors: both or neither,
at the same op. Gradients: the same checks per leaf, where "no gradient"
equals all zeros.
"""
import math
import re

from .ops import OPS

# (rtol, atol) per dtype; atol is scaled by the reference's largest finite magnitude (at least 1).
TOLERANCES = {
    "float64": (1e-9, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 1e-3),   # float16's eps is 9.8e-4: one ulp of rounding either way
    "bfloat16": (1.6e-2, 8e-3),  # eps 7.8e-3
}
GRAD_FACTOR = 8.0  # backward formulas sum more terms than the forward

# Backward errors of torch that are its bugs or gaps, not checks brisk lacks.
REF_BW_SKIP = re.compile(r"returned an invalid gradient|INTERNAL ASSERT FAILED|not implemented for '(Half|BFloat16)'|"
                         r"Expected a proper Tensor but got None|derivative for .* is not implemented|"
                         r"Negation, the `-` operator, on a bool tensor|can't be cast to the desired output type|"
                         # mse_loss/huber_loss of mixed float dtypes: the forward promotes, the backward refuses
                         r"Found dtype \w+ but expected \w+")
UNSUPPORTED = re.compile(r"not implemented|not supported|unsupported dtype|is not supported by brisk|"
                         r"expected a floating point input")


class Divergence:
    def __init__(self, kind, op_index, detail, where=""):
        self.kind, self.op_index, self.detail, self.where = kind, op_index, detail, where

    def __repr__(self):
        return "%s at op %s%s: %s" % (self.kind, self.op_index, self.where, self.detail)


def _is_zero_tensor(rec):
    return rec is None or all((x == 0) for x in rec["data"] if not (isinstance(x, float) and math.isnan(x)))


def _num(x):
    if isinstance(x, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[x]
    return x


def _loosen(dtype, loosest):
    """How much looser than `dtype`'s tolerance a gradient computed through
    values of dtype `loosest` must be."""
    if dtype not in TOLERANCES or loosest not in TOLERANCES:
        return 1.0
    return max(1.0, TOLERANCES[loosest][0] / TOLERANCES[dtype][0])


def _zero_signs_differ(ref, got):
    if not ref or not got or ref["dtype"] not in TOLERANCES or len(ref["data"]) != len(got["data"]):
        return False
    for b, a in zip(ref["data"], got["data"]):
        a = _num(a)
        if a == 0 and b == 0 and math.copysign(1, a) != math.copysign(1, b):
            return True
    return False


def compare_tensor(ref, got, factor=1.0, pointwise=False, check_rg=True):
    """None when they agree, else (kind, detail)."""
    if ref is None or got is None:
        if ref is None and got is None:
            return None
        return ("missing-output" if got is None else "extra-output", "ref %s, brisk %s" % (
            "none" if ref is None else "tensor", "none" if got is None else "tensor"))
    if ref["dtype"] != got["dtype"]:
        return "dtype", "ref %s, brisk %s" % (ref["dtype"], got["dtype"])
    if list(ref["shape"]) != list(got["shape"]):
        return "shape", "ref %s, brisk %s" % (ref["shape"], got["shape"])
    if check_rg and ref.get("rg") != got.get("rg"):
        return "requires_grad", "ref %s, brisk %s" % (ref.get("rg"), got.get("rg"))
    rd, gd = ref["data"], [_num(x) for x in got["data"]]
    if len(rd) != len(gd):
        return "shape", "ref %d elements, brisk %d" % (len(rd), len(gd))
    dt = ref["dtype"]
    if dt not in TOLERANCES:
        for i, (a, b) in enumerate(zip(rd, gd)):
            if int(a) != int(b):
                return "value", "element %d: ref %s, brisk %s" % (i, a, b)
        return None
    rtol, atol = TOLERANCES[dt]
    finite = [abs(x) for x in rd if math.isfinite(x)]
    scale = max([1.0] + finite)
    worst = None
    for i, (b, a) in enumerate(zip(rd, gd)):
        bn, an = math.isnan(b), math.isnan(a)
        if bn or an:
            if bn != an:
                return "nan", "element %d: ref %r, brisk %r" % (i, b, a)
            continue
        if math.isinf(b) or math.isinf(a):
            if a != b:
                return "inf", "element %d: ref %r, brisk %r" % (i, b, a)
            continue
        err = abs(a - b)
        if err > factor * (rtol * abs(b) + atol * scale):
            if worst is None or err > worst[0]:
                worst = (err, i, b, a)
        elif pointwise and a == 0 and b == 0 and math.copysign(1, a) != math.copysign(1, b):
            return "signed-zero", "element %d: ref %r, brisk %r" % (i, b, a)
    if worst:
        err, i, b, a = worst
        return "value", "element %d: ref %r, brisk %r (|diff| %.3g)" % (i, b, a, err)
    return None


def _index_check(builder, op_index, out_pos, ref, got):
    """sort/argsort/topk/median(dim) indices: equal ties may come in any order,
    so compare the values the indices pick instead of the indices."""
    import torch
    name, args, kw = builder.ops[op_index]
    op = OPS[name]
    src = builder.input_snapshot.get(op_index)
    if src is None:
        return None
    dim = args[op.index_check[1]]
    reduced = name in ("median_dim", "nanmedian_dim")  # one index per row along dim
    if src.dim() == 0 or src.shape != torch.Size(ref["shape"]) and name != "topk" and not reduced:
        return compare_tensor(ref, got)
    ri = torch.tensor(ref["data"], dtype=torch.int64).reshape(ref["shape"])
    gi = torch.tensor([int(x) for x in got["data"]], dtype=torch.int64).reshape(got["shape"])
    if reduced and ri.dim() < src.dim():  # keepdim=False
        ri, gi = ri.unsqueeze(dim), gi.unsqueeze(dim)
    if gi.numel() and (gi.min() < -src.shape[dim] or gi.max() >= src.shape[dim]):
        return "value", "index out of range"
    a = src.gather(dim, ri)
    g = src.gather(dim, gi)
    same = (a == g) | (a.isnan() & g.isnan())
    if not bool(same.all()):
        return "value", "indices pick different values: ref %s, brisk %s" % (ref["data"], got["data"])
    return None


def compare(builder, ref, got):
    """All divergences between the reference result and brisk's, in program order."""
    out = []
    if "runner_error" in got:
        return [Divergence("runner-error", None, got["runner_error"])]
    if "input_error" in got:
        return [Divergence("input-error", None, got["input_error"])]
    rs, gs = ref["snaps"], got.get("snaps", [])
    zero_signs_differ = False  # once an output differs in the sign of a zero, later ops may too
    for i in range(min(len(rs), len(gs))):
        name = builder.ops[i][0]
        op = OPS[name]
        # Ops after the focus op read its (tolerably different) results: errors grow.
        factor = op.tol * (4.0 if builder.focus is not None and i > builder.focus else 1.0)
        if len(rs[i]) != len(gs[i]):
            out.append(Divergence("num-outputs", i, "ref %d, brisk %d" % (len(rs[i]), len(gs[i]))))
            continue
        for k, (a, b) in enumerate(zip(rs[i], gs[i])):
            if op.index_check and k == len(rs[i]) - 1 and a and b and a["dtype"] == b["dtype"] == "int64" and \
                    a["shape"] == b["shape"]:
                d = _index_check(builder, i, k, a, b)
            else:
                d = compare_tensor(a, b, factor, op.kind == "pointwise" and not zero_signs_differ)
                zero_signs_differ = zero_signs_differ or _zero_signs_differ(a, b)
            if d:
                out.append(Divergence(d[0], i, d[1], " output %d" % k))
    rf, gf = ref.get("failed_op"), got.get("failed_op")
    gstatus = got.get("status", "ok")
    if gstatus == "exception":
        out.append(Divergence("non-brisk-exception", gf, got.get("msg", "")))
    elif gstatus == "runner":
        out.append(Divergence("runner-error", gf, got.get("msg", "")))
    elif rf is not None and (gf is None or gf > rf):
        msg = ref.get("msg", "")
        # torch lacks a kernel for a dtype that brisk supports: an extension, not a missing check.
        kind = "brisk-extension" if re.search(r"not implemented for '|^NotImplementedError|does not support \w+ "
                                              r"dtypes", msg) else "missing-error"
        out.append(Divergence(kind, rf, "torch: " + msg))
    elif gf is not None and (rf is None or gf < rf):
        msg = got.get("msg", "")
        kind = "unsupported" if UNSUPPORTED.search(msg) and "unsupported operation" not in msg else "extra-error"
        out.append(Divergence(kind, gf, "brisk: " + msg))
    if rf is not None or gf is not None:
        return sorted(out, key=lambda d: (d.op_index if d.op_index is not None else 1 << 30))

    fwd_ok = not out
    if fwd_ok and "final" in ref and "final" in got:
        inplace = [i for i, (n, _, _) in enumerate(builder.ops) if OPS[n].inplace]
        # Indices of sort/topk may differ on ties (checked at the op already).
        skip = {builder.op_first[i] + len(builder.snaps[i]) - 1 for i, (n, _, _) in enumerate(builder.ops)
                if OPS[n].index_check and i < len(builder.snaps)}
        for v, (a, b) in enumerate(zip(ref["final"], got["final"])):
            if v in skip:
                continue
            d = compare_tensor(a, b, 8.0, False)
            if d:
                blame = inplace[-1] if inplace else builder.focus
                out.append(Divergence("final-" + d[0], blame, "value %d: %s" % (v, d[1])))
                break
    for key, prefix in (("bw", "grad"), ("bw2", "grad2")):
        if key not in ref:
            continue
        rb, gb = ref[key], got.get(key)
        focus = builder.focus
        if gb is None:
            if key == "bw2" and got.get("bw", {}).get("status") != "ok":
                continue
            out.append(Divergence(prefix + "-not-run", focus, "brisk skipped the %s pass" % prefix))
            continue
        if gb.get("status") == "exception":
            out.append(Divergence(prefix + "-non-brisk-exception", focus, gb.get("msg", "")))
            continue
        if rb["status"] == "error" and REF_BW_SKIP.search(rb.get("msg", "")):
            break  # torch's backward cannot run it: nothing to compare (nor a second pass)
        if rb["status"] != gb["status"]:
            if rb["status"] == "error":
                out.append(Divergence(prefix + "-missing-error", focus, "torch: " + rb.get("msg", "")))
            else:
                msg = gb.get("msg", "")
                kind = prefix + ("-unsupported" if UNSUPPORTED.search(msg) else "-extra-error")
                out.append(Divergence(kind, focus, "brisk: " + msg))
            continue
        if rb["status"] != "ok":
            continue
        rg_, gg_ = rb.get("grads"), gb.get("grads")
        n = len(rg_ or gg_ or [])
        # No loss on one side (nothing required grad): its gradients are none, which
        # equals zeros; e.g. a first derivative that is constant in the inputs.
        for k, (a, b) in enumerate(zip(rg_ or [None] * n, gg_ or [None] * n)):
            if a is None or b is None:
                if _is_zero_tensor(a) and _is_zero_tensor(b):
                    continue
                out.append(Divergence(prefix + ("-missing" if b is None else "-extra"), focus,
                                      "leaf %d: ref %s, brisk %s" % (k, "none" if a is None else "nonzero",
                                                                     "none" if b is None else "nonzero")))
                continue
            d = compare_tensor(a, b, GRAD_FACTOR * _loosen(a["dtype"], builder.loosest_float()), False,
                               check_rg=False)
            if d:
                out.append(Divergence(prefix + "-" + d[0], focus, "leaf %d (input v%d): %s" % (
                    k, builder.leaves[k], d[1])))
                break
    return out


# Torch errors that many programs meet in different ops, grouped into one
# signature each: (pattern, class, function of the match giving the op name or None).
ERROR_CLASSES = [
    # in-place on (a view of) an output of split/unbind/chunk, or on its base
    (re.compile(r"function that returns multiple views"), "multi-output-view-inplace",
     lambda m: "<multi-output-view>"),
    (re.compile(r"cannot be converted to type \S+ without overflow|is outside the representable range of"),
     "scalar-overflow", None),
    (re.compile(r"a leaf Variable that requires grad"), "leaf-inplace", None),
]
# The same for brisk's errors (kinds ending in extra-error): (pattern, class).
BRISK_ERROR_CLASSES = [
    (re.compile(r"returned \d+ gradients but has \d+ inputs"), "backward-arity"),
]


def _sig_class_of_cpp_type(msg):
    m = re.search(r"to type (\S+) without|representable range of (\w+)", msg)
    if m and m.group(2):
        return {"Byte": "u8", "Char": "int", "Short": "int", "Int": "int", "Long": "int", "Half": "half", "BFloat16": "half",
                "Float": "float", "Double": "float", "Bool": "bool"}.get(m.group(2), m.group(2))
    t = m.group(1) if m else "?"
    for key, cls in (("Half", "half"), ("BFloat16", "half"), ("uint8", "u8"), ("signed char", "int"), ("short", "int"), ("int", "int"), ("long", "int"),
                     ("float", "float"), ("double", "float"), ("bool", "bool")):
        if key in t:
            return cls
    return t


def signature(builder, div):
    """family:op:kind:dtypes, e.g. 'intdiv:div:grad-extra-error:f32,f32'.

    Two groupings keep one cause to one signature: gradient divergences of a
    program with an in-place op on a tensor that other live values alias are
    blamed on that op with kind '...@aliased-inplace' and the target's dtype
    only; torch errors of ERROR_CLASSES get the class as a suffix."""
    if div.op_index is None or div.op_index >= len(builder.ops):
        return "%s:-:%s:-" % (builder.family, div.kind)
    kind = div.kind
    name = builder.ops[div.op_index][0]
    rounding = builder.ops[div.op_index][2].get("rounding_mode")
    if rounding:
        name += "[%s]" % rounding
    dts = builder.op_dtypes[div.op_index]
    classified = False
    bi = builder.bool_index
    if bi is not None and div.op_index is not None and "error" not in kind and \
            (div.op_index > bi or kind.startswith(("grad", "final-"))):
        # x[True] is a copy in torch and a view in brisk: later writes through
        # either side show up anywhere downstream.
        return "%s:index[bool]:%s@bool-index-view:-" % (builder.family, kind)
    if kind.endswith("missing-error"):
        for rx, cls, opf in ERROR_CLASSES:
            m = rx.search(div.detail)
            if m:
                kind += "@" + cls
                if opf:
                    name, dts = opf(m), "-"
                if cls == "scalar-overflow":  # the dtype the scalar must fit
                    dts = "->" + _sig_class_of_cpp_type(div.detail)
                if cls == "leaf-inplace" and builder.stale_view_leaf == div.op_index:
                    name, dts = "<stale-view>", "-"  # any in-place op on a view with a stale history
                classified = True
                break
    if kind.endswith("extra-error"):
        for rx, cls in BRISK_ERROR_CLASSES:
            if rx.search(div.detail):
                kind, dts, classified = kind + "@" + cls, "-", True
                break
    if not classified and builder.aliased_inplace is not None and \
            (kind.startswith(("grad", "final-")) or kind == "requires_grad"):
        i = builder.aliased_inplace
        # One signature per kind for every in-place op and float dtype: the
        # cause is the aliasing (views made before the in-place op), not the op.
        name, kind, dts = "<inplace>", kind + "@aliased-inplace", "-"
    return "%s:%s:%s:%s" % (builder.family, name, kind, dts)

"""Generator families: random small programs, one family per area of brisk.

Each family is a function of a Builder; it makes inputs and calls ops,
marking the op under test with focus=True (gradient divergences are blamed
on it). A program is a pure function of (seed, case): the random stream
comes from random.Random("seed:case"), and generators look at shapes and
dtypes only.
"""
import random

import torch.nn.functional as F_

from .builder import Builder, StopProgram, SkipCase, TORCH_VERSION
from .ops import BINARY, BINARY_SCALAR_OK, COMPARISONS, UNARY
from .ops import OPS, _fn, _ints_cpp, _red_cpp, pargs, kwsrc
from .program import cpp_src as C
from .program import V, S, I, B, DT, DTYPES, FLOATS, INTS

ALL = DTYPES
NON_DIFFERENTIABLE = COMPARISONS | {"logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                                    "bitwise_left_shift", "bitwise_right_shift",
                                    "bitwise_xor", "logical_not", "bitwise_not",
                                    # no derivative in torch or brisk (backward raises): in-place calls detach
                                    "heaviside"}
# brisk extensions without a torch method to compare with (logaddexp has no in-place form in either).
NO_TORCH_INPLACE = {"minimum", "maximum", "logaddexp", "logaddexp2"}
FLOAT_WEIGHTS = [4, 3, 2, 2]  # float32, float64, float16, bfloat16


# ---- small helpers ----------------------------------------------------------------------------

def pick_float(r):
    return r.choices(FLOATS, FLOAT_WEIGHTS)[0]


def pick_dtype(r):
    return r.choices(ALL, [4, 3, 2, 2, 3, 2, 1, 1, 2, 2])[0]


def rand_shape(r, ndim=None, lo=1, hi=4, zero=0.06):
    if ndim is None:
        ndim = r.choices([0, 1, 2, 3, 4], [2, 4, 5, 3, 1])[0]
    shape = [r.randint(lo, hi) for _ in range(ndim)]
    if ndim and r.random() < zero:
        shape[r.randrange(ndim)] = 0
    return shape


def broadcast_partner(r, shape):
    """A shape that broadcasts with `shape` (or, rarely, one that does not)."""
    if r.random() < 0.05 and shape:
        s = list(shape)
        i = r.randrange(len(s))
        s[i] = s[i] + 1
        return s
    if r.random() < 0.15:
        return []
    k = r.randint(0, len(shape))  # drop leading dims
    s = list(shape[k:]) if r.random() < 0.5 else list(shape)
    s = [1 if r.random() < 0.3 else d for d in s]
    if r.random() < 0.15:
        s = [r.randint(1, 2)] + s if len(s) < 4 else s
    return s


def rand_scalar(r, kind=None):
    kind = kind or r.choice(["sfloat", "sint", "sbool", "sint", "sfloat"])
    if kind == "sbool":
        return B(r.random() < 0.5)
    if kind == "sint":
        return I(r.choice([0, 1, -1, 2, 3, -3, 7, 255, 256, -129, 300, 2 ** 31, -2 ** 40]))
    return S(r.choice([0.0, -0.0, 0.5, -1.5, 2.0, 3.25, 1e-3, 1e10, 1e40, float("nan"), float("inf"),
                       -float("inf"), 100000.0]))


def rand_dim(r, nd, allow_bad=0.03):
    if r.random() < allow_bad:
        return r.choice([nd, -nd - 1, 5])
    if nd == 0:
        return r.choice([0, -1])
    d = r.randrange(nd)
    return d - nd if r.random() < 0.3 else d


def float_input(b, shape=None, dtype=None, kind=None, rg=None, layout=None):
    r = b.rng
    return b.inp(dtype or pick_float(r), rand_shape(r) if shape is None else shape, rg=rg, kind=kind, layout=layout)


def maybe_post(b, x, p=0.35):
    """Sometimes feeds the focus op's result to a second op, so that its
    gradient arrives through something other than the loss."""
    r = b.rng
    if not isinstance(x, V) or r.random() > p:
        return
    dt = b.dtype(x)
    if dt in FLOATS:
        op = r.choice(["sum", "mul", "exp", "tanh", "abs", "sigmoid", "square"])
        if op == "sum":
            b.call("sum", x, None, False)
        elif op == "mul":
            b.call("mul", x, S(r.choice([2.0, -0.5])))
        else:
            b.call(op, x)
    elif dt != "bool":
        b.call("mul", x, I(3))


# ---- families ---------------------------------------------------------------------------------

def fam_promotion(b):
    """Binary ops over every dtype pair and scalar kind; in-place result casts."""
    r = b.rng
    op = r.choice(BINARY)
    da, db = pick_dtype(r), pick_dtype(r)
    if op.startswith("bitwise") and r.random() < 0.7:
        da, db = r.choice(INTS + ["bool"]), r.choice(INTS + ["bool"])
    sa = rand_shape(r)
    form = r.choices(["tt", "ts", "st", "t0"], [5, 3, 1, 1])[0]
    kw = {}
    if op in ("add", "sub") and r.random() < 0.3:
        kw["alpha"] = rand_scalar(r, r.choice(["sint", "sfloat", "sbool"]))
    if op == "div" and r.random() < 0.4:
        kw["rounding_mode"] = r.choice(["trunc", "floor"])
    kind = r.choice([None, "special", "intlike"])
    if form == "st":
        rop = {"add": "radd", "sub": "rsub", "mul": "rmul", "div": "rdiv", "pow": "rpow"}.get(op, "radd")
        x = b.inp(da, sa, kind=kind)
        out = b.call(rop, rand_scalar(r), x, focus=True)
    else:
        x = b.inp(da, sa, kind=kind)
        if form == "ts" and op in BINARY_SCALAR_OK:
            y = rand_scalar(r)
        elif form == "t0":
            y = b.inp(db, [], kind=kind)
        else:
            y = b.inp(db, broadcast_partner(r, sa), kind=kind)
        if r.random() < 0.25 and op not in NO_TORCH_INPLACE:
            if b.requires_grad(x) and r.random() < 0.8:
                x = b.call("mul", x, I(1))  # in-place on a leaf that requires grad is an error: mostly use a copy
            if op in NON_DIFFERENTIABLE:
                # torch lets gradients pass through in-place non-differentiable ops
                # (x.eq_(y) keeps x's history, and requires grad if y does): not a behaviour to copy
                x = b.call("detach", x) if b.requires_grad(x) else x
                y = b.call("detach", y) if isinstance(y, V) and b.requires_grad(y) else y
            out = b.call(op + "_", x, y, focus=True, **kw)
        else:
            out = b.call(op, x, y, focus=True, **kw)
    maybe_post(b, out)


# Unary ops with keywords or no method form; in-place forms exist (name_).
UNARY_EXTRA = ["mish", "logit", "nan_to_num"]


def fam_unary(b):
    r = b.rng
    op = r.choice(UNARY + ["isnan", "isinf", "isfinite", "gelu", "softplus", "sigmoid", "tanh", "exp", "log"] +
                  UNARY_EXTRA + ["igamma", "isclose"])
    if op in ("igamma", "isclose"):
        return unary_pair(b, op)
    dt = pick_dtype(r) if r.random() < 0.35 else pick_float(r)
    x = b.inp(dt, rand_shape(r), kind=r.choice(["special", "normal", "positive", "intlike", "unit"]))
    kw = {}
    if op == "gelu" and r.random() < 0.5:
        kw["approximate"] = "tanh"
    if op == "softplus" and r.random() < 0.6:
        kw["beta"] = r.choice([I(2), S(0.5), S(3.0)])
        kw["threshold"] = r.choice([I(1), S(5.0), I(20)])
    if op == "logit" and r.random() < 0.5:
        kw["eps"] = r.choice([1e-6, 0.01, 0.25, 0.0, 0.5, 0.75])
    if op == "nan_to_num":
        for k in ("nan", "posinf", "neginf"):
            if r.random() < 0.4:
                kw[k] = r.choice([0.0, -0.0, 1.5, -2.0, 1e30, -1e30, 70000.0, 3e38])
    if r.random() < 0.2 and (op in UNARY or op in UNARY_EXTRA):
        if b.requires_grad(x):
            x = b.call("detach" if op in NON_DIFFERENTIABLE else "mul", x, *([] if op in NON_DIFFERENTIABLE else [I(1)]))
        out = b.call(op + "_", x, focus=True, **kw)
    else:
        out = b.call(op, x, focus=True, **kw)
    maybe_post(b, out)


def unary_pair(b, op):
    """igamma(a, x) (differentiable in x only) and isclose(a, b, ...)."""
    r = b.rng
    shape = rand_shape(r)
    if op == "igamma":
        dt = pick_float(r)
        a = b.inp(r.choice([dt, dt, pick_dtype(r)]), broadcast_partner(r, shape),
                  kind=r.choice(["positive", "positive", "special", "intlike"]), rg=False if r.random() < 0.9 else None)
        x = b.inp(dt, shape, kind=r.choice(["positive", "positive", "special", "unit", "intlike"]))
        out = b.call("igamma", a, x, focus=True)
    else:
        dt = pick_dtype(r) if r.random() < 0.3 else pick_float(r)
        kind = r.choice(["intlike", "intlike", "special", "normal"])
        x = b.inp(dt, shape, kind=kind)
        y = b.inp(r.choice([dt, dt, dt, pick_dtype(r)]), broadcast_partner(r, shape), kind=kind)
        kw = {}
        if r.random() < 0.5:
            kw["rtol"] = r.choice([0.0, 1e-5, 0.1, 0.5])
        if r.random() < 0.5:
            kw["atol"] = r.choice([0.0, 1e-8, 0.5, 1.0])
        if r.random() < 0.4:
            kw["equal_nan"] = r.choice([True, False])
        out = b.call("isclose", x, y, focus=True, **kw)
    maybe_post(b, out)


def fam_ternary(b):
    """where, clamp, lerp, addcmul, addcdiv: three operands, promotion among them."""
    r = b.rng
    op = r.choice(["where", "clamp", "clamp", "clamp_", "lerp", "lerp_", "addcmul", "addcdiv", "addcmul_",
                   "addcdiv_"])
    shape = rand_shape(r)
    kind = r.choice([None, "special", "intlike"])
    if op == "where":
        c = b.inp("bool", broadcast_partner(r, shape), rg=False)
        args = [b.inp(pick_dtype(r), broadcast_partner(r, shape), kind=kind) if r.random() < 0.75 else rand_scalar(r)
                for _ in range(2)]
        out = b.call("where", c, *args, focus=True)
    elif op in ("clamp", "clamp_"):
        dt = pick_dtype(r)
        x = b.inp(dt, shape, kind=kind)
        if op == "clamp" and r.random() < 0.4:
            lo = b.inp(r.choice([dt, pick_dtype(r)]), broadcast_partner(r, shape), kind=kind)
            hi = b.inp(r.choice([dt, pick_dtype(r)]), broadcast_partner(r, shape), kind=kind)
            out = b.call(op, x, lo, hi, focus=True)
        else:
            lo = r.choice([None, rand_scalar(r, "sfloat"), rand_scalar(r, "sint"), S(-0.0), I(0)])
            hi = r.choice([None, rand_scalar(r, "sfloat"), rand_scalar(r, "sint"), S(0.0)]) if lo is not None \
                else r.choice([rand_scalar(r, "sfloat"), I(1)])
            if op == "clamp_" and b.requires_grad(x):
                x = b.call("mul", x, I(1))
            out = b.call(op, x, lo, hi, focus=True)
    else:
        dt = pick_float(r) if r.random() < 0.85 else pick_dtype(r)
        x = b.inp(dt, shape, kind=kind)
        if op.endswith("_") and b.requires_grad(x):
            x = b.call("mul", x, I(1))
        y = b.inp(r.choice([dt, dt, pick_dtype(r)]), broadcast_partner(r, shape), kind=kind)
        if op.startswith("lerp"):
            w = S(r.choice([0.0, 0.25, 1.0, 1.5, -0.5])) if r.random() < 0.5 else \
                b.inp(r.choice([dt, dt, pick_dtype(r)]), broadcast_partner(r, shape), kind="unit")
            out = b.call(op, x, y, w, focus=True)
        else:
            z = b.inp(r.choice([dt, dt, pick_dtype(r)]), broadcast_partner(r, shape), kind=kind)
            kw = {"value": r.choice([I(2), S(-0.5), S(0.0), B(True)])} if r.random() < 0.4 else {}
            out = b.call(op, x, y, z, focus=True, **kw)
    maybe_post(b, out)


def fam_intdiv(b):
    """Integer division, rounding modes, remainder, fmod, pow: signs, zeros,
    NaN/inf, empty tensors."""
    r = b.rng
    op = r.choice(["div", "div", "remainder", "fmod", "pow", "pow", "rpow", "rdiv", "floor", "trunc", "round",
                   "frac", "ceil"])
    da = r.choice(["int64", "int32", "int16", "int8", "uint8", "float32", "float64", "float16", "bfloat16", "bool"])
    db = r.choice(["int64", "int32", "int16", "int8", "uint8", "float32", "float64", "float16", "bfloat16", "bool"])
    shape = rand_shape(r, zero=0.1)
    kind = r.choice(["special", "intlike", "normal"])
    x = b.inp(da, shape, kind=kind)
    if op in ("floor", "trunc", "round", "frac", "ceil"):
        out = b.call(op, x, focus=True)
        maybe_post(b, out)
        return
    if op in ("rpow", "rdiv"):
        s = r.choice([I(0), I(2), I(-2), S(0.0), S(-0.0), S(2.5), S(-1.5), B(True), S(float("nan")), I(-1)])
        out = b.call(op, s, x, focus=True)
        maybe_post(b, out)
        return
    if r.random() < 0.4:
        y = r.choice([I(0), I(2), I(-3), S(0.0), S(-0.0), S(2.5), S(-1.5), S(float("inf")), B(True), I(-1),
                      S(float("nan")), I(7)])
    else:
        y = b.inp(db, broadcast_partner(r, shape), kind=kind)
    kw = {}
    if op == "div":
        kw["rounding_mode"] = r.choice([None, "trunc", "floor", "floor", "trunc"])
    if r.random() < 0.2:
        if b.requires_grad(x):
            x = b.call("mul", x, I(1))
        out = b.call(op + "_", x, y, focus=True, **kw)
    else:
        out = b.call(op, x, y, focus=True, **kw)
    maybe_post(b, out)


def rand_dims(r, nd):
    if nd == 0:
        return r.choice([[0], [-1], []])
    k = r.randint(1, nd)
    dims = r.sample(range(nd), k)
    dims = [d - nd if r.random() < 0.3 else d for d in dims]
    if r.random() < 0.03:
        dims.append(dims[0])  # a repeated dim: an error
    return dims


def fam_reduce(b):
    r = b.rng
    op = r.choice(["sum", "sum", "mean", "prod", "max", "min", "max_dim", "min_dim", "amax", "amin", "argmax",
                   "argmin", "var", "std", "var_mean", "norm", "logsumexp", "softmax", "log_softmax", "cumsum",
                   "cumprod", "all", "any", "sort", "argsort", "topk", "softmax", "nansum", "nanmean", "count_nonzero",
                   "trace"])
    if op in ("all", "any", "sum", "prod", "cumsum", "max", "min", "amax", "argmax", "sort", "max_dim"):
        dt = pick_dtype(r) if r.random() < 0.5 else pick_float(r)
    else:
        dt = pick_float(r) if r.random() < 0.9 else pick_dtype(r)
    shape = rand_shape(r, zero=0.1)
    kind = r.choice(["normal", "special", "intlike", "normal"])
    if op in ("sort", "argsort", "topk") and b.grad and dt in FLOATS:
        kind = "distinct"  # tied values may come in any order, and their gradients with them
    x = b.inp(dt, shape, kind=kind)
    nd = len(shape)
    keep = r.random() < 0.4
    dtk = {}
    if op in ("sum", "mean", "prod", "softmax", "log_softmax", "cumsum", "cumprod") and r.random() < 0.25:
        dtk["dtype"] = DT(r.choice(["float64", "float32", "int64", "float16", "bfloat16"]))
    if op in ("nansum", "nanmean"):
        out = b.call(op, x, None if r.random() < 0.3 else (rand_dims(r, nd) or [0]), keep, focus=True)
    elif op == "count_nonzero":
        out = b.call(op, x, None if r.random() < 0.3 else rand_dims(r, nd), focus=True)
    elif op == "trace":
        m = b.inp(dt, [r.randint(0, 4), r.randint(0, 4)] if r.random() < 0.95 else [2, 2, 2], kind=kind)
        out = b.call(op, m, focus=True)
    elif op in ("sum", "mean"):
        out = b.call(op, x, None if r.random() < 0.3 else rand_dims(r, nd), keep, focus=True, **dtk)
    elif op == "prod":
        out = b.call(op, x, None if r.random() < 0.3 else rand_dim(r, nd), keep, focus=True, **dtk)
    elif op in ("max", "min"):
        out = b.call(op, x, focus=True)
    elif op in ("max_dim", "min_dim"):
        out = b.call(op, x, rand_dim(r, nd), keep, focus=True)
    elif op in ("amax", "amin"):
        out = b.call(op, x, rand_dims(r, nd), keep, focus=True)
    elif op in ("argmax", "argmin"):
        out = b.call(op, x, None if r.random() < 0.3 else rand_dim(r, nd), keep, focus=True)
    elif op in ("var", "std", "var_mean"):
        kw = {"keepdim": keep}
        if r.random() < 0.5:
            kw["correction"] = r.choice([I(0), I(1), I(2)])  # a float correction: torch >= 2.0 only
        out = b.call(op, x, None if r.random() < 0.3 else rand_dims(r, nd), focus=True, **kw)
    elif op == "norm":
        p = r.choice([I(2), I(1), S(3.0), S(float("inf")), S(-float("inf")), I(0), S(0.5)])
        if r.random() < 0.4:
            out = b.call(op, x, p, None, False, focus=True)
        else:
            out = b.call(op, x, p, rand_dims(r, nd), keep, focus=True)
    elif op == "logsumexp":
        out = b.call(op, x, rand_dims(r, nd) or [0], keep, focus=True)
    elif op in ("softmax", "log_softmax", "cumsum", "cumprod"):
        out = b.call(op, x, rand_dim(r, nd), focus=True, **dtk)
    elif op in ("all", "any"):
        if r.random() < 0.4:
            out = b.call(op, x, None, False, focus=True)
        else:
            out = b.call(op, x, rand_dim(r, nd), keep, focus=True)
    elif op in ("sort", "argsort"):
        out = b.call(op, x, rand_dim(r, nd), r.random() < 0.5, focus=True)
    else:  # topk
        d = rand_dim(r, nd)
        size = shape[d] if nd and -nd <= d < nd else 1
        k = r.randint(0, size) if r.random() < 0.95 else size + 1
        out = b.call(op, x, k, d, r.random() < 0.7, True, focus=True)
    maybe_post(b, out if isinstance(out, V) else out[0])


def rand_index_tensor(b, size, shape, allow_neg=True, bad=0.03):
    r = b.rng
    n = 1
    for s in shape:
        n *= s
    hi = max(size, 1)
    data = []
    for _ in range(n):
        if r.random() < bad or size == 0:
            data.append(r.choice([size, -size - 1, 100]) if size else 0)
        else:
            i = r.randrange(hi)
            data.append(i - size if allow_neg and r.random() < 0.3 else i)
    return b.inp("int64", shape, data=data, rg=False)


def rand_basic_index(r, shape):
    idx = []
    d = 0
    used_ellipsis = False
    while d < len(shape) and r.random() < 0.85:
        c = r.choices(["int", "slice", "none", "ellipsis", "bool"], [3, 5, 1, 1, 0.3])[0]
        if c == "int":
            n = shape[d]
            idx.append(r.randrange(-n, n) if n and r.random() < 0.97 else n)
            d += 1
        elif c == "slice":
            n = shape[d]
            start = r.choice([None, 0, 1, -1, -2, n, n + 2])
            stop = r.choice([None, n, 1, -1, 2, 0, n + 5])
            step = r.choice([None, 1, 2, 3]) if r.random() < 0.97 else r.choice([0, -1])
            idx.append(slice(start, stop, step))
            d += 1
        elif c == "none":
            idx.append(None)
        elif c == "bool":
            idx.append(r.random() < 0.5)
        elif not used_ellipsis:
            idx.append(Ellipsis)
            used_ellipsis = True
            d = len(shape) - r.randint(0, len(shape) - d)
    return idx


def fam_index(b):
    r = b.rng
    op = r.choice(["index", "index", "index_adv", "index_put_", "index_put_", "index_select", "gather", "scatter",
                   "scatter_", "scatter_add", "index_add_", "masked_fill", "masked_fill_", "masked_select",
                   "nonzero", "where", "where_scalar"])
    dt = pick_float(r) if r.random() < 0.7 else pick_dtype(r)
    shape = rand_shape(r, ndim=r.choice([1, 2, 2, 3]), zero=0.05)
    x = b.inp(dt, shape, kind=r.choice(["normal", "special", "intlike"]))
    nd = len(shape)
    if op == "index":
        out = b.call("index", x, rand_basic_index(r, shape), focus=True)
    elif op == "index_adv":
        idx = rand_basic_index(r, shape)[:1]
        d = len([i for i in idx if isinstance(i, (int, slice)) and not isinstance(i, bool)])
        if d < nd:
            if r.random() < 0.7:
                idx.append(rand_index_tensor(b, shape[d], rand_shape(r, ndim=r.choice([1, 1, 2]), hi=3)))
            else:
                mshape = shape[d:d + r.randint(1, nd - d)]
                idx.append(b.inp("bool", mshape, rg=False))
            if r.random() < 0.3 and d + 1 < nd:
                idx.append(r.choice([slice(None), slice(None, None, 2),
                                     rand_index_tensor(b, shape[d + 1] if d + 1 < nd else 1, [1])]))
        out = b.call("index", x, idx, focus=True)
    elif op == "index_put_":
        base = x
        if b.requires_grad(x) and r.random() < 0.85:
            base = b.call("mul", x, I(1))
        if r.random() < 0.5:
            idx = rand_basic_index(r, shape)
        else:
            d = 0
            if r.random() < 0.7:
                idx = [rand_index_tensor(b, shape[d], rand_shape(r, ndim=1, hi=3))]
            else:
                idx = [b.inp("bool", shape[:r.randint(1, nd)], rg=False)]
        if r.random() < 0.5:
            val = rand_scalar(r)
        else:
            val = b.inp(r.choice([dt, dt, pick_dtype(r)]), r.choice([[], [1], shape[-1:]]))
        out = b.call("index_put_", base, idx, val, focus=True)
    elif op == "index_select":
        d = rand_dim(r, nd)
        size = shape[d] if -nd <= d < nd else 1
        out = b.call("index_select", x, d, rand_index_tensor(b, size, [r.randint(0, 4)], allow_neg=False), focus=True)
    elif op in ("gather", "scatter", "scatter_", "scatter_add", "index_add_"):
        d = rand_dim(r, nd)
        size = shape[d] if -nd <= d < nd else 1
        ishape = [r.randint(0, s) if i != (d % nd if nd else 0) else r.randint(0, 4) for i, s in enumerate(shape)]
        if op == "index_add_":
            ishape = [r.randint(0, 4)]
        idx = rand_index_tensor(b, size, ishape, allow_neg=False)
        base = x
        if op.endswith("_") and b.requires_grad(x) and r.random() < 0.85:
            base = b.call("mul", x, I(1))
        if op == "gather":
            out = b.call("gather", x, d, idx, focus=True)
        elif op == "index_add_":
            sshape = list(shape)
            if nd:
                sshape[d % nd] = ishape[0]
            src = b.inp(r.choice([dt, dt, pick_dtype(r)]), sshape)
            kw = {"alpha": r.choice([I(2), S(0.5)])} if r.random() < 0.3 else {}
            out = b.call("index_add_", base, d, idx, src, focus=True, **kw)
        else:
            src = b.inp(r.choice([dt, dt, pick_dtype(r)]), [s + r.randint(0, 1) for s in ishape])
            if op in ("scatter", "scatter_") and r.random() < 0.3:
                src = rand_scalar(r)
            out = b.call(op, base, d, idx, src, focus=True)
    elif op in ("masked_fill", "masked_fill_"):
        m = b.inp("bool", broadcast_partner(r, shape), rg=False)
        base = x
        if op.endswith("_") and b.requires_grad(x) and r.random() < 0.85:
            base = b.call("mul", x, I(1))
        out = b.call(op, base, m, rand_scalar(r), focus=True)
    elif op == "masked_select":
        m = b.inp("bool", broadcast_partner(r, shape), rg=False)
        out = b.call(op, x, m, focus=True)
    elif op == "nonzero":
        out = b.call(op, x, focus=True)
    else:
        c = b.inp("bool", broadcast_partner(r, shape), rg=False)
        if op == "where":
            y = b.inp(r.choice([dt, dt, pick_dtype(r)]), broadcast_partner(r, shape))
            args = [x, y] if r.random() < 0.5 else [y, x]
        else:
            args = [x, rand_scalar(r)] if r.random() < 0.5 else [rand_scalar(r), x]
        out = b.call("where", c, *args, focus=True)
    maybe_post(b, out)


VIEW_OPS = ["narrow", "select", "slice", "transpose", "permute", "unsqueeze", "squeeze", "diagonal", "unfold",
            "view", "reshape", "t", "flatten", "index", "expand", "split", "chunk", "unbind", "mT", "movedim",
            "detach"]
INPLACE_OPS = ["add_", "mul_", "sub_", "div_", "copy_", "fill_", "zero_", "clamp_", "index_put_", "masked_fill_",
               "neg_", "exp_", "sigmoid_", "pow_", "tanh_", "abs_", "addcmul_", "lerp_", "tril_"]


def view_of(b, x):
    """One random view op on x; returns the new value (or None if none fits)."""
    r = b.rng
    shape = b.shape(x)
    nd = len(shape)
    op = r.choice(VIEW_OPS)
    if nd == 0 and op not in ("unsqueeze", "view", "reshape", "squeeze", "index", "expand", "detach", "flatten"):
        op = "unsqueeze"
    if op == "narrow":
        d = r.randrange(nd)
        start = r.randint(0, shape[d])
        return b.call("narrow", x, d, start, r.randint(0, shape[d] - start))
    if op == "select":
        d = r.randrange(nd)
        if shape[d] == 0:
            return b.call("unsqueeze", x, 0)
        return b.call("select", x, d, r.randrange(-shape[d], shape[d]))
    if op == "slice":
        d = r.randrange(nd)
        return b.call("slice", x, d, r.choice([None, 0, 1]), r.choice([None, shape[d], -1]), r.choice([1, 2, 3]))
    if op == "transpose":
        return b.call("transpose", x, r.randrange(nd), r.randrange(nd))
    if op == "permute":
        p = list(range(nd))
        r.shuffle(p)
        return b.call("permute", x, p)
    if op == "unsqueeze":
        return b.call("unsqueeze", x, r.randint(-nd - 1, nd))
    if op == "squeeze":
        return b.call("squeeze", x, None if nd == 0 or r.random() < 0.4 else r.randrange(nd))
    if op == "diagonal":
        if nd < 2:
            return b.call("unsqueeze", x, 0)
        d1, d2 = r.sample(range(nd), 2)
        return b.call("diagonal", x, r.randint(-1, 1), d1, d2)
    if op == "unfold":
        d = r.randrange(nd)
        return b.call("unfold", x, d, r.randint(1, max(1, shape[d])), r.randint(1, 2))
    if op in ("view", "reshape"):
        n = b.numel(x)
        cands = [[n], [-1], [1, n], [n, 1]] + ([[2, n // 2]] if n % 2 == 0 and n else []) + [shape[::-1]]
        return b.call(op, x, r.choice(cands))
    if op == "t":
        return b.call("t", x) if nd <= 2 else b.call("transpose", x, 0, 1)
    if op == "mT":
        return b.call("mT", x) if nd >= 2 else b.call("unsqueeze", x, -1)
    if op == "flatten":
        return b.call("flatten", x, 0, -1) if nd < 2 else b.call("flatten", x, r.randrange(nd - 1), -1)
    if op == "index":
        return b.call("index", x, rand_basic_index(r, shape))
    if op == "expand":
        return b.call("expand", x, [r.randint(1, 2)] + [s if r.random() < 0.8 else -1 for s in shape])
    if op == "movedim":
        return b.call("movedim", x, r.randrange(nd), r.randrange(nd))
    if op == "detach":
        return b.call("detach", x)
    d = r.randrange(nd)
    if op == "split":
        return r.choice(b.call("split", x, r.randint(1, max(1, shape[d])), d) or [x])
    if op == "chunk":
        return r.choice(b.call("chunk", x, r.randint(1, 3), d) or [x])
    outs = b.call("unbind", x, d)
    return r.choice(outs) if outs else b.call("unsqueeze", x, 0)


def inplace_on(b, t):
    r = b.rng
    op = r.choice(INPLACE_OPS)
    if b.overlap_unknown(t):
        # Writing through a view whose elements share memory in ways torch does not
        # check (unfold with step < size): the result depends on the order of writes.
        return b.call("mul", t, S(2.0))
    shape = b.shape(t)
    dt = b.dtype(t)
    if op in ("add_", "mul_", "sub_", "div_", "pow_"):
        other = rand_scalar(r, r.choice(["sfloat", "sint"])) if r.random() < 0.5 else \
            b.inp(r.choice([dt, dt, pick_float(r)]), broadcast_partner(r, shape), kind="intlike")
        return b.call(op, t, other, focus=True)
    if op == "copy_":
        return b.call(op, t, b.inp(r.choice([dt, dt, pick_dtype(r)]), broadcast_partner(r, shape)), focus=True)
    if op == "fill_":  # fill_(0-dim tensor): brisk has the Scalar form only
        return b.call(op, t, rand_scalar(r), focus=True)
    if op == "clamp_":
        lo = r.choice([None, S(-0.5), I(0), S(-0.0)])
        return b.call(op, t, lo, r.choice([None, S(0.5), I(1)]) if lo is not None else S(0.25), focus=True)
    if op == "index_put_":
        return b.call(op, t, rand_basic_index(r, shape), rand_scalar(r, "sfloat"), focus=True)
    if op == "masked_fill_":
        return b.call(op, t, b.inp("bool", broadcast_partner(r, shape), rg=False), rand_scalar(r), focus=True)
    if op == "addcmul_":
        return b.call(op, t, b.inp(dt, shape), b.inp(dt, broadcast_partner(r, shape)), focus=True,
                      value=r.choice([None, S(0.5), I(2)]))
    if op == "lerp_":
        return b.call(op, t, b.inp(dt, shape), S(r.choice([0.25, 0.5, 2.0])), focus=True)
    if op == "tril_":
        return b.call(op, t, r.randint(-1, 1), focus=True)
    return b.call(op, t, focus=True)


def fam_views(b):
    """View chains, in-place ops on bases and views, then old views used again."""
    r = b.rng
    dt = pick_float(r) if r.random() < 0.85 else pick_dtype(r)
    shape = rand_shape(r, ndim=r.choice([1, 2, 2, 3, 3, 4]), lo=1, hi=4, zero=0.03)
    x = b.inp(dt, shape, kind=r.choice(["normal", "intlike"]))
    base = x
    if b.requires_grad(x) and r.random() < 0.9:
        base = b.call(r.choice(["mul", "add"]), x, I(r.choice([1, 0])) if r.random() < 0.5 else S(1.0))
    chain = [base]
    for _ in range(r.randint(1, 3)):
        v = view_of(b, chain[-1] if r.random() < 0.7 else r.choice(chain))
        if isinstance(v, list):
            v = v[0] if v else chain[-1]
        chain.append(v)
    target = r.choice(chain)
    inplace_on(b, target)
    for _ in range(r.randint(0, 2)):
        old = r.choice(chain)
        c = r.random()
        if c < 0.4:
            b.call("mul", old, S(r.choice([2.0, -1.0])))
        elif c < 0.6:
            view_of(b, old)
        elif c < 0.8:
            inplace_on(b, r.choice(chain))
        else:
            b.call("sum", old, None, False)


def fam_shape(b):
    r = b.rng
    op = r.choice(["cat", "cat", "stack", "hstack", "vstack", "dstack", "split", "chunk", "unbind", "flatten",
                   "unflatten", "repeat", "tile", "flip", "roll", "tril", "triu", "movedim", "pad", "broadcast_to",
                   "expand", "squeeze", "permute", "contiguous", "clone", "to", "reshape", "tril_", "triu_",
                   "repeat_interleave", "diag", "rot90", "fliplr", "flipud", "diff", "kron", "take_along_dim"])
    dt = pick_float(r) if r.random() < 0.75 else pick_dtype(r)
    shape = rand_shape(r, ndim=r.choice([0, 1, 2, 2, 3, 3, 4]), zero=0.06)
    nd = len(shape)
    x = b.inp(dt, shape)
    if op in ("cat", "stack", "hstack", "vstack", "dstack"):
        xs = [x]
        d = rand_dim(r, nd + (1 if op == "stack" else 0))
        for _ in range(r.randint(0, 2)):
            s = list(shape)
            if op == "cat" and nd and -nd <= d < nd and r.random() < 0.7:
                s[d] = r.randint(0, 3)
            if r.random() < 0.05 and s:
                s[-1] += 1
            if op == "cat" and r.random() < 0.05:
                s = [0]  # the legacy empty 1-D tensor
            xs.append(b.inp(r.choice([dt, dt, pick_dtype(r)]), s))
        out = b.call(op, xs, d, focus=True) if op in ("cat", "stack") else b.call(op, xs, focus=True)
    elif op in ("split", "chunk", "unbind"):
        d = rand_dim(r, nd)
        size = shape[d] if nd and -nd <= d < nd else 1
        if op == "split":
            if r.random() < 0.5:
                arg = r.randint(1, max(1, size)) if r.random() < 0.97 else 0
            else:
                parts, left = [], size
                while left > 0:
                    p = r.randint(0, left)
                    parts.append(p)
                    left -= p
                arg = parts + ([1] if r.random() < 0.05 else [])
            outs = b.call("split", x, arg, d, focus=True)
        elif op == "chunk":
            outs = b.call("chunk", x, r.randint(1, 4) if r.random() < 0.97 else 0, d, focus=True)
        else:
            outs = b.call("unbind", x, d, focus=True)
        if outs:
            maybe_post(b, outs[-1])
        return
    elif op == "flatten":
        s = rand_dim(r, nd)
        out = b.call(op, x, s, r.choice([-1, s]), focus=True)
    elif op == "unflatten":
        d = rand_dim(r, nd)
        size = shape[d] if nd and -nd <= d < nd else 1
        sizes = [size] if size < 2 else ([2, size // 2] if size % 2 == 0 else [1, size])
        if r.random() < 0.3:
            sizes = [-1] + sizes[1:]
        out = b.call(op, x, d, sizes, focus=True)
    elif op in ("repeat", "tile"):
        reps = [r.randint(0, 2) if r.random() < 0.1 else r.randint(1, 2) for _ in range(r.randint(max(0, nd - 1), nd + 1))]
        out = b.call(op, x, reps, focus=True)
    elif op == "flip":
        out = b.call(op, x, rand_dims(r, nd), focus=True)
    elif op == "repeat_interleave":
        out = b.call(op, x, r.randint(0, 3) if r.random() < 0.97 else -1, None if r.random() < 0.3 else rand_dim(r, nd),
                     focus=True)
    elif op == "diag":
        if nd not in (1, 2) and r.random() < 0.9:
            x = b.inp(dt, [r.randint(0, 4)] if r.random() < 0.5 else [r.randint(0, 3), r.randint(0, 3)])
        out = b.call(op, x, r.randint(-2, 2), focus=True)
    elif op == "rot90":
        dims = [rand_dim(r, nd), rand_dim(r, nd)] if nd >= 2 and r.random() < 0.5 else [0, 1]
        out = b.call(op, x, r.randint(-3, 5), dims, focus=True)
    elif op in ("fliplr", "flipud"):
        out = b.call(op, x, focus=True)
    elif op == "diff":
        d = rand_dim(r, nd)
        ends = []
        for _ in range(2):
            e = None
            if nd and r.random() < 0.3:
                s = list(shape)
                if -nd <= d < nd:
                    s[d] = r.randint(0, 2)
                e = b.inp(r.choice([dt, dt, pick_dtype(r)]), s if r.random() < 0.95 else s[1:])
            ends.append(e)
        out = b.call(op, x, r.choice([0, 1, 1, 2, 3]), d, ends[0], ends[1], focus=True)
    elif op == "kron":
        out = b.call(op, x, b.inp(r.choice([dt, dt, pick_dtype(r)]), rand_shape(r, ndim=r.choice([0, 1, 2, 3]))),
                     focus=True)
    elif op == "take_along_dim":
        if r.random() < 0.3:
            n = 1
            for k in shape:
                n *= k
            out = b.call(op, x, rand_index_tensor(b, n, [r.randint(0, 4)], allow_neg=False), None, focus=True)
        else:
            d = rand_dim(r, nd)
            s = [r.choice([1, n]) for n in shape]
            if nd and -nd <= d < nd:
                s[d] = r.randint(0, 3)
            size = shape[d] if nd and -nd <= d < nd else 1
            # torch 2.x takes the indices modulo the dim: negative and past-the-end ones are valid
            out = b.call(op, x, rand_index_tensor(b, size, s, allow_neg=True, bad=0.1), d, focus=True)
    elif op == "roll":
        if r.random() < 0.3:
            out = b.call(op, x, [r.randint(-5, 5)], [], focus=True)
        else:
            dims = rand_dims(r, nd)
            out = b.call(op, x, [r.randint(-5, 5) for _ in dims], dims, focus=True)
    elif op in ("tril", "triu", "tril_", "triu_"):
        if op.endswith("_") and b.requires_grad(x):
            x = b.call("mul", x, I(1))
        out = b.call(op, x, r.randint(-2, 2), focus=True)
    elif op == "movedim":
        out = b.call(op, x, rand_dim(r, nd), rand_dim(r, nd), focus=True)
    elif op == "pad":
        k = r.randint(1, max(1, nd))
        pads = [r.randint(-1, 2) for _ in range(2 * k)]
        kw = {"value": rand_scalar(r, "sfloat")} if r.random() < 0.5 else {}
        out = b.call(r.choice(["pad", "F.pad"]), x, pads, focus=True, **kw)
    elif op in ("broadcast_to", "expand"):
        target = [r.randint(1, 3)] * r.randint(0, 1) + [s if s != 1 or r.random() < 0.5 else r.randint(1, 3)
                                                        for s in shape]
        if op == "expand" and target and r.random() < 0.3:
            target[-1] = -1
        out = b.call(op, x, target, focus=True)
    elif op == "squeeze":
        out = b.call(op, x, None if r.random() < 0.4 else rand_dim(r, nd), focus=True)
    elif op == "permute":
        p = list(range(nd))
        r.shuffle(p)
        if r.random() < 0.05 and p:
            p[0] = p[-1]
        out = b.call(op, x, p, focus=True)
    elif op == "to":
        out = b.call(op, x, DT(pick_dtype(r)), focus=True)
    elif op == "reshape":
        n = b.numel(x)
        out = b.call(op, x, r.choice([[-1], [n, 1], [1, -1], [n + 1], shape[::-1]]), focus=True)
    else:
        out = b.call(op, x, focus=True)
    maybe_post(b, out)


def fam_matmul(b):
    r = b.rng
    op = r.choice(["matmul", "matmul", "matmul", "mm", "bmm", "mv", "dot", "outer", "addmm", "einsum", "F.linear",
                   "F.bilinear"])
    dt = pick_float(r) if r.random() < 0.9 else pick_dtype(r)
    dt2 = dt if r.random() < 0.9 else pick_dtype(r)
    n, k, m = r.randint(0, 3) if r.random() < 0.1 else r.randint(1, 4), r.randint(1, 5), r.randint(1, 4)
    if r.random() < 0.05:
        k = 0
    bad = r.random() < 0.05
    kind = "small" if r.random() < 0.7 else "special"
    if op == "matmul":
        da, db_ = r.choice([1, 2, 3, 4]), r.choice([1, 2, 3, 4])
        batch = [r.randint(1, 3) for _ in range(2)]
        sa = ([k] if da == 1 else batch[:da - 2] + [n, k])
        sb = ([k + bad] if db_ == 1 else [1 if r.random() < 0.5 else x for x in batch[:db_ - 2]] + [k + bad, m])
        out = b.call(op, b.inp(dt, sa, kind=kind), b.inp(dt2, sb, kind=kind), focus=True)
    elif op in ("mm", "bmm"):
        pre = [] if op == "mm" else [r.randint(1, 3)]
        out = b.call(op, b.inp(dt, pre + [n, k], kind=kind), b.inp(dt2, pre + [k + bad, m], kind=kind), focus=True)
    elif op == "mv":
        out = b.call(op, b.inp(dt, [n, k], kind=kind), b.inp(dt2, [k + bad], kind=kind), focus=True)
    elif op in ("dot", "outer"):
        out = b.call(op, b.inp(dt, [k], kind=kind), b.inp(dt2, [k + bad if op == "dot" else m], kind=kind),
                     focus=True)
    elif op == "addmm":
        kw = {}
        if r.random() < 0.4:
            kw["beta"] = r.choice([I(0), S(0.5), I(2)])
        if r.random() < 0.4:
            kw["alpha"] = r.choice([I(0), S(-1.5), I(2)])
        s = b.inp(dt, r.choice([[n, m], [m], [1, m], [n, 1], []]), kind=kind)
        out = b.call(op, s, b.inp(dt, [n, k], kind=kind), b.inp(dt2, [k + bad, m], kind=kind), focus=True, **kw)
    elif op == "einsum":
        eq, shapes = r.choice([("ij,jk->ik", [[n, k], [k, m]]), ("bij,bjk->bik", [[2, n, k], [2, k, m]]),
                               ("i,i->", [[k], [k]]), ("ij->ji", [[n, k]]), ("ii->i", [[k, k]]),
                               ("ij,j->i", [[n, k], [k]]), ("i,j->ij", [[n], [m]]), ("ij->", [[n, k]]),
                               ("bij->bj", [[2, n, k]]), ("ij,ij->i", [[n, k], [n, k]]),
                               ("...ij,...jk->...ik", [[2, n, k], [k, m]]), ("ijk->kji", [[n, k, m]])])
        out = b.call(op, eq, [b.inp(dt, s, kind=kind) for s in shapes], focus=True)
    elif op == "F.linear":
        x = b.inp(dt, rand_shape(r, ndim=r.choice([1, 2, 3]))[:-1] + [k], kind=kind)
        w = b.inp(dt2, [m, k + bad], kind=kind)
        bias = b.inp(dt, [m], kind=kind) if r.random() < 0.6 else None
        out = b.call(op, x, w, bias, focus=True)
    else:
        x1 = b.inp(dt, [n, k], kind=kind)
        x2 = b.inp(dt, [n, m], kind=kind)
        w = b.inp(dt2, [2, k, m + bad], kind=kind)
        out = b.call(op, x1, x2, w, b.inp(dt, [2], kind=kind) if r.random() < 0.5 else None, focus=True)
    maybe_post(b, out)


def fam_nn(b):
    r = b.rng
    op = r.choice(["act", "act", "F.layer_norm", "F.dropout", "F.embedding", "loss", "loss", "loss", "F.conv1d",
                   "F.conv2d", "F.conv_transpose2d", "pool", "pool", "F.batch_norm", "F.group_norm",
                   "F.scaled_dot_product_attention", "F.softmax", "F.log_softmax"])
    dt = pick_float(r) if r.random() < 0.93 else pick_dtype(r)
    kind = r.choice(["normal", "normal", "special", "small"])
    if op == "act":
        name = r.choice(["F.relu", "F.gelu", "F.silu", "sigmoid", "tanh", "softplus", "relu", "gelu", "silu"])
        x = b.inp(dt, rand_shape(r), kind=kind)
        kw = {"approximate": "tanh"} if "gelu" in name and r.random() < 0.5 else {}
        out = b.call(name, x, focus=True, **kw)
    elif op in ("F.softmax", "F.log_softmax"):
        shape = rand_shape(r, ndim=r.choice([1, 2, 3]))
        out = b.call(op, b.inp(dt, shape, kind=kind), rand_dim(r, len(shape)), focus=True)
    elif op == "F.layer_norm":
        shape = rand_shape(r, ndim=r.choice([1, 2, 3]), zero=0.03)
        k = r.randint(1, len(shape))
        ns = shape[-k:] if r.random() < 0.95 else [s + 1 for s in shape[-k:]]
        w = b.inp(dt, ns, kind="normal") if r.random() < 0.6 else None
        bias = b.inp(dt, ns, kind="normal") if r.random() < 0.5 else None
        kw = {"eps": r.choice([1e-5, 1e-3, 0.0])} if r.random() < 0.3 else {}
        out = b.call(op, b.inp(dt, shape, kind=kind), ns, w, bias, focus=True, **kw)
    elif op == "F.dropout":
        p, training = r.choice([(0.0, True), (0.5, False), (0.0, False), (1.0, False)])
        out = b.call(op, b.inp(dt, rand_shape(r), kind=kind), p, training, focus=True)
    elif op == "F.embedding":
        nemb, d = r.randint(1, 5), r.randint(1, 3)
        w = b.inp(dt, [nemb, d], kind="normal")
        idx = rand_index_tensor(b, nemb, rand_shape(r, ndim=r.choice([0, 1, 2])), allow_neg=False, bad=0.02)
        kw = {"padding_idx": r.randrange(-nemb, nemb)} if r.random() < 0.4 else {}
        out = b.call(op, idx, w, focus=True, **kw)
    elif op == "loss":
        out = gen_loss(b, dt, kind)
    elif op in ("F.conv1d", "F.conv2d", "F.conv_transpose2d"):
        out = gen_conv(b, op, dt, kind)
    elif op == "pool":
        out = gen_pool(b, dt, kind)
    elif op == "F.batch_norm":
        n, c = r.randint(1, 3), r.randint(1, 3)
        shape = [n, c] + rand_shape(r, ndim=r.choice([0, 1, 2]))
        x = b.inp(dt, shape, kind=kind)
        training = r.random() < 0.5
        rm = rv = None
        if not training or r.random() < 0.5:
            rm = b.inp(dt, [c], kind="normal", rg=False)
            rv = b.inp(dt, [c], kind="positive", rg=False)
        kw = {"training": training}
        if r.random() < 0.6:
            kw["weight"] = b.inp(dt, [c], kind="normal")
        if r.random() < 0.5:
            kw["bias"] = b.inp(dt, [c], kind="normal")
        if r.random() < 0.3:
            kw["momentum"] = r.choice([0.5, 0.0, 1.0])
        out = b.call(op, x, rm, rv, focus=True, **kw)
    elif op == "F.group_norm":
        g = r.randint(1, 3)
        c = g * r.randint(1, 2) if r.random() < 0.95 else g + 1
        shape = [r.randint(1, 2), c] + rand_shape(r, ndim=r.choice([0, 1, 2]))
        kw = {}
        if r.random() < 0.5:
            kw["weight"] = b.inp(dt, [c], kind="normal")
            kw["bias"] = b.inp(dt, [c], kind="normal")
        out = b.call(op, b.inp(dt, shape, kind=kind), g, focus=True, **kw)
    else:
        bs, L, S_, E = [r.randint(1, 2)], r.randint(1, 4), r.randint(1, 4), r.randint(1, 4)
        q = b.inp(dt, bs + [L, E], kind="small")
        k_ = b.inp(dt, bs + [S_, E], kind="small")
        v = b.inp(dt, bs + [S_, r.randint(1, 3)], kind="small")
        kw = {}
        c = r.random()
        if c < 0.3:
            kw["is_causal"] = True
        elif c < 0.6:
            data = [True] * (L * S_)
            for i in range(L * S_):
                if i % S_ != 0 and r.random() < 0.4:
                    data[i] = False  # column 0 stays visible: no row fully masked
            kw["attn_mask"] = b.inp("bool", [L, S_], data=data, rg=False) if r.random() < 0.6 else \
                b.inp(dt, [L, S_], kind="small")
        if r.random() < 0.3:
            kw["scale"] = r.choice([0.5, 2.0])
        out = b.call(op, q, k_, v, focus=True, **kw)
    maybe_post(b, out if isinstance(out, V) else out[0])


def gen_loss(b, dt, kind):
    r = b.rng
    name = r.choice(["F.mse_loss", "F.l1_loss", "F.smooth_l1_loss", "F.huber_loss", "F.nll_loss", "F.cross_entropy",
                     "F.cross_entropy", "F.binary_cross_entropy", "F.binary_cross_entropy_with_logits", "F.kl_div"])
    red = r.choice(["mean", "sum", "none", "mean"])
    kw = {"reduction": red}
    if name in ("F.nll_loss", "F.cross_entropy"):
        n, c = r.randint(0 if r.random() < 0.05 else 1, 4), r.randint(1, 4)
        extra = rand_shape(r, ndim=r.choice([0, 0, 1, 2]), hi=2)
        shape = [n, c] + extra if r.random() < 0.85 else [c]
        tshape = [n] + extra if len(shape) > 1 else []
        x = b.inp(dt, shape, kind=kind if name == "F.cross_entropy" else "normal")
        if name == "F.cross_entropy" and r.random() < 0.3:
            t = b.inp(dt, shape, kind="unit", rg=False)  # class probabilities
        else:
            data = [r.randrange(c) if r.random() < 0.9 else r.choice([-100, c, 1]) for _ in range(_prod(tshape))]
            t = b.inp("int64", tshape, data=data, rg=False)
            if r.random() < 0.3:
                kw["ignore_index"] = r.choice([-100, 0, 1])
        if r.random() < 0.3:
            kw["weight"] = b.inp(dt, [c], kind="positive", rg=False)
        if name == "F.cross_entropy" and r.random() < 0.35:
            kw["label_smoothing"] = r.choice([0.1, 0.5, 0.0])
        return b.call(name, x, t, focus=True, **kw)
    shape = rand_shape(r, zero=0.05)
    if name == "F.binary_cross_entropy":
        x = b.inp(dt, shape, kind="unit")
        t = b.inp(dt, shape if r.random() < 0.95 else shape + [2], kind="unit", rg=False)
        if r.random() < 0.3:
            kw["weight"] = b.inp(dt, broadcast_partner(r, shape), kind="positive", rg=False)
        return b.call(name, x, t, focus=True, **kw)
    if name == "F.binary_cross_entropy_with_logits":
        x = b.inp(dt, shape, kind=kind)
        t = b.inp(dt, shape, kind="unit", rg=r.random() < 0.3)
        if r.random() < 0.3:
            kw["weight"] = b.inp(dt, broadcast_partner(r, shape), kind="positive", rg=False)
        if r.random() < 0.3 and shape:
            kw["pos_weight"] = b.inp(dt, shape[-1:], kind="positive", rg=False)
        return b.call(name, x, t, focus=True, **kw)
    if name == "F.kl_div":
        if red == "mean" and r.random() < 0.5:
            kw["reduction"] = "batchmean"
        lt = r.random() < 0.3
        if lt:
            kw["log_target"] = True
        x = b.inp(dt, shape, kind="normal")
        t = b.inp(dt, shape, kind="normal" if lt else "unit", rg=r.random() < 0.3)
        return b.call(name, x, t, focus=True, **kw)
    if name == "F.smooth_l1_loss" and r.random() < 0.5:
        kw["beta"] = r.choice([0.5, 2.0, 0.0])
    if name == "F.huber_loss" and r.random() < 0.5:
        kw["delta"] = r.choice([0.5, 2.0])
    x = b.inp(dt, shape, kind=kind)
    t = b.inp(dt if r.random() < 0.9 else pick_float(r), shape, kind=kind, rg=r.random() < 0.3)
    return b.call(name, x, t, focus=True, **kw)


def _prod(s):
    n = 1
    for x in s:
        n *= x
    return n


def gen_conv(b, op, dt, kind):
    r = b.rng
    d = 1 if op == "F.conv1d" else 2
    groups = r.choice([1, 1, 1, 2])
    cin = groups * r.randint(1, 2)
    cout = groups * r.randint(1, 2)
    ks = [r.randint(1, 3) for _ in range(d)]
    sp = [r.randint(max(1, k), k + 3) for k in ks]
    batch = [r.randint(1, 2)] if r.random() < 0.8 else []
    x = b.inp(dt, batch + [cin] + sp, kind=kind)
    kw = {}
    if r.random() < 0.4:
        kw["stride"] = r.choice([1, 2, [1, 2][:d] if d == 2 else 2])
    if r.random() < 0.4:
        kw["padding"] = r.choice([0, 1, [1, 0][:d] if d == 2 else 1] + (["same", "valid"] if op != "F.conv_transpose2d"
                                                                        and "stride" not in kw else []))
    if r.random() < 0.25:
        kw["dilation"] = r.choice([1, 2])
    if groups > 1:
        kw["groups"] = groups
    if op == "F.conv_transpose2d":
        w = b.inp(dt, [cin, cout // groups] + ks, kind="small")
        if r.random() < 0.2 and kw.get("stride", 1) == 2:
            kw["output_padding"] = 1
    else:
        w = b.inp(dt, [cout, cin // groups + (1 if r.random() < 0.03 else 0)] + ks, kind="small")
    bias = b.inp(dt, [cout], kind="small") if r.random() < 0.5 else None
    return b.call(op, x, w, bias, focus=True, **kw)


def gen_pool(b, dt, kind):
    r = b.rng
    name = r.choice(["F.max_pool1d", "F.max_pool2d", "F.max_pool2d_with_indices", "F.avg_pool1d", "F.avg_pool2d",
                     "F.adaptive_avg_pool2d"])
    d = 1 if name.endswith("1d") else 2
    batch = [r.randint(1, 2)] if r.random() < 0.7 else []
    sp = [r.randint(1, 5) for _ in range(d)]
    x = b.inp(dt, batch + [r.randint(1, 2)] + sp, kind=kind)
    if name == "F.adaptive_avg_pool2d":
        return b.call(name, x, [r.randint(1, 3), r.randint(1, 3)] if r.random() < 0.7 else r.randint(1, 3),
                      focus=True)
    k = r.randint(1, 3) if r.random() < 0.6 else [r.randint(1, 3) for _ in range(d)]
    kw = {}
    if r.random() < 0.5:
        kw["stride"] = r.randint(1, 2)
    if r.random() < 0.3:
        kw["padding"] = r.randint(0, 1)
    if r.random() < 0.3:
        kw["ceil_mode"] = True
    if "max" in name and r.random() < 0.2:
        kw["dilation"] = 2
    if "avg" in name and r.random() < 0.3:
        kw["count_include_pad"] = False
    if name == "F.avg_pool2d" and r.random() < 0.15:
        kw["divisor_override"] = r.choice([1, 3])
    return b.call(name, x, k, focus=True, **kw)


# ---- the nn2 family ------------------------------------------------------------------------

def fam_nn2(b):
    """Ops that fam_nn and fam_reduce do not draw: median/nanmedian (all
    elements, and values/indices along a dim), interpolate (every mode, size
    or scale_factor), reflect/replicate/circular padding, rms_norm, conv3d and
    the 1-D and 3-D transposed convolutions."""
    r = b.rng
    what = r.choices(["median", "interpolate", "pad", "rms_norm", "conv"], [3, 4, 3, 2, 3])[0]
    dt = pick_float(r) if r.random() < 0.9 else pick_dtype(r)
    kind = r.choice(["normal", "normal", "special", "small", "intlike"])
    if what == "median":
        out = gen_median(b, dt, kind)
    elif what == "interpolate":
        out = gen_interpolate(b, dt, kind)
    elif what == "pad":
        out = gen_pad_mode(b, dt, kind)
    elif what == "rms_norm":
        shape = rand_shape(r, ndim=r.choice([1, 2, 3]), zero=0.03)
        k = r.randint(1, len(shape))
        ns = shape[-k:] if r.random() < 0.95 else [s + 1 for s in shape[-k:]]
        w = b.inp(dt if r.random() < 0.9 else pick_float(r), ns, kind="normal") if r.random() < 0.6 else None
        kw = {"eps": r.choice([1e-5, 1e-3, 0.0, 1e-12])} if r.random() < 0.4 else {}
        out = b.call("F.rms_norm", b.inp(dt, shape, kind=kind), ns, w, focus=True, **kw)
    else:
        out = gen_conv_more(b, r.choice(["F.conv3d", "F.conv_transpose1d", "F.conv_transpose3d"]), dt,
                            "small" if kind == "intlike" else kind)
    maybe_post(b, out if isinstance(out, V) else out[0])


def gen_median(b, dt, kind):
    r = b.rng
    op = r.choice(["median", "nanmedian", "median_dim", "nanmedian_dim"])
    shape = rand_shape(r, zero=0.1)
    if op.endswith("_dim") and b.grad and dt in FLOATS:
        kind = "distinct"  # the gradient goes to the index, which is unspecified among equal values
    x = b.inp(dt, shape, kind=kind)
    if op.endswith("_dim"):
        return b.call(op, x, rand_dim(r, len(shape)), r.random() < 0.4, focus=True)
    return b.call(op, x, focus=True)


INTERPOLATE_RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


def gen_interpolate(b, dt, kind):
    r = b.rng
    mode = r.choice(["nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"])
    rank = INTERPOLATE_RANK.get(mode) or r.choice([3, 4, 5])
    if r.random() < 0.03:
        rank = r.choice([2, 3, 4, 5, 6])  # mostly a rank the mode refuses
    if mode in ("nearest", "nearest-exact") and r.random() < 0.15:
        dt = "uint8"
    nsp = max(rank - 2, 0)
    hi = 3 if nsp == 3 else 4
    shape = [r.randint(1, 2), r.randint(1, 2)][:rank] + [r.randint(1, hi) for _ in range(nsp)]
    if r.random() < 0.03 and shape:
        shape[r.randrange(len(shape))] = 0
    x = b.inp(dt, shape, kind=kind)
    kw = {}
    if r.random() < 0.5:
        if r.random() < 0.3:
            kw["size"] = r.randint(1, 5)
        else:
            kw["size"] = [r.randint(1, 5) for _ in range(nsp if r.random() < 0.97 else nsp + 1)]
    else:
        scales = [0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 0.3, 1.7, 2.5]

        def scale(n):  # mostly one that leaves at least one output element
            ok = [f for f in scales if int(n * f) >= 1 or r.random() < 0.03]
            return r.choice(ok or scales)

        if r.random() < 0.3:
            kw["scale_factor"] = scale(min(shape[2:] or [1]))
        else:
            kw["scale_factor"] = [scale(n) for n in shape[2:2 + nsp]] + [scale(1) for _ in range(nsp - len(shape[2:]))]
        if r.random() < 0.3:
            kw["recompute_scale_factor"] = r.random() < 0.7
    if mode in INTERPOLATE_RANK and r.random() < 0.6:
        kw["align_corners"] = r.random() < 0.5
    elif r.random() < 0.02:
        kw["align_corners"] = False  # refused for the non-interpolating modes
    return b.call("F.interpolate[%s]" % mode, x, focus=True, **kw)


def gen_pad_mode(b, dt, kind):
    r = b.rng
    mode = r.choice(["reflect", "replicate", "circular"])
    k = r.randint(1, 3)
    nd = k + r.choice([1, 2]) if r.random() < 0.97 else r.choice([k, k + 3])
    hi = 3 if k == 3 else 4
    shape = [r.randint(1, 2) for _ in range(max(nd - k, 0))] + [r.randint(1, hi) for _ in range(min(k, nd))]
    x = b.inp(dt, shape, kind=kind)
    pads = []
    for i in range(k):
        n = shape[-1 - i] if i < len(shape) else 1
        for _ in range(2):
            if mode == "reflect":
                p = r.randint(0, n - 1) if r.random() < 0.99 else n
            elif mode == "circular":
                p = r.randint(0, n) if r.random() < 0.99 else n + 1
            else:
                p = r.randint(0, 3)
            pads.append(p)
    return b.call("F.pad[%s]" % mode, x, pads, focus=True)


def gen_conv_more(b, op, dt, kind):
    """conv3d, conv_transpose1d, conv_transpose3d (gen_conv makes the others)."""
    r = b.rng
    d = 1 if op.endswith("1d") else 3
    transposed = "transpose" in op
    groups = r.choice([1, 1, 1, 2])
    cin = groups * r.randint(1, 2)
    cout = groups * r.randint(1, 2)
    ks = [r.randint(1, 3 if d == 1 else 2) for _ in range(d)]
    sp = [r.randint(max(1, k), k + (3 if d == 1 else 1)) for k in ks]
    batch = [r.randint(1, 2)] if r.random() < 0.8 else []
    x = b.inp(dt, batch + [cin] + sp, kind=kind)

    def ints(choices_int, lo, hi):
        return r.choice(choices_int) if d == 1 or r.random() < 0.5 else [r.randint(lo, hi) for _ in range(d)]

    kw = {}
    if r.random() < 0.4:
        kw["stride"] = ints([1, 2], 1, 2)
    if r.random() < 0.4:
        if not transposed and "stride" not in kw and r.random() < 0.3:
            kw["padding"] = r.choice(["same", "valid"])
        else:
            kw["padding"] = ints([0, 1], 0, 1)
    if r.random() < 0.25:
        kw["dilation"] = ints([1, 2], 1, 2)
    if groups > 1:
        kw["groups"] = groups
    if transposed:
        w = b.inp(dt, [cin, cout // groups + (1 if r.random() < 0.03 else 0)] + ks, kind="small")
        if r.random() < 0.3:
            # valid below max(stride, dilation) in each dim: mostly 1 only where that is 2
            st, dl = kw.get("stride", 1), kw.get("dilation", 1)
            big = [max(st if isinstance(st, int) else st[i], dl if isinstance(dl, int) else dl[i]) for i in range(d)]
            kw["output_padding"] = [r.randint(0, b_ - 1 if r.random() < 0.95 else b_) for b_ in big]
            if d == 1 or r.random() < 0.3:
                kw["output_padding"] = kw["output_padding"][0] if len(set(kw["output_padding"])) == 1 else \
                    kw["output_padding"]
    else:
        w = b.inp(dt, [cout, cin // groups + (1 if r.random() < 0.03 else 0)] + ks, kind="small")
    bias = b.inp(dt, [cout], kind="small") if r.random() < 0.5 else None
    return b.call(op, x, w, bias, focus=True, **kw)


# ---- the nn3 family ------------------------------------------------------------------------
# Its ops join ops.py's table here (with ops.py's helpers): torch runs
# F.<name>(*args, **kw) and the repro's Python is that call; the repro's C++
# calls brisk's F::<name> with the op's options struct, one setter per
# keyword given.

_CPP_KEY = {"lambd": "lambda"}
_BAG_MODE = {"sum": "nn::kSum", "mean": "nn::kMean", "max": "nn::kMax"}


def _setters(kw, keys):
    out = ""
    for k in keys:
        if k not in kw:
            continue
        v = kw[k]
        if k in ("stride", "padding", "dilation"):
            val = _ints_cpp(v, 0)
        elif k == "mode":
            val = _BAG_MODE[v]
        else:
            val = C(v)
        out += ".%s(%s)" % (_CPP_KEY.get(k, k), val)
    return out


def _opts_cpp(struct, kw, keys, ctor=""):
    return "F::%s(%s)%s" % (struct, ctor, _setters(kw, keys))


def _nn3_unary(name, struct=None, keys=(), kind="pointwise", tol=1.0):
    if struct is None:
        cpp = lambda a, kw: "F::%s(%s)" % (name, C(a[0]))
    else:
        cpp = lambda a, kw: "F::%s(%s, %s)" % (name, C(a[0]), _opts_cpp(struct, kw, keys))
    _fn("F." + name, cpp, kind=kind, tol=tol)


for _n, _st, _keys in [("elu", "ELUFuncOptions", ["alpha"]), ("selu", None, []), ("celu", "CELUFuncOptions", ["alpha"]),
                       ("leaky_relu", "LeakyReLUFuncOptions", ["negative_slope"]),
                       ("hardtanh", "HardtanhFuncOptions", ["min_val", "max_val"]), ("relu6", None, []),
                       ("hardswish", None, []), ("hardsigmoid", None, []), ("softsign", None, []),
                       ("tanhshrink", None, []), ("softshrink", "SoftshrinkFuncOptions", ["lambd"]),
                       ("hardshrink", "HardshrinkFuncOptions", ["lambd"]), ("logsigmoid", None, []),
                       ("softplus", "SoftplusFuncOptions", ["beta", "threshold"])]:
    _nn3_unary(_n, _st, _keys)
_fn("F.threshold", lambda a, kw: "F::threshold(%s, F::ThresholdFuncOptions(%s, %s))" % (C(a[0]), C(a[1]), C(a[2])),
    kind="pointwise")
_fn("F.softmin", lambda a, kw: "F::softmin(%s, %s)" % (
    C(a[0]), _opts_cpp("SoftminFuncOptions", kw, ["dtype"], C(a[1]))), kind="accum", tol=4.0)
_fn("F.glu", lambda a, kw: "F::glu(%s, F::GLUFuncOptions(%s))" % (C(a[0]), C(a[1])))
_fn("F.prelu", lambda a, kw: "F::prelu(%s, %s)" % (C(a[0]), C(a[1])), kind="pointwise")

# losses: (tensor arguments..., reduction=..., options...)
NN3_LOSSES = {"margin_ranking_loss": ("MarginRankingLossFuncOptions", ["margin"]),
              "hinge_embedding_loss": ("HingeEmbeddingLossFuncOptions", ["margin"]),
              "soft_margin_loss": ("SoftMarginLossFuncOptions", []),
              "multilabel_soft_margin_loss": ("MultilabelSoftMarginLossFuncOptions", ["weight"]),
              "multi_margin_loss": ("MultiMarginLossFuncOptions", ["p", "margin", "weight"]),
              "multilabel_margin_loss": ("MultilabelMarginLossFuncOptions", []),
              "cosine_embedding_loss": ("CosineEmbeddingLossFuncOptions", ["margin"]),
              "triplet_margin_loss": ("TripletMarginLossFuncOptions", ["margin", "p", "eps", "swap"]),
              "poisson_nll_loss": ("PoissonNLLLossFuncOptions", ["log_input", "full", "eps"]),
              "gaussian_nll_loss": ("GaussianNLLLossFuncOptions", ["full", "eps"])}
for _n, (_st, _keys) in NN3_LOSSES.items():
    _fn("F." + _n, (lambda n, st, keys: lambda a, kw: "F::%s(%s, %s)" % (
        n, ", ".join(C(x) for x in a), _opts_cpp(st, kw, keys, _red_cpp(kw))))(_n, _st, _keys), kind="accum", tol=4.0)

_fn("F.instance_norm", lambda a, kw: "F::instance_norm(%s, %s)" % (C(a[0]), _opts_cpp(
    "InstanceNormFuncOptions", kw, ["running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum",
                                    "eps"])), kind="accum", tol=8.0)
_fn("F.local_response_norm", lambda a, kw: "F::local_response_norm(%s, %s)" % (C(a[0]), _opts_cpp(
    "LocalResponseNormFuncOptions", kw, ["alpha", "beta", "k"], C(a[1]))), kind="accum", tol=8.0)

# pooling
_POOL3_KEYS = {"max_pool3d": ["stride", "padding", "dilation", "ceil_mode"],
               "avg_pool3d": ["stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"]}
_fn("F.max_pool3d", lambda a, kw: "F::max_pool3d(%s, %s)" % (C(a[0]), _opts_cpp(
    "MaxPool3dFuncOptions", kw, _POOL3_KEYS["max_pool3d"], _ints_cpp(a[1], 1))))
_fn("F.avg_pool3d", lambda a, kw: "F::avg_pool3d(%s, %s)" % (C(a[0]), _opts_cpp(
    "AvgPool3dFuncOptions", kw, _POOL3_KEYS["avg_pool3d"], _ints_cpp(a[1], 1))), kind="accum", tol=4.0)
_fn("F.max_pool3d_with_indices", lambda a, kw: "F::max_pool3d_with_indices(%s, %s)" % (C(a[0]), _opts_cpp(
    "MaxPool3dFuncOptions", kw, _POOL3_KEYS["max_pool3d"], _ints_cpp(a[1], 1))), out="tuple",
    torch_fn=lambda a, kw: tuple(F_.max_pool3d(*a, return_indices=True, **kw)))
OPS["F.max_pool3d_with_indices"].py = lambda a, kw: "F.max_pool3d(%s, return_indices=True%s)" % (pargs(a), kwsrc(kw))
for _n in ["adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool3d"]:
    _fn("F." + _n, (lambda n: lambda a, kw: "F::%s(%s, %s)" % (n, C(a[0]), _ints_cpp(a[1], 1)))(_n),
        kind="accum" if "avg" in _n else "other", tol=4.0 if "avg" in _n else 1.0)
for _n in ["adaptive_max_pool1d", "adaptive_max_pool2d"]:
    _fn("F.%s_with_indices" % _n, (lambda n: lambda a, kw: "F::%s_with_indices(%s, %s)" % (
        n, C(a[0]), _ints_cpp(a[1], 1)))(_n), out="tuple",
        torch_fn=(lambda n: lambda a, kw: tuple(getattr(F_, n)(*a, return_indices=True)))(_n))
    OPS["F.%s_with_indices" % _n].py = (lambda n: lambda a, kw: "F.%s(%s, return_indices=True)" % (n, pargs(a)))(_n)
for _n in ["lp_pool1d", "lp_pool2d"]:
    _fn("F." + _n, (lambda n: lambda a, kw: "F::%s(%s, %s)" % (n, C(a[0]), _opts_cpp(
        "LPPool%sdFuncOptions" % n[-2], kw, ["stride", "ceil_mode"], "%s, %s" % (C(float(a[1])), _ints_cpp(a[2], 1)))))(
        _n), kind="accum", tol=4.0)

# distances, pixel shuffles, fold/unfold, embedding_bag
_fn("F.cosine_similarity", lambda a, kw: "F::cosine_similarity(%s, %s, %s)" % (
    C(a[0]), C(a[1]), _opts_cpp("CosineSimilarityFuncOptions", kw, ["dim", "eps"])), kind="accum", tol=4.0)
_fn("F.pairwise_distance", lambda a, kw: "F::pairwise_distance(%s, %s, %s)" % (
    C(a[0]), C(a[1]), _opts_cpp("PairwiseDistanceFuncOptions", kw, ["p", "eps", "keepdim"])), kind="accum", tol=4.0)
_fn("F.normalize", lambda a, kw: "F::normalize(%s, %s)" % (
    C(a[0]), _opts_cpp("NormalizeFuncOptions", kw, ["p", "dim", "eps"])), kind="accum", tol=4.0)
_fn("F.one_hot", lambda a, kw: "F::one_hot(%s%s)" % (C(a[0]), "" if len(a) < 2 else ", " + C(a[1])))
_fn("F.pixel_shuffle", lambda a, kw: "F::pixel_shuffle(%s, %s)" % (C(a[0]), C(a[1])))
_fn("F.pixel_unshuffle", lambda a, kw: "F::pixel_unshuffle(%s, %s)" % (C(a[0]), C(a[1])))
_fn("F.unfold", lambda a, kw: "F::unfold(%s, %s)" % (C(a[0]), _opts_cpp(
    "UnfoldFuncOptions", kw, ["dilation", "padding", "stride"], _ints_cpp(a[1], 1))))
_fn("F.fold", lambda a, kw: "F::fold(%s, %s)" % (C(a[0]), _opts_cpp(
    "FoldFuncOptions", kw, ["dilation", "padding", "stride"], "%s, %s" % (_ints_cpp(a[1], 1), _ints_cpp(a[2], 1)))),
    kind="accum", tol=4.0)
_fn("F.embedding_bag", lambda a, kw: "F::embedding_bag(%s, %s, %s)" % (C(a[0]), C(a[1]), _opts_cpp(
    "EmbeddingBagFuncOptions", kw, ["offsets", "mode", "per_sample_weights", "include_last_offset", "padding_idx"])),
    kind="accum", tol=4.0)


def fam_nn3(b):
    """The torch.nn.functional ops that fam_nn and fam_nn2 do not draw:
    activations with their options (elu ... prelu, softplus and gelu
    through F), ten more losses, instance_norm and local_response_norm,
    3-D, adaptive and power-average pooling, cosine_similarity and
    pairwise_distance, pixel_(un)shuffle, fold/unfold, embedding_bag."""
    r = b.rng
    what = r.choices(["act", "loss", "norm", "pool", "other"], [5, 5, 2, 4, 4])[0]
    dt = pick_float(r) if r.random() < 0.93 else pick_dtype(r)
    kind = r.choice(["normal", "normal", "special", "small", "intlike"])
    if what == "act":
        out = gen_act3(b, dt, kind)
    elif what == "loss":
        out = gen_loss3(b, dt, kind)
    elif what == "norm":
        out = gen_norm3(b, dt, kind)
    elif what == "pool":
        out = gen_pool3(b, dt, kind)
    else:
        out = gen_other3(b, dt, kind)
    maybe_post(b, out if isinstance(out, V) else out[0])


ACT3 = ["F.elu", "F.selu", "F.celu", "F.leaky_relu", "F.hardtanh", "F.relu6", "F.hardswish", "F.hardsigmoid",
        "F.softsign", "F.tanhshrink", "F.softshrink", "F.hardshrink", "F.threshold", "F.logsigmoid", "F.softmin",
        "F.glu", "F.prelu", "F.softplus", "F.gelu"]


def gen_act3(b, dt, kind):
    r = b.rng
    name = r.choice(ACT3)
    bad = r.random() < 0.03
    shape = rand_shape(r)
    kw = {}
    if name == "F.glu":
        shape = rand_shape(r, ndim=r.choice([1, 2, 3]), zero=0.03)
        dim = rand_dim(r, len(shape))
        if 0 <= dim + (len(shape) if dim < 0 else 0) < len(shape):
            shape[dim] = 2 * r.randint(1, 2) if not bad else r.choice([1, 3])
        return b.call(name, b.inp(dt, shape, kind=kind), dim, focus=True)
    if name == "F.softmin":
        shape = rand_shape(r, ndim=r.choice([0, 1, 2, 3]))
        if r.random() < 0.2:
            kw["dtype"] = DT(r.choice(["float32", "float64"]))
        return b.call(name, b.inp(dt, shape, kind=kind), rand_dim(r, len(shape)), focus=True, **kw)
    if name == "F.prelu":
        c = shape[1] if len(shape) >= 2 else 1
        n = 1 if r.random() < 0.4 else c
        if bad:
            n = c + 1
        w = b.inp(dt if r.random() < 0.95 else pick_float(r), [n] if r.random() < 0.95 else [], kind="small")
        return b.call(name, b.inp(dt, shape, kind=kind), w, focus=True)
    if name == "F.threshold":
        th = r.choice([0.0, 0.5, -1.0, 2.0])
        val = r.choice([0.0, -2.0, 1.5, 20.0])
        return b.call(name, b.inp(dt, shape, kind=kind), th, val, focus=True)
    if name in ("F.elu", "F.celu") and r.random() < 0.6:
        kw["alpha"] = r.choice([0.5, 2.0, 1.0, 0.25]) if not bad else 0.0
    elif name == "F.leaky_relu" and r.random() < 0.6:
        kw["negative_slope"] = r.choice([0.01, 0.2, -0.5, 1.5, 0.0])
    elif name == "F.hardtanh" and r.random() < 0.7:
        kw["min_val"], kw["max_val"] = r.choice([(-1.0, 1.0), (-0.5, 2.0), (0.0, 6.0), (-2.0, -1.0), (0.5, 0.5)]) \
            if not bad else (1.0, -1.0)
        if bad and TORCH_VERSION < (2, 0):
            raise SkipCase("torch %s does not check hardtanh's min_val <= max_val" % ".".join(map(str, TORCH_VERSION)))
    elif name in ("F.softshrink", "F.hardshrink") and r.random() < 0.7:
        kw["lambd"] = r.choice([0.5, 0.0, 1.0, 2.5]) if not bad else -0.5
    elif name == "F.softplus":
        if r.random() < 0.6:
            kw["beta"] = r.choice([1.0, 2.0, 0.5, 3.0])
        if r.random() < 0.6:
            kw["threshold"] = r.choice([20.0, 1.0, 5.0, 0.5])
    elif name == "F.gelu":
        kw["approximate"] = "tanh"
    return b.call(name, b.inp(dt, shape, kind=kind), focus=True, **kw)


LOSS3 = ["F.margin_ranking_loss", "F.hinge_embedding_loss", "F.soft_margin_loss", "F.multilabel_soft_margin_loss",
         "F.multi_margin_loss", "F.multilabel_margin_loss", "F.cosine_embedding_loss", "F.triplet_margin_loss",
         "F.poisson_nll_loss", "F.gaussian_nll_loss"]


def _mismatch(r, shape):
    """A shape that does not broadcast with `shape` (one dim other than 1
    grown, a 0 to 2), or `shape` itself when every dim is 1."""
    dims = [i for i, d in enumerate(shape) if d != 1]
    if not dims:
        return list(shape)
    i = r.choice(dims)
    return [(d + 1 if d else 2) if j == i else d for j, d in enumerate(shape)]


def _signs(b, dt, shape):
    """A +-1 target (mostly 1 and -1, rarely 0 or 2 where only the sign matters)."""
    r = b.rng
    data = [r.choice([1.0, -1.0]) if r.random() < 0.97 else r.choice([0.0, 2.0]) for _ in range(_prod(shape))]
    return b.inp(dt, shape, data=data, rg=False)


def gen_loss3(b, dt, kind):
    r = b.rng
    name = r.choice(LOSS3)
    kw = {"reduction": r.choice(["mean", "sum", "none", "mean"])}
    bad = r.random() < 0.03
    n = r.randint(1, 3) if r.random() < 0.95 else 0
    if name in ("F.margin_ranking_loss", "F.hinge_embedding_loss", "F.soft_margin_loss"):
        shape = rand_shape(r, ndim=r.choice([0, 1, 1, 2, 3]), zero=0.04)
        if r.random() < 0.4 and name != "F.soft_margin_loss":
            kw["margin"] = r.choice([0.0, 0.5, -0.5, 1.0, 2.0])
        x = b.inp(dt, shape, kind=kind)
        tshape = shape if not bad else _mismatch(r, shape)
        if name == "F.margin_ranking_loss":
            x2 = b.inp(dt, shape, kind=kind)
            return b.call(name, x, x2, _signs(b, dt, tshape), focus=True, **kw)
        return b.call(name, x, _signs(b, dt, tshape), focus=True, **kw)
    if name in ("F.multilabel_soft_margin_loss", "F.multi_margin_loss", "F.multilabel_margin_loss"):
        c = r.randint(1, 4)
        if name != "F.multilabel_soft_margin_loss":
            n = max(n, 1)  # torch's mean and sum of an empty batch read uninitialized memory (changes run to run)
        shape = [n, c] if r.random() < 0.85 else [c]
        x = b.inp(dt, shape, kind=kind)
        if name == "F.multilabel_soft_margin_loss":
            tshape = shape if not bad else _mismatch(r, shape)
            t = b.inp(dt, tshape, data=[float(r.random() < 0.5) for _ in range(_prod(tshape))], rg=False)
            if r.random() < 0.3:
                kw["weight"] = b.inp(dt, [c], kind="positive", rg=r.random() < 0.3)
            return b.call(name, x, t, focus=True, **kw)
        if name == "F.multi_margin_loss":
            tshape = shape[:1] if len(shape) == 2 else []
            data = [r.randrange(c) if not bad else r.choice([c, -1]) for _ in range(_prod(tshape))]
            t = b.inp("int64", tshape, data=data, rg=False)
            if r.random() < 0.4:
                kw["p"] = r.choice([1, 2]) if not bad else 3
            if r.random() < 0.4:
                kw["margin"] = r.choice([1.0, 0.5, 2.0, 0.0])
            if r.random() < 0.3:
                kw["weight"] = b.inp(dt, [c], kind="positive", rg=False)  # torch: not differentiable in weight
            return b.call(name, x, t, focus=True, **kw)
        # multilabel_margin_loss: each row's target classes, ended by the first -1
        rows = shape[0] if len(shape) == 2 else 1
        data = []
        for _ in range(rows):
            k = r.randint(0, c)
            row = r.sample(range(c), k) + [-1] * (c - k)
            if k < c and r.random() < 0.3:
                row[k + 1:] = [r.randrange(c) for _ in row[k + 1:]]  # after the -1: ignored
            data += row
        if bad:
            data = [c if i == 0 else v for i, v in enumerate(data)]
        return b.call(name, x, b.inp("int64", shape, data=data, rg=False), focus=True, **kw)
    if name in ("F.cosine_embedding_loss", "F.triplet_margin_loss"):
        d = r.randint(1, 4)
        shape = [n, d] if r.random() < 0.85 else [d]
        x1 = b.inp(dt, shape, kind=kind)
        x2 = b.inp(dt, shape if r.random() < 0.95 else [1, d], kind=kind)
        if name == "F.cosine_embedding_loss":
            if r.random() < 0.4:
                kw["margin"] = r.choice([0.0, 0.5, -0.5])
            tshape = shape[:1] if len(shape) == 2 else []
            if bad:
                tshape = shape
            t = _signs(b, dt, tshape) if r.random() < 0.85 else \
                b.inp("int64", tshape, data=[r.choice([1, -1]) for _ in range(_prod(tshape))], rg=False)
            return b.call(name, x1, x2, t, focus=True, **kw)
        x3 = b.inp(dt, shape, kind=kind)
        if r.random() < 0.4 or bad:
            kw["margin"] = r.choice([1.0, 0.5, 2.0]) if not bad else 0.0  # torch 2.x refuses margin <= 0
        if r.random() < 0.4:
            kw["p"] = r.choice([2.0, 1.0, 3.0, 1.5])
        if r.random() < 0.3:
            kw["eps"] = r.choice([1e-6, 0.0, 0.1])
        if r.random() < 0.3:
            kw["swap"] = r.random() < 0.7
        return b.call(name, x1, x2, x3, focus=True, **kw)
    shape = rand_shape(r, ndim=r.choice([0, 1, 2, 3]), zero=0.04)
    if name == "F.poisson_nll_loss":
        log_input = r.random() < 0.6
        if r.random() < 0.6:
            kw["log_input"] = log_input
        else:
            log_input = True
        if r.random() < 0.4:
            kw["full"] = r.random() < 0.7
        if r.random() < 0.3:
            kw["eps"] = r.choice([1e-8, 0.1, 1.0])
        x = b.inp(dt, shape, kind=kind if log_input else r.choice(["positive", "unit", "intlike"]))
        t = b.inp(dt, shape if not bad else _mismatch(r, shape), kind=r.choice(["positive", "intlike", "unit"]),
                  rg=r.random() < 0.2)
        return b.call(name, x, t, focus=True, **kw)
    # gaussian_nll_loss: var of the input's shape, one dim short, or with a size-1 last dim
    x = b.inp(dt, shape, kind=kind)
    t = b.inp(dt, shape, kind=kind, rg=r.random() < 0.3)
    c = r.random()
    if c < 0.6 or not shape:
        vshape = shape
    elif c < 0.8:
        vshape = shape[:-1] + [1]
    else:
        vshape = shape[:-1]
    if bad:
        vshape = vshape + [2]
    vkind = "positive" if r.random() < 0.9 else r.choice(["normal", "unit", "special"])
    var = b.inp(dt, vshape, kind=vkind)
    if r.random() < 0.4:
        kw["full"] = r.random() < 0.7
    if r.random() < 0.3:
        kw["eps"] = r.choice([1e-6, 1e-3, 0.5])
    return b.call(name, x, t, var, focus=True, **kw)


def gen_norm3(b, dt, kind):
    r = b.rng
    if r.random() < 0.6:
        n, c = (r.randint(1, 2) if r.random() < 0.95 else 0), r.randint(1, 3)
        shape = [n, c] + [r.randint(1, 3) for _ in range(r.choice([1, 1, 2, 3]))]
        kw = {}
        stats = r.random() < 0.4
        if stats or r.random() < 0.03:
            kw["running_mean"] = b.inp(dt, [c], kind="normal", rg=False)
            kw["running_var"] = b.inp(dt, [c], kind="positive", rg=False)
        if r.random() < 0.5:
            kw["weight"] = b.inp(dt, [c] if r.random() < 0.97 else [c + 1], kind="normal")
        if r.random() < 0.5:
            kw["bias"] = b.inp(dt, [c], kind="normal")
        if stats and r.random() < 0.4 or r.random() < 0.02:
            kw["use_input_stats"] = False
        if r.random() < 0.3:
            kw["momentum"] = r.choice([0.1, 0.5, 1.0, 0.0])
        if r.random() < 0.3:
            kw["eps"] = r.choice([1e-5, 1e-3, 0.1])
        return b.call("F.instance_norm", b.inp(dt, shape, kind=kind), focus=True, **kw)
    nd = r.choice([3, 3, 4, 5]) if r.random() < 0.97 else 2
    shape = [r.randint(1, 2) if r.random() < 0.95 else 0, r.randint(1, 4)] + [r.randint(1, 3) for _ in range(nd - 2)]
    kw = {}
    if r.random() < 0.5:
        kw["alpha"] = r.choice([1e-4, 0.5, 1.0])
    if r.random() < 0.5:
        kw["beta"] = r.choice([0.75, 0.5, 2.0, 0.0])
    if r.random() < 0.5:
        kw["k"] = r.choice([1.0, 2.0, 0.5])
    size = r.randint(1, 4) if r.random() < 0.97 else 0
    return b.call("F.local_response_norm", b.inp(dt, shape[:nd], kind=kind), size, focus=True, **kw)


POOL3 = ["F.max_pool3d", "F.max_pool3d_with_indices", "F.avg_pool3d", "F.adaptive_max_pool1d",
         "F.adaptive_max_pool1d_with_indices", "F.adaptive_max_pool2d", "F.adaptive_max_pool2d_with_indices",
         "F.adaptive_avg_pool1d", "F.adaptive_avg_pool3d", "F.lp_pool1d", "F.lp_pool2d"]


def _window_ints(r, d, lo, hi):
    return r.randint(lo, hi) if d == 1 or r.random() < 0.6 else [r.randint(lo, hi) for _ in range(d)]


def gen_pool3(b, dt, kind):
    r = b.rng
    name = r.choice(POOL3)
    d = int(name.split("pool")[1][0])
    batch = [r.randint(1, 2) if r.random() < 0.95 else 0] if r.random() < 0.7 else []
    hi = 3 if d == 3 else 5
    sp = [r.randint(1, hi) for _ in range(d)]
    x = b.inp(dt, batch + [r.randint(1, 2)] + sp, kind=kind)
    if name.startswith("F.adaptive"):
        if r.random() < 0.5:
            os_ = r.randint(1, 3)
        else:
            os_ = [r.randint(1, 3) for _ in range(d)]
        if r.random() < 0.03:
            os_ = r.choice([0, [0] * d, [1] * (d + 1)])
        return b.call(name, x, os_, focus=True)
    k = _window_ints(r, d, 1, 2 if d == 3 else 3)
    kw = {}
    if r.random() < 0.5:
        kw["stride"] = _window_ints(r, d, 1, 2)
    if r.random() < 0.3:
        kw["ceil_mode"] = True
    if name.startswith("F.lp_pool"):
        p = r.choice([1.0, 2.0, 3.0, 1.5, 2.0])
        return b.call(name, x, p, k, focus=True, **kw)
    if r.random() < 0.3:
        kw["padding"] = r.randint(0, 1) if r.random() < 0.97 else 2
    if "max" in name and r.random() < 0.2:
        kw["dilation"] = _window_ints(r, d, 1, 2)
    if "avg" in name and r.random() < 0.3:
        kw["count_include_pad"] = False
    if "avg" in name and r.random() < 0.15:
        kw["divisor_override"] = r.choice([1, 3])
    return b.call(name, x, k, focus=True, **kw)


def gen_other3(b, dt, kind):
    r = b.rng
    name = r.choice(["F.cosine_similarity", "F.pairwise_distance", "F.pixel_shuffle", "F.pixel_unshuffle",
                     "F.unfold", "F.fold", "F.embedding_bag", "F.embedding_bag", "F.normalize", "F.one_hot"])
    bad = r.random() < 0.03
    kw = {}
    if name == "F.normalize":
        shape = rand_shape(r, ndim=r.choice([0, 1, 2, 2, 3]), zero=0.04)
        x = b.inp(dt, shape, kind=kind)
        if r.random() < 0.6:
            kw["p"] = r.choice([2.0, 1.0, 3.0, 0.5, 0.0, float("inf")])
        if r.random() < 0.7 or len(shape) < 2:
            kw["dim"] = rand_dim(r, len(shape)) if not bad else len(shape) + 1
        if r.random() < 0.3:
            kw["eps"] = r.choice([1e-12, 0.0, 0.5])
        return b.call(name, x, focus=True, **kw)
    if name == "F.one_hot":
        shape = rand_shape(r, ndim=r.choice([0, 1, 1, 2]), zero=0.06)
        k = r.randint(1, 5)
        idt = "int64" if not bad else r.choice(["int32", "float32"])
        n = 1
        for v in shape:
            n *= v
        data = [r.randint(0, k - 1) if r.random() > 0.02 else r.choice([-1, k]) for _ in range(n)]
        x = b.inp(idt, shape, data=[float(v) for v in data] if idt == "float32" else data)
        if r.random() < 0.6:
            return b.call(name, x, r.choice([k, k, k + 2, -1, 0] if not bad else [k - 1, -2]), focus=True)
        return b.call(name, x, focus=True)
    if name == "F.cosine_similarity":
        shape = rand_shape(r, ndim=r.choice([1, 2, 2, 3]), zero=0.04)
        x1 = b.inp(dt, shape, kind=kind)
        x2 = b.inp(dt, broadcast_partner(r, shape) if r.random() < 0.3 else shape, kind=kind)
        if r.random() < 0.7:
            kw["dim"] = rand_dim(r, len(shape))
        if r.random() < 0.3:
            kw["eps"] = r.choice([1e-8, 0.0, 0.5])
        return b.call(name, x1, x2, focus=True, **kw)
    if name == "F.pairwise_distance":
        dd = r.randint(1, 4)
        shape = [r.randint(1, 3) if r.random() < 0.95 else 0, dd] if r.random() < 0.8 else [dd]
        x1 = b.inp(dt, shape, kind=kind)
        x2 = b.inp(dt, r.choice([shape, shape, shape, [1, dd], [dd]]) if not bad else [dd + 1], kind=kind)
        if r.random() < 0.5:
            kw["p"] = r.choice([2.0, 1.0, 3.0, 0.5, 0.0, float("inf")])
        if r.random() < 0.3:
            kw["eps"] = r.choice([1e-6, 0.0, 0.5])
        if r.random() < 0.3:
            kw["keepdim"] = r.random() < 0.7
        return b.call(name, x1, x2, focus=True, **kw)
    if name in ("F.pixel_shuffle", "F.pixel_unshuffle"):
        f = r.randint(1, 3) if not bad else r.choice([0, 2])
        lead = [r.randint(1, 2) if r.random() < 0.95 else 0 for _ in range(r.choice([0, 1, 1, 2]))]
        c = r.randint(1, 2)
        fs = max(f, 1)
        if name == "F.pixel_shuffle":
            shape = lead + [c * fs * fs + (1 if bad and f == 2 else 0), r.randint(1, 3), r.randint(1, 3)]
        else:
            shape = lead + [c, r.randint(1, 2) * fs + (1 if bad and f == 2 else 0), r.randint(1, 2) * fs]
        return b.call(name, b.inp(dt, shape, kind=kind), f, focus=True)
    if name in ("F.unfold", "F.fold"):
        k = [r.randint(1, 3) for _ in range(2)]
        dil = [r.randint(1, 2) if r.random() < 0.2 else 1 for _ in range(2)]
        pad = [r.randint(0, 1) if r.random() < 0.3 else 0 for _ in range(2)]
        st = [r.randint(1, 2) if r.random() < 0.4 else 1 for _ in range(2)]
        for key, v, dflt in (("dilation", dil, 1), ("padding", pad, 0), ("stride", st, 1)):
            if v != [dflt, dflt] or r.random() < 0.2:
                kw[key] = v if v[0] != v[1] or r.random() < 0.5 else v[0]
        kk = k if k[0] != k[1] or r.random() < 0.5 else k[0]
        c = r.randint(1, 2)
        batch = [r.randint(1, 2) if r.random() < 0.95 else 0] if r.random() < 0.75 else []
        # spatial sizes that fit at least one block
        span = [dil[i] * (k[i] - 1) + 1 - 2 * pad[i] for i in range(2)]
        size = [max(span[i], 1) + r.randint(0, 2) for i in range(2)]
        if name == "F.unfold":
            if bad:
                size[0] = max(span[0] - 1, 0)
            return b.call(name, b.inp(dt, batch + [c] + size, kind=kind), kk, focus=True, **kw)
        blocks = 1
        for i in range(2):
            blocks *= (size[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1) // st[i] + 1
        osz = size if r.random() < 0.6 or size[0] != size[1] else size[0]
        x = b.inp(dt, batch + [c * k[0] * k[1], blocks + (1 if bad else 0)], kind=kind)
        return b.call(name, x, osz, kk, focus=True, **kw)
    # embedding_bag: a 2-D input (a bag per row) or a 1-D input with offsets
    nemb, dim = r.randint(1, 5), r.randint(1, 3)
    w = b.inp(dt, [nemb, dim], kind=kind if kind != "intlike" else "normal")
    if dt == "bfloat16" and TORCH_VERSION < (2, 0):
        raise SkipCase("torch %s has no bfloat16 embedding_bag" % ".".join(map(str, TORCH_VERSION)))
    mode = r.choice(["sum", "mean", "max"])
    if r.random() < 0.8:
        kw["mode"] = mode
    else:
        mode = "mean"
    if r.random() < 0.5:
        ishape = [r.randint(1, 3) if r.random() < 0.95 else 0, r.randint(1, 3)]
    else:
        ishape = [r.randint(0, 6)]
    data = [r.randrange(nemb) if r.random() < 0.98 else r.choice([nemb, -1]) for _ in range(_prod(ishape))]
    idx = b.inp("int64" if r.random() < 0.9 else "int32", ishape, data=data, rg=False)
    if len(ishape) == 1:
        nb = r.randint(1, 3)
        offs = sorted([0] + [r.randint(0, ishape[0]) for _ in range(nb - 1)])
        if bad:
            offs = [1] + offs[1:] if ishape[0] else [0, 2]
        if r.random() < 0.3:
            kw["include_last_offset"] = True
            offs = offs + [ishape[0]]
        kw["offsets"] = b.inp(b.dtype(idx), [len(offs)], data=offs, rg=False)
    if r.random() < 0.25 and (mode == "sum" or bad):
        kw["per_sample_weights"] = b.inp(b.dtype(w), ishape, kind="normal")
    if r.random() < 0.2:
        kw["padding_idx"] = r.randrange(-nemb, nemb)
    return b.call(name, idx, w, focus=True, **kw)


def fam_factory(b):
    r = b.rng
    op = r.choice(["arange", "arange", "linspace", "full", "scalar_tensor", "full_like", "eye"])
    dt = r.choice([None, None] + ALL)
    if op in ("arange", "linspace") and dt == "bool":
        dt = None  # torch has no bool arange/linspace
    kw = {"dtype": DT(dt)} if dt else {}
    if op == "arange":
        c = r.random()
        if c < 0.4:
            args = [I(r.randint(-3, 2)), I(r.randint(-2, 6)), I(r.choice([1, 2, 3, -1]))]
        else:
            args = [r.choice([S(-2.5), S(0.0), I(0), S(0.5), S(1.25)]), r.choice([S(2.5), I(5), S(3.7), S(-1.0)]),
                    r.choice([I(1), S(0.5), S(0.3), I(2), S(-0.5)])]
        if r.random() < 0.03:
            args[2] = I(0)
        out = b.call(op, *args, focus=True, **kw)
    elif op == "linspace":
        out = b.call(op, rand_scalar(r, r.choice(["sint", "sfloat"])), r.choice([I(5), S(2.5), I(-3), S(1.0)]),
                     r.choice([0, 1, 2, 5, 7]), focus=True, **kw)
    elif op == "full":
        out = b.call(op, rand_shape(r), rand_scalar(r), focus=True, **kw)
    elif op == "scalar_tensor":
        out = b.call(op, rand_scalar(r), focus=True, **{"dtype": DT(dt or "float32")})
    elif op == "full_like":
        out = b.call(op, b.inp(pick_dtype(r), rand_shape(r), rg=False), rand_scalar(r), focus=True, **kw)
    else:
        out = b.call(op, r.randint(0, 4), r.randint(0, 4), focus=True, **kw)
    maybe_post(b, out)


def fam_chain(b):
    """A few ops in a row on float tensors with gradients (composition of
    backward formulas)."""
    r = b.rng
    b.grad = True
    dt = pick_float(r) if r.random() < 0.5 else "float64"
    shape = rand_shape(r, ndim=r.choice([1, 2, 3]), lo=1, hi=3, zero=0.0)
    x = b.inp(dt, shape, kind=r.choice(["small", "normal", "positive"]))
    cur = x
    for _ in range(r.randint(2, 4)):
        c = r.random()
        nd = b.ndim(cur)
        if c < 0.3:
            cur = b.call(r.choice(["exp", "tanh", "sigmoid", "sin", "square", "abs", "relu", "silu", "gelu", "neg",
                                   "log1p", "sqrt", "erf", "softplus"]), cur)
        elif c < 0.55:
            y = b.inp(dt, broadcast_partner(r, b.shape(cur)), kind="small")
            cur = b.call(r.choice(["add", "mul", "sub", "div", "maximum", "minimum", "atan2", "pow"]), cur, y)
        elif c < 0.7 and nd:
            cur = b.call(r.choice(["sum", "mean", "amax", "logsumexp"]), cur, [rand_dim(r, nd, 0)], r.random() < 0.5) \
                if r.random() < 0.7 else b.call(r.choice(["softmax", "log_softmax", "cumsum", "cumprod"]), cur,
                                                 rand_dim(r, nd, 0))
        elif c < 0.85:
            v = view_of(b, cur)
            cur = v[0] if isinstance(v, list) and v else (v if isinstance(v, V) else cur)
        else:
            cur = b.call("where", b.inp("bool", broadcast_partner(r, b.shape(cur)), rg=False), cur,
                         rand_scalar(r, "sfloat"))
    b.focus = len(b.ops) - 1


FAMILIES = [  # name, function, weight
    ("promotion", fam_promotion, 14),
    ("unary", fam_unary, 8),
    ("ternary", fam_ternary, 5),
    ("intdiv", fam_intdiv, 9),
    ("reduce", fam_reduce, 12),
    ("index", fam_index, 12),
    ("views", fam_views, 12),
    ("shape", fam_shape, 9),
    ("matmul", fam_matmul, 7),
    ("nn", fam_nn, 12),
    ("factory", fam_factory, 3),
    ("chain", fam_chain, 6),
    ("nn2", fam_nn2, 6),
    ("nn3", fam_nn3, 6),
]


def generate(seed, case):
    """The program of (seed, case) with its PyTorch result: (builder, result)
    or (builder, None) when the reference cannot run it."""
    r = random.Random("%d:%d" % (seed, case))
    names = [f[0] for f in FAMILIES]
    weights = [f[2] for f in FAMILIES]
    fam = r.choices(names, weights)[0]
    fn = dict((f[0], f[1]) for f in FAMILIES)[fam]
    b = Builder(r, fam)
    b.grad2 = r.random() < 0.25
    try:
        fn(b)
    except StopProgram:
        pass
    except SkipCase as e:
        b.skip_reason = str(e)
        return b, None
    return b, b.finish()

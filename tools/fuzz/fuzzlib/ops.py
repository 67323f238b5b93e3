"""The op table of the fuzzer: for each op name, how PyTorch runs it and how
it is written in Python and in C++ (brisk) for a reproduction.

The brisk runner (brisk_fuzz_runner.cpp) has the same names with the same
positional arguments and keywords; adding an op means one entry here, one
lambda there, and a generator that calls it (gen.py).
"""
import torch
import torch.nn.functional as F

from .program import V, S, I, B, DT, py_src as P, cpp_src as C, cpp_index

TORCH_DTYPE = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
               "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
               "int8": torch.int8, "uint8": torch.uint8,
               "bool": torch.bool}
DTYPE_NAME = {v: k for k, v in TORCH_DTYPE.items()}


class Op:
    """kind: 'pointwise' ops get the signed-zero check; 'accum' ops sum many
    terms and get a wider tolerance (tol is a factor on the dtype's)."""

    def __init__(self, name, torch_fn, py, cpp, kind="other", out="one", tol=1.0, inplace=False,
                 index_check=None, min_torch=None):
        self.name, self.torch_fn, self.py, self.cpp = name, torch_fn, py, cpp
        self.kind, self.out, self.tol, self.inplace = kind, out, tol, inplace
        self.index_check = index_check  # (input arg position, dim arg position) for tie-tolerant indices
        self.min_torch = min_torch      # e.g. (2, 0): the reference lacks the op before


OPS = {}


def add(op):
    OPS[op.name] = op


def kwsrc(kw, order=None):
    """Python keyword arguments as source."""
    keys = order or list(kw)
    return "".join(", %s=%s" % (k, P(kw[k])) for k in keys if k in kw)


def pargs(args):
    return ", ".join(P(a) for a in args)


def scalar_or_default(kw, key, dflt):
    return C(kw[key]) if key in kw else dflt


# ---- elementwise binary ------------------------------------------------------------------

BINARY = ["add", "sub", "mul", "div", "remainder", "fmod", "pow", "minimum", "maximum", "atan2", "eq", "ne",
          "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
          "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
          "hypot", "logaddexp", "logaddexp2", "copysign", "nextafter", "xlogy", "heaviside"]
# PyTorch accepts a Python number as the second argument of these only.
BINARY_SCALAR_OK = {"add", "sub", "mul", "div", "remainder", "fmod", "pow", "eq", "ne", "lt", "le", "gt", "ge",
                    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                    "copysign", "xlogy"}
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def _binary(name):
    def cpp_kw(kw):
        if name in ("add", "sub"):
            return ", " + C(kw["alpha"]) if "alpha" in kw else ""
        if name == "div" and "rounding_mode" in kw and kw["rounding_mode"] is not None:
            return ", brisk::RoundingMode::%s" % kw["rounding_mode"].capitalize()
        return ""

    add(Op(name, lambda a, kw: getattr(torch, name)(*a, **kw),
           lambda a, kw: "torch.%s(%s%s)" % (name, pargs(a), kwsrc(kw)),
           lambda a, kw: "%s.%s(%s%s)" % (C(a[0]), name, C(a[1]), cpp_kw(kw)), kind="pointwise"))
    add(Op(name + "_", lambda a, kw: getattr(a[0], name + "_")(*a[1:], **kw),
           lambda a, kw: "%s.%s_(%s%s)" % (P(a[0]), name, P(a[1]), kwsrc(kw)),
           lambda a, kw: "%s.%s_(%s%s)" % (C(a[0]), name, C(a[1]), cpp_kw(kw)), kind="pointwise", inplace=True))


for _n in BINARY:
    _binary(_n)

for _n, _sym in [("radd", "+"), ("rsub", "-"), ("rmul", "*"), ("rdiv", "/"), ("rpow", "**")]:
    def _mk(sym, n):
        fns = {"+": lambda s, t: s + t, "-": lambda s, t: s - t, "*": lambda s, t: s * t,
               "/": lambda s, t: s / t, "**": lambda s, t: s ** t}
        cpp = (lambda a, kw: "brisk::pow(%s, %s)" % (C(a[0]), C(a[1]))) if sym == "**" else \
            (lambda a, kw: "(%s %s %s)" % (C(a[0]), sym, C(a[1])))
        add(Op(n, lambda a, kw: fns[sym](a[0], a[1]), lambda a, kw: "(%s %s %s)" % (P(a[0]), sym, P(a[1])), cpp,
               kind="pointwise"))
    _mk(_sym, _n)

# ---- elementwise unary ---------------------------------------------------------------------

UNARY = ["neg", "abs", "sign", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "square",
         "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "erf", "erfc",
         "relu", "silu", "floor", "ceil", "round", "trunc", "frac", "logical_not", "bitwise_not", "asinh", "acosh",
         "atanh", "erfinv", "lgamma", "digamma"]


def _unary(name):
    tfn = (lambda a, kw: F.silu(a[0])) if name == "silu" else (lambda a, kw: getattr(torch, name)(a[0]))
    pyn = "F.silu" if name == "silu" else "torch." + name
    add(Op(name, tfn, lambda a, kw: "%s(%s)" % (pyn, P(a[0])), lambda a, kw: "%s.%s()" % (C(a[0]), name),
           kind="pointwise"))
    tfn_ = (lambda a, kw: F.silu(a[0], inplace=True)) if name == "silu" else \
        (lambda a, kw: getattr(a[0], name + "_")())
    pyn_ = (lambda a: "F.silu(%s, inplace=True)" % P(a[0])) if name == "silu" else \
        (lambda a: "%s.%s_()" % (P(a[0]), name))
    add(Op(name + "_", tfn_, lambda a, kw: pyn_(a), lambda a, kw: "%s.%s_()" % (C(a[0]), name), kind="pointwise",
           inplace=True))


for _n in UNARY:
    _unary(_n)
for _n in ["isnan", "isinf", "isfinite"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(a[0]))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, P(a[0])))(_n),
           (lambda n: lambda a, kw: "%s.%s()" % (C(a[0]), n))(_n), kind="pointwise"))

add(Op("gelu", lambda a, kw: F.gelu(a[0], **kw), lambda a, kw: "F.gelu(%s%s)" % (P(a[0]), kwsrc(kw)),
       lambda a, kw: "%s.gelu(%s)" % (C(a[0]), C(kw.get("approximate", "none"))), kind="pointwise"))
add(Op("softplus", lambda a, kw: F.softplus(a[0], **kw), lambda a, kw: "F.softplus(%s%s)" % (P(a[0]), kwsrc(kw)),
       lambda a, kw: "%s.softplus(%s, %s)" % (C(a[0]), scalar_or_default(kw, "beta", "1"),
                                              scalar_or_default(kw, "threshold", "20")), kind="pointwise"))

add(Op("mish", lambda a, kw: F.mish(a[0]), lambda a, kw: "F.mish(%s)" % P(a[0]),
       lambda a, kw: "brisk::mish(%s)" % C(a[0]), kind="pointwise"))
add(Op("mish_", lambda a, kw: F.mish(a[0], inplace=True), lambda a, kw: "F.mish(%s, inplace=True)" % P(a[0]),
       lambda a, kw: "brisk::mish_(%s)" % C(a[0]), kind="pointwise", inplace=True))


def _opt_cpp(kw, key):
    return C(float(kw[key])) if kw.get(key) is not None else "std::nullopt"


add(Op("logit", lambda a, kw: torch.logit(a[0], **kw), lambda a, kw: "torch.logit(%s%s)" % (P(a[0]), kwsrc(kw)),
       lambda a, kw: "%s.logit(%s)" % (C(a[0]), _opt_cpp(kw, "eps")), kind="pointwise"))
add(Op("logit_", lambda a, kw: a[0].logit_(**kw), lambda a, kw: "%s.logit_(%s)" % (P(a[0]), kwsrc(kw)[2:]),
       lambda a, kw: "%s.logit_(%s)" % (C(a[0]), _opt_cpp(kw, "eps")), kind="pointwise", inplace=True))
_NTN = ("nan", "posinf", "neginf")
add(Op("nan_to_num", lambda a, kw: torch.nan_to_num(a[0], **kw),
       lambda a, kw: "torch.nan_to_num(%s%s)" % (P(a[0]), kwsrc(kw)),
       lambda a, kw: "%s.nan_to_num(%s)" % (C(a[0]), ", ".join(_opt_cpp(kw, k) for k in _NTN)), kind="pointwise"))
add(Op("nan_to_num_", lambda a, kw: a[0].nan_to_num_(**kw),
       lambda a, kw: "%s.nan_to_num_(%s)" % (P(a[0]), kwsrc(kw)[2:]),
       lambda a, kw: "%s.nan_to_num_(%s)" % (C(a[0]), ", ".join(_opt_cpp(kw, k) for k in _NTN)), kind="pointwise",
       inplace=True))
add(Op("igamma", lambda a, kw: torch.igamma(a[0], a[1]), lambda a, kw: "torch.igamma(%s, %s)" % (P(a[0]), P(a[1])),
       lambda a, kw: "brisk::igamma(%s, %s)" % (C(a[0]), C(a[1])), kind="pointwise"))
add(Op("isclose", lambda a, kw: torch.isclose(a[0], a[1], **kw),
       lambda a, kw: "torch.isclose(%s, %s%s)" % (P(a[0]), P(a[1]), kwsrc(kw)),
       lambda a, kw: "brisk::isclose(%s, %s, %s, %s, %s)" % (C(a[0]), C(a[1]), C(float(kw.get("rtol", 1e-5))),
                                                           C(float(kw.get("atol", 1e-8))),
                                                           C(bool(kw.get("equal_nan", False)))), kind="pointwise"))

# ---- ternary pointwise -------------------------------------------------------------------------

add(Op("lerp", lambda a, kw: torch.lerp(*a), lambda a, kw: "torch.lerp(%s)" % pargs(a),
       lambda a, kw: "%s.lerp(%s, %s)" % (C(a[0]), C(a[1]), C(a[2])), kind="pointwise"))
add(Op("lerp_", lambda a, kw: a[0].lerp_(*a[1:]), lambda a, kw: "%s.lerp_(%s)" % (P(a[0]), pargs(a[1:])),
       lambda a, kw: "%s.lerp_(%s, %s)" % (C(a[0]), C(a[1]), C(a[2])), kind="pointwise", inplace=True))
for _n in ["addcmul", "addcdiv"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(*a, **kw))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s%s)" % (n, pargs(a), kwsrc(kw)))(_n),
           (lambda n: lambda a, kw: "%s.%s(%s, %s, %s)" % (C(a[0]), n, C(a[1]), C(a[2]),
                                                           scalar_or_default(kw, "value", "1")))(_n),
           kind="pointwise"))
    add(Op(_n + "_", (lambda n: lambda a, kw: getattr(a[0], n + "_")(*a[1:], **kw))(_n),
           (lambda n: lambda a, kw: "%s.%s_(%s%s)" % (P(a[0]), n, pargs(a[1:]), kwsrc(kw)))(_n),
           (lambda n: lambda a, kw: "%s.%s_(%s, %s, %s)" % (C(a[0]), n, C(a[1]), C(a[2]),
                                                            scalar_or_default(kw, "value", "1")))(_n),
           kind="pointwise", inplace=True))


def _clamp_cpp(a, kw, method):
    if isinstance(a[1], V) or isinstance(a[2], V):
        return "%s.%s(%s, %s)" % (C(a[0]), method, "Tensor()" if a[1] is None else C(a[1]),
                                  "Tensor()" if a[2] is None else C(a[2]))
    return "%s.%s(%s, %s)" % (C(a[0]), method, C(a[1]), C(a[2]))


add(Op("clamp", lambda a, kw: torch.clamp(*a), lambda a, kw: "torch.clamp(%s)" % pargs(a),
       lambda a, kw: _clamp_cpp(a, kw, "clamp"), kind="pointwise"))
add(Op("clamp_", lambda a, kw: a[0].clamp_(*a[1:]), lambda a, kw: "%s.clamp_(%s)" % (P(a[0]), pargs(a[1:])),
       lambda a, kw: _clamp_cpp(a, kw, "clamp_"), kind="pointwise", inplace=True))
add(Op("where", lambda a, kw: torch.where(*a), lambda a, kw: "torch.where(%s)" % pargs(a),
       lambda a, kw: "brisk::where(%s)" % ", ".join(C(x) for x in a), kind="pointwise"))

# ---- reductions -----------------------------------------------------------------------------


def _dtype_kw_cpp(kw):
    return C(kw["dtype"]) if "dtype" in kw else "std::nullopt"


def _sum_like(name, single_dim=False):
    def tfn(a, kw):
        kw2 = {"dtype": kw["dtype"]} if "dtype" in kw else {}
        if a[1] is None:
            return getattr(a[0], name)(**kw2)
        return getattr(a[0], name)(a[1], a[2], **kw2)

    def py(a, kw):
        if a[1] is None:
            return "%s.%s(%s)" % (P(a[0]), name, kwsrc(kw)[2:])
        return "%s.%s(%s, %s%s)" % (P(a[0]), name, P(a[1]), P(a[2]), kwsrc(kw))

    def cpp(a, kw):
        if a[1] is None:
            return "%s.%s(%s)" % (C(a[0]), name, _dtype_kw_cpp(kw))
        dims = C(a[1]) if single_dim else "std::vector<int64_t>%s" % C(a[1])
        return "%s.%s(%s, %s, %s)" % (C(a[0]), name, dims, C(a[2]), _dtype_kw_cpp(kw))

    add(Op(name, tfn, py, cpp, kind="accum", tol=4.0))


_sum_like("sum")
_sum_like("mean")


# the composites of src/ops/composite.cpp (free functions in brisk)
def _nan_red(name):
    def tfn(a, kw):
        if a[1] is None:
            return getattr(torch, name)(a[0])
        return getattr(torch, name)(a[0], a[1], a[2])

    def py(a, kw):
        if a[1] is None:
            return "torch.%s(%s)" % (name, P(a[0]))
        return "torch.%s(%s, %s, %s)" % (name, P(a[0]), P(a[1]), P(a[2]))

    def cpp(a, kw):
        if a[1] is None:
            return "brisk::%s(%s)" % (name, C(a[0]))
        return "brisk::%s(%s, std::vector<int64_t>%s, %s)" % (name, C(a[0]), C(a[1]), C(a[2]))

    add(Op(name, tfn, py, cpp, kind="accum", tol=4.0))


_nan_red("nansum")
_nan_red("nanmean")
add(Op("count_nonzero", lambda a, kw: torch.count_nonzero(a[0]) if a[1] is None else torch.count_nonzero(a[0], a[1]),
       lambda a, kw: "torch.count_nonzero(%s)" % (P(a[0]) if a[1] is None else "%s, %s" % (P(a[0]), P(a[1]))),
       lambda a, kw: "brisk::count_nonzero(%s)" % (C(a[0]) if a[1] is None else "%s, std::vector<int64_t>%s" % (
           C(a[0]), C(a[1])))))
add(Op("trace", lambda a, kw: torch.trace(a[0]), lambda a, kw: "torch.trace(%s)" % P(a[0]),
       lambda a, kw: "brisk::trace(%s)" % C(a[0]), kind="accum", tol=4.0))
add(Op("repeat_interleave", lambda a, kw: torch.repeat_interleave(a[0], a[1], a[2]),
       lambda a, kw: "torch.repeat_interleave(%s)" % pargs(a),
       lambda a, kw: "brisk::repeat_interleave(%s, int64_t(%s), %s)" % (
           C(a[0]), C(a[1]), "std::nullopt" if a[2] is None else "std::optional<int64_t>(%s)" % C(a[2]))))
add(Op("diag", lambda a, kw: torch.diag(a[0], a[1]), lambda a, kw: "torch.diag(%s)" % pargs(a),
       lambda a, kw: "brisk::diag(%s, %s)" % (C(a[0]), C(a[1]))))
add(Op("rot90", lambda a, kw: torch.rot90(a[0], a[1], a[2]), lambda a, kw: "torch.rot90(%s)" % pargs(a),
       lambda a, kw: "brisk::rot90(%s, %s, std::vector<int64_t>%s)" % (C(a[0]), C(a[1]), C(a[2]))))
add(Op("diff", lambda a, kw: torch.diff(a[0], a[1], a[2], a[3], a[4]), lambda a, kw: "torch.diff(%s)" % pargs(a),
       lambda a, kw: "brisk::diff(%s, %s, %s, %s, %s)" % (
           C(a[0]), C(a[1]), C(a[2]), "std::nullopt" if a[3] is None else "std::optional<brisk::Tensor>(%s)" % C(a[3]),
           "std::nullopt" if a[4] is None else "std::optional<brisk::Tensor>(%s)" % C(a[4]))))
add(Op("kron", lambda a, kw: torch.kron(a[0], a[1]), lambda a, kw: "torch.kron(%s)" % pargs(a),
       lambda a, kw: "brisk::kron(%s, %s)" % (C(a[0]), C(a[1]))))
add(Op("take_along_dim", lambda a, kw: torch.take_along_dim(a[0], a[1], a[2]),
       lambda a, kw: "torch.take_along_dim(%s)" % pargs(a),
       lambda a, kw: "brisk::take_along_dim(%s, %s, %s)" % (
           C(a[0]), C(a[1]), "std::nullopt" if a[2] is None else "std::optional<int64_t>(%s)" % C(a[2]))))
for _n in ["fliplr", "flipud"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(a[0]))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, P(a[0])))(_n),
           (lambda n: lambda a, kw: "brisk::%s(%s)" % (n, C(a[0])))(_n)))
_sum_like("prod", single_dim=True)
for _n in ["max", "min"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(a[0]))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, P(a[0])))(_n),
           (lambda n: lambda a, kw: "%s.%s()" % (C(a[0]), n))(_n)))
    add(Op(_n + "_dim", (lambda n: lambda a, kw: tuple(getattr(torch, n)(*a)))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, pargs(a)))(_n),
           (lambda n: lambda a, kw: "%s.%s(%s, %s)" % (C(a[0]), n, C(a[1]), C(a[2])))(_n), out="tuple"))
for _n in ["amax", "amin"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(*a))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, pargs(a)))(_n),
           (lambda n: lambda a, kw: "%s.%s(std::vector<int64_t>%s, %s)" % (C(a[0]), n, C(a[1]), C(a[2])))(_n)))
for _n in ["argmax", "argmin"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(*a))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, pargs(a)))(_n),
           (lambda n: lambda a, kw: "%s.%s(%s, %s)" % (C(a[0]), n, C(a[1]), C(a[2])))(_n)))


def _var_like(name, out="one"):
    def tfn(a, kw):
        r = getattr(torch, name)(a[0], a[1], **kw)
        return tuple(r) if out == "tuple" else r

    def cpp(a, kw):
        dims = "std::nullopt" if a[1] is None else "std::vector<int64_t>%s" % C(a[1])
        corr = scalar_or_default(kw, "correction", "1")
        keep = C(kw.get("keepdim", False))
        if name == "var_mean":
            return "brisk::var_mean(%s, %s, %s, %s)" % (C(a[0]), dims, corr, keep)
        return "%s.%s(%s, %s, %s)" % (C(a[0]), name, dims, corr, keep)

    add(Op(name, tfn, lambda a, kw: "torch.%s(%s, %s%s)" % (name, P(a[0]), P(a[1]), kwsrc(kw)), cpp,
           kind="accum", tol=8.0, out=out))


_var_like("var")
_var_like("std")
_var_like("var_mean", out="tuple")


def _norm_torch(a, kw):
    if a[2] is None:
        return torch.norm(a[0], a[1])
    return torch.norm(a[0], a[1], a[2], a[3])


add(Op("norm", _norm_torch,
       lambda a, kw: "torch.norm(%s)" % pargs(a if a[2] is not None else a[:2]),
       lambda a, kw: ("%s.norm(%s)" % (C(a[0]), C(a[1])) if a[2] is None else
                      "%s.norm(%s, std::vector<int64_t>%s, %s)" % (C(a[0]), C(a[1]), C(a[2]), C(a[3]))),
       kind="accum", tol=4.0))
add(Op("logsumexp", lambda a, kw: torch.logsumexp(*a), lambda a, kw: "torch.logsumexp(%s)" % pargs(a),
       lambda a, kw: "%s.logsumexp(std::vector<int64_t>%s, %s)" % (C(a[0]), C(a[1]), C(a[2])), kind="accum",
       tol=4.0))
for _n in ["softmax", "log_softmax", "cumsum", "cumprod"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(*a, **kw))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s%s)" % (n, pargs(a), kwsrc(kw)))(_n),
           (lambda n: lambda a, kw: "%s.%s(%s, %s)" % (C(a[0]), n, C(a[1]), _dtype_kw_cpp(kw)))(_n),
           kind="accum", tol=4.0))
for _n in ["all", "any"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(a[0]) if a[1] is None else getattr(torch, n)(*a))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, pargs(a if a[1] is not None else a[:1])))(_n),
           (lambda n: lambda a, kw: "%s.%s()" % (C(a[0]), n) if a[1] is None else
            "%s.%s(%s, %s)" % (C(a[0]), n, C(a[1]), C(a[2])))(_n)))
add(Op("sort", lambda a, kw: tuple(torch.sort(a[0], dim=a[1], descending=a[2], stable=True)),
       lambda a, kw: "torch.sort(%s, dim=%s, descending=%s, stable=True)" % (P(a[0]), P(a[1]), P(a[2])),
       lambda a, kw: "%s.sort(%s, %s)" % (C(a[0]), C(a[1]), C(a[2])), out="tuple", index_check=(0, 1)))
add(Op("argsort", lambda a, kw: torch.sort(a[0], dim=a[1], descending=a[2], stable=True)[1],
       lambda a, kw: "torch.sort(%s, dim=%s, descending=%s, stable=True)[1]" % (P(a[0]), P(a[1]), P(a[2])),
       lambda a, kw: "%s.argsort(%s, %s)" % (C(a[0]), C(a[1]), C(a[2])), index_check=(0, 1)))
add(Op("topk", lambda a, kw: tuple(torch.topk(*a)), lambda a, kw: "torch.topk(%s)" % pargs(a),
       lambda a, kw: "%s.topk(%s)" % (C(a[0]), ", ".join(C(x) for x in a[1:])), out="tuple", index_check=(0, 2)))

# ---- linear algebra ------------------------------------------------------------------------

for _n in ["matmul", "mm", "bmm", "mv", "dot", "outer"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(*a))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, pargs(a)))(_n),
           (lambda n: lambda a, kw: "%s.%s(%s)" % (C(a[0]), n, C(a[1])))(_n), kind="accum", tol=8.0))
add(Op("addmm", lambda a, kw: torch.addmm(*a, **kw), lambda a, kw: "torch.addmm(%s%s)" % (pargs(a), kwsrc(kw)),
       lambda a, kw: "%s.addmm(%s, %s, %s, %s)" % (C(a[0]), C(a[1]), C(a[2]), scalar_or_default(kw, "beta", "1"),
                                                   scalar_or_default(kw, "alpha", "1")), kind="accum", tol=8.0))
add(Op("einsum", lambda a, kw: torch.einsum(a[0], *a[1]), lambda a, kw: "torch.einsum(%s, %s)" % (P(a[0]), P(a[1])),
       lambda a, kw: "brisk::einsum(%s, {%s})" % (C(a[0]), ", ".join(C(x) for x in a[1])), kind="accum", tol=8.0))

# ---- shape ------------------------------------------------------------------------------------

for _n in ["cat", "stack"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(*a))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, pargs(a)))(_n),
           (lambda n: lambda a, kw: "brisk::%s({%s}, %s)" % (n, ", ".join(C(x) for x in a[0]), C(a[1])))(_n)))
for _n in ["hstack", "vstack", "dstack"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(a[0]))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, P(a[0])))(_n),
           (lambda n: lambda a, kw: "brisk::%s({%s})" % (n, ", ".join(C(x) for x in a[0])))(_n)))


def _vec(x):
    return "std::vector<int64_t>%s" % C(x)


add(Op("flip", lambda a, kw: torch.flip(*a), lambda a, kw: "torch.flip(%s)" % pargs(a),
       lambda a, kw: "%s.flip(%s)" % (C(a[0]), _vec(a[1]))))
add(Op("roll", lambda a, kw: torch.roll(a[0], a[1], a[2]) if a[2] else torch.roll(a[0], a[1]),
       lambda a, kw: "torch.roll(%s)" % pargs(a if a[2] else a[:2]),
       lambda a, kw: "%s.roll(%s, %s)" % (C(a[0]), _vec(a[1]), _vec(a[2]))))
for _n in ["tril", "triu"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(*a))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, pargs(a)))(_n),
           (lambda n: lambda a, kw: "%s.%s(%s)" % (C(a[0]), n, C(a[1])))(_n)))
    add(Op(_n + "_", (lambda n: lambda a, kw: getattr(a[0], n + "_")(a[1]))(_n),
           (lambda n: lambda a, kw: "%s.%s_(%s)" % (P(a[0]), n, P(a[1])))(_n),
           (lambda n: lambda a, kw: "%s.%s_(%s)" % (C(a[0]), n, C(a[1])))(_n), inplace=True))
for _n in ["pad", "F.pad"]:
    add(Op(_n, lambda a, kw: F.pad(a[0], a[1], value=kw.get("value", 0)),
           lambda a, kw: "F.pad(%s, %s%s)" % (P(a[0]), P(a[1]), kwsrc(kw)),
           lambda a, kw: "brisk::pad(%s, %s, %s)" % (C(a[0]), _vec(a[1]), scalar_or_default(kw, "value", "0"))))
add(Op("broadcast_to", lambda a, kw: torch.broadcast_to(*a), lambda a, kw: "torch.broadcast_to(%s)" % pargs(a),
       lambda a, kw: "brisk::broadcast_to(%s, %s)" % (C(a[0]), _vec(a[1]))))


def _method(name, n_int=0, vec_arg=None, out="one", inplace=False, kind="other", torch_fn=None):
    """x.name(args...) in both libraries; vec_arg: position of an int list."""

    def cpp(a, kw):
        parts = [(_vec(x) if i + 1 == vec_arg else C(x)) for i, x in enumerate(a[1:])]
        return "%s.%s(%s)" % (C(a[0]), name, ", ".join(parts))

    add(Op(name, torch_fn or (lambda a, kw: getattr(a[0], name)(*a[1:])),
           lambda a, kw: "%s.%s(%s)" % (P(a[0]), name, pargs(a[1:])), cpp, out=out, inplace=inplace, kind=kind))


_method("repeat", vec_arg=1)
_method("tile", vec_arg=1)
_method("flatten")
_method("unflatten", vec_arg=2)
_method("movedim")
_method("reshape", vec_arg=1)
_method("view", vec_arg=1)
_method("t")
add(Op("mT", lambda a, kw: a[0].mT, lambda a, kw: "%s.mT" % P(a[0]), lambda a, kw: "%s.mT()" % C(a[0])))
_method("expand", vec_arg=1)
_method("narrow")
_method("select")
add(Op("slice",
       lambda a, kw: a[0][(slice(None),) * (a[1] % max(a[0].dim(), 1)) + (slice(a[2], a[3], a[4]),)],
       lambda a, kw: "%s[%s]" % (P(a[0]), ", ".join([":"] * (a[1] % 8) + ["%s:%s:%s" % (
           "" if a[2] is None else a[2], "" if a[3] is None else a[3], a[4])])),
       lambda a, kw: "%s.slice(%s)" % (C(a[0]), ", ".join(C(x) for x in a[1:]))))
add(Op("split", lambda a, kw: list(torch.split(*a)), lambda a, kw: "torch.split(%s)" % pargs(a),
       lambda a, kw: "%s.split(%s, %s)" % (C(a[0]), C(a[1]) if isinstance(a[1], int) else _vec(a[1]), C(a[2])),
       out="list"))
add(Op("chunk", lambda a, kw: list(torch.chunk(*a)), lambda a, kw: "torch.chunk(%s)" % pargs(a),
       lambda a, kw: "%s.chunk(%s, %s)" % (C(a[0]), C(a[1]), C(a[2])), out="list"))
add(Op("unbind", lambda a, kw: list(torch.unbind(*a)), lambda a, kw: "torch.unbind(%s)" % pargs(a),
       lambda a, kw: "%s.unbind(%s)" % (C(a[0]), C(a[1])), out="list"))
_method("diagonal")
_method("unfold")
add(Op("squeeze", lambda a, kw: a[0].squeeze() if a[1] is None else a[0].squeeze(a[1]),
       lambda a, kw: "%s.squeeze(%s)" % (P(a[0]), "" if a[1] is None else P(a[1])),
       lambda a, kw: "%s.squeeze(%s)" % (C(a[0]), "" if a[1] is None else C(a[1]))))
_method("unsqueeze")
_method("transpose")
_method("permute", vec_arg=1)
_method("contiguous")
_method("clone")
_method("detach")
add(Op("to", lambda a, kw: a[0].to(a[1]), lambda a, kw: "%s.to(%s)" % (P(a[0]), P(a[1])),
       lambda a, kw: "%s.to(%s)" % (C(a[0]), C(a[1]))))

# ---- indexing ---------------------------------------------------------------------------------


def _idx_py(idx):
    return ", ".join(P(x) if not isinstance(x, slice) else P(x) for x in idx) + ("," if len(idx) == 1 else "")


def _idx_cpp(idx):
    return "{" + ", ".join(cpp_index(x) for x in idx) + "}"


def _lone_bool(idx):
    # libtorch's index_put_({b}, v) with one bool is Python's x[b] = v (a fast
    # path: x[False] = v does nothing), not x[(b,)] = v (an advanced index).
    return len(idx) == 1 and isinstance(idx[0], bool)


def _index_put(a, kw):
    a[0][a[1][0] if _lone_bool(a[1]) else tuple(a[1])] = a[2]
    return a[0]


add(Op("index", lambda a, kw: a[0][tuple(a[1])], lambda a, kw: "%s[%s]" % (P(a[0]), _idx_py(a[1])),
       lambda a, kw: "%s.index(%s)" % (C(a[0]), _idx_cpp(a[1]))))
add(Op("index_put_", _index_put, lambda a, kw: "%s.__setitem__(%s, %s)" % (
           P(a[0]), P(a[1][0]) if _lone_bool(a[1]) else "(%s)" % _idx_py(a[1]), P(a[2])),
       lambda a, kw: "%s.index_put_(std::vector<TensorIndex>%s, %s)" % (C(a[0]), _idx_cpp(a[1]), C(a[2])),
       inplace=True))
add(Op("index_select", lambda a, kw: torch.index_select(*a), lambda a, kw: "torch.index_select(%s)" % pargs(a),
       lambda a, kw: "%s.index_select(%s, %s)" % (C(a[0]), C(a[1]), C(a[2]))))
add(Op("gather", lambda a, kw: torch.gather(*a), lambda a, kw: "torch.gather(%s)" % pargs(a),
       lambda a, kw: "%s.gather(%s, %s)" % (C(a[0]), C(a[1]), C(a[2]))))
add(Op("scatter", lambda a, kw: torch.scatter(*a), lambda a, kw: "torch.scatter(%s)" % pargs(a),
       lambda a, kw: "%s.scatter(%s)" % (C(a[0]), ", ".join(C(x) for x in a[1:]))))
add(Op("scatter_", lambda a, kw: a[0].scatter_(*a[1:]), lambda a, kw: "%s.scatter_(%s)" % (P(a[0]), pargs(a[1:])),
       lambda a, kw: "%s.scatter_(%s)" % (C(a[0]), ", ".join(C(x) for x in a[1:])), inplace=True))
add(Op("scatter_add", lambda a, kw: torch.scatter_add(*a), lambda a, kw: "torch.scatter_add(%s)" % pargs(a),
       lambda a, kw: "%s.scatter_add(%s)" % (C(a[0]), ", ".join(C(x) for x in a[1:])), kind="accum"))
add(Op("scatter_add_", lambda a, kw: a[0].scatter_add_(*a[1:]),
       lambda a, kw: "%s.scatter_add_(%s)" % (P(a[0]), pargs(a[1:])),
       lambda a, kw: "%s.scatter_add_(%s)" % (C(a[0]), ", ".join(C(x) for x in a[1:])), inplace=True, kind="accum"))
add(Op("index_add_", lambda a, kw: a[0].index_add_(*a[1:], **kw),
       lambda a, kw: "%s.index_add_(%s%s)" % (P(a[0]), pargs(a[1:]), kwsrc(kw)),
       lambda a, kw: "%s.index_add_(%s, %s)" % (C(a[0]), ", ".join(C(x) for x in a[1:]),
                                                scalar_or_default(kw, "alpha", "1")), inplace=True, kind="accum"))
add(Op("masked_fill", lambda a, kw: torch.masked_fill(*a), lambda a, kw: "torch.masked_fill(%s)" % pargs(a),
       lambda a, kw: "%s.masked_fill(%s, %s)" % (C(a[0]), C(a[1]), C(a[2])), kind="pointwise"))
add(Op("masked_fill_", lambda a, kw: a[0].masked_fill_(*a[1:]),
       lambda a, kw: "%s.masked_fill_(%s)" % (P(a[0]), pargs(a[1:])),
       lambda a, kw: "%s.masked_fill_(%s, %s)" % (C(a[0]), C(a[1]), C(a[2])), inplace=True, kind="pointwise"))
add(Op("masked_select", lambda a, kw: torch.masked_select(*a), lambda a, kw: "torch.masked_select(%s)" % pargs(a),
       lambda a, kw: "%s.masked_select(%s)" % (C(a[0]), C(a[1]))))
add(Op("nonzero", lambda a, kw: torch.nonzero(a[0]), lambda a, kw: "torch.nonzero(%s)" % P(a[0]),
       lambda a, kw: "%s.nonzero()" % C(a[0])))
add(Op("copy_", lambda a, kw: a[0].copy_(a[1]), lambda a, kw: "%s.copy_(%s)" % (P(a[0]), P(a[1])),
       lambda a, kw: "%s.copy_(%s)" % (C(a[0]), C(a[1])), inplace=True, kind="pointwise"))
add(Op("fill_", lambda a, kw: a[0].fill_(a[1]), lambda a, kw: "%s.fill_(%s)" % (P(a[0]), P(a[1])),
       lambda a, kw: "%s.fill_(%s)" % (C(a[0]), C(a[1])), inplace=True, kind="pointwise"))
add(Op("zero_", lambda a, kw: a[0].zero_(), lambda a, kw: "%s.zero_()" % P(a[0]),
       lambda a, kw: "%s.zero_()" % C(a[0]), inplace=True, kind="pointwise"))

# ---- factories ----------------------------------------------------------------------------------


def _opts_cpp(kw):
    return C(kw["dtype"]) if "dtype" in kw else "brisk::TensorOptions()"


add(Op("arange", lambda a, kw: torch.arange(*a, **kw), lambda a, kw: "torch.arange(%s%s)" % (pargs(a), kwsrc(kw)),
       lambda a, kw: "brisk::arange(%s, %s)" % (", ".join(C(x) for x in a), _opts_cpp(kw))))
add(Op("linspace", lambda a, kw: torch.linspace(*a, **kw),
       lambda a, kw: "torch.linspace(%s%s)" % (pargs(a), kwsrc(kw)),
       lambda a, kw: "brisk::linspace(%s, %s)" % (", ".join(C(x) for x in a), _opts_cpp(kw))))
add(Op("full", lambda a, kw: torch.full(*a, **kw), lambda a, kw: "torch.full(%s%s)" % (pargs(a), kwsrc(kw)),
       lambda a, kw: "brisk::full(%s, %s, %s)" % (_vec(a[0]), C(a[1]), _opts_cpp(kw))))
add(Op("scalar_tensor", lambda a, kw: torch.scalar_tensor(*a, **kw),
       lambda a, kw: "torch.scalar_tensor(%s%s)" % (pargs(a), kwsrc(kw)),
       lambda a, kw: "brisk::scalar_tensor(%s, %s)" % (C(a[0]), _opts_cpp(kw))))
add(Op("full_like", lambda a, kw: torch.full_like(*a, **kw),
       lambda a, kw: "torch.full_like(%s%s)" % (pargs(a), kwsrc(kw)),
       lambda a, kw: "brisk::full_like(%s, %s%s)" % (C(a[0]), C(a[1]), ", " + C(kw["dtype"]) if "dtype" in kw else "")))
add(Op("eye", lambda a, kw: torch.eye(*a, **kw), lambda a, kw: "torch.eye(%s%s)" % (pargs(a), kwsrc(kw)),
       lambda a, kw: "brisk::eye(%s, %s, %s)" % (C(a[0]), C(a[1]), _opts_cpp(kw))))

# ---- nn.functional ----------------------------------------------------------------------------

_RED = {"mean": "nn::kMean", "sum": "nn::kSum", "none": "nn::kNone", "batchmean": "nn::kBatchMean"}


def _fn(name, cpp, kind="other", tol=1.0, out="one", min_torch=None, torch_fn=None):
    tname = name[2:]
    add(Op(name, torch_fn or (lambda a, kw: getattr(F, tname)(*a, **kw)),
           lambda a, kw: "F.%s(%s%s)" % (tname, pargs(a), kwsrc(kw)), cpp, kind=kind, tol=tol, out=out,
           min_torch=min_torch))


def _t_or_undef(x):
    return "Tensor()" if x is None else C(x)


def _red_cpp(kw):
    return _RED[kw.get("reduction", "mean")]


_fn("F.relu", lambda a, kw: "F::relu(%s)" % C(a[0]), kind="pointwise")
_fn("F.gelu", lambda a, kw: "F::gelu(%s, %s)" % (C(a[0]), C(kw.get("approximate", "none"))), kind="pointwise")
_fn("F.silu", lambda a, kw: "F::silu(%s)" % C(a[0]), kind="pointwise")
_fn("F.softmax", lambda a, kw: "F::softmax(%s, %s)" % (C(a[0]), C(a[1])), kind="accum", tol=4.0)
_fn("F.log_softmax", lambda a, kw: "F::log_softmax(%s, %s)" % (C(a[0]), C(a[1])), kind="accum", tol=4.0)
_fn("F.linear", lambda a, kw: "F::linear(%s, %s, %s)" % (C(a[0]), C(a[1]), _t_or_undef(a[2])), kind="accum", tol=8.0)
_fn("F.bilinear", lambda a, kw: "F::bilinear(%s, %s, %s, %s)" % (C(a[0]), C(a[1]), C(a[2]), _t_or_undef(a[3])),
    kind="accum", tol=8.0)
_fn("F.dropout", lambda a, kw: "F::dropout(%s, %s, %s)" % (C(a[0]), C(a[1]), C(a[2])))
_fn("F.layer_norm", lambda a, kw: "F::layer_norm(%s, %s, %s, %s, %s)" % (
    C(a[0]), _vec(a[1]), _t_or_undef(a[2]), _t_or_undef(a[3]), C(kw.get("eps", 1e-5))), kind="accum", tol=8.0)
_fn("F.embedding", lambda a, kw: "F::embedding(%s, %s, %s)" % (C(a[0]), C(a[1]), C(kw.get("padding_idx"))))
for _n in ["mse_loss", "l1_loss"]:
    _fn("F." + _n, (lambda n: lambda a, kw: "F::%s(%s, %s, %s)" % (n, C(a[0]), C(a[1]), _red_cpp(kw)))(_n),
        kind="accum", tol=4.0)
_fn("F.smooth_l1_loss", lambda a, kw: "F::smooth_l1_loss(%s, %s, F::SmoothL1LossFuncOptions(%s).beta(%s))" % (
    C(a[0]), C(a[1]), _red_cpp(kw), C(kw.get("beta", 1.0))), kind="accum", tol=4.0)
_fn("F.huber_loss", lambda a, kw: "F::huber_loss(%s, %s, F::HuberLossFuncOptions(%s).delta(%s))" % (
    C(a[0]), C(a[1]), _red_cpp(kw), C(kw.get("delta", 1.0))), kind="accum", tol=4.0)
_fn("F.nll_loss", lambda a, kw: "F::nll_loss(%s, %s, F::NLLLossFuncOptions(%s).weight(%s).ignore_index(%s))" % (
    C(a[0]), C(a[1]), _red_cpp(kw), _t_or_undef(kw.get("weight")), kw.get("ignore_index", -100)),
    kind="accum", tol=4.0)
_fn("F.cross_entropy", lambda a, kw: (
    "F::cross_entropy(%s, %s, F::CrossEntropyFuncOptions(%s).weight(%s).ignore_index(%s).label_smoothing(%s))" % (
        C(a[0]), C(a[1]), _red_cpp(kw), _t_or_undef(kw.get("weight")), kw.get("ignore_index", -100),
        C(kw.get("label_smoothing", 0.0)))), kind="accum", tol=4.0)
_fn("F.binary_cross_entropy", lambda a, kw: (
    "F::binary_cross_entropy(%s, %s, F::BinaryCrossEntropyFuncOptions(%s).weight(%s))" % (
        C(a[0]), C(a[1]), _red_cpp(kw), _t_or_undef(kw.get("weight")))), kind="accum", tol=4.0)
_fn("F.binary_cross_entropy_with_logits", lambda a, kw: (
    "F::binary_cross_entropy_with_logits(%s, %s, "
    "F::BinaryCrossEntropyWithLogitsFuncOptions(%s).weight(%s).pos_weight(%s))" % (
        C(a[0]), C(a[1]), _red_cpp(kw), _t_or_undef(kw.get("weight")), _t_or_undef(kw.get("pos_weight")))),
    kind="accum", tol=4.0)
_fn("F.kl_div", lambda a, kw: "F::kl_div(%s, %s, F::KLDivFuncOptions(%s).log_target(%s))" % (
    C(a[0]), C(a[1]), _red_cpp(kw), C(kw.get("log_target", False))), kind="accum", tol=4.0)


def _ints_cpp(x, dflt):
    if x is None:
        return str(dflt)
    if isinstance(x, str):
        return C(x)
    if isinstance(x, int):
        return str(x)
    return "std::array<int64_t, %d>%s" % (len(x), C(x))


_fn("F.conv1d", lambda a, kw: "F::conv1d(%s, %s, %s, %s, %s, %s, %s)" % (
    C(a[0]), C(a[1]), _t_or_undef(a[2]), _ints_cpp(kw.get("stride"), 1), _ints_cpp(kw.get("padding"), 0),
    _ints_cpp(kw.get("dilation"), 1), kw.get("groups", 1)), kind="accum", tol=8.0)
_fn("F.conv2d", lambda a, kw: "F::conv2d(%s, %s, %s, %s, %s, %s, %s)" % (
    C(a[0]), C(a[1]), _t_or_undef(a[2]), _ints_cpp(kw.get("stride"), 1), _ints_cpp(kw.get("padding"), 0),
    _ints_cpp(kw.get("dilation"), 1), kw.get("groups", 1)), kind="accum", tol=8.0)
_fn("F.conv_transpose2d", lambda a, kw: "F::conv_transpose2d(%s, %s, %s, %s, %s, %s, %s, %s)" % (
    C(a[0]), C(a[1]), _t_or_undef(a[2]), _ints_cpp(kw.get("stride"), 1), _ints_cpp(kw.get("padding"), 0),
    _ints_cpp(kw.get("output_padding"), 0), kw.get("groups", 1), _ints_cpp(kw.get("dilation"), 1)),
    kind="accum", tol=8.0)


def _pool_cpp(fname, a, kw, extra):
    stride = kw.get("stride")
    parts = [C(a[0]), _ints_cpp(a[1], 1), "std::nullopt" if stride is None else _ints_cpp(stride, 1),
             _ints_cpp(kw.get("padding"), 0)]
    for key, dflt in extra:
        v = kw.get(key, dflt)
        parts.append(_ints_cpp(v, dflt) if key == "dilation" else C(v))
    return "F::%s(%s)" % (fname, ", ".join(parts))


_fn("F.max_pool1d", lambda a, kw: _pool_cpp("max_pool1d", a, kw, [("dilation", 1), ("ceil_mode", False)]))
_fn("F.max_pool2d", lambda a, kw: _pool_cpp("max_pool2d", a, kw, [("dilation", 1), ("ceil_mode", False)]))
_fn("F.max_pool2d_with_indices", lambda a, kw: _pool_cpp("max_pool2d_with_indices", a, kw,
                                                         [("dilation", 1), ("ceil_mode", False)]),
    out="tuple", torch_fn=lambda a, kw: tuple(F.max_pool2d(*a, return_indices=True, **kw)))
OPS["F.max_pool2d_with_indices"].py = lambda a, kw: "F.max_pool2d(%s, return_indices=True%s)" % (pargs(a), kwsrc(kw))
_fn("F.avg_pool1d", lambda a, kw: _pool_cpp("avg_pool1d", a, kw, [("ceil_mode", False), ("count_include_pad", True)]),
    kind="accum", tol=4.0)
_fn("F.avg_pool2d", lambda a, kw: _pool_cpp("avg_pool2d", a, kw, [("ceil_mode", False), ("count_include_pad", True),
                                                                  ("divisor_override", None)]),
    kind="accum", tol=4.0)
_fn("F.adaptive_avg_pool2d", lambda a, kw: "F::adaptive_avg_pool2d(%s, %s)" % (C(a[0]), _ints_cpp(a[1], 1)),
    kind="accum", tol=4.0)
_fn("F.batch_norm", lambda a, kw: "F::batch_norm(%s, %s, %s, %s, %s, %s, %s, %s)" % (
    C(a[0]), _t_or_undef(a[1]), _t_or_undef(a[2]), _t_or_undef(kw.get("weight")), _t_or_undef(kw.get("bias")),
    C(kw.get("training", False)), C(kw.get("momentum", 0.1)), C(kw.get("eps", 1e-5))), kind="accum", tol=8.0)
_fn("F.group_norm", lambda a, kw: "F::group_norm(%s, %s, %s, %s, %s)" % (
    C(a[0]), C(a[1]), _t_or_undef(kw.get("weight")), _t_or_undef(kw.get("bias")), C(kw.get("eps", 1e-5))),
    kind="accum", tol=8.0)
_fn("F.scaled_dot_product_attention", lambda a, kw: "F::scaled_dot_product_attention(%s, %s, %s, %s, 0.0, %s, %s)" % (
    C(a[0]), C(a[1]), C(a[2]), _t_or_undef(kw.get("attn_mask")), C(kw.get("is_causal", False)), C(kw.get("scale"))),
    kind="accum", tol=8.0, min_torch=(2, 1))

# ---- the nn2 family: median, interpolate, padding modes, rms_norm, 3-D and transposed convolutions ------

for _n in ["median", "nanmedian"]:
    add(Op(_n, (lambda n: lambda a, kw: getattr(torch, n)(a[0]))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, P(a[0])))(_n),
           (lambda n: lambda a, kw: "%s.%s()" % (C(a[0]), n))(_n)))
    # (values, indices) along a dim: among equal values (and NaNs) the index is
    # unspecified in both libraries, so the indices are compared by the values they pick.
    add(Op(_n + "_dim", (lambda n: lambda a, kw: tuple(getattr(torch, n)(a[0], a[1], a[2])))(_n),
           (lambda n: lambda a, kw: "torch.%s(%s)" % (n, pargs(a)))(_n),
           (lambda n: lambda a, kw: "%s.%s(%s, %s)" % (C(a[0]), n, C(a[1]), C(a[2])))(_n), out="tuple",
           index_check=(0, 1)))

INTERPOLATE_MODES = ["nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"]
_CPP_INTERP_MODE = {"nearest": "kNearest", "nearest-exact": "kNearestExact", "linear": "kLinear",
                    "bilinear": "kBilinear", "bicubic": "kBicubic", "trilinear": "kTrilinear", "area": "kArea"}


def _per_dim_cpp(x, ctype):
    return "std::vector<%s>%s" % (ctype, C(x if isinstance(x, (list, tuple)) else [x]))


def _interpolate(mode):
    """One op per mode ('F.interpolate[bilinear]'), so that each mode has signatures of its own."""
    def cpp(a, kw):
        o = "F::InterpolateFuncOptions()"
        if "size" in kw:
            o += ".size(%s)" % _per_dim_cpp(kw["size"], "int64_t")
        if "scale_factor" in kw:
            o += ".scale_factor(%s)" % _per_dim_cpp(kw["scale_factor"], "double")
        o += ".mode(brisk::nn::%s)" % _CPP_INTERP_MODE[mode]
        for key in ("align_corners", "recompute_scale_factor"):
            if key in kw:
                o += ".%s(%s)" % (key, C(kw[key]))
        return "F::interpolate(%s, %s)" % (C(a[0]), o)

    add(Op("F.interpolate[%s]" % mode, lambda a, kw: F.interpolate(a[0], mode=mode, **kw),
           lambda a, kw: "F.interpolate(%s, mode=%r%s)" % (P(a[0]), mode, kwsrc(kw)), cpp, kind="accum", tol=4.0))


for _m in INTERPOLATE_MODES:
    _interpolate(_m)

PAD_MODES = ["reflect", "replicate", "circular"]


def _pad_mode(mode):
    add(Op("F.pad[%s]" % mode, lambda a, kw: F.pad(a[0], a[1], mode=mode),
           lambda a, kw: "F.pad(%s, %s, mode=%r)" % (P(a[0]), P(a[1]), mode),
           lambda a, kw: "F::pad(%s, F::PadFuncOptions(%s).mode(brisk::nn::k%s))" % (
               C(a[0]), _vec(a[1]), mode.capitalize())))


for _m in PAD_MODES:
    _pad_mode(_m)

_fn("F.rms_norm", lambda a, kw: "F::rms_norm(%s, %s, %s, %s)" % (
    C(a[0]), _vec(a[1]), _t_or_undef(a[2]), C(kw.get("eps"))), kind="accum", tol=8.0, min_torch=(2, 4))
_fn("F.conv3d", lambda a, kw: "F::conv3d(%s, %s, %s, %s, %s, %s, %s)" % (
    C(a[0]), C(a[1]), _t_or_undef(a[2]), _ints_cpp(kw.get("stride"), 1), _ints_cpp(kw.get("padding"), 0),
    _ints_cpp(kw.get("dilation"), 1), kw.get("groups", 1)), kind="accum", tol=8.0)
for _n in ["conv_transpose1d", "conv_transpose3d"]:
    _fn("F." + _n, (lambda n: lambda a, kw: "F::%s(%s, %s, %s, %s, %s, %s, %s, %s)" % (
        n, C(a[0]), C(a[1]), _t_or_undef(a[2]), _ints_cpp(kw.get("stride"), 1), _ints_cpp(kw.get("padding"), 0),
        _ints_cpp(kw.get("output_padding"), 0), kw.get("groups", 1), _ints_cpp(kw.get("dilation"), 1)))(_n),
        kind="accum", tol=8.0)

"""Programs: argument wrappers, JSON encoding, dtypes and input values.

A program is a list of inputs and a list of op calls. Arguments are Python
objects: V(k) (value k), S/I/B (a Python float/int/bool scalar), DT (a
dtype), plain ints, lists, strings, None, slice objects and Ellipsis (in
index lists). The same objects are encoded to JSON for the brisk runner,
decoded to torch objects for PyTorch, and rendered as C++ and Python source
for reproductions.
"""
import math
import struct

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]

# A short class per dtype, used in divergence signatures.
DTYPE_CLASS = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
               "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool"}

# Coarser classes for signatures: dtypes that behave alike share one.
SIG_CLASS = {"float32": "float", "float64": "float", "float16": "half", "bfloat16": "half", "int64": "int",
             "int32": "int", "int16": "int", "int8": "int", "uint8": "u8", "bool": "bool"}

INT_RANGE = {"int64": (-2 ** 63, 2 ** 63 - 1), "int32": (-2 ** 31, 2 ** 31 - 1), "int16": (-2 ** 15, 2 ** 15 - 1),
             "int8": (-128, 127), "uint8": (0, 255),
             "bool": (0, 1)}

CPP_DTYPE = {"float32": "brisk::kFloat32", "float64": "brisk::kFloat64", "float16": "brisk::kFloat16",
             "bfloat16": "brisk::kBFloat16", "int64": "brisk::kInt64", "int32": "brisk::kInt32",
             "int16": "brisk::kInt16", "int8": "brisk::kInt8", "uint8": "brisk::kUInt8", "bool": "brisk::kBool"}


class V:
    """A reference to value k (an input or an op's output)."""
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __repr__(self):
        return "v%d" % self.k


class S:
    """A Python float scalar."""
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = float(x)


class I:
    """A Python int scalar."""
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = int(x)


class B:
    """A Python bool scalar."""
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = bool(x)


class DT:
    """A dtype argument."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def is_scalar(a):
    return isinstance(a, (S, I, B))


def scalar_kind(a):
    return {S: "sfloat", I: "sint", B: "sbool"}[type(a)]


# ---- JSON ---------------------------------------------------------------------------

def enc_float(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def encode(a):
    """An argument as JSON data."""
    if isinstance(a, V):
        return {"v": a.k}
    if isinstance(a, S):
        return {"s": enc_float(a.x)}
    if isinstance(a, I):
        return {"i": a.x}
    if isinstance(a, B):
        return {"b": a.x}
    if isinstance(a, DT):
        return a.name
    if isinstance(a, slice):
        return {"slice": [a.start, a.stop, a.step]}
    if a is Ellipsis:
        return "..."
    if isinstance(a, (list, tuple)):
        return [encode(x) for x in a]
    if isinstance(a, float):
        return enc_float(a)
    return a  # int, bool, str, None


# ---- exact values per dtype -------------------------------------------------------------

def round_to_dtype(x, dtype):
    """x rounded to the nearest value of a floating dtype (ties to even), as
    a Python float; both sides then convert it exactly."""
    if math.isnan(x) or math.isinf(x):
        return x
    if dtype == "float64":
        return float(x)
    if dtype == "float32":
        try:
            return struct.unpack("f", struct.pack("f", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    if dtype == "float16":
        try:
            return struct.unpack("e", struct.pack("e", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    if dtype == "bfloat16":
        try:
            bits = struct.unpack("I", struct.pack("f", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return struct.unpack("f", struct.pack("I", bits))[0]
    raise ValueError(dtype)


def clamp_int(x, dtype):
    lo, hi = INT_RANGE[dtype]
    return max(lo, min(hi, int(x)))


# ---- rendering as source ---------------------------------------------------------------

def py_float(x):
    if math.isnan(x):
        return "float('nan')"
    if math.isinf(x):
        return "float('inf')" if x > 0 else "-float('inf')"
    return repr(float(x))


def cpp_float(x):
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    r = repr(float(x))
    return r if ("." in r or "e" in r or "n" in r) else r + ".0"


def py_src(a):
    if isinstance(a, V):
        return "v%d" % a.k
    if isinstance(a, S):
        return py_float(a.x)
    if isinstance(a, (I, B)):
        return repr(a.x)
    if isinstance(a, DT):
        return "torch." + a.name
    if isinstance(a, slice):
        return "%s:%s%s" % ("" if a.start is None else a.start, "" if a.stop is None else a.stop,
                            "" if a.step is None else ":%d" % a.step)
    if a is Ellipsis:
        return "..."
    if isinstance(a, list):
        return "[" + ", ".join(py_src(x) for x in a) + "]"
    if isinstance(a, tuple):
        return "(" + ", ".join(py_src(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, float):
        return py_float(a)
    return repr(a)


def cpp_src(a):
    if isinstance(a, V):
        return "v%d" % a.k
    if isinstance(a, S):
        return "Scalar(%s)" % cpp_float(a.x)
    if isinstance(a, I):
        return "Scalar(int64_t(%d))" % a.x if -2 ** 63 < a.x else "Scalar(INT64_MIN)"
    if isinstance(a, B):
        return "Scalar(%s)" % ("true" if a.x else "false")
    if isinstance(a, DT):
        return CPP_DTYPE[a.name]
    if a is None:
        return "std::nullopt"
    if isinstance(a, bool):
        return "true" if a else "false"
    if isinstance(a, float):
        return cpp_float(a)
    if isinstance(a, int):
        return str(a)
    if isinstance(a, str):
        return '"%s"' % a
    if isinstance(a, (list, tuple)):
        return "{" + ", ".join(cpp_src(x) for x in a) + "}"
    raise TypeError(type(a))


def cpp_index(a):
    if isinstance(a, slice):
        f = lambda x: "None" if x is None else str(x)
        return "Slice(%s, %s, %d)" % (f(a.start), f(a.stop), 1 if a.step is None else a.step)
    if a is Ellipsis:
        return "Ellipsis"
    if a is None:
        return "None"
    if isinstance(a, bool):
        return "TensorIndex(%s)" % ("true" if a else "false")
    if isinstance(a, int):
        return "TensorIndex(int64_t(%d))" % a
    return cpp_src(a)

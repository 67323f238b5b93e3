"""Builder: records a program while running it in PyTorch.

The generator (gen.py) asks the builder for inputs and op calls; every call
runs at once in torch, so the generator can look at shapes and dtypes of
what it made (never at values, so that a program depends on the seed only).
The first op that torch refuses ends the program: its error is the
reference, and brisk must refuse the same op.
"""
import math
import warnings

import torch

from .program import V, S, I, B, DT, FLOATS, INTS, encode, round_to_dtype, clamp_int, INT_RANGE
from .ops import OPS, TORCH_DTYPE, DTYPE_NAME

warnings.simplefilter("ignore")
TORCH_VERSION = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])


# Bugs of old torch releases that would read as brisk's divergences:
# (op, first good torch version, predicate on the op's torch arguments, what goes wrong).
REFERENCE_QUIRKS = [
    ("F.conv_transpose2d", (2, 0), lambda a: a[0].dtype == torch.bfloat16,
     "bfloat16 conv_transpose2d on the CPU computes a conv2d"),
    ("F.conv_transpose1d", (2, 0), lambda a: a[0].dtype == torch.bfloat16,
     "bfloat16 conv_transpose1d on the CPU computes a conv1d"),
    ("F.conv_transpose3d", (2, 0), lambda a: a[0].dtype == torch.bfloat16,
     "bfloat16 conv_transpose3d on the CPU computes a conv3d"),
    ("F.interpolate[bicubic]", (2, 0), lambda a: a[0].dtype == torch.bfloat16,
     "bfloat16 bicubic interpolation is off by far more than its rounding (4096 where float32 and float64 give 5373)"),
    ("F.interpolate[bicubic]", (2, 0), lambda a: _past(a[0], 1e3),
     "float32 bicubic weights that should be 0 are about 6e-8, which shows next to large values (0.576 where "
     "float64 and torch 2.x give the sample, 0.5721, next to 65504)"),
    ("log1p", (2, 0), lambda a: a[0].dtype in (torch.float32, torch.bfloat16) and bool((a[0].abs() > 1e37).any()),
     "float32 (and bfloat16) log1p of values near the float32 maximum gives inf"),
    ("log1p_", (2, 0), lambda a: a[0].dtype in (torch.float32, torch.bfloat16) and bool((a[0].abs() > 1e37).any()),
     "float32 (and bfloat16) log1p of values near the float32 maximum gives inf"),
    ("masked_select", (2, 0), lambda a: a[0].requires_grad and not a[0].is_contiguous(),
     "masked_select's backward of a non-contiguous self puts the gradient in the wrong elements"),
    ("F.group_norm", (2, 0), lambda a: a[0].numel() == 0,
     "group_norm of an empty input gives NaN gradients (2.x refuses it)"),
]


def _noncontig(t):
    return isinstance(t, torch.Tensor) and t.dim() > 0 and not t.is_contiguous()


def _past(t, limit):
    """A float tensor (not float64) holding a finite value of magnitude above limit."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.dtype == torch.float64:
        return False
    f = t.detach().double()
    return bool((f[f.isfinite()].abs() > limit).any())


def _odd_channels_last(t):
    if not isinstance(t, torch.Tensor) or t.dim() != 4 or t.is_contiguous():
        return False
    if not t.is_contiguous(memory_format=torch.channels_last):
        return False
    n, c, h, w = t.shape
    return tuple(t.stride()) != (h * w * c, 1, w * c, c)


def _float32_sum_overflows(t):
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
        return False
    f = t.detach().double()
    return float(f[f.isfinite()].abs().sum()) > 3.4e38


def _group_of_one(a):
    """group_norm's args (input, num_groups, ...) put one element in each group."""
    x, groups = a[0], a[1]
    if not isinstance(x, torch.Tensor) or x.dim() < 2 or x.numel() == 0 or not isinstance(groups, int) or groups <= 0:
        return False
    return x.numel() == x.shape[0] * groups


def _arg(a, kw, i, name):
    return a[i] if len(a) > i else kw.get(name)


# Bugs of every torch release checked (1.13 and 2.x) where brisk's result is
# the right one (each has a brisk regression test that says so): (op,
# predicate on the op's torch arguments and keywords and the builder (b.grad2:
# the program takes second derivatives), what goes wrong). Such cases are
# skipped, as REFERENCE_QUIRKS are; only the exact circumstances are.
TORCH_BUGS = [
    ("F.batch_norm", lambda a, kw, b: not kw.get("training", False) and (
        _noncontig(a[1]) or _noncontig(a[2]) or _noncontig(kw.get("weight"))),
     "eval-mode batch_norm backward on the CPU reads a non-contiguous running_mean, running_var or weight as "
     "contiguous (garbage that changes from run to run)"),
    ("F.batch_norm", lambda a, kw, b: _arg(a, kw, 5, "training") and _noncontig(_arg(a, kw, 3, "weight")),
     "training-mode batch_norm backward on the CPU reads a non-contiguous weight as contiguous (seed 35 case "
     "8998; tests/ops/test_pytorch_divergences.cpp TrainingBatchNormGradientWithAStridedWeight)"),
    ("F.batch_norm", lambda a, kw, b: _odd_channels_last(a[0]),
     "batch_norm backward of a channels_last input whose size-1 dims have other strides than channels_last's "
     "(strides (1, 1, 2, 2) for (1, 2, 1, 3)) is wrong"),
    ("F.batch_norm", lambda a, kw, b: _arg(a, kw, 5, "training") and _past(a[0], 1e18),
     "float statistics of values past ~1e19 overflow in torch's float paths (the output is the bias, or NaN, "
     "where float64 gives finite values; tests/ops/test_pytorch_divergences.cpp "
     "FloatBatchNormOfValuesNearTheRangeEnd)"),
    ("F.layer_norm", lambda a, kw, b: math.prod(a[1]) == 1,
     "layer_norm over one element is exactly 0 (times weight, plus bias): torch's folded affine leaves rounding "
     "noise, and its 16-bit double backward NaN"),
    ("F.layer_norm", lambda a, kw, b: _past(a[0], 1e18),
     "float statistics of values past ~1e19 overflow in torch (E[x^2]): NaN or 0 where the result is finite"),
    ("F.layer_norm", lambda a, kw, b: b.grad2 and _arg(a, kw, 2, "weight") is None and isinstance(
        _arg(a, kw, 3, "bias"), torch.Tensor) and _arg(a, kw, 3, "bias").requires_grad,
     "without a weight, layer_norm's double backward drops the bias gradient's dependence on the bias: "
     "second derivatives None (or missing that term) where they are not zero"),
    ("F.group_norm", lambda a, kw, b: _past(a[0], 1e18),
     "float statistics of values past ~1e19 overflow in torch (E[x^2]): NaN or 0 where the result is finite"),
    ("F.group_norm", lambda a, kw, b: _group_of_one(a),
     "a group of one element normalizes to exactly 0 (times weight, plus bias): torch's folded affine leaves "
     "rounding noise amplified by 1/sqrt(eps)"),
    ("var_mean", lambda a, kw, b: bool(a[0].isinf().any()),
     "var_mean's Welford mean is NaN where the mean is +-inf (torch.mean gives the inf)"),
    ("std", lambda a, kw, b: a[1] is None and _float32_sum_overflows(a[0]),
     "std over all elements of float32 takes the mean in float32 first: its sum overflows where the std is finite"),
    ("var", lambda a, kw, b: a[1] is None and _float32_sum_overflows(a[0]),
     "var over all elements of float32 takes the mean in float32 first: its sum overflows"),
    ("index_put_", lambda a, kw, b: not a[0].is_floating_point() and isinstance(a[2], torch.Tensor) and
     a[2].requires_grad and not any(isinstance(i, torch.Tensor) for i in a[1]),
     "x[basic index] = v with an integer or bool x and a v that requires grad marks x as requiring grad "
     "(CopySlices); a backward through it hits an internal assert"),
]


INT_DIVISION = {"div", "div_", "remainder", "remainder_", "fmod", "fmod_"}


class StopProgram(Exception):
    """Raised inside a generator when torch refused an op (the program ends)."""


class SkipCase(Exception):
    """The reference cannot run this program (e.g. an op newer than this torch)."""


def weights(salt, v, numel):
    """The loss weights; brisk_fuzz_runner.cpp's weights() is the same formula."""
    return [float((i * 37 + v * 17 + salt * 5) % 19 - 9) / 8.0 for i in range(numel)]


_IS_ZEROTENSOR = getattr(torch, "_is_zerotensor", lambda t: False)


def record(t):
    """A tensor as the plain data the comparison reads (as the runner prints it)."""
    if t is None:
        return None
    if not isinstance(t, torch.Tensor):
        raise TypeError("op returned %s" % type(t).__name__)
    d = t.detach()
    if _IS_ZEROTENSOR(d):  # torch's lazy zeros (second-order gradients): no storage to read
        data = [0.0] * d.numel()
    else:
        data = d.reshape(-1).tolist() if d.numel() else []
    if d.dtype == torch.bool:
        data = [int(x) for x in data]
    return {"dtype": DTYPE_NAME[d.dtype], "shape": list(d.shape), "rg": bool(t.requires_grad), "data": data}


SPECIAL_FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e30, -1e-30, 65504.0, 70000.0, 1e-7, 3e38, -1.0, 1.0,
                  0.5, -2.5, 1e-40]


def with_layout(t, layout):
    """t with the strides of `layout` ("t": reversed, "step": every other
    element of dim 0, "offset": storage offset 3), detached. Not a view made
    under no_grad (torch would carry that into later in-place checks)."""
    shape = list(t.shape)
    if layout == "t" and t.dim() >= 2:
        # the strides brisk_fuzz_runner's make_input gets from
        # x.permute(rev).contiguous().permute(rev): contiguous() keeps a
        # tensor that is contiguous already whatever its size-1 dims'
        # strides (computing them as reversed products gave (2, 1, 1, 1)
        # the strides (1, 2, 2, 2) here and (1, 1, 1, 1) in the runner:
        # seed 167 case 367574, a view that only one side could make)
        rev = list(range(t.dim() - 1, -1, -1))
        strides = torch.empty(shape).permute(rev).contiguous().permute(rev).stride()
        out = torch.empty_strided(shape, strides, dtype=t.dtype)
    elif layout == "step" and t.dim() >= 1 and shape[0]:
        strides = [s * 2 if d == 0 else s for d, s in enumerate(torch.empty(shape).stride())]
        out = torch.empty_strided(shape, strides, dtype=t.dtype)
    elif layout == "offset":
        out = torch.zeros(t.numel() + 3, dtype=t.dtype)[3:].view(shape)
    else:
        return t.detach()
    with torch.no_grad():
        out.copy_(t)
    return out.detach()


def _storage_ptr(t):
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage().data_ptr()
    return t.storage().data_ptr()


class Builder:
    def __init__(self, rng, family):
        self.rng = rng
        self.family = family
        self.inputs = []       # JSON specs
        self.ops = []          # (name, args, kw) with wrapped arguments
        self.vals = []         # live torch tensors, by value id
        self.snaps = []        # per op: list of records
        self.op_dtypes = []    # per op: the signature's dtype part
        self.op_first = []     # per op: the value id of its first output
        self.error = None      # (op index, exception type, message) of the op torch refused
        self.focus = None      # op index blamed for gradient divergences
        self.grad = rng.random() < 0.55
        self.grad2 = False
        self.crash_only = False  # torch cannot run the program: only check that brisk does not crash
        self.leaves = []       # value ids of inputs requiring grad
        self.input_snapshot = {}
        self.bool_index = None  # first x[..., True, ...]: torch copies, brisk returns a view
        self.aliased_inplace = None  # first in-place op on a tensor that other live values (requiring grad) alias  # op index -> copy of the input whose indices the op returns
        self.stale_view_leaf = None  # op torch refused as "a leaf Variable ..." on a view (a stale view history)

    # ---- inputs -------------------------------------------------------------------------

    def values(self, dtype, n, kind=None):
        r = self.rng
        if kind is None:
            kind = r.choices(["normal", "special", "intlike", "positive"], [5, 3, 2, 1])[0]
        out = []
        if dtype == "bool":
            return [r.random() < 0.5 for _ in range(n)]
        if dtype in INTS:
            lo, hi = INT_RANGE[dtype]
            for _ in range(n):
                if kind == "special" and r.random() < 0.3:
                    x = r.choice([lo, hi, 0, -1, 1, lo + 1, hi - 1, 2 ** 31, -2 ** 31 - 1, 256, -129, 127])
                elif kind == "positive":
                    x = r.randint(1, 6)
                elif kind == "index":
                    x = r.randint(0, 3)
                else:
                    x = r.randint(-6, 6) if lo < 0 else r.randint(0, 12)
                out.append(clamp_int(x, dtype))
            return out
        if kind == "distinct":
            vals = [round_to_dtype(x * 0.375 - 2, dtype) for x in r.sample(range(max(n, 1) * 2), n)]
            if len(set(vals)) == n:
                return vals
            kind = "normal"
        for _ in range(n):
            if kind == "special" and r.random() < 0.35:
                x = r.choice(SPECIAL_FLOATS)
            elif kind == "intlike":
                x = r.randint(-4, 4) * r.choice([1, 0.5])
            elif kind == "positive":
                x = abs(r.gauss(0, 1.5)) + 0.05
            elif kind == "unit":
                x = r.uniform(0.02, 0.98)
            elif kind == "small":
                x = r.gauss(0, 0.5)
            else:
                x = r.gauss(0, 1.5)
            out.append(round_to_dtype(x, dtype))
        return out

    def inp(self, dtype, shape, rg=None, kind=None, layout=None, data=None):
        """A new input; rg None means 'when this program does gradients, mostly'."""
        r = self.rng
        shape = list(shape)
        n = 1
        for s in shape:
            n *= s
        if data is None:
            data = self.values(dtype, n, kind)
        if rg is None:
            rg = dtype in FLOATS and self.grad and r.random() < 0.85
        rg = bool(rg and dtype in FLOATS)
        if layout is None and len(shape) >= 1 and r.random() < 0.25:
            layout = r.choice(["t", "step", "offset"])
            if layout == "t" and len(shape) < 2:
                layout = "step"
        spec = {"id": len(self.vals), "dtype": dtype, "shape": shape, "data": [encode(float(x)) if dtype in FLOATS else int(x)
                                                        for x in data], "layout": layout, "rg": rg}
        t = torch.tensor([float(x) for x in data] if dtype in FLOATS else [int(x) for x in data],
                         dtype=torch.float64 if dtype in FLOATS else torch.int64).reshape(shape).to(TORCH_DTYPE[dtype])
        t = with_layout(t, layout)
        if rg:
            t.requires_grad_(True)
            self.leaves.append(len(self.vals))
        self.inputs.append(spec)
        self.vals.append(t)
        return V(len(self.vals) - 1)

    # ---- queries the generator may make ----------------------------------------------------

    def shape(self, v):
        return list(self.vals[v.k].shape)

    def dtype(self, v):
        return DTYPE_NAME[self.vals[v.k].dtype]

    def ndim(self, v):
        return self.vals[v.k].dim()

    def numel(self, v):
        return self.vals[v.k].numel()

    def overlap_unknown(self, v):
        """Whether torch cannot tell if v's elements overlap in memory."""
        check = getattr(torch, "_debug_has_internal_overlap", None)
        return bool(check) and check(self.vals[v.k]) == 2

    def requires_grad(self, v):
        return self.vals[v.k].requires_grad

    # ---- op calls ---------------------------------------------------------------------------

    def decode(self, a):
        if isinstance(a, V):
            return self.vals[a.k]
        if isinstance(a, (S, I, B)):
            return a.x
        if isinstance(a, DT):
            return TORCH_DTYPE[a.name]
        if isinstance(a, list):
            return [self.decode(x) for x in a]
        if isinstance(a, tuple):
            return tuple(self.decode(x) for x in a)
        return a

    def dtype_sig(self, args, kw):
        """The dtype part of a signature: the classes (SIG_CLASS) of the tensor
        arguments and the kinds of the scalar ones, sorted, joined by '+';
        '->class' for a dtype argument."""
        from .program import SIG_CLASS, is_scalar, scalar_kind
        parts = set()

        def walk(a):
            if isinstance(a, V):
                parts.add(SIG_CLASS[self.dtype(a)])
            elif is_scalar(a):
                parts.add(scalar_kind(a))
            elif isinstance(a, (list, tuple)):
                for x in a:
                    walk(x)
        for a in args:
            walk(a)
        for v in kw.values():
            if isinstance(v, V):
                walk(v)
        sig = "+".join(sorted(parts)) if parts else "-"
        if "dtype" in kw and isinstance(kw["dtype"], DT):
            sig += "->" + SIG_CLASS[kw["dtype"].name]
        return sig

    def loosest_float(self):
        """The float dtype of least precision among the program's values (the
        gradients of its leaves are computed through all of them)."""
        order = ["bfloat16", "float16", "float32", "float64"]
        seen = [DTYPE_NAME[t.dtype] for t in self.vals if t.is_floating_point()]
        seen += [kw["dtype"].name for _, _, kw in self.ops if isinstance(kw.get("dtype"), DT)]
        for d in order:
            if d in seen:
                return d
        return "float64"

    def call(self, name, *args, focus=False, **kw):
        """Runs op `name` in torch and records it; returns its outputs as V's
        (one V for single-output ops, a list otherwise)."""
        op = OPS[name]
        if op.min_torch and TORCH_VERSION < op.min_torch:
            raise SkipCase("torch %s lacks %s" % (torch.__version__, name))
        if name in INT_DIVISION and self._int_division_hazard(name, args, kw):
            # torch dies of SIGFPE here: run the program in brisk only, to check that it does not.
            self.ops.append((name, list(args), kw))
            self.op_first.append(len(self.vals))
            self.op_dtypes.append(self.dtype_sig(args, kw))
            self.crash_only = True
            raise SkipCase("torch crashes on integer division of the minimum by -1")
        for quirk_op, before, applies, why in REFERENCE_QUIRKS:
            if name == quirk_op and TORCH_VERSION < before and applies(self.decode(list(args))):
                raise SkipCase("torch %s: %s" % (torch.__version__, why))
        for bug_op, applies, why in TORCH_BUGS:
            if name == bug_op and applies(self.decode(list(args)), {k: self.decode(v) for k, v in kw.items()}, self):
                raise SkipCase("torch bug: %s" % why)
        kw = {k: v for k, v in kw.items() if v is not None}
        index = len(self.ops)
        if name == "index" and self.bool_index is None and any(isinstance(x, bool) for x in args[1]):
            self.bool_index = index
        self.ops.append((name, list(args), kw))
        self.op_first.append(len(self.vals))
        self.op_dtypes.append(self.dtype_sig(args, kw))
        if focus or self.focus is None:
            self.focus = index
        if op.inplace and self.aliased_inplace is None and args and isinstance(args[0], V):
            self._check_aliases(args[0], index)
        try:
            if op.index_check:
                src = self.decode(args[op.index_check[0]])
                self.input_snapshot[index] = src.detach().clone()
            res = op.torch_fn(self.decode(list(args)), {k: self.decode(v) for k, v in kw.items()})
            outs = [res] if op.out == "one" else list(res)
            recs = [record(t) for t in outs]
        except StopProgram:
            raise
        except Exception as e:  # torch refused: the reference is an error
            self.error = (index, type(e).__name__, str(e).split("\n")[0][:300])
            target = self.vals[args[0].k] if op.inplace and args and isinstance(args[0], V) else None
            if str(e).startswith("a leaf Variable that requires grad") and target is not None and \
                    target._base is not None:
                # A view's history stale since its base was changed in place: torch checks the
                # stale history, brisk regenerates it first (docs/porting.md).
                self.stale_view_leaf = index
            raise StopProgram()
        self.snaps.append(recs)
        first = len(self.vals)
        self.vals.extend(outs)
        ids = [V(first + i) for i in range(len(outs))]
        return ids[0] if op.out == "one" else ids

    def _check_aliases(self, target, index):
        t = self.vals[target.k]
        key = _storage_ptr(t)
        if key == 0:  # no storage (an empty tensor of its own); an empty view still aliases its base
            return
        for k, u in enumerate(self.vals):
            if k != target.k and u is not t and u.numel() and _storage_ptr(u) == key:
                self.aliased_inplace = index
                return

    def _int_division_hazard(self, name, args, kw):
        """Integer division of INT_MIN by -1 (a SIGFPE in torch's kernels)."""
        if name.startswith("div") and kw.get("rounding_mode") is None:
            return False
        a, b = self.decode(args[0]), self.decode(args[1])
        if not isinstance(a, torch.Tensor) or a.is_floating_point() or \
                (isinstance(b, torch.Tensor) and b.is_floating_point()) or isinstance(b, float):
            return False
        minus_one = bool((b == -1).any()) if isinstance(b, torch.Tensor) else b == -1
        return minus_one and bool(((a == -2 ** 63) | (a == -2 ** 31)).any())

    # ---- after the program: final values and gradients ---------------------------------------

    def finish(self):
        """The reference result, shaped as the runner's JSON line."""
        res = {"snaps": self.snaps, "failed_op": None, "status": "ok"}
        if self.error is not None:
            res["failed_op"] = self.error[0]
            res["status"] = "error"
            res["msg"] = "%s: %s" % (self.error[1], self.error[2])
            return res
        res["final"] = [record(t) for t in self.vals]
        if not (self.grad and self.leaves):
            return res
        loss = None
        bw = {"status": "ok"}
        try:
            for v, t in enumerate(self.vals):
                if not (t.is_floating_point() and t.requires_grad):
                    continue
                w = torch.tensor(weights(0, v, t.numel()), dtype=torch.float64).reshape(t.shape)
                term = (t.to(torch.float64) * w).sum()
                loss = term if loss is None else loss + term
            if loss is not None:
                loss.backward(retain_graph=True)
        except Exception as e:
            bw = {"status": "error", "msg": "%s: %s" % (type(e).__name__, str(e).split("\n")[0][:300])}
        bw["has_loss"] = loss is not None
        if bw["status"] == "ok":
            bw["grads"] = [record(self.vals[k].grad) for k in self.leaves]
        res["bw"] = bw
        if not self.grad2 or bw["status"] != "ok" or loss is None:
            return res
        bw2 = {"status": "ok", "has_loss": False}
        try:
            xs = [self.vals[k] for k in self.leaves]
            g = torch.autograd.grad(loss, xs, create_graph=True, allow_unused=True)
            s = None
            for k, gk in enumerate(g):
                if gk is None or not gk.requires_grad:
                    continue
                w = torch.tensor(weights(1, k, gk.numel()), dtype=torch.float64).reshape(gk.shape)
                term = (gk.to(torch.float64) * w).sum()
                s = term if s is None else s + term
            if s is not None:
                bw2["has_loss"] = True
                second = torch.autograd.grad(s, xs, allow_unused=True)
                bw2["grads"] = [record(x) for x in second]
        except Exception as e:
            bw2 = {"status": "error", "has_loss": True,
                   "msg": "%s: %s" % (type(e).__name__, str(e).split("\n")[0][:300])}
        res["bw2"] = bw2
        return res

    def program(self, case_id):
        return {"case": case_id, "family": self.family, "inputs": self.inputs,
                "ops": [{"op": n, "out": first, "args": encode(a), "kw": {k: encode(v) for k, v in kw.items()}}
                        for (n, a, kw), first in zip(self.ops, self.op_first)],
                "grad": bool(self.grad and self.leaves), "grad2": bool(self.grad2 and self.leaves)}

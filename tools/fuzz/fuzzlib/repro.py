"""A program as standalone C++ (brisk) and Python (torch) source."""
from .ops import OPS
from .program import FLOATS, CPP_DTYPE, py_float, cpp_float


def _data_py(spec):
    if spec["dtype"] in FLOATS:
        return "[" + ", ".join(py_float(float(x) if not isinstance(x, str) else float(x)) for x in spec["data"]) + "]"
    return repr([int(x) for x in spec["data"]])


def _data_cpp(spec):
    if spec["dtype"] in FLOATS:
        return "std::vector<double>{" + ", ".join(cpp_float(float(x)) for x in spec["data"]) + "}"
    return "std::vector<int64_t>{" + ", ".join(
        ("INT64_MIN" if int(x) == -2 ** 63 else "int64_t(%d)" % int(x)) for x in spec["data"]) + "}"


def _outs(builder, i):
    first = builder.op_first[i]
    name = builder.ops[i][0]
    n = len(builder.snaps[i]) if i < len(builder.snaps) else (1 if OPS[name].out == "one" else 2)
    return ["v%d" % (first + k) for k in range(n)], n


def python_source(builder):
    lines = ["import torch", "import torch.nn.functional as F", "",
             "def W(salt, v, t):  # the fuzzer's loss weights",
             "    n = t.numel()",
             "    return torch.tensor([((i * 37 + v * 17 + salt * 5) % 19 - 9) / 8.0 for i in range(n)],",
             "                        dtype=torch.float64).reshape(t.shape)", ""]
    for spec in builder.inputs:
        k = spec["id"]
        dt = spec["dtype"]
        src = "torch.float64" if dt in FLOATS else "torch.int64"
        lines.append("v%d = torch.tensor(%s, dtype=%s).reshape(%s).to(torch.%s)" % (
            k, _data_py(spec), src, tuple(spec["shape"]), dt))
        lay = spec.get("layout")
        if lay == "t" and len(spec["shape"]) >= 2:
            rev = tuple(range(len(spec["shape"])))[::-1]
            lines.append("v%d = v%d.permute(%s).contiguous().permute(%s)  # non-contiguous" % (k, k, rev, rev))
        elif lay == "step" and spec["shape"]:
            lines.append("_b = torch.zeros([%d] + %s, dtype=v%d.dtype); _b[::2] = v%d; v%d = _b[::2]" % (
                spec["shape"][0] * 2, spec["shape"][1:], k, k, k))
        elif lay == "offset":
            lines.append("_b = torch.zeros(v%d.numel() + 3, dtype=v%d.dtype); _b[3:] = v%d.reshape(-1); "
                         "v%d = _b[3:].view(%s)" % (k, k, k, k, tuple(spec["shape"])))
        if spec["rg"]:
            lines.append("v%d.requires_grad_()" % k)
    for i, (name, args, kw) in enumerate(builder.ops):
        names, n = _outs(builder, i)
        expr = OPS[name].py(args, kw)
        lhs = names[0] if OPS[name].out == "one" else ", ".join(names) + ("," if n == 1 else "")
        if OPS[name].out != "one" and n == 0:
            lhs = "_"
        lines.append("%s = %s" % (lhs, expr))
        lines.append("print(%r, %s)" % (", ".join(names) or "(none)", ", ".join(names) or "None"))
    nv = len(builder.vals)
    if builder.error is None and builder.grad and builder.leaves:
        lines.append("loss = sum((v.double() * W(0, k, v)).sum() for k, v in enumerate([%s])"
                     " if v.is_floating_point() and v.requires_grad)" % ", ".join("v%d" % k for k in range(nv)))
        lines.append("loss.backward(retain_graph=True)")
        for k in builder.leaves:
            lines.append("print('v%d.grad', v%d.grad)" % (k, k))
        if builder.grad2:
            leaves = ", ".join("v%d" % k for k in builder.leaves)
            lines.append("g = torch.autograd.grad(loss, [%s], create_graph=True, allow_unused=True)" % leaves)
            lines.append("s = sum((x.double() * W(1, k, x)).sum() for k, x in enumerate(g) "
                         "if x is not None and x.requires_grad)")
            lines.append("print('second:', torch.autograd.grad(s, [%s], allow_unused=True))" % leaves)
    return "\n".join(lines) + "\n"


def cpp_source(builder):
    lines = ["#include <brisk/brisk.h>", "", "#include <cmath>", "#include <cstdint>", "#include <iostream>", "",
             "using namespace brisk;", "namespace F = brisk::nn::functional;", "", "// The fuzzer's loss weights.",
             "static Tensor W(int64_t salt, int64_t v, const Tensor& t) {",
             "  Tensor w = brisk::empty(t.sizes(), kFloat64);",
             "  for (int64_t i = 0; i < w.numel(); ++i)",
             "    w.data_ptr<double>()[i] = double((i * 37 + v * 17 + salt * 5) % 19 - 9) / 8.0;",
             "  return w;", "}", "", "int main() {"]
    for spec in builder.inputs:
        k = spec["id"]
        dt = spec["dtype"]
        src = "kFloat64" if dt in FLOATS else "kInt64"
        lines.append("  Tensor v%d = brisk::tensor(%s, std::vector<int64_t>{%s}, %s).to(%s);" % (
            k, _data_cpp(spec), ", ".join(str(s) for s in spec["shape"]), src, CPP_DTYPE[dt]))
        lay = spec.get("layout")
        if lay == "t" and len(spec["shape"]) >= 2:
            rev = ", ".join(str(d) for d in range(len(spec["shape"]))[::-1])
            lines.append("  v%d = v%d.permute({%s}).contiguous().permute({%s});  // non-contiguous" % (k, k, rev, rev))
        elif lay == "step" and spec["shape"]:
            big = [spec["shape"][0] * 2] + spec["shape"][1:]
            lines.append("  { Tensor b = brisk::zeros({%s}, v%d.dtype()); Tensor s = b.slice(0, 0, std::nullopt, 2); "
                         "s.copy_(v%d); v%d = s; }" % (", ".join(map(str, big)), k, k, k))
        elif lay == "offset":
            lines.append("  { Tensor b = brisk::zeros({v%d.numel() + 3}, v%d.dtype()); Tensor s = b.slice(0, 3); "
                         "s.copy_(v%d.reshape({-1})); v%d = s.view(v%d.sizes()); }" % (k, k, k, k, k))
        if spec["rg"]:
            lines.append("  v%d.requires_grad_();" % k)
    for i, (name, args, kw) in enumerate(builder.ops):
        names, n = _outs(builder, i)
        expr = OPS[name].cpp(args, kw)
        if OPS[name].out == "one":
            lines.append("  Tensor %s = %s;" % (names[0], expr))
        elif OPS[name].out == "tuple":
            lines.append("  auto [%s] = %s;" % (", ".join(names), expr))
        else:
            lines.append("  std::vector<Tensor> out%d = %s;" % (i, expr))
            for k, nm in enumerate(names):
                lines.append("  Tensor %s = out%d.at(%d);" % (nm, i, k))
        for nm in names:
            lines.append('  std::cout << "%s = " << %s << "\\n";' % (nm, nm))
    nv = len(builder.vals)
    if builder.error is None and builder.grad and builder.leaves:
        lines.append("  Tensor loss = brisk::zeros({}, kFloat64);")
        lines.append("  std::vector<Tensor> vals = {%s};" % ", ".join("v%d" % k for k in range(nv)))
        lines.append("  for (size_t k = 0; k < vals.size(); ++k)")
        lines.append("    if (vals[k].is_floating_point() && vals[k].requires_grad())")
        lines.append("      loss = loss.add(vals[k].to(kFloat64).mul(W(0, int64_t(k), vals[k])).sum());")
        lines.append("  loss.backward(Tensor(), true);")
        for k in builder.leaves:
            lines.append('  std::cout << "v%d.grad = " << v%d.grad() << "\\n";' % (k, k))
        if builder.grad2:
            leaves = ", ".join("v%d" % k for k in builder.leaves)
            lines.append("  TensorList g = autograd::grad({loss}, {%s}, {}, true, true, true);" % leaves)
            lines.append("  Tensor s = brisk::zeros({}, kFloat64);")
            lines.append("  for (size_t k = 0; k < g.size(); ++k)")
            lines.append("    if (g[k].defined() && g[k].requires_grad())")
            lines.append("      s = s.add(g[k].to(kFloat64).mul(W(1, int64_t(k), g[k])).sum());")
            lines.append("  TensorList gg = autograd::grad({s}, {%s}, {}, std::nullopt, false, true);" % leaves)
            lines.append('  for (auto& x : gg) std::cout << "second: " << x << "\\n";')
    lines.append("}")
    return "\n".join(lines) + "\n"

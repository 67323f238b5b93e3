"""Writes tests/nn/activation_loss_ref.h: PyTorch's values and gradients for
tests/nn/test_activation_modules.cpp and tests/nn/test_loss_modules.cpp.

Run with PyTorch 2.x (float64 throughout):
    /work/venv-torch/bin/python tests/nn/gen_activation_loss_ref.py
Inputs are dyadic where a case tests a kink, so that the kink is hit exactly.
"""
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)
D = torch.float64
ref = {}


def put(key, t):
    t = t.detach().to(D).reshape(-1)
    assert key not in ref, key
    ref[key] = [float(v) for v in t]


def dyadic(*shape, scale=1.0):
    return (torch.randn(*shape, dtype=D) * scale * 64).round() / 64


# ---- activations ---------------------------------------------------------------------
X = torch.tensor([-100, -20.5, -6, -3.5, -3, -2.5, -2, -1, -0.5, -0.25, 0, 0.25, 0.5, 1, 2.5, 3, 5, 6, 20, 20.5, 100],
                 dtype=D)
put("act.x", X)

ACTS = {
    "relu": lambda x: F.relu(x),
    "relu6": lambda x: F.relu6(x),
    "leaky_relu": lambda x: F.leaky_relu(x),
    "leaky_relu.0.2": lambda x: F.leaky_relu(x, 0.2),
    "elu": lambda x: F.elu(x),
    "elu.0.5": lambda x: F.elu(x, 0.5),
    "selu": lambda x: F.selu(x),
    "celu.2": lambda x: F.celu(x, 2.0),
    "gelu": lambda x: F.gelu(x),
    "gelu.tanh": lambda x: F.gelu(x, approximate="tanh"),
    "hardshrink": lambda x: F.hardshrink(x),
    "hardshrink.1": lambda x: F.hardshrink(x, 1.0),
    "softshrink": lambda x: F.softshrink(x),
    "softshrink.1": lambda x: F.softshrink(x, 1.0),
    "hardtanh": lambda x: F.hardtanh(x),
    "hardtanh.-2.3": lambda x: F.hardtanh(x, -2.0, 3.0),
    "hardswish": lambda x: F.hardswish(x),
    "hardsigmoid": lambda x: F.hardsigmoid(x),
    "logsigmoid": lambda x: F.logsigmoid(x),
    "softsign": lambda x: F.softsign(x),
    "tanhshrink": lambda x: F.tanhshrink(x),
    "softplus": lambda x: F.softplus(x),
    "softplus.2.10": lambda x: F.softplus(x, beta=2.0, threshold=10.0),
    "threshold.0.5.-7": lambda x: F.threshold(x, 0.5, -7.0),
    "silu": lambda x: F.silu(x),
    "mish": lambda x: F.mish(x),
    "sigmoid": lambda x: torch.sigmoid(x),
    "tanh": lambda x: torch.tanh(x),
    "rrelu.eval": lambda x: F.rrelu(x, training=False),
    "prelu.scalar": lambda x: F.prelu(x, torch.tensor([0.25], dtype=D)),
}
for name, fn in ACTS.items():
    x = X.clone().requires_grad_()
    y = fn(x)
    y.backward(torch.ones_like(y))
    put(f"act.{name}.y", y)
    put(f"act.{name}.dx", x.grad)

# prelu per channel: x (2, 3, 4), weight (3); gradients of sum(y * g).
xp = dyadic(2, 3, 4, scale=2.0)
xp[0, 0, 0] = 0.0
wp = torch.tensor([0.25, -0.5, 1.5], dtype=D)
gp = dyadic(2, 3, 4)
put("prelu.x", xp)
put("prelu.w", wp)
put("prelu.g", gp)
x = xp.clone().requires_grad_()
w = wp.clone().requires_grad_()
y = F.prelu(x, w)
y.backward(gp)
put("prelu.y", y)
put("prelu.dx", x.grad)
put("prelu.dw", w.grad)

# dim-taking activations: x (4, 6)
xs = torch.randn(4, 6, dtype=D) * 3
gs = torch.randn(4, 6, dtype=D)
put("dim.x", xs)
put("dim.g", gs)
DIMS = {
    "glu.-1": lambda x: F.glu(x, -1),
    "glu.0": lambda x: F.glu(x, 0),
    "softmax.1": lambda x: F.softmax(x, 1),
    "softmax.0": lambda x: F.softmax(x, 0),
    "softmin.1": lambda x: F.softmin(x, 1),
    "log_softmax.1": lambda x: F.log_softmax(x, 1),
    "softmax2d": lambda x: torch.nn.Softmax2d()(x.reshape(2, 3, 4)).reshape(4, 6),
}
for name, fn in DIMS.items():
    x = xs.clone().requires_grad_()
    y = fn(x)
    y.backward(gs[..., : y.shape[-1]][: y.shape[0]] if y.shape != gs.shape else gs)
    put(f"dim.{name}.y", y)
    put(f"dim.{name}.dx", x.grad)


# ---- losses --------------------------------------------------------------------------
def loss_case(key, fn, inputs, grad_of=None, reductions=("none", "mean", "sum")):
    """Values of fn(*inputs, reduction=r) for each r and the gradients of the
    mean (or of the last reduction) with respect to inputs[i] for i in grad_of."""
    grad_of = grad_of if grad_of is not None else [0]
    for r in reductions:
        ins = [t.clone().requires_grad_() if (i in grad_of and t.is_floating_point()) else t
               for i, t in enumerate(inputs)]
        out = fn(*ins, reduction=r)
        put(f"{key}.{r}", out)
        if r == reductions[1 if len(reductions) > 1 else 0]:
            out.backward(torch.ones_like(out))
            for i in grad_of:
                put(f"{key}.{r}.d{i}", ins[i].grad)


# regression losses: kinks at d = 0 and |d| = beta / delta
xr = dyadic(4, 5, scale=2.0)
yr = dyadic(4, 5, scale=2.0)
yr[0, 0] = xr[0, 0]            # d = 0
yr[0, 1] = xr[0, 1] - 1.0      # d = 1 (beta, delta 1)
yr[0, 2] = xr[0, 2] + 0.5      # d = -0.5
yr[0, 3] = xr[0, 3] - 2.0      # d = 2 (delta 2)
put("reg.x", xr)
put("reg.y", yr)
loss_case("mse", F.mse_loss, [xr, yr], [0, 1])
loss_case("l1", F.l1_loss, [xr, yr], [0, 1])
loss_case("smooth_l1", F.smooth_l1_loss, [xr, yr], [0, 1])
loss_case("smooth_l1.b0.5", lambda a, b, reduction: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.5), [xr, yr])
loss_case("huber", F.huber_loss, [xr, yr], [0, 1])
loss_case("huber.d2", lambda a, b, reduction: F.huber_loss(a, b, reduction=reduction, delta=2.0), [xr, yr])

# classification
xc = torch.randn(4, 5, dtype=D) * 2
tc = torch.tensor([1, 0, 4, 2])
wc = torch.tensor([0.5, 1.0, 2.0, 1.5, 0.25], dtype=D)
put("cls.x", xc)
put("cls.t", tc)
put("cls.w", wc)
loss_case("ce", F.cross_entropy, [xc, tc])
loss_case("ce.w", lambda a, b, reduction: F.cross_entropy(a, b, weight=wc, reduction=reduction), [xc, tc])
loss_case("ce.ignore2", lambda a, b, reduction: F.cross_entropy(a, b, ignore_index=2, reduction=reduction), [xc, tc])
loss_case("ce.ls", lambda a, b, reduction: F.cross_entropy(a, b, label_smoothing=0.1, reduction=reduction), [xc, tc])
loss_case("ce.w.ls.ignore2", lambda a, b, reduction: F.cross_entropy(a, b, weight=wc, ignore_index=2,
                                                                    label_smoothing=0.2, reduction=reduction), [xc, tc])
pc = torch.softmax(torch.randn(4, 5, dtype=D), 1)
put("cls.p", pc)
loss_case("ce.prob", F.cross_entropy, [xc, pc])
lp = F.log_softmax(xc, 1)
put("cls.logp", lp)
loss_case("nll", F.nll_loss, [lp, tc])
loss_case("nll.w.ignore0", lambda a, b, reduction: F.nll_loss(a, b, weight=wc, ignore_index=0, reduction=reduction),
          [lp, tc])

# binary
xb = torch.randn(4, 5, dtype=D) * 3
xb[0, 0], xb[0, 1] = 50.0, -50.0
tb = torch.rand(4, 5, dtype=D)
tb[1, 0], tb[1, 1] = 0.0, 1.0
pb = torch.sigmoid(torch.randn(4, 5, dtype=D))
wb = torch.rand(5, dtype=D) + 0.5
pwb = torch.tensor([1.0, 2.0, 0.5, 3.0, 1.0], dtype=D)
put("bin.x", xb)
put("bin.t", tb)
put("bin.p", pb)
put("bin.w", wb)
put("bin.pw", pwb)
loss_case("bce", F.binary_cross_entropy, [pb, tb])
loss_case("bce.w", lambda a, b, reduction: F.binary_cross_entropy(a, b, weight=wb, reduction=reduction), [pb, tb])
loss_case("bcel", F.binary_cross_entropy_with_logits, [xb, tb])
loss_case("bcel.w.pw", lambda a, b, reduction: F.binary_cross_entropy_with_logits(
    a, b, weight=wb, pos_weight=pwb, reduction=reduction), [xb, tb])

# kl_div
tk = torch.softmax(torch.randn(4, 5, dtype=D), 1)
tk[0, 0] = 0.0
put("kl.t", tk)
loss_case("kl", F.kl_div, [lp, tk], reductions=("none", "batchmean", "sum", "mean"))
tkl = torch.log_softmax(torch.randn(4, 5, dtype=D), 1)
put("kl.logt.t", tkl)
loss_case("kl.logt", lambda a, b, reduction: F.kl_div(a, b, reduction=reduction, log_target=True),
          [lp, tkl], reductions=("none", "batchmean"))

# margin ranking: ties where -y (x1 - x2) + margin = 0
a1 = dyadic(6)
a2 = dyadic(6)
ym = torch.tensor([1, -1, 1, -1, 1, -1], dtype=D)
a2[0] = a1[0]           # margin 0: tie
a2[1] = a1[1] + 0.5     # margin 0.5, y = -1: -(-1)(x1 - x2) + 0.5 = -0.5 + 0.5 = 0
put("mr.x1", a1)
put("mr.x2", a2)
put("mr.y", ym)
loss_case("mr", F.margin_ranking_loss, [a1, a2, ym], [0, 1])
loss_case("mr.m0.5", lambda a, b, c, reduction: F.margin_ranking_loss(a, b, c, margin=0.5, reduction=reduction),
          [a1, a2, ym], [0, 1])

# hinge embedding: x = margin where y = -1 (tie)
xh = dyadic(6)
yh = torch.tensor([1, -1, -1, 1, -1, -1], dtype=D)
xh[1] = 1.0
xh[2] = 2.0
put("he.x", xh)
put("he.y", yh)
loss_case("he", F.hinge_embedding_loss, [xh, yh])
loss_case("he.m2", lambda a, b, reduction: F.hinge_embedding_loss(a, b, margin=2.0, reduction=reduction), [xh, yh])

# soft margin
xs2 = torch.randn(4, 5, dtype=D) * 3
xs2[0, 0] = 40.0
ys2 = torch.randint(0, 2, (4, 5)).to(D) * 2 - 1
put("sm.x", xs2)
put("sm.y", ys2)
loss_case("sm", F.soft_margin_loss, [xs2, ys2])

# multilabel soft margin
ym2 = torch.randint(0, 2, (4, 5)).to(D)
put("mlsm.y", ym2)
loss_case("mlsm", F.multilabel_soft_margin_loss, [xc, ym2])
loss_case("mlsm.w", lambda a, b, reduction: F.multilabel_soft_margin_loss(a, b, weight=wc, reduction=reduction),
          [xc, ym2])

# multilabel margin: targets end at the first -1; a tie z = 0 in row 0
xml = dyadic(3, 4)
tml = torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1], [2, -1, 0, 0]])
xml[0, 1] = xml[0, 3] - 1.0   # 1 - (x[3] - x[1]) = 0 (target 3, non-target 1)
put("mlm.x", xml)
put("mlm.t", tml)
loss_case("mlm", F.multilabel_margin_loss, [xml, tml])
loss_case("mlm.1d", F.multilabel_margin_loss, [xml[1], tml[1]])

# multi margin: tie margin - x[y] + x[i] = 0 in row 0
xmm = dyadic(4, 5)
xmm[0, 2] = xmm[0, 1] - 1.0   # target 1, i = 2: 1 - x1 + x2 = 0
put("mm.x", xmm)
loss_case("mm", F.multi_margin_loss, [xmm, tc])
loss_case("mm.p2.m0.5.w", lambda a, b, reduction: F.multi_margin_loss(a, b, p=2, margin=0.5, weight=wc,
                                                                      reduction=reduction), [xmm, tc])
loss_case("mm.1d", F.multi_margin_loss, [xmm[2], tc[2]])

# cosine embedding
c1 = torch.randn(4, 3, dtype=D)
c2 = torch.randn(4, 3, dtype=D)
c2[1] = c1[1] * 2.0  # cos = 1 with y = -1, margin 0: 1 - 0 > 0
yc = torch.tensor([1, -1, 1, -1], dtype=D)
put("ce2.x1", c1)
put("ce2.x2", c2)
put("ce2.y", yc)
loss_case("cosemb", F.cosine_embedding_loss, [c1, c2, yc], [0, 1])
loss_case("cosemb.m0.2", lambda a, b, c, reduction: F.cosine_embedding_loss(a, b, c, margin=0.2,
                                                                             reduction=reduction), [c1, c2, yc], [0, 1])
put("cos_sim", F.cosine_similarity(c1, c2))
put("pdist", F.pairwise_distance(c1, c2))
put("pdist.p1", F.pairwise_distance(c1, c2, p=1.0))

# triplet
ta = torch.randn(4, 3, dtype=D)
tp = torch.randn(4, 3, dtype=D)
tn = torch.randn(4, 3, dtype=D)
put("tr.a", ta)
put("tr.p", tp)
put("tr.n", tn)
loss_case("tr", F.triplet_margin_loss, [ta, tp, tn], [0, 1, 2])
loss_case("tr.p1.swap", lambda a, b, c, reduction: F.triplet_margin_loss(a, b, c, p=1.0, swap=True, margin=2.0,
                                                                         reduction=reduction), [ta, tp, tn], [0, 1, 2])
loss_case("trd", F.triplet_margin_with_distance_loss, [ta, tp, tn], [0, 1, 2])
loss_case("trd.cos.swap", lambda a, b, c, reduction: F.triplet_margin_with_distance_loss(
    a, b, c, distance_function=lambda u, v: 1.0 - F.cosine_similarity(u, v), swap=True, margin=0.5,
    reduction=reduction), [ta, tp, tn], [0, 1, 2])

# poisson nll
xpn = torch.randn(4, 5, dtype=D)
tpn = torch.tensor([[0, 1, 2, 5, 3], [1, 0, 0, 7, 2], [4, 1, 1, 0, 9], [2, 2, 3, 1, 0]], dtype=D)
xpos = torch.rand(4, 5, dtype=D) * 3
xpos[0, 0] = 0.0
put("pn.x", xpn)
put("pn.t", tpn)
put("pn.xpos", xpos)
loss_case("pn", F.poisson_nll_loss, [xpn, tpn])
loss_case("pn.full", lambda a, b, reduction: F.poisson_nll_loss(a, b, full=True, reduction=reduction), [xpn, tpn])
loss_case("pn.lin", lambda a, b, reduction: F.poisson_nll_loss(a, b, log_input=False, reduction=reduction),
          [xpos, tpn])

# gaussian nll
gi = torch.randn(4, 3, dtype=D)
gt = torch.randn(4, 3, dtype=D)
gv = torch.rand(4, 3, dtype=D) + 0.1
gv[0, 0] = 1e-8  # below eps: clamped
gv1 = torch.rand(4, dtype=D) + 0.1
gv2 = torch.rand(4, 1, dtype=D) + 0.1
put("gn.x", gi)
put("gn.t", gt)
put("gn.v", gv)
put("gn.v1", gv1)
put("gn.v2", gv2)
loss_case("gn", F.gaussian_nll_loss, [gi, gt, gv], [0, 2])
loss_case("gn.full", lambda a, b, c, reduction: F.gaussian_nll_loss(a, b, c, full=True, reduction=reduction),
          [gi, gt, gv], [0, 2])
loss_case("gn.v1", F.gaussian_nll_loss, [gi, gt, gv1], [0, 2])
loss_case("gn.v2", F.gaussian_nll_loss, [gi, gt, gv2], [0, 2])

# ctc: gradients with respect to the logits before log_softmax (PyTorch's
# gradient with respect to log_probs itself carries an extra exp(log_probs))
ctc_x = torch.randn(12, 3, 5, dtype=D)
ctc_t = torch.tensor([[1, 1, 2, 3], [2, 4, 0, 0], [0, 0, 0, 0]])
ctc_il = torch.tensor([12, 9, 5])
ctc_tl = torch.tensor([4, 2, 0])
put("ctc.x", ctc_x)
put("ctc.t", ctc_t)
put("ctc.il", ctc_il)
put("ctc.tl", ctc_tl)
loss_case("ctc", lambda a, b, reduction: F.ctc_loss(a.log_softmax(2), b, ctc_il, ctc_tl, blank=0,
                                                     reduction=reduction), [ctc_x, ctc_t])
ctc_t1 = torch.tensor([1, 1, 2, 3, 2, 4])  # the same targets, concatenated
loss_case("ctc.concat", lambda a, b, reduction: F.ctc_loss(a.log_softmax(2), b, ctc_il, ctc_tl,
                                                            reduction=reduction), [ctc_x, ctc_t1])
ctc_tb = torch.tensor([[1, 1, 2, 3], [2, 0, 3, 3], [1, 2, 1, 2]])  # blank 4; sample 2 too long for 5 steps
ctc_tlb = torch.tensor([4, 3, 4])
put("ctc.tb", ctc_tb)
put("ctc.tlb", ctc_tlb)
loss_case("ctc.blank4.zinf", lambda a, b, reduction: F.ctc_loss(a.log_softmax(2), b, torch.tensor([12, 9, 3]), ctc_tlb,
                                                                 blank=4, zero_infinity=True, reduction=reduction),
          [ctc_x, ctc_tb])
loss_case("ctc.unbatched", lambda a, b, reduction: F.ctc_loss(a.log_softmax(1), b, torch.tensor(10),
                                                               torch.tensor(3), reduction=reduction),
          [ctc_x[:, 0], ctc_t[0, :3]])

# ---- write ---------------------------------------------------------------------------
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "activation_loss_ref.h")
with open(out, "w") as f:
    f.write("// Generated by tests/nn/gen_activation_loss_ref.py with torch " + torch.__version__.split("+")[0] +
            ": PyTorch's values\n// and gradients (float64) for the activation and loss module tests. Do not edit.\n")
    f.write("#pragma once\n#include <map>\n#include <string>\n#include <vector>\n\n")
    f.write("namespace activation_loss_ref {\n\n")
    f.write("inline const std::map<std::string, std::vector<double>>& values() {\n")
    f.write("  static const std::map<std::string, std::vector<double>> m = {\n")
    for k, v in ref.items():
        f.write('      {"%s", {%s}},\n' % (k, ", ".join(repr(x) for x in v)))
    f.write("  };\n  return m;\n}\n\n}  // namespace activation_loss_ref\n")
print(out, len(ref), "entries")

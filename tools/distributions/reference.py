#!/usr/bin/env python3
"""Writes tests/distributions/reference.txt: torch.distributions' values
(torch 2.x, float64) for the cases below, read by
tests/distributions/test_distributions.cpp.

    /work/venv-torch/bin/python tools/distributions/reference.py

Lines (whitespace separated; a tensor is `shape:v0,v1,...`, shape `-` for 0-dim):
  D id Family kind=tensor ...        a distribution (kind: loc, scale, probs, logits, ... or
                                     base=id n=2 / base=id t=affine:loc:scale,sigmoid)
  M id method tensor                 method() (entropy, mean, variance, mode)
  F id method input output           method(input) (log_prob, cdf, icdf)
  K idp idq tensor                   kl_divergence(p, q)
"""
import math
import os

import torch
import torch.distributions as D

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
T = torch.tensor


def fmt(t):
    t = torch.as_tensor(t, dtype=torch.float64)
    shape = ",".join(str(s) for s in t.shape) if t.dim() else "-"
    return shape + ":" + ",".join(repr(float(v)) for v in t.reshape(-1).tolist())


lines = []
objs = {}


def dist(i, family, obj, **params):
    objs[i] = obj
    lines.append("D %s %s %s" % (i, family, " ".join("%s=%s" % (k, v if isinstance(v, str) else fmt(v))
                                                      for k, v in params.items())))


def methods(i, values=None, quantiles=None):
    d = objs[i]
    for m in ("entropy", "mean", "variance", "mode"):
        try:
            r = getattr(d, m)
            r = r() if callable(r) else r
        except NotImplementedError:
            continue
        lines.append("M %s %s %s" % (i, m, fmt(r)))
    if values is not None:
        for m in ("log_prob", "cdf"):
            try:
                lines.append("F %s %s %s %s" % (i, m, fmt(values), fmt(getattr(d, m)(values))))
            except NotImplementedError:
                pass
    if quantiles is not None:
        try:
            lines.append("F %s icdf %s %s" % (i, fmt(quantiles), fmt(d.icdf(quantiles))))
        except NotImplementedError:
            pass


loc, scale = T([0.5, -1.2, 2.0]), T([1.0, 0.3, 2.5])
loc2, scale2 = T([-0.3, 0.4, 1.0]), T([0.7, 1.1, 0.9])
q = T([0.1, 0.5, 0.93])
dist("n1", "Normal", D.Normal(loc, scale), loc=loc, scale=scale); methods("n1", T([0.1, -1.0, 3.0]), q)
dist("n2", "Normal", D.Normal(loc2, scale2), loc=loc2, scale=scale2); methods("n2", T([0.0, 2.0, -1.0]), q)
low, high = T([-1.0, 0.0, 2.0]), T([1.0, 0.5, 5.0])
low2, high2 = T([-2.0, -0.5, 1.0]), T([3.0, 0.7, 6.0])
dist("u1", "Uniform", D.Uniform(low, high), low=low, high=high); methods("u1", T([0.2, 0.25, 4.9]), q)
dist("u2", "Uniform", D.Uniform(low2, high2), low=low2, high=high2); methods("u2", T([0.0, 0.6, 1.5]), q)
dist("u4", "Uniform", D.Uniform(T([0.0, 0.2, 0.5]), T([1.0, 0.6, 0.9])), low=T([0.0, 0.2, 0.5]),
     high=T([1.0, 0.6, 0.9]))
dist("u3", "Uniform", D.Uniform(T([0.5, 1.0, 0.1]), T([2.0, 3.0, 0.4])), low=T([0.5, 1.0, 0.1]),
     high=T([2.0, 3.0, 0.4]))
p = T([0.1, 0.5, 0.9])
dist("b1", "Bernoulli", D.Bernoulli(probs=p), probs=p); methods("b1", T([1.0, 0.0, 1.0]))
lg = T([-2.0, 0.3, 4.0])
dist("b2", "Bernoulli", D.Bernoulli(logits=lg), logits=lg); methods("b2", T([0.0, 1.0, 1.0]))
dist("b3", "Bernoulli", D.Bernoulli(probs=T([0.0, 1.0, 0.3])), probs=T([0.0, 1.0, 0.3])); methods("b3", T([0.0, 1.0, 0.0]))
cp = T([[0.1, 0.2, 0.3, 0.4], [0.5, 0.0, 0.25, 0.25]])
dist("c1", "Categorical", D.Categorical(probs=cp), probs=cp); methods("c1", T([3.0, 0.0]))
cl = T([[1.0, -2.0, 0.5, 3.0], [0.0, 0.0, -1.0, 2.0]])
dist("c2", "Categorical", D.Categorical(logits=cl), logits=cl); methods("c2", T([1.0, 3.0]))
cu = T([[2.0, 1.0, 1.0, 4.0], [1.0, 1.0, 1.0, 1.0]])  # unnormalized probs
dist("c3", "Categorical", D.Categorical(probs=cu), probs=cu); methods("c3", T([0.0, 2.0]))
dist("o1", "OneHotCategorical", D.OneHotCategorical(probs=cp), probs=cp)
methods("o1", T([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]]))
dist("o2", "OneHotCategorical", D.OneHotCategorical(logits=cl), logits=cl)
methods("o2", T([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]))
gp = T([0.2, 0.7, 1.0])
dist("g1", "Geometric", D.Geometric(probs=gp), probs=gp); methods("g1", T([3.0, 0.0, 0.0]))
dist("g2", "Geometric", D.Geometric(logits=T([-1.0, 0.5, 2.0])), logits=T([-1.0, 0.5, 2.0])); methods("g2", T([1.0, 4.0, 0.0]))
rate, rate2 = T([0.5, 2.0, 1.3]), T([1.5, 0.4, 1.0])
dist("e1", "Exponential", D.Exponential(rate), rate=rate); methods("e1", T([1.3, 0.2, 0.0]), q)
dist("e2", "Exponential", D.Exponential(rate2), rate=rate2); methods("e2", T([0.1, 2.2, 5.0]), q)
dist("l1", "Laplace", D.Laplace(loc, scale), loc=loc, scale=scale); methods("l1", T([0.1, -1.0, 3.0]), q)
dist("l2", "Laplace", D.Laplace(loc2, scale2), loc=loc2, scale=scale2); methods("l2", T([0.0, 2.0, -1.0]), q)
dist("y1", "Cauchy", D.Cauchy(loc, scale), loc=loc, scale=scale); methods("y1", T([0.1, -1.0, 3.0]), q)
dist("y2", "Cauchy", D.Cauchy(loc2, scale2), loc=loc2, scale=scale2); methods("y2", T([0.0, 2.0, -1.0]), q)
dist("m1", "Gumbel", D.Gumbel(loc, scale), loc=loc, scale=scale); methods("m1", T([0.1, -1.0, 3.0]), q)
dist("m2", "Gumbel", D.Gumbel(loc2, scale2), loc=loc2, scale=scale2); methods("m2", T([0.0, 2.0, -1.0]), q)
dist("ln1", "LogNormal", D.LogNormal(loc, scale), loc=loc, scale=scale); methods("ln1", T([0.5, 0.1, 9.0]), q)
dist("ln2", "LogNormal", D.LogNormal(loc2, scale2), loc=loc2, scale=scale2); methods("ln2", T([1.5, 2.0, 0.3]), q)
# Independent over a [2, 3] Normal
L, S = T([[0.5, -1.2, 2.0], [0.0, 1.0, -0.5]]), T([[1.0, 0.3, 2.5], [0.5, 2.0, 1.5]])
L2, S2 = T([[0.1, -1.0, 1.0], [0.3, 0.0, 0.5]]), T([[0.8, 0.6, 2.0], [1.0, 1.0, 1.0]])
dist("bn1", "Normal", D.Normal(L, S), loc=L, scale=S)
dist("bn2", "Normal", D.Normal(L2, S2), loc=L2, scale=S2)
dist("i1", "Independent", D.Independent(objs["bn1"], 1), base="bn1", n="1")
methods("i1", T([[0.1, -1.0, 3.0], [0.2, 0.3, -0.4]]))
dist("i2", "Independent", D.Independent(objs["bn2"], 1), base="bn2", n="1")
# TransformedDistribution: Normal through affine then sigmoid, and through tanh
tr = [D.transforms.AffineTransform(1.0, 2.0), D.transforms.SigmoidTransform()]
dist("t1", "TransformedDistribution", D.TransformedDistribution(objs["n1"], tr), base="n1", t="affine:1:2,sigmoid")
methods("t1", T([0.2, 0.5, 0.9]), q)
dist("t2", "TransformedDistribution", D.TransformedDistribution(objs["n2"], tr), base="n2", t="affine:1:2,sigmoid")
dist("t3", "TransformedDistribution", D.TransformedDistribution(objs["n1"], [D.transforms.TanhTransform()]),
     base="n1", t="tanh")
methods("t3", T([0.2, -0.5, 0.9]), q)
dist("t4", "TransformedDistribution",
     D.TransformedDistribution(objs["n1"], [D.transforms.AffineTransform(0.5, -3.0), D.transforms.ExpTransform()]),
     base="n1", t="affine:0.5:-3,exp")
methods("t4", T([0.2, 1.5, 7.0]), q)

# the gamma family
ca, ra = T([0.5, 2.0, 7.5]), T([1.0, 0.3, 2.5])
ca2, ra2 = T([1.5, 1.0, 3.0]), T([0.7, 1.1, 0.9])
dist("ga1", "Gamma", D.Gamma(ca, ra), concentration=ca, rate=ra); methods("ga1", T([0.3, 4.0, 2.5]))
dist("ga2", "Gamma", D.Gamma(ca2, ra2), concentration=ca2, rate=ra2); methods("ga2", T([1.0, 0.0, 3.3]))
dist("x1", "Chi2", D.Chi2(T([1.0, 3.0, 10.0])), df=T([1.0, 3.0, 10.0])); methods("x1", T([0.5, 2.0, 11.0]))
c1, c0 = T([0.5, 2.0, 3.0]), T([0.7, 2.0, 1.2])
dist("be1", "Beta", D.Beta(c1, c0), concentration1=c1, concentration0=c0); methods("be1", T([0.3, 0.5, 0.99]))
dist("be2", "Beta", D.Beta(T([1.5, 0.9, 4.0]), T([2.5, 0.8, 1.0])), concentration1=T([1.5, 0.9, 4.0]),
     concentration0=T([2.5, 0.8, 1.0])); methods("be2", T([0.1, 0.7, 0.2]))
dc = T([[0.5, 1.0, 2.0], [3.0, 0.7, 1.5], [0.3, 0.4, 0.9]])
dist("di1", "Dirichlet", D.Dirichlet(dc), concentration=dc)
methods("di1", T([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3], [0.01, 0.09, 0.9]]))
dc2 = T([[1.5, 1.0, 0.5], [2.0, 2.0, 2.0], [1.3, 0.4, 3.0]])
dist("di2", "Dirichlet", D.Dirichlet(dc2), concentration=dc2)
df = T([0.8, 1.5, 5.0])
dist("st1", "StudentT", D.StudentT(df, loc, scale), df=df, loc=loc, scale=scale); methods("st1", T([0.1, -1.0, 3.0]))

# counting distributions
pr, pr2 = T([0.5, 3.0, 12.0]), T([1.5, 0.4, 10.0])
dist("po1", "Poisson", D.Poisson(pr), rate=pr); methods("po1", T([0.0, 2.0, 15.0]))
dist("po2", "Poisson", D.Poisson(pr2), rate=pr2)
bn, bp = T([5.0, 10.0, 20.0]), T([0.3, 0.5, 0.9])
dist("bi1", "Binomial", D.Binomial(bn, probs=bp), total_count=bn, probs=bp); methods("bi1", T([2.0, 10.0, 17.0]))
dist("bi2", "Binomial", D.Binomial(bn, logits=T([-1.0, 0.5, 2.0])), total_count=bn, logits=T([-1.0, 0.5, 2.0]))
methods("bi2", T([0.0, 4.0, 20.0]))
dist("bi3", "Binomial", D.Binomial(T([5.0, 8.0, 20.0]), probs=T([0.6, 0.2, 0.4])), total_count=T([5.0, 8.0, 20.0]),
     probs=T([0.6, 0.2, 0.4]))
bh, bhp = T([12.0, 12.0, 12.0]), T([0.05, 0.5, 0.97])  # one total_count: entropy enumerates the support
dist("bi4", "Binomial", D.Binomial(bh, probs=bhp), total_count=bh, probs=bhp); methods("bi4", T([0.0, 6.0, 12.0]))
dist("mu1", "Multinomial", D.Multinomial(10, probs=cp), total_count="10", probs=cp)
methods("mu1", T([[1.0, 2.0, 3.0, 4.0], [5.0, 0.0, 2.0, 3.0]]))
dist("mu2", "Multinomial", D.Multinomial(6, logits=cl), total_count="6", logits=cl)
methods("mu2", T([[0.0, 0.0, 0.0, 6.0], [1.0, 1.0, 1.0, 3.0]]))

# multivariate normals (3-d; batch 2), by covariance, precision and scale_tril
A = T([[[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]], [[1.0, 0.0, 0.0], [0.0, 3.0, 1.0], [0.0, 1.0, 2.0]]])
mloc = T([[0.5, -1.0, 2.0], [0.0, 0.3, -0.4]])
dist("mv1", "MultivariateNormal", D.MultivariateNormal(mloc, covariance_matrix=A), loc=mloc, covariance_matrix=A)
methods("mv1", T([[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]]))
dist("mv2", "MultivariateNormal", D.MultivariateNormal(mloc.flip(-1), precision_matrix=A), loc=mloc.flip(-1),
     precision_matrix=A)
methods("mv2", T([0.0, 0.5, -0.5]))
Lt = T([[1.0, 0.0, 0.0], [0.5, 2.0, 0.0], [-0.3, 0.4, 0.7]])
dist("mv3", "MultivariateNormal", D.MultivariateNormal(T([1.0, 2.0, 3.0]), scale_tril=Lt), loc=T([1.0, 2.0, 3.0]),
     scale_tril=Lt)
methods("mv3", T([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]))

# a mixture of 3 Normals per batch element (batch 2)
mixl = T([[0.2, -0.5, 1.0], [0.0, 0.3, -1.2]])
ml, ms = T([[-1.0, 0.5, 2.0], [0.0, 1.0, -2.0]]), T([[0.5, 1.0, 0.3], [2.0, 0.7, 1.1]])
dist("mxn", "Normal", D.Normal(ml, ms), loc=ml, scale=ms)
dist("mx1", "MixtureSameFamily", D.MixtureSameFamily(D.Categorical(logits=mixl), objs["mxn"]), logits=mixl, base="mxn")
methods("mx1", T([0.3, -1.0]))
# a mixture of 2-d independent Normals (event shape [2])
il, isc = T([[[0.0, 1.0], [2.0, -1.0]]]), T([[[1.0, 0.5], [0.3, 2.0]]])
dist("mxi", "Normal", D.Normal(il, isc), loc=il, scale=isc)
dist("mxib", "Independent", D.Independent(objs["mxi"], 1), base="mxi", n="1")
dist("mx2", "MixtureSameFamily", D.MixtureSameFamily(D.Categorical(logits=T([[0.4, -0.4]])), objs["mxib"]),
     logits=T([[0.4, -0.4]]), base="mxib")
methods("mx2", T([[0.5, 0.0]]))

# every pair torch registers among these families
pairs = [("n1", "n2"), ("b1", "b2"), ("b3", "b1"), ("b1", "b3"), ("c1", "c2"), ("c2", "c1"), ("o1", "o2"),
         ("g1", "g2"), ("e1", "e2"), ("u1", "u2"), ("u2", "u1"), ("l1", "l2"), ("m1", "m2"), ("y1", "y2"),
         ("i1", "i2"), ("t1", "t2"), ("ln1", "ln2"),
         ("e1", "m2"), ("e1", "n2"), ("m1", "n2"), ("l1", "n2"), ("n1", "m2"), ("n1", "l2"), ("u1", "e2"),
         ("u3", "e2"), ("u1", "m2"), ("u1", "n2"),
         ("e1", "u2"), ("m1", "u2"), ("m1", "e2"), ("l1", "u2"), ("l1", "e2"), ("n1", "u2"), ("n1", "e2"),
         ("ga1", "ga2"), ("x1", "ga2"), ("be1", "be2"), ("di1", "di2"), ("be1", "e2"), ("be1", "ga2"), ("be1", "n2"),
         ("be1", "u1"), ("be1", "u4"), ("e1", "ga2"), ("ga1", "e2"), ("ga1", "m2"), ("ga1", "n2"), ("u4", "be2"),
         ("u1", "be2"), ("u3", "ga2"), ("u1", "ga2"), ("e1", "be2"), ("ga1", "u2"), ("ga1", "be2"), ("m1", "ga2"),
         ("m1", "be2"), ("l1", "ga2"), ("l1", "be2"), ("n1", "ga2"), ("n1", "be2"),
         ("po1", "po2"), ("b1", "po2"), ("bi1", "bi3"), ("po1", "bi1"), ("po1", "b1"), ("mv1", "mv2"),
         ("mv3", "mv1")]
for a, b in pairs:
    lines.append("K %s %s %s" % (a, b, fmt(D.kl_divergence(objs[a], objs[b]))))
# every pair torch registers among the families brisk has must be among the cases
from torch.distributions.kl import _KL_REGISTRY
families = {type(o) for o in objs.values()}
covered = {(type(objs[a]), type(objs[b])) for a, b in pairs}
missing = [(p.__name__, q.__name__) for (p, q) in _KL_REGISTRY if p in families and q in families
           and (p, q) not in covered]
if missing:
    raise SystemExit("KL pairs torch registers that no case covers: %s" % missing)

# torch's implicit reparameterization gradient dx/dalpha of Gamma(alpha, 1) at x
ga = T([0.05, 0.3, 0.5, 1.0, 1.0, 2.5, 2.5, 7.0, 20.0, 150.0, 3.0, 0.8])
gx = T([0.01, 0.2, 1.5, 0.5, 3.0, 0.4, 2.5, 9.0, 18.0, 160.0, 8.0, 0.001])
lines.append("G %s %s %s" % (fmt(ga), fmt(gx), fmt(torch._standard_gamma_grad(ga, gx))))

path = os.path.join(ROOT, "tests/distributions/reference.txt")
with open(path, "w") as f:
    f.write("# torch.distributions values (torch %s, float64), written by tools/distributions/reference.py\n"
            % torch.__version__)
    f.write("\n".join(lines) + "\n")
print("wrote", path, len(lines), "lines")

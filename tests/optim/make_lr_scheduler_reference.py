#!/usr/bin/env python3
"""Prints PyTorch's learning-rate (and momentum) sequences that the
LRScheduler tests of tests/optim/test_optim.cpp expect, as C++ initializer
lists ({group 0's values}, {group 1's values}) after a // label; the
committed values came from the PyPI wheel 2.15:
    /work/venv-torch/bin/python tests/optim/make_lr_scheduler_reference.py
Unless said otherwise: SGD with two groups (lr 0.1 and 0.05), the lrs after
construction and after each of the next steps. repr gives the shortest
string that reads back as the same double.
"""
import torch, warnings
from torch.optim import lr_scheduler as L
warnings.filterwarnings("ignore")
print("# torch", torch.__version__)
def params(): return [torch.nn.Parameter(torch.ones(1)), torch.nn.Parameter(torch.ones(1))]
def opt2(cls=torch.optim.SGD, **kw):
    p1, p2 = params()
    return cls([{"params":[p1], "lr":0.1}, {"params":[p2], "lr":0.05}], **kw)
def lrs(o): return [g["lr"] for g in o.param_groups]
def mom(o): return [g["betas"][0] if "betas" in g else g["momentum"] for g in o.param_groups]
def vec(xs): return "{" + ", ".join(repr(float(x)) for x in xs) + "}"
def emit(name, seq):
    # seq: list of per-step lists over groups -> per group vectors
    print(f"// {name}")
    print("{" + ", ".join(vec([r[k] for r in seq]) for k in range(len(seq[0]))) + "}")
def run(o, s, n=12, f=lrs):
    out=[f(o)]
    for i in range(1,n): o.step(); s.step(); out.append(f(o))
    return out
o=opt2(); emit("StepLR(3, 0.5)", run(o, L.StepLR(o,3,0.5)))
o=opt2(); emit("MultiStepLR({2, 5, 5, 9}, 0.3)", run(o, L.MultiStepLR(o,[2,5,5,9],0.3)))
o=opt2(); emit("ExponentialLR(0.9)", run(o, L.ExponentialLR(o,0.9)))
o=opt2(); emit("CosineAnnealingLR(5, 0.001)", run(o, L.CosineAnnealingLR(o,5,0.001)))
o=opt2(); emit("LinearLR(0.25, 1.0, 4)", run(o, L.LinearLR(o,0.25,1.0,4)))
o=opt2(); emit("LinearLR(1.0, 0.1, 5)", run(o, L.LinearLR(o,1.0,0.1,5)))
# step(epoch)
for name, mk in [("StepLR(3, 0.5)", lambda o: L.StepLR(o,3,0.5)), ("MultiStepLR({2, 5, 5, 9}, 0.3)", lambda o: L.MultiStepLR(o,[2,5,5,9],0.3)),
                 ("ExponentialLR(0.9)", lambda o: L.ExponentialLR(o,0.9)), ("CosineAnnealingLR(5, 0.001)", lambda o: L.CosineAnnealingLR(o,5,0.001)),
                 ("LinearLR(0.25, 1.0, 4)", lambda o: L.LinearLR(o,0.25,1.0,4))]:
    o=opt2(); s=mk(o); s.step(); s.step(); out=[]
    for e in [3,7,2,10]: s.step(e); out.append(lrs(o))
    emit("step(e) e=3,7,2,10 after two step(): "+name, out)
# chained
p=params()[0]; o=torch.optim.SGD([p], lr=1.0); a=L.ExponentialLR(o,0.9); b=L.StepLR(o,2,0.1)
seq=[lrs(o)]
for i in range(1,8): o.step(); a.step(); b.step(); seq.append(lrs(o))
emit("chained ExponentialLR(0.9) + StepLR(2, 0.1), lr 1", seq)
# chained cosine + linear warmup both stepped
o=opt2(); a=L.LinearLR(o,0.5,1.0,3); b=L.CosineAnnealingLR(o,8)
seq=[lrs(o)]
for i in range(1,12): o.step(); a.step(); b.step(); seq.append(lrs(o))
emit("chained LinearLR(0.5, 1, 3) + CosineAnnealingLR(8)", seq)
for name, mk in [("ExponentialLR(0.9)", lambda o: L.ExponentialLR(o,0.9)), ("CosineAnnealingLR(6)", lambda o: L.CosineAnnealingLR(o,6)),
                 ("LinearLR(0.5, 1, 4)", lambda o: L.LinearLR(o,0.5,1.0,4)), ("StepLR(2, 0.5)", lambda o: L.StepLR(o,2,0.5)),
                 ("MultiStepLR({4, 6}, 0.1)", lambda o: L.MultiStepLR(o,[4,6],0.1))]:
    o=opt2(); s=mk(o); seq=[lrs(o)]
    for i in range(1,10):
        o.step(); s.step()
        if i==3:
            for g in o.param_groups: g["lr"]=g["lr"]*2
        seq.append(lrs(o))
    emit("lr doubled by hand after step 3: "+name, seq)
o=opt2(); w=L.LinearLR(o,0.1,1.0,3); c=L.CosineAnnealingLR(o,6,0.001); s=L.SequentialLR(o,[w,c],[3])
emit("SequentialLR(LinearLR(0.1, 1, 3) -> CosineAnnealingLR(6, 0.001), {3})", run(o,s,14))
print("// last_epochs", w.last_epoch, c.last_epoch, s.last_epoch)
# sequential three
o=opt2(); a=L.ExponentialLR(o,0.8); b=L.StepLR(o,2,0.5); c=L.LinearLR(o,0.5,1.0,2); s=L.SequentialLR(o,[a,b,c],[3,7])
emit("SequentialLR(ExponentialLR(0.8) -> StepLR(2, 0.5) -> LinearLR(0.5, 1, 2), {3, 7})", run(o,s,12))
# nested
o=opt2(); a=L.LinearLR(o,0.2,1.0,2); b=L.ExponentialLR(o,0.7); inner=L.SequentialLR(o,[a,b],[2]); c=L.CosineAnnealingLR(o,4); s=L.SequentialLR(o,[inner,c],[5])
emit("nested SequentialLR(SequentialLR(LinearLR(0.2,1,2)->ExponentialLR(0.7),{2}) -> CosineAnnealingLR(4), {5})", run(o,s,12))
# OneCycle
def oc(o, n, **kw):
    s=L.OneCycleLR(o, **kw); seq=[lrs(o)]; ms=[mom(o)]
    for i in range(1,n): o.step(); s.step(); seq.append(lrs(o)); ms.append(mom(o))
    return seq, ms
o=opt2(momentum=0.9); a,b=oc(o,13,max_lr=1.0,total_steps=12)
emit("OneCycleLR SGD(momentum 0.9) max_lr 1 total 12: lr", a); emit("momentum", b)
p1,p2=params(); o=torch.optim.Adam([{"params":[p1],"lr":0.1},{"params":[p2],"lr":0.05}], betas=(0.9,0.99))
a,b=oc(o,13,max_lr=0.5,total_steps=12,pct_start=0.25,three_phase=True)
emit("OneCycleLR Adam three_phase max_lr 0.5 total 12 pct 0.25: lr", a); emit("beta1", b)
print("// beta2", [g["betas"][1] for g in o.param_groups])
p1,p2=params(); o=torch.optim.AdamW([{"params":[p1],"lr":0.1},{"params":[p2],"lr":0.05}])
a,b=oc(o,11,max_lr=2.0,total_steps=10,anneal_strategy="linear",base_momentum=0.8,max_momentum=0.9,div_factor=10.0,final_div_factor=100.0)
emit("OneCycleLR AdamW linear max_lr 2 total 10 base_m 0.8 max_m 0.9 div 10 final 100: lr", a); emit("beta1", b)
p1,p2=params(); o=torch.optim.RMSprop([p1], lr=0.1)
a,b=oc(o,9,max_lr=0.3,total_steps=8)
emit("OneCycleLR RMSprop max_lr 0.3 total 8: lr", a); emit("momentum", b)
# OneCycleLR as the second scheduler of a SequentialLR
p1,p2=params(); o=torch.optim.SGD([p1], lr=0.1, momentum=0.5)
w=L.LinearLR(o,0.5,1.0,2); c=L.OneCycleLR(o,max_lr=1.0,total_steps=6); s=L.SequentialLR(o,[w,c],[3])
a=[lrs(o)]; b=[mom(o)]
for i in range(1,10): o.step(); s.step(); a.append(lrs(o)); b.append(mom(o))
emit("SequentialLR(LinearLR(0.5,1,2) -> OneCycleLR(1.0, 6), {3}) SGD momentum 0.5: lr", a); emit("momentum", b)
try:
    p=params()[0]; o=torch.optim.Adagrad([p], lr=0.1); L.OneCycleLR(o, max_lr=1.0, total_steps=10)
except ValueError as e: print("// Adagrad:", e)

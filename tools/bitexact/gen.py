"""Writes, for each op and dtype, PyTorch's input x, incoming gradient g,
output y and input gradient to DIR/a2_<op>_<dtype>.bin (four float64
arrays of 4000 values), for tools/bitexact/check.cpp to recompute in brisk
and compare bit for bit (docs/design/fuzzing.md, "Bit-exact comparison").

usage: OMP_NUM_THREADS=1 /work/venv-torch/bin/python tools/bitexact/gen.py DIR [OP...]
"""
import os, sys
import torch, torch.nn.functional as F
torch.set_num_threads(1)
OUT = sys.argv[1] if len(sys.argv) > 1 else '/tmp/bitexact'
os.makedirs(OUT, exist_ok=True)
ops={'elu':F.elu,'selu':F.selu,'celu':F.celu,'softshrink':F.softshrink,'hardshrink':F.hardshrink,'logsigmoid':F.logsigmoid,
'softsign':F.softsign,'tanhshrink':F.tanhshrink,'mish':F.mish,'gelu':F.gelu,'gelu_tanh':lambda x: F.gelu(x,approximate='tanh'),'silu':F.silu,
'softplus':F.softplus,'sigmoid':torch.sigmoid,'tanh':torch.tanh,'threshold':lambda x: F.threshold(x,0.5,-1.0),'relu':F.relu,
'softmax':lambda x: F.softmax(x.view(40,100),1).reshape(-1),'log_softmax':lambda x: F.log_softmax(x.view(40,100),1).reshape(-1),
'exp':torch.exp,'log1p':lambda x: torch.log1p(x.abs()),'erf':torch.erf,'sqrt':lambda x: torch.sqrt(x.abs()),'square':torch.square,'abs':torch.abs,
'layer_norm':lambda x: F.layer_norm(x.view(40,100),(100,)).reshape(-1),'normalize':lambda x: F.normalize(x.view(40,100),dim=1).reshape(-1),
'rms_norm':lambda x: F.rms_norm(x.view(40,100),(100,)).reshape(-1),'l1':lambda x: F.l1_loss(x, torch.linspace(-3,3,4000).to(x.dtype), reduction='none'),
'smooth_l1':lambda x: F.smooth_l1_loss(x, torch.zeros(4000,dtype=x.dtype), reduction='none'),'huber':lambda x: F.huber_loss(x, torch.zeros(4000,dtype=x.dtype), reduction='none'),
'bce_logits':lambda x: F.binary_cross_entropy_with_logits(x, (torch.arange(4000)%2).to(x.dtype), reduction='none'),
'softmin':lambda x: F.softmin(x.view(40,100),1).reshape(-1),'pow3':lambda x: x.pow(3),'pow_1_5':lambda x: x.abs().pow(1.5),'pow2':lambda x: x.pow(2),'pow_0_5':lambda x: x.abs().pow(0.5),'pow_m0_5':lambda x: (x.abs()+0.5).pow(-0.5),'pow_2_5':lambda x: x.pow(2.5),'pow_m2':lambda x: (x.abs()+0.5).pow(-2),'reciprocal':lambda x: x.reciprocal(),
'atan':torch.atan,'sin':torch.sin,'expm1':torch.expm1,'rsqrt':lambda x: x.abs().rsqrt(),'clamp':lambda x: x.clamp(-1,1),'sign':torch.sign,'frac':torch.frac,
'lerp':lambda x: torch.lerp(x, torch.ones_like(x), 0.3),'addcmul':lambda x: torch.addcmul(x, x, x, value=0.5),'addcdiv':lambda x: torch.addcdiv(x, x, x.abs()+1, value=0.5),
'logit':lambda x: torch.logit(torch.sigmoid(x)),'xlogy':lambda x: torch.xlogy(x, x.abs()+1),'hypot':lambda x: torch.hypot(x, x*0.5),'atan2':lambda x: torch.atan2(x, x*0.5+1),
'logaddexp':lambda x: torch.logaddexp(x, x*0.5+1),'logaddexp2':lambda x: torch.logaddexp2(x, x*0.5+1),'copysign':lambda x: torch.copysign(x, x-0.3),'nextafter':lambda x: torch.nextafter(x, x.round()),
'hardswish':F.hardswish,'hardsigmoid':F.hardsigmoid,'leaky_relu':F.leaky_relu,'leaky_relu2':lambda x: F.leaky_relu(x,0.3),'hardtanh':F.hardtanh,'relu6':F.relu6,'elu2':lambda x: F.elu(x,0.7),'celu2':lambda x: F.celu(x,0.3),'softshrink2':lambda x: F.softshrink(x,0.3),'hardshrink2':lambda x: F.hardshrink(x,0.3),
}
only=set(sys.argv[2:])
for name,f in ops.items():
  if only and name not in only: continue
  for dt in [torch.float32, torch.float16, torch.bfloat16]:
    torch.manual_seed(0)
    x=(torch.randn(4000)*4).to(dt)
    x.requires_grad_()
    try:
      y=f(x); g=torch.randn(y.numel()).to(dt); y.backward(g); gr=x.grad.double()
    except Exception as e:
      print('skip',name,dt,str(e)[:60]); continue
    open(os.path.join(OUT, 'a2_%s_%s.bin'%(name,str(dt).split('.')[1])),'wb').write(x.detach().double().numpy().tobytes()+g.double().numpy().tobytes()+y.detach().double().numpy().tobytes()+gr.numpy().tobytes())

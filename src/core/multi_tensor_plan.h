// What the foreach ops and the fused optimizers (src/optim) pass to the
// multi-tensor kernels of the backends (rows foreach_pointwise, foreach_norm,
// fused_adam, fused_sgd, fused_rmsprop of core/dispatch.h): the CPU's
// (backend/cpu/kernels/multi_tensor.cpp) and CUDA's (backend/cuda/foreach.cu,
// optim.cu).
//
// Kernel contract: every list holds tensors of one device and one dtype that
// the kernel supports (supports(op, device, dtype)), contiguous, with equal
// sizes at each index (the front ends check this; see optim/multi_tensor.h).
#pragma once

namespace brisk::multi_tensor {

/// The elementwise steps of the foreach kernel: out = f(x, y, z) with `s` the
/// scalar (or the per-tensor scalar). out may be x.
enum class ForeachOp : int {
  AddScalar,  ///< x + s
  AddList,    ///< x + s * y
  MulScalar,  ///< x * s
  MulList,    ///< x * y
  DivScalar,  ///< x / s
  Addcmul,    ///< x + s * y * z
  Addcdiv,    ///< x + s * (y / z)
  Lerp,       ///< lerp(x, y, s)
  Maximum,    ///< maximum(x, y), NaN propagating
  Sqrt,       ///< sqrt(x)
  Zero,       ///< 0
};

/// Adam/AdamW hyper-parameters (see src/optim/adam.cpp for the update).
struct FusedAdamArgs {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, decoupled;  ///< decoupled: AdamW
};

/// SGD hyper-parameters (see src/optim/sgd.cpp for the update).
struct FusedSgdArgs {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

/// RMSprop hyper-parameters (see src/optim/rmsprop.cpp for the update).
struct FusedRmspropArgs {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
};

}  // namespace brisk::multi_tensor

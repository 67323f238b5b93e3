// The dtypes PyTorch accepts for the parameters of batch_norm, group_norm,
// layer_norm and instance_norm (weight, bias, running statistics): each
// given parameter has the input's dtype, or the input is float16/bfloat16
// and each given parameter is float32 (its "mixed dtype" kernels). The
// output has the input's dtype either way; other mixes raise there, and
// here. (rms_norm accepts any weight and returns the input's dtype.)
#pragma once

#include <initializer_list>
#include <sstream>
#include <utility>

#include "brisk/dtype.h"
#include "brisk/error.h"
#include "brisk/tensor.h"

namespace brisk::detail {

struct NormParam {
  const char* name;
  const Tensor& t;
};

inline void check_norm_param_dtypes(const char* op, const Tensor& x, std::initializer_list<NormParam> params) {
  bool same = true, all_float = true;
  for (const NormParam& p : params) {
    if (!p.t.defined()) continue;
    same = same && p.t.dtype() == x.dtype();
    all_float = all_float && p.t.dtype() == kFloat;
  }
  if (same || (is_reduced_float(x.dtype()) && all_float)) return;
  std::ostringstream got;
  const char* sep = "";
  for (const NormParam& p : params) {
    if (!p.t.defined()) continue;
    got << sep << p.name << " " << p.t.dtype();
    sep = ", ";
  }
  BRISK_CHECK(false, op, "mixed dtypes: the parameters must have the input's dtype ", x.dtype(),
              is_reduced_float(x.dtype()) ? " (or all be float32)" : "", ", got ", got.str(),
              " (cast them with .to(), as PyTorch requires too)");
}

}  // namespace brisk::detail

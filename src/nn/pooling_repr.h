// The extra_repr text of the max and average pooling modules, one template
// for every dimension count (PyTorch's printing).
#pragma once
#include <string>

#include "brisk/nn/pooling.h"

namespace brisk::nn::detail_repr {

template <class Options>
std::string max_pool_repr(const Options& o) {
  return "kernel_size=" + o.kernel_size().str() + ", stride=" + o.stride().str() + ", padding=" + o.padding().str() +
         ", dilation=" + o.dilation().str() + ", ceil_mode=" + (o.ceil_mode() ? "true" : "false");
}

template <class Options>
std::string avg_pool_repr(const Options& o) {
  std::string s = "kernel_size=" + o.kernel_size().str() + ", stride=" + o.stride().str() +
                  ", padding=" + o.padding().str();
  if (o.ceil_mode()) s += ", ceil_mode=true";
  if (!o.count_include_pad()) s += ", count_include_pad=false";
  if (o.divisor_override()) s += ", divisor_override=" + std::to_string(*o.divisor_override());
  return s;
}

}  // namespace brisk::nn::detail_repr

// Internal entry points of src/ops/random.cpp that tests call directly.
#pragma once
#include <cstdint>

#include "brisk/tensor.h"

namespace brisk::detail {

/// multinomial as tensor ops, without reading the probabilities on the host
/// (Note [multinomial on a device]): what a GPU runs. The tests run it on
/// the CPU against the host algorithm, which draws the same numbers.
Tensor multinomial_on_device(const Tensor& probs, int64_t num_samples, bool replacement);

}  // namespace brisk::detail

// Strided geometry of a tensor over its storage, and the one linear map that
// moves a gradient between two geometries over the same storage. Shared by
// the windowing view ops (src/ops/views.cpp) and by autograd's view
// histories (AsStridedBackward0, CopySlices in src/autograd/autograd.cpp).
#pragma once
#include "brisk/tensor.h"

namespace brisk::detail {

/// Sizes, strides and storage offset of a strided tensor.
struct Geom {
  DimVector sizes, strides;
  int64_t offset = 0;
};

Geom geom_of(const Tensor& t);
/// A contiguous tensor of `sizes` at offset 0.
Geom contiguous_geom(IntArrayRef sizes);
int64_t geom_numel(const Geom& g);
/// Offset of the last element past g.offset (g non-empty, strides >= 0).
int64_t geom_extent(const Geom& g);
/// True when no two elements of g share a memory location.
bool geom_non_overlapping(const Geom& g);

/// The linear map "place g's elements at the memory locations of `src`
/// (adding where src overlaps itself), then read the locations of `dst`",
/// on a zero buffer covering both. With src a view's geometry and dst its
/// base's, this is the view's backward; its own backward swaps src and dst
/// (recorded when g requires grad, giving double backward under the node
/// name `name`).
Tensor strided_transfer(const char* name, const Tensor& g, const Geom& src, const Geom& dst);

}  // namespace brisk::detail

// brisk: eager tensors with PyTorch's programming model. One header for all.
#pragma once
#include "brisk/allocator.h"
#include "brisk/device.h"
#include "brisk/dtype.h"
#include "brisk/error.h"
#include "brisk/half.h"
#include "brisk/indexing.h"
#include "brisk/ops.h"
#include "brisk/options.h"
#include "brisk/scalar.h"
#include "brisk/shape.h"
#include "brisk/tensor.h"
#include "brisk/version.h"

#include "core/dispatch.h"
namespace brisk { namespace cpu { void register_blas_kernels() {} } }

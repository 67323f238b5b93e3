// Placeholder until the reduce kernels land.
#include "core/dispatch.h"
namespace brisk { namespace cpu { namespace BRISK_CPU_ISA {
void register_reduce_kernels() {}
} } }

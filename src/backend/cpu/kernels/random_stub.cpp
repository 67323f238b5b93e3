// Placeholder until the random kernels land.
#include "core/dispatch.h"
namespace brisk { namespace cpu { namespace BRISK_CPU_ISA {
void register_random_kernels() {}
} } }

// Placeholder until the index kernels land.
#include "core/dispatch.h"
namespace brisk { namespace cpu { namespace BRISK_CPU_ISA {
void register_index_kernels() {}
} } }

// Registers this ISA variant's kernels; called by register_cpu_kernels().
#include "core/dispatch.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
void register_elementwise_kernels();
void register_unary_kernels();
void register_reduce_kernels();
void register_index_kernels();
void register_random_kernels();
void register_sort_kernels();
void register_conv_kernels();
void register_pooling_kernels();
void register_factory_kernels();
void register_multi_tensor_kernels();
void register_attention_kernels();
void register_softmax_kernels();
void register_norm_row_kernels();
void register_norm_channel_kernels();
void register_loss_kernels();
void register_binary_math_kernels();

void register_all() {
  register_elementwise_kernels();
  register_unary_kernels();
  register_reduce_kernels();
  register_index_kernels();
  register_random_kernels();
  register_sort_kernels();
  register_conv_kernels();
  register_pooling_kernels();
  register_factory_kernels();
  register_multi_tensor_kernels();
  register_attention_kernels();
  register_softmax_kernels();
  register_norm_row_kernels();
  register_norm_channel_kernels();
  register_loss_kernels();
  register_binary_math_kernels();
}
}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk

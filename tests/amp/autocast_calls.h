// One call of each op on an autocast list (a row of the op table whose CUDA
// or CPU policy is not Keep), shared by tests/amp/test_autocast.cpp (the
// policies on CPU tensors) and tests/cuda/test_cuda_amp.cpp (on CUDA
// tensors). Each call draws its inputs on the CPU (rand, from the CPU
// generator) and moves them to the device it is given, so that the same
// seed gives the same values on every device.
#pragma once
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "brisk/brisk.h"
#include "core/op_table.h"

namespace brisk::testing::amp_calls {

/// A call of a listed op: its first floating tensor argument in dtype `a`,
/// the others in `b`, every tensor argument (indices too) on `device`.
class Call {
 public:
  using Fn = std::function<Tensor(ScalarType a, ScalarType b, Device device)>;
  Call() = default;
  template <class F>
    requires std::is_invocable_r_v<Tensor, F&, ScalarType, ScalarType, Device>
  Call(F f) : fn_(std::move(f)) {}  // NOLINT(google-explicit-constructor): the table assigns lambdas
  Tensor operator()(ScalarType a, ScalarType b, Device device = Device(kCPU)) const { return fn_(a, b, device); }

 private:
  Fn fn_;
};

/// `t` on `d` (itself on the CPU).
inline Tensor on(const Tensor& t, Device d) { return d.is_cpu() ? t : t.to(d); }

/// The calls, by row name.
inline const std::map<std::string, Call>& calls() {
  static const std::map<std::string, Call> m = [] {
    namespace F = brisk::nn::functional;
    std::map<std::string, Call> c;
    auto r = [](std::vector<int64_t> s, ScalarType t, Device d, double lo = -1, double hi = 1) {
      return on(rand(s).mul(hi - lo).add(lo).to(t), d);
    };
    auto pos = [r](std::vector<int64_t> s, ScalarType t, Device d) { return r(s, t, d, 0.2, 0.8); };
    for (const char* n : {"exp", "log", "log2", "log10", "log1p", "expm1", "rsqrt", "reciprocal", "tan", "asin", "acos",
                          "sinh", "cosh", "erfinv"}) {
      const Op op = static_cast<Op>(
          std::distance(&op_info(Op(0)), &*find_op(n).info));  // the row's enumerator
      c[n] = [pos, op](ScalarType a, ScalarType, Device d) {
        Tensor x = pos({5}, a, d);
        switch (op) {
#define BRISK_CASE(name) \
  case Op::name: return name(x);
          BRISK_CASE(exp) BRISK_CASE(log) BRISK_CASE(log2) BRISK_CASE(log10) BRISK_CASE(log1p) BRISK_CASE(expm1)
          BRISK_CASE(rsqrt) BRISK_CASE(reciprocal) BRISK_CASE(tan) BRISK_CASE(asin) BRISK_CASE(acos)
          BRISK_CASE(sinh) BRISK_CASE(cosh) BRISK_CASE(erfinv)
#undef BRISK_CASE
          default: return Tensor();
        }
      };
    }
    c["softplus"] = [r](ScalarType a, ScalarType, Device d) { return softplus(r({5}, a, d)); };
    c["pow"] = [pos](ScalarType a, ScalarType b, Device d) { return pow(pos({5}, a, d), pos({5}, b, d)); };
    c["atan2"] = [r](ScalarType a, ScalarType b, Device d) { return atan2(r({5}, a, d), r({5}, b, d)); };
    c["addcmul"] = [r](ScalarType a, ScalarType b, Device d) {
      return addcmul(r({5}, a, d), r({5}, b, d), r({5}, b, d), 0.5);
    };
    c["addcdiv"] = [r, pos](ScalarType a, ScalarType b, Device d) {
      return addcdiv(r({5}, a, d), r({5}, b, d), pos({5}, b, d), 0.5);
    };
    c["sum"] = [r](ScalarType a, ScalarType, Device d) { return r({3, 4}, a, d).sum(); };
    c["prod"] = [pos](ScalarType a, ScalarType, Device d) { return pos({3, 4}, a, d).prod(); };
    c["norm"] = [r](ScalarType a, ScalarType, Device d) { return r({3, 4}, a, d).norm(); };
    c["logsumexp"] = [r](ScalarType a, ScalarType, Device d) { return r({3, 4}, a, d).logsumexp({1}); };
    c["cumsum"] = [r](ScalarType a, ScalarType, Device d) { return r({3, 4}, a, d).cumsum(1); };
    c["cumprod"] = [r](ScalarType a, ScalarType, Device d) { return r({3, 4}, a, d).cumprod(1); };
    c["softmax"] = [r](ScalarType a, ScalarType, Device d) { return r({3, 4}, a, d).softmax(1); };
    c["log_softmax"] = [r](ScalarType a, ScalarType, Device d) { return r({3, 4}, a, d).log_softmax(1); };
    c["cat"] = [r](ScalarType a, ScalarType b, Device d) { return cat({r({2, 3}, a, d), r({2, 3}, b, d)}, 0); };
    c["stack"] = [r](ScalarType a, ScalarType b, Device d) { return stack({r({2, 3}, a, d), r({2, 3}, b, d)}, 0); };
    c["hstack"] = [r](ScalarType a, ScalarType b, Device d) { return hstack({r({2, 3}, a, d), r({2, 3}, b, d)}); };
    c["vstack"] = [r](ScalarType a, ScalarType b, Device d) { return vstack({r({2, 3}, a, d), r({2, 3}, b, d)}); };
    c["dstack"] = [r](ScalarType a, ScalarType b, Device d) { return dstack({r({2, 3}, a, d), r({2, 3}, b, d)}); };
    c["interpolate"] = [r](ScalarType a, ScalarType, Device d) {
      return F::interpolate(r({1, 1, 4, 4}, a, d), F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 8}));
    };
    c["reflection_pad"] = [r](ScalarType a, ScalarType, Device d) {
      return F::pad(r({1, 1, 4, 4}, a, d), F::PadFuncOptions({1, 1, 1, 1}).mode(kReflect));
    };
    c["replication_pad"] = [r](ScalarType a, ScalarType, Device d) {
      return F::pad(r({1, 1, 4, 4}, a, d), F::PadFuncOptions({1, 1, 1, 1}).mode(kReplicate));
    };
    c["mm"] = [r](ScalarType a, ScalarType b, Device d) { return mm(r({3, 4}, a, d), r({4, 5}, b, d)); };
    c["bmm"] = [r](ScalarType a, ScalarType b, Device d) { return bmm(r({2, 3, 4}, a, d), r({2, 4, 5}, b, d)); };
    c["matmul"] = [r](ScalarType a, ScalarType b, Device d) { return matmul(r({2, 3, 4}, a, d), r({4, 5}, b, d)); };
    c["addmm"] = [r](ScalarType a, ScalarType b, Device d) {
      return addmm(r({3, 5}, a, d), r({3, 4}, b, d), r({4, 5}, b, d));
    };
    c["mv"] = [r](ScalarType a, ScalarType b, Device d) { return mv(r({3, 4}, a, d), r({4}, b, d)); };
    c["dot"] = [r](ScalarType a, ScalarType b, Device d) { return dot(r({4}, a, d), r({4}, b, d)); };
    c["linear"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::linear(r({3, 4}, a, d), r({5, 4}, b, d), r({5}, b, d));
    };
    c["bilinear"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::bilinear(r({3, 4}, a, d), r({3, 2}, b, d), r({5, 4, 2}, b, d), r({5}, b, d));
    };
    c["einsum"] = [r](ScalarType a, ScalarType b, Device d) {
      return einsum("ij,jk->ik", {r({3, 4}, a, d), r({4, 5}, b, d)});
    };
    c["conv1d"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::conv1d(r({1, 2, 6}, a, d), r({3, 2, 3}, b, d), r({3}, b, d));
    };
    c["conv2d"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::conv2d(r({1, 2, 5, 5}, a, d), r({3, 2, 3, 3}, b, d), r({3}, b, d));
    };
    c["conv3d"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::conv3d(r({1, 2, 4, 4, 4}, a, d), r({3, 2, 2, 2, 2}, b, d), r({3}, b, d));
    };
    c["conv_transpose1d"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::conv_transpose1d(r({1, 2, 5}, a, d), r({2, 3, 2}, b, d), r({3}, b, d));
    };
    c["conv_transpose2d"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::conv_transpose2d(r({1, 2, 4, 4}, a, d), r({2, 3, 2, 2}, b, d), r({3}, b, d));
    };
    c["conv_transpose3d"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::conv_transpose3d(r({1, 2, 3, 3, 3}, a, d), r({2, 3, 2, 2, 2}, b, d), r({3}, b, d));
    };
    c["layer_norm"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::layer_norm(r({3, 4}, a, d), {4}, r({4}, b, d), r({4}, b, d));
    };
    c["rms_norm"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::rms_norm(r({3, 4}, a, d), {4}, r({4}, b, d));
    };
    c["group_norm"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::group_norm(r({2, 4, 3}, a, d), 2, r({4}, b, d), r({4}, b, d));
    };
    c["scaled_dot_product_attention"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::scaled_dot_product_attention(r({1, 2, 3, 4}, a, d), r({1, 2, 3, 4}, b, d), r({1, 2, 3, 4}, b, d));
    };
    const Tensor cls = tensor<int64_t>({0, 2, 1});
    c["cross_entropy"] = [r, cls](ScalarType a, ScalarType, Device d) {
      return F::cross_entropy(r({3, 4}, a, d), on(cls, d));
    };
    c["nll_loss"] = [r, cls](ScalarType a, ScalarType, Device d) { return F::nll_loss(r({3, 4}, a, d), on(cls, d)); };
    c["mse_loss"] = [r](ScalarType a, ScalarType b, Device d) { return F::mse_loss(r({5}, a, d), r({5}, b, d)); };
    c["l1_loss"] = [r](ScalarType a, ScalarType b, Device d) { return F::l1_loss(r({5}, a, d), r({5}, b, d)); };
    c["huber_loss"] = [r](ScalarType a, ScalarType b, Device d) { return F::huber_loss(r({5}, a, d), r({5}, b, d)); };
    c["smooth_l1_loss"] = [r](ScalarType a, ScalarType b, Device d) {
      return F::smooth_l1_loss(r({5}, a, d), r({5}, b, d));
    };
    c["kl_div"] = [r, pos](ScalarType a, ScalarType b, Device d) { return F::kl_div(r({5}, a, d), pos({5}, b, d)); };
    c["binary_cross_entropy"] = [pos](ScalarType a, ScalarType b, Device d) {
      return F::binary_cross_entropy(pos({5}, a, d), pos({5}, b, d));
    };
    c["binary_cross_entropy_with_logits"] = [r, pos](ScalarType a, ScalarType b, Device d) {
      return F::binary_cross_entropy_with_logits(r({5}, a, d), pos({5}, b, d));
    };
    c["index_put"] = [r](ScalarType a, ScalarType b, Device d) {
      return r({4, 3}, a, d).index_put({on(tensor<int64_t>({0, 2}), d)}, r({2, 3}, b, d));
    };
    c["scatter_add"] = [r](ScalarType a, ScalarType b, Device d) {
      return r({2, 3}, a, d).scatter_add(1, on(tensor<int64_t>({{0, 1}, {2, 0}}), d), r({2, 2}, b, d));
    };
    return c;
  }();
  return m;
}

/// The rows on an autocast list: a policy other than Keep in either column.
inline std::vector<const OpInfo*> listed_rows() {
  std::vector<const OpInfo*> v;
  for (int i = 0; i < kNumTableOps; ++i) {
    const OpInfo& r = op_info(static_cast<Op>(i));
    if (r.amp != AmpPolicy::Keep || r.cpu_amp != AmpPolicy::Keep) v.push_back(&r);
  }
  return v;
}

/// The row's enumerator.
inline Op op_of(const OpInfo& r) { return static_cast<Op>(&r - &op_info(Op(0))); }

}  // namespace brisk::testing::amp_calls

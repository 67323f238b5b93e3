// Gradients of small networks through brisk and libtorch from the same
// weights and inputs: the networks are written once as generic lambdas over
// the tensor type (brisk mirrors libtorch's method names).
#pragma once
#include <cmath>

#include "parity.h"

namespace parity {
namespace {

struct Net {
  std::vector<In> params;  ///< made leaves that require grad on both sides
  std::vector<In> data;    ///< inputs that do not
};

/// Builds the inputs on both sides, runs `loss_of` (generic over the tensor
/// type) forward and backward, and compares the loss and every gradient.
template <class F>
void check_net(const std::string& name, const Net& net, F loss_of, Tol tol) {
  check_gradients(name, net.params, net.data, 1, loss_of, loss_of, tol, "loss");
}

// Linear -> ReLU -> Linear -> Tanh -> Linear -> log_softmax, negative log
// likelihood of integer targets (gather), mean over the batch.
TEST(ParityAutograd, MlpGradients) {
  Net net{{in({32, 20}), in({32}), in({16, 32}), in({16}), in({5, 16}), in({5})},
          {in({8, 20}), range({8}, 0, 5)}};
  auto loss = [](auto& p, auto& d) {
    auto h = (d[0].matmul(p[0].t()) + p[1]).relu();
    auto h2 = (h.matmul(p[2].t()) + p[3]).tanh();
    auto logits = h2.matmul(p[4].t()) + p[5];
    return -logits.log_softmax(1).gather(1, d[1].unsqueeze(1)).mean();
  };
  check_net("mlp", net, loss, tol(1e-5, 1e-6));
  // the same in float64 with non-contiguous data and weights
  Net net64{{in({32, 20}, brisk::kDouble).T(), in({32}, brisk::kDouble), in({16, 32}, brisk::kDouble),
             in({16}, brisk::kDouble), in({5, 16}, brisk::kDouble).T(), in({5}, brisk::kDouble)},
            {in({8, 20}, brisk::kDouble).S(), range({8}, 0, 5)}};
  check_net("mlp64", net64, loss, tol(1e-10, 1e-12));
}

// A convolution-free block: one attention head with a residual and a layer
// norm written from mean/var, a GELU feed-forward, and a squared loss.
TEST(ParityAutograd, AttentionBlockGradients) {
  const int64_t B = 2, T = 5, D = 8;
  Net net{{in({D, D}), in({D, D}), in({D, D}), in({D}), in({D}), in({2 * D, D}), in({D, 2 * D})},
          {in({B, T, D}), in({B, T, D})}};
  auto loss = [](auto& p, auto& d) {
    auto& x = d[0];
    auto q = x.matmul(p[0]), k = x.matmul(p[1]), v = x.matmul(p[2]);
    auto att = (q.matmul(k.transpose(1, 2)) / std::sqrt(double(D))).softmax(-1);
    auto y = x + att.matmul(v);
    auto mu = y.mean(std::vector<int64_t>{-1}, true);
    auto var = (y - mu).pow(2).mean(std::vector<int64_t>{-1}, true);
    auto n = (y - mu) / (var + 1e-5).sqrt() * p[3] + p[4];
    auto f = gelu(n.matmul(p[5].t())).matmul(p[6].t());  // free function, found by ADL on both sides
    auto out = (n + f).reshape({B * T, D});
    return (out - d[1].reshape({B * T, D})).pow(2).sum() / double(B * T);
  };
  check_net("attention", net, loss, tol(1e-4, 1e-5));
}

}  // namespace
}  // namespace parity

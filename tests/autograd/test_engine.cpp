// The autograd engine: leaves, accumulation, retain_graph, hooks, errors.
#include <gtest/gtest.h>

#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;

TEST(Engine, MulAddBackward) {
  Tensor x = tensor({1.0, 2.0, 3.0});
  Tensor w = tensor({4.0, 5.0, 6.0}).requires_grad_();
  Tensor b = tensor({0.5}).requires_grad_();
  Tensor y = x * w + b;
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "AddBackward0");
  y.backward(ones_like(y));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{3}));
  EXPECT_FALSE(x.grad().defined());
}

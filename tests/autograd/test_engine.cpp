// The autograd engine: leaves, accumulation, retain_graph, hooks, errors.
#include <gtest/gtest.h>

#include "brisk/brisk.h"
#include "autograd/grad_util.h"
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

TEST(Engine, GradcheckMul) {
  using namespace brisk::testing;
  Tensor a = leaf({2, 3}), b = leaf_noncontig({2, 3}), c = leaf({3});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0] * t[1] + t[2]; }, {a, b, c}, true));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].pow(t[1]); }, {leaf({2, 3}, 0.5, 2), b}, true));
  // a wrong formula must be caught
  Tensor x = leaf({3});
  autograd::GradcheckOptions o;
  o.raise_exception = false;
  EXPECT_FALSE(autograd::gradcheck(
      [](const TensorList& t) {
        Tensor y = t[0].detach() * 2;  // no gradient flows: the analytical Jacobian is 0
        return y + t[0] * 0;
      },
      {x}, o));
}

// gradcheck: analytical Jacobians (from backward, one output element at a
// time) against central finite differences.
#include <cmath>
#include <sstream>

#include "autograd/function.h"

namespace brisk::autograd {

namespace {

// Address of the element with row-major logical index `flat` of a float64 tensor.
double* element(const Tensor& t, int64_t flat) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const int64_t s = t.size(d);
    off += (flat % s) * t.stride(d);
    flat /= s;
  }
  return static_cast<double*>(t.data_ptr()) + off;
}

TensorList outputs_of(const std::function<TensorList(const TensorList&)>& fn, const TensorList& inputs) {
  TensorList outs = fn(inputs);
  // A copy: an output may be a view of an input, which the next perturbation changes.
  for (Tensor& o : outs)
    if (o.defined()) o = o.to(kDouble, false, /*copy=*/true);
  return outs;
}

bool fail(const GradcheckOptions& opts, const std::string& msg) {
  if (opts.raise_exception) BRISK_FAIL("gradcheck", msg);
  return false;
}

bool check_first_order(const std::function<TensorList(const TensorList&)>& fn, const TensorList& inputs,
                       const GradcheckOptions& opts) {
  std::vector<size_t> diff;  // inputs that require grad
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    BRISK_CHECK(x.dtype() == kDouble, "gradcheck", "input ", i, " requires grad but is ", x.dtype(),
                ": gradcheck needs float64 inputs for accurate finite differences");
    diff.push_back(i);
  }
  BRISK_CHECK(!diff.empty(), "gradcheck", "no input requires grad");

  TensorList outs = fn(inputs);
  TensorList diff_inputs;
  for (size_t i : diff) diff_inputs.push_back(inputs[i]);

  for (size_t o = 0; o < outs.size(); ++o) {
    const Tensor& out = outs[o];
    if (!out.defined() || !out.is_floating_point()) continue;
    const int64_t n_out = out.numel();
    // Analytical: row j of the Jacobian from a backward with a one-hot gradient.
    std::vector<std::vector<double>> analytic(diff.size());
    for (size_t k = 0; k < diff.size(); ++k) analytic[k].assign(static_cast<size_t>(n_out * inputs[diff[k]].numel()), 0.0);
    if (out.requires_grad()) {
      for (int64_t j = 0; j < n_out; ++j) {
        Tensor go = zeros(out.sizes(), out.dtype());
        go.view({-1})[j].fill_(1);
        TensorList gs = grad({out}, diff_inputs, {go}, /*retain_graph=*/true, false, /*allow_unused=*/true);
        for (size_t k = 0; k < diff.size(); ++k) {
          if (!gs[k].defined()) continue;
          BRISK_CHECK(gs[k].sizes() == inputs[diff[k]].sizes(), "gradcheck", "gradient of input ", diff[k],
                      " has shape ", gs[k].sizes(), ", expected ", inputs[diff[k]].sizes());
          Tensor g = gs[k].to(kDouble).contiguous();
          const double* p = g.data_ptr<double>();
          const int64_t n_in = g.numel();
          for (int64_t i = 0; i < n_in; ++i) analytic[k][static_cast<size_t>(i * n_out + j)] = p[i];
        }
      }
    }
    // Numerical: central differences, perturbing each input element in place.
    for (size_t k = 0; k < diff.size(); ++k) {
      const Tensor& x = inputs[diff[k]];
      const int64_t n_in = x.numel();
      for (int64_t i = 0; i < n_in; ++i) {
        double* p = element(x, i);
        const double orig = *p;
        TensorList plus, minus;
        {
          NoGradGuard ng;
          *p = orig + opts.eps;
          plus = outputs_of(fn, inputs);
          *p = orig - opts.eps;
          minus = outputs_of(fn, inputs);
          *p = orig;
        }
        Tensor d = (plus[o] - minus[o]).contiguous();
        const double* dp = d.data_ptr<double>();
        for (int64_t j = 0; j < n_out; ++j) {
          const double num = dp[j] / (2 * opts.eps);
          const double ana = analytic[k][static_cast<size_t>(i * n_out + j)];
          if (!(std::abs(ana - num) <= opts.atol + opts.rtol * std::abs(num))) {
            std::ostringstream m;
            m << "Jacobian mismatch for output " << o << " with respect to input " << diff[k] << " (shape "
              << x.sizes() << "): d out[" << j << "] / d in[" << i << "] is " << ana
              << " analytically but " << num << " numerically";
            return fail(opts, m.str());
          }
        }
      }
    }
  }
  return true;
}

}  // namespace

bool gradcheck(const std::function<TensorList(const TensorList&)>& fn, const TensorList& inputs,
               const GradcheckOptions& opts) {
  if (!check_first_order(fn, inputs, opts)) return false;
  if (!opts.check_grad_grad) return true;
  // Second order: the gradients (recorded with create_graph) as a function
  // of the inputs and of random output gradients.
  TensorList outs = fn(inputs);
  std::vector<size_t> diff;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) diff.push_back(i);
  TensorList all = inputs;
  const size_t n_in = inputs.size();
  std::vector<size_t> out_idx;
  for (size_t o = 0; o < outs.size(); ++o)
    if (outs[o].defined() && outs[o].requires_grad()) {
      all.push_back(randn(outs[o].sizes(), kDouble).requires_grad_());
      out_idx.push_back(o);
    }
  auto fn2 = [&](const TensorList& xs) -> TensorList {
    TensorList in(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n_in));
    TensorList os = fn(in), sel, gos, wrt;
    for (size_t k = 0; k < out_idx.size(); ++k) {
      sel.push_back(os[out_idx[k]]);
      gos.push_back(xs[n_in + k]);
    }
    for (size_t i : diff) wrt.push_back(in[i]);
    if (!GradMode::is_enabled()) {
      // Finite differences run under no-grad: evaluate the backward with
      // a recorded forward anyway.
      EnableGradGuard eg;
      TensorList in2;
      for (const Tensor& t : in) in2.push_back(t.defined() && t.requires_grad() ? t.detach().requires_grad_() : t);
      TensorList os2 = fn(in2), sel2, wrt2;
      for (size_t k = 0; k < out_idx.size(); ++k) sel2.push_back(os2[out_idx[k]]);
      for (size_t i : diff) wrt2.push_back(in2[i]);
      TensorList r = grad(sel2, wrt2, gos, true, false, true);
      for (Tensor& t : r)
        if (t.defined()) t = t.detach();
      return r;
    }
    return grad(sel, wrt, gos, true, /*create_graph=*/true, /*allow_unused=*/true);
  };
  return check_first_order(fn2, all, opts);
}

bool gradcheck(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs,
               const GradcheckOptions& opts) {
  return gradcheck(std::function<TensorList(const TensorList&)>([&](const TensorList& xs) { return TensorList{fn(xs)}; }),
                   inputs, opts);
}

}  // namespace brisk::autograd

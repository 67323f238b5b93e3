// The operator library as namespace functions (Tensor methods forward here).
#pragma once
#include <functional>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "brisk/detail/tensor_data.h"
#include "brisk/indexing.h"
#include "brisk/tensor.h"

namespace brisk {

// ---- factories --------------------------------------------------------------
Tensor empty(IntArrayRef sizes, TensorOptions opts = {});
Tensor empty(IntArrayRef sizes, TensorOptions opts, MemoryFormat fmt);
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions opts = {});
Tensor zeros(IntArrayRef sizes, TensorOptions opts = {});
Tensor ones(IntArrayRef sizes, TensorOptions opts = {});
Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions opts = {});
/// A 0-dim tensor holding v (dtype from v unless given).
Tensor scalar_tensor(const Scalar& v, TensorOptions opts = {});
Tensor empty_like(const Tensor& t, std::optional<TensorOptions> opts = std::nullopt);
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> opts = std::nullopt);
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> opts = std::nullopt);
Tensor full_like(const Tensor& t, const Scalar& value, std::optional<TensorOptions> opts = std::nullopt);
Tensor rand_like(const Tensor& t, std::optional<TensorOptions> opts = std::nullopt);
Tensor randn_like(const Tensor& t, std::optional<TensorOptions> opts = std::nullopt);
/// [start, end) with step; int64 when all arguments are integers, else the default dtype.
Tensor arange(const Scalar& end, TensorOptions opts = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions opts = {});
/// libtorch's arange(start, end, options): step 1.
inline Tensor arange(const Scalar& start, const Scalar& end, TensorOptions opts) { return arange(start, end, 1, opts); }
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions opts = {});
Tensor eye(int64_t n, TensorOptions opts = {});
Tensor eye(int64_t n, int64_t m, TensorOptions opts = {});
Tensor rand(IntArrayRef sizes, TensorOptions opts = {});
Tensor randn(IntArrayRef sizes, TensorOptions opts = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions opts = kInt64);
Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions opts = kInt64);
Tensor randperm(int64_t n, TensorOptions opts = kInt64);
Tensor bernoulli(const Tensor& p);
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false);
/// Samples of the standard Gamma distribution of concentration alpha[i] (as
/// torch._standard_gamma): same shape and floating dtype; values at least the
/// dtype's smallest normal number; differentiable in alpha (implicit
/// reparameterization, _standard_gamma_grad).
Tensor _standard_gamma(const Tensor& alpha);
/// d x / d alpha for x ~ Gamma(alpha, 1) at x (torch._standard_gamma_grad).
Tensor _standard_gamma_grad(const Tensor& alpha, const Tensor& x);
/// The regularized lower incomplete gamma function P(a, x) (torch.igamma):
/// a and x broadcast, dtype result_type(a, x), which must be floating (an
/// integer or bool argument goes with a floating one); differentiable in x,
/// twice and more.
Tensor igamma(const Tensor& a, const Tensor& x);
/// Poisson samples of rates[i] >= 0 (torch.poisson): same shape and dtype.
Tensor poisson(const Tensor& rates);
/// Binomial samples of count[i] trials of success probability prob[i]
/// (torch.binomial): count and prob broadcast; floating dtypes.
Tensor binomial(const Tensor& count, const Tensor& prob);
/// Wraps memory owned by the caller (zero copy). The deleter, if given, runs
/// when the last tensor viewing the memory goes away.
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions opts = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions opts = {});
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, TensorOptions opts = {});
/// Tensors from values: tensor({1.f, 2.f}), tensor({{1, 2}, {3, 4}}).
template <class T>
Tensor tensor(std::initializer_list<T> values, TensorOptions opts = {});
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> values, TensorOptions opts = {});
template <class T>
Tensor tensor(const std::vector<T>& values, TensorOptions opts = {});
template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes, TensorOptions opts = {});
/// Any depth of nesting, mixed literal types and single scalars:
/// tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}), tensor({1, 2.5}) (float32),
/// tensor(3.5) (a 0-dim tensor), tensor(3, kDouble). Without a dtype in
/// opts: any floating point value gives the default dtype (C++ floats only:
/// float32), else any integer int64, else bool. Ragged nesting is an error.
Tensor tensor(const detail::TensorData& data, TensorOptions opts = {});

// ---- random number generation -------------------------------------------------
/// Seeds the default generator (Philox4x32-10, counter based).
void manual_seed(uint64_t seed);
uint64_t initial_seed();

// ---- threads ------------------------------------------------------------------
void set_num_threads(int n);
int get_num_threads();

// ---- type promotion -------------------------------------------------------------
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, const Scalar& b);
bool can_cast(ScalarType from, ScalarType to);

// ---- elementwise ----------------------------------------------------------------
// Each binary op has tensor-tensor and tensor-scalar forms and an `_out` form
// writing into an existing tensor (resized if it is empty, else its shape must
// equal the broadcast shape).
#define BRISK_DECLARE_BINARY(name)                                          \
  Tensor name(const Tensor& a, const Tensor& b);                            \
  Tensor name(const Tensor& a, const Scalar& b);                            \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor rsub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
BRISK_DECLARE_BINARY(mul)
Tensor div(const Tensor& a, const Tensor& b, RoundingMode mode = RoundingMode::None);
Tensor div(const Tensor& a, const Scalar& b, RoundingMode mode = RoundingMode::None);
Tensor& div_out(Tensor& out, const Tensor& a, const Tensor& b, RoundingMode mode = RoundingMode::None);
BRISK_DECLARE_BINARY(remainder)
BRISK_DECLARE_BINARY(fmod)
BRISK_DECLARE_BINARY(pow)
Tensor pow(const Scalar& base, const Tensor& exponent);
BRISK_DECLARE_BINARY(minimum)
BRISK_DECLARE_BINARY(maximum)
BRISK_DECLARE_BINARY(atan2)
// PyTorch's binary math (floating results; copysign and xlogy compute
// integers in the default float dtype, heaviside takes one dtype)
Tensor hypot(const Tensor& a, const Tensor& b);
Tensor& hypot_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor logaddexp(const Tensor& a, const Tensor& b);
Tensor& logaddexp_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor logaddexp2(const Tensor& a, const Tensor& b);
Tensor& logaddexp2_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, const Scalar& b);
Tensor& copysign_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor nextafter(const Tensor& a, const Tensor& b);
Tensor& nextafter_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor xlogy(const Tensor& a, const Tensor& b);
Tensor xlogy(const Tensor& a, const Scalar& b);
Tensor xlogy(const Scalar& a, const Tensor& b);
Tensor& xlogy_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor heaviside(const Tensor& a, const Tensor& values);
Tensor& heaviside_out(Tensor& out, const Tensor& a, const Tensor& values);
/// a * 2^b (PyTorch's composite: mul(a, pow(2.0, b))).
Tensor ldexp(const Tensor& a, const Tensor& b);
Tensor& ldexp_out(Tensor& out, const Tensor& a, const Tensor& b);
/// pow in float64 (both operands converted first).
Tensor float_power(const Tensor& a, const Tensor& b);
Tensor float_power(const Tensor& a, const Scalar& b);
Tensor float_power(const Scalar& a, const Tensor& b);
Tensor& float_power_out(Tensor& out, const Tensor& a, const Tensor& b);
BRISK_DECLARE_BINARY(eq)
BRISK_DECLARE_BINARY(ne)
BRISK_DECLARE_BINARY(lt)
BRISK_DECLARE_BINARY(le)
BRISK_DECLARE_BINARY(gt)
BRISK_DECLARE_BINARY(ge)
BRISK_DECLARE_BINARY(logical_and)
BRISK_DECLARE_BINARY(logical_or)
BRISK_DECLARE_BINARY(logical_xor)
BRISK_DECLARE_BINARY(bitwise_and)
BRISK_DECLARE_BINARY(bitwise_or)
BRISK_DECLARE_BINARY(bitwise_xor)
/// Integer shifts (PyTorch 2's rules): a count outside [0, bit width) gives 0,
/// or -1 for a right shift of a negative value; left shifts wrap.
BRISK_DECLARE_BINARY(bitwise_left_shift)
BRISK_DECLARE_BINARY(bitwise_right_shift)
Tensor bitwise_left_shift(const Scalar& a, const Tensor& b);
Tensor bitwise_right_shift(const Scalar& a, const Tensor& b);
#undef BRISK_DECLARE_BINARY
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max);
Tensor& clamp_out(Tensor& out, const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
/// where(cond, a, b): a where cond is true, else b (broadcast, promoted).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b);
/// where(cond) = nonzero(cond) unbound into one index tensor per dim.
std::vector<Tensor> where(const Tensor& cond);

// The unary pointwise ops of include/brisk/detail/unary_ops.h: name(x) and
// name_out(out, x) for each (exp, log, sigmoid, erf, ..., isnan), and
// mish_(x); logit is declared below.
BRISK_FORALL_UNARY_OPS(BRISK_DETAIL_UNARY_DECLARE_FREE, _)
/// log(x / (1 - x)); with eps, x is first clamped to [eps, 1 - eps].
Tensor logit(const Tensor& x, std::optional<double> eps = std::nullopt);
Tensor& logit_out(Tensor& out, const Tensor& x, std::optional<double> eps = std::nullopt);
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
Tensor softplus(const Tensor& x, const Scalar& beta = 1, const Scalar& threshold = 20);
/// The activations with a kernel of their own, as torch::hardswish ...
/// torch::log_sigmoid (brisk::nn::functional has them with their options
/// and in-place forms): one pass, in float for float16/bfloat16 and rounded
/// once, PyTorch's formulas, kinks and NaN handling (docs/design/nn.md).
Tensor hardswish(const Tensor& x);
Tensor hardsigmoid(const Tensor& x);
/// x * scale above 0, expm1(x * input_scale) * alpha * scale at or below.
Tensor elu(const Tensor& x, const Scalar& alpha = 1, const Scalar& scale = 1, const Scalar& input_scale = 1);
Tensor selu(const Tensor& x);
Tensor celu(const Tensor& x, const Scalar& alpha = 1.0);
Tensor leaky_relu(const Tensor& x, const Scalar& negative_slope = 0.01);
Tensor softshrink(const Tensor& x, const Scalar& lambd = 0.5);
Tensor hardshrink(const Tensor& x, const Scalar& lambd = 0.5);
Tensor log_sigmoid(const Tensor& x);
/// NaN -> nan (0 by default), +inf -> posinf, -inf -> neginf (by default the
/// dtype's largest and lowest finite values). Integer inputs are copied.
Tensor nan_to_num(const Tensor& x, std::optional<double> nan = std::nullopt,
                  std::optional<double> posinf = std::nullopt, std::optional<double> neginf = std::nullopt);
/// grad where self > threshold (or nan), else 0, in one pass (ReLU's
/// backward). Differentiable as torch's: in grad the same mask, in self 0.
Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold);
/// The activation gradients in one pass, as torch's (computed in float for
/// float16/bfloat16 and rounded once): sigmoid and tanh from the forward's
/// output, the others from its input. Differentiable: under create_graph
/// they record their formula in brisk's ops.
Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output);
Tensor tanh_backward(const Tensor& grad_output, const Tensor& output);
Tensor silu_backward(const Tensor& grad_output, const Tensor& self);
Tensor mish_backward(const Tensor& grad_output, const Tensor& self);
Tensor gelu_backward(const Tensor& grad_output, const Tensor& self, std::string_view approximate = "none");
Tensor logit_backward(const Tensor& grad_output, const Tensor& self, std::optional<double> eps = std::nullopt);
Tensor softplus_backward(const Tensor& grad_output, const Tensor& self, const Scalar& beta = 1,
                         const Scalar& threshold = 20);
Tensor hardswish_backward(const Tensor& grad_output, const Tensor& self);
Tensor hardsigmoid_backward(const Tensor& grad_output, const Tensor& self);
/// torch's signature; is_result: self_or_result is the forward's output.
Tensor elu_backward(const Tensor& grad_output, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale,
                    bool is_result, const Tensor& self_or_result);
Tensor leaky_relu_backward(const Tensor& grad_output, const Tensor& self, const Scalar& negative_slope,
                           bool self_is_result = false);
Tensor softshrink_backward(const Tensor& grad_output, const Tensor& self, const Scalar& lambd);
Tensor hardshrink_backward(const Tensor& grad_output, const Tensor& self, const Scalar& lambd);
/// Without torch's `buffer` argument: brisk recomputes exp(-|x|).
Tensor log_sigmoid_backward(const Tensor& grad_output, const Tensor& self);
Tensor hardtanh_backward(const Tensor& grad_output, const Tensor& self, const Scalar& min_val, const Scalar& max_val);
/// torch's signature: reduction 0 none, 1 mean, 2 sum (at::Reduction).
Tensor mse_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target, int64_t reduction);

// ---- reductions -----------------------------------------------------------------
Tensor sum(const Tensor& x, std::optional<ScalarType> dtype = std::nullopt);
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor& sum_out(Tensor& out, const Tensor& x, IntArrayRef dims, bool keepdim = false);
Tensor mean(const Tensor& x, std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
/// sum with NaNs taken as 0 (torch.nansum); integers as sum.
Tensor nansum(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false,
              std::optional<ScalarType> dtype = std::nullopt);
/// mean of the non-NaN elements (torch.nanmean; NaN where there are none);
/// floating inputs only.
Tensor nanmean(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false,
               std::optional<ScalarType> dtype = std::nullopt);
/// int64 number of nonzero elements over dims (every dim when empty).
Tensor count_nonzero(const Tensor& x, IntArrayRef dims = {});
Tensor count_nonzero(const Tensor& x, int64_t dim);
/// The sum of a matrix's main diagonal, accumulated as PyTorch's CPU kernel
/// (float32 in double, 16-bit in float32; integers give int64).
Tensor trace(const Tensor& x);
Tensor prod(const Tensor& x, std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// var/std with Bessel-style correction (1 = unbiased). Empty dims = all.
Tensor var(const Tensor& x, std::optional<std::vector<int64_t>> dims = std::nullopt, const Scalar& correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& x, std::optional<std::vector<int64_t>> dims = std::nullopt, const Scalar& correction = 1,
           bool keepdim = false);
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, std::optional<std::vector<int64_t>> dims = std::nullopt,
                                    const Scalar& correction = 1, bool keepdim = false);
Tensor norm(const Tensor& x, const Scalar& p = 2, IntArrayRef dims = {}, bool keepdim = false);
Tensor logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim = false);
Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor all(const Tensor& x);
Tensor any(const Tensor& x);
Tensor all(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
/// The lower of the two middle values (NaN if any element is NaN; NaN for an
/// empty input). The gradient is split among the elements equal to it.
Tensor median(const Tensor& x);
/// (values, indices) along dim, as max(dim): the lower middle value of each
/// row (NaN and the index of the first NaN for a row holding NaN).
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);
/// median ignoring NaN (NaN only where every element is NaN).
Tensor nanmedian(const Tensor& x);
std::tuple<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim = false);

// ---- linear algebra ----------------------------------------------------------------
/// numpy/PyTorch matmul: dot, mv, mm, and batched with broadcasting.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor& matmul_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor& mm_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
/// beta * self + alpha * (m1 @ m2)
Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor mv(const Tensor& m, const Tensor& v);
Tensor dot(const Tensor& a, const Tensor& b);
Tensor outer(const Tensor& a, const Tensor& b);
/// Einstein summation for the common patterns ("ij,jk->ik", "bij,bjk->bik",
/// "i,i->", "ij->ji", "ii->i", ...): any equation with explicit or implicit
/// output, reduced through permute/reshape/bmm.
Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);

// ---- shape ------------------------------------------------------------------------
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor& cat_out(Tensor& out, const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor hstack(const std::vector<Tensor>& tensors);
Tensor vstack(const std::vector<Tensor>& tensors);
Tensor dstack(const std::vector<Tensor>& tensors);
Tensor flip(const Tensor& x, IntArrayRef dims);
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {});
Tensor tril(const Tensor& x, int64_t diagonal = 0);
/// x's elements (dim: its slices along dim) each repeated `repeats` times,
/// as torch.repeat_interleave (an index_select: gradients sum the copies).
/// A tensor of repeats has one count per slice (or one for all); no dim:
/// x is flattened first. output_size, when given, must be the result's size.
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
/// repeat_interleave(repeats) alone: index i repeated repeats[i] times (int64).
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size = std::nullopt);
/// A 1-D x: the square matrix with x on the diagonal-th diagonal; a 2-D x:
/// a copy of its diagonal-th diagonal (torch.diag).
Tensor diag(const Tensor& x, int64_t diagonal = 0);
/// x's last dim placed on the offset-th diagonal of new dims dim1, dim2
/// (zeros elsewhere), as torch.diag_embed.
Tensor diag_embed(const Tensor& x, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
/// flip(x, {1}) of an x of 2 dims or more; flip(x, {0}) of 1 or more.
Tensor fliplr(const Tensor& x);
Tensor flipud(const Tensor& x);
/// x rotated by k quarter turns in the plane of dims (from the first dim
/// towards the second), as torch.rot90.
Tensor rot90(const Tensor& x, int64_t k = 1, IntArrayRef dims = {0, 1});
/// The row and column indices (2 x n, int64 by default) of the lower / upper
/// triangle of a row x col matrix from diagonal offset, row by row.
Tensor tril_indices(int64_t row, int64_t col, int64_t offset = 0, TensorOptions opts = {});
Tensor triu_indices(int64_t row, int64_t col, int64_t offset = 0, TensorOptions opts = {});
/// gather after broadcasting x and indices over every dim but dim (the
/// flattened x without one), as torch.take_along_dim.
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim = std::nullopt);
/// n-th forward difference along dim, with prepend/append concatenated first (torch.diff).
Tensor diff(const Tensor& x, int64_t n = 1, int64_t dim = -1, const std::optional<Tensor>& prepend = std::nullopt,
            const std::optional<Tensor>& append = std::nullopt);
/// Kronecker product (torch.kron).
Tensor kron(const Tensor& a, const Tensor& b);
/// Cross product of 3-vectors along dim (linalg_cross: -1; cross without a
/// dim: the first dim of size 3, as torch.cross).
Tensor linalg_cross(const Tensor& a, const Tensor& b, int64_t dim = -1);
Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim = std::nullopt);
/// The inputs (0-dim: 1x1, 1-dim: a row) on the diagonal of a zero matrix.
Tensor block_diag(const std::vector<Tensor>& tensors);
/// Every combination of the 1-dim inputs' elements, one per row.
Tensor cartesian_prod(const std::vector<Tensor>& tensors);
Tensor atleast_1d(const Tensor& x);
Tensor atleast_2d(const Tensor& x);
Tensor atleast_3d(const Tensor& x);
/// 0/1-dim inputs as columns, then hstack (torch.column_stack).
Tensor column_stack(const std::vector<Tensor>& tensors);
/// clamp's other name.
Tensor clip(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clip(const Tensor& x, const Tensor& min, const Tensor& max);
Tensor swapdims(const Tensor& x, int64_t d0, int64_t d1);
Tensor swapaxes(const Tensor& x, int64_t d0, int64_t d1);
Tensor adjoint(const Tensor& x);
Tensor sgn(const Tensor& x);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
/// Constant padding; pad lists (left, right) pairs starting from the last dim.
Tensor pad(const Tensor& x, IntArrayRef pad, const Scalar& value = 0);
/// indexing: "ij" (matrix) or "xy" (Cartesian).
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing = "ij");
Tensor broadcast_to(const Tensor& x, IntArrayRef sizes);
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors);
/// The broadcast shape of two shapes; throws naming op when incompatible.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op = "broadcast_shapes");

// ---- indexing ----------------------------------------------------------------------
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/// x with alpha * src added at `index` along dim (Tensor::index_add_ on a copy).
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha = 1);
Tensor masked_select(const Tensor& x, const Tensor& mask);
/// self with values written (accumulate: added) at the indices; see
/// Tensor::index_put_(indices, values, accumulate).
Tensor index_put(const Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& values,
                 bool accumulate = false);
Tensor& index_put_(Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& values,
                   bool accumulate = false);
Tensor nonzero(const Tensor& x);

// ---- copies and comparisons ------------------------------------------------------------
bool equal(const Tensor& a, const Tensor& b);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);

}  // namespace brisk

#include "brisk/detail/tensor_factories_impl.h"

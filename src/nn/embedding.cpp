// EmbeddingBag (include/brisk/nn/embedding.h). The bags are laid out as a
// padded (B, Lmax) table of positions into the flat input (a sentinel past
// its end for the padding); one index_select gathers every bag's rows into
// (B, Lmax, D), a mask selects away the padding (and padding_idx entries),
// and a sum, mean or max over dim 1 reduces. All differentiable ops: the
// weight (and per_sample_weights) get their gradients from autograd.
#include "brisk/nn/embedding.h"

#include <algorithm>
#include <limits>
#include <sstream>
#include <vector>

#include "brisk/autograd.h"
#include "brisk/nn/init.h"
#include "brisk/ops.h"

namespace brisk::nn {

EmbeddingBagMode::EmbeddingBagMode(Reduction r) : kind(Kind::Mean) {
  BRISK_CHECK(r == Reduction::Sum || r == Reduction::Mean, "EmbeddingBag",
              "mode must be kSum, kMean or kMax");
  kind = r == Reduction::Sum ? Kind::Sum : Kind::Mean;
}
const char* embedding_bag_mode_name(EmbeddingBagMode m) {
  switch (m.kind) {
    case EmbeddingBagMode::Kind::Sum: return "sum";
    case EmbeddingBagMode::Kind::Mean: return "mean";
    case EmbeddingBagMode::Kind::Max: return "max";
  }
  return "?";
}

namespace {
/// mode='max' over the slots of each bag. rows: (B, L, D), valid: (B, L).
/// PyTorch's kernel starts from the bag's first kept row and replaces the
/// maximum by a strictly greater value: a NaN wins only as that first row,
/// later NaNs are skipped, and ties keep the first. The chosen row of each
/// bag and column is gathered (so the gradient goes to it alone); an empty
/// bag gives 0.
Tensor bag_max(const Tensor& rows, const Tensor& valid) {
  const int64_t bags = rows.size(0), lmax = rows.size(1);
  const Tensor vmask = valid.view({bags, lmax, 1});
  Tensor slot;
  {
    NoGradGuard no_grad;
    const TensorOptions lopts = TensorOptions(kInt64).device(rows.device());
    const Tensor first = valid.to(kInt64).argmax(1, true);  // (B, 1): the first kept slot
    const Tensor is_first = logical_and(eq(arange(lmax, lopts).view({1, lmax}), first), valid).view({bags, lmax, 1});
    const Tensor nan = isnan(rows);
    const Tensor num = logical_and(vmask, logical_not(nan));
    const Tensor best = amax(where(num, rows, -std::numeric_limits<double>::infinity()), {1}, true);  // (B, 1, D)
    const Tensor hit = logical_or(logical_and(is_first, nan), logical_and(num, eq(rows, best)));
    slot = hit.to(kInt64).argmax(1, true);  // (B, 1, D): the first hit
  }
  const Tensor out = rows.gather(1, slot).squeeze(1);
  return where(valid.any(1, true), out, 0.0);
}
}  // namespace

namespace functional {

Tensor one_hot(const Tensor& tensor, int64_t num_classes) {
  const char* op = "one_hot";
  BRISK_CHECK(tensor.defined(), op, "input must be defined");
  BRISK_CHECK(tensor.dtype() == kInt64, op, "one_hot is only applicable to index tensors of dtype int64, got ",
              tensor.dtype());
  if (tensor.numel() == 0) {
    BRISK_CHECK(num_classes > 0, op, "cannot infer the number of classes from an empty tensor (pass num_classes)");
  } else {
    const int64_t lo = tensor.min().item<int64_t>();
    BRISK_CHECK(lo >= 0, op, "class values must be non-negative, got ", lo);
    const int64_t hi = tensor.max().item<int64_t>();
    if (num_classes == -1) {
      num_classes = hi + 1;
    } else {
      BRISK_CHECK(hi < num_classes, op, "class values must be smaller than num_classes ", num_classes, ", got ", hi);
    }
  }
  // (*, 1) == (C): the one-hot rows, on the input's device
  return tensor.unsqueeze(-1).eq(arange(num_classes, TensorOptions(kInt64).device(tensor.device()))).to(kInt64);
}

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& o) {
  const char* op = "embedding_bag";
  BRISK_CHECK(input.defined() && (input.dtype() == kInt64 || input.dtype() == kInt32), op,
              "expected indices of dtype int64 (or int32)");
  BRISK_CHECK(weight.defined() && weight.dim() == 2, op, "expected a 2-D weight, got ",
              weight.defined() ? weight.sizes() : IntArrayRef{});
  // PyTorch's embedding_bag has floating-point kernels only (fuzzer nn3, seed 1 case 1706)
  BRISK_CHECK(is_floating_point(weight.dtype()), op, "expected a floating-point weight, got ", weight.dtype());
  BRISK_CHECK(!o.scale_grad_by_freq(), op, "scale_grad_by_freq=true is not supported by brisk");
  BRISK_CHECK(!o.sparse(), op, "sparse=true is not supported by brisk (no sparse gradients)");
  const auto mode = o.mode().kind;
  const Tensor& psw = o.per_sample_weights();
  if (psw.defined()) {
    BRISK_CHECK(mode == EmbeddingBagMode::Kind::Sum, op, "per_sample_weights are only supported for mode 'sum', got '",
                embedding_bag_mode_name(o.mode()), "'");
    BRISK_CHECK(psw.sizes() == input.sizes(), op, "per_sample_weights (", psw.sizes(), ") must have the shape of input (",
                input.sizes(), ")");
    BRISK_CHECK(psw.dtype() == weight.dtype(), op, "per_sample_weights (", psw.dtype(), ") must have the weight's dtype (",
                weight.dtype(), ")");
  }
  const int64_t n = weight.size(0), d = weight.size(1);
  std::optional<int64_t> pad = o.padding_idx();
  if (pad) {
    BRISK_CHECK(*pad >= -n && *pad < n, op, "padding_idx ", *pad, " is out of range for ", n, " embeddings");
    if (*pad < 0) *pad += n;
  }
  // the bags: [begin, end) ranges of the flat input
  std::vector<int64_t> begin, end;
  Tensor flat;
  if (input.dim() == 2) {
    BRISK_CHECK(!o.offsets().defined(), op, "offsets must not be given with a 2-D input (each row is a bag)");
    const int64_t b = input.size(0), l = input.size(1);
    for (int64_t i = 0; i < b; ++i) {
      begin.push_back(i * l);
      end.push_back((i + 1) * l);
    }
    flat = input.reshape({-1});
  } else {
    BRISK_CHECK(input.dim() == 1, op, "expected a 1-D or 2-D input, got shape ", input.sizes());
    BRISK_CHECK(o.offsets().defined() && o.offsets().dim() == 1, op, "a 1-D input needs 1-D offsets");
    const Tensor off = o.offsets().cpu().to(kInt64).contiguous();
    const int64_t* p = off.data_ptr<int64_t>();
    const int64_t m = off.numel(), e = input.numel();
    BRISK_CHECK(m > 0 && p[0] == 0, op, "offsets must start at 0");
    const int64_t bags = o.include_last_offset() ? m - 1 : m;
    for (int64_t i = 0; i < bags; ++i) {
      const int64_t s = p[i], t = i + 1 < m ? p[i + 1] : e;
      BRISK_CHECK(s <= t && t <= e, op, "offsets must be non-decreasing and at most the input size ", e, ", got ",
                  s, " then ", t);
      begin.push_back(s);
      end.push_back(t);
    }
    flat = input;
  }
  const int64_t e = flat.numel(), bags = static_cast<int64_t>(begin.size());
  if (e > 0 && flat.is_cpu()) {
    const int64_t hi = flat.max().item<int64_t>(), lo = flat.min().item<int64_t>();
    BRISK_CHECK(lo >= 0 && hi < n, op, "index ", (hi >= n ? hi : lo), " is out of range for ", n, " embeddings");
  }
  if (o.max_norm()) (void)embedding(flat, weight, EmbeddingFuncOptions().max_norm(o.max_norm()).norm_type(o.norm_type()));
  int64_t lmax = 1;
  for (int64_t i = 0; i < bags; ++i) lmax = std::max(lmax, end[size_t(i)] - begin[size_t(i)]);
  std::vector<int64_t> pos(size_t(bags * lmax), e);  // e: the sentinel
  for (int64_t i = 0; i < bags; ++i)
    for (int64_t j = begin[size_t(i)]; j < end[size_t(i)]; ++j) pos[size_t(i * lmax + j - begin[size_t(i)])] = j;
  const TensorOptions lopts = TensorOptions(kInt64).device(weight.device());
  const Tensor posv = tensor(pos, lopts);
  // indices of every slot (0 for the sentinel) and its validity
  const Tensor ext = cat({flat.to(kInt64), zeros({1}, lopts)});
  const Tensor idx = ext.index_select(0, posv);
  Tensor valid = lt(posv, e);
  if (pad) valid = logical_and(valid, ne(idx, *pad));
  const Tensor rows = weight.index_select(0, idx).view({bags, lmax, d});
  const Tensor vmask = valid.view({bags, lmax, 1});
  if (mode == EmbeddingBagMode::Kind::Max) return bag_max(rows, valid.view({bags, lmax}));
  // The dropped slots (padding, padding_idx) are selected away, not
  // multiplied by 0: a row holding inf would make them NaN.
  Tensor kept = where(vmask, rows, 0.0);
  if (psw.defined()) {
    const Tensor pext = cat({psw.reshape({-1}).to(weight.dtype()), zeros({1}, TensorOptions(weight.dtype()).device(weight.device()))});
    // The weight of a dropped slot is selected away too: an infinite one
    // would make the bag NaN, and its gradient is 0 under any incoming
    // gradient (torch skips padding_idx entries in both directions).
    kept = kept * where(vmask, pext.index_select(0, posv).view({bags, lmax, 1}), 0.0);
  }
  Tensor sum = kept.sum({1});
  if (mode == EmbeddingBagMode::Kind::Sum) return sum;
  const Tensor count = valid.view({bags, lmax}).to(weight.dtype()).sum({1}, true);
  return sum / clamp(count, 1.0);
}

}  // namespace functional

EmbeddingBagImpl::EmbeddingBagImpl(const EmbeddingBagOptions& o, TensorOptions opts)
    : Module("EmbeddingBag"), options(o) {
  const int64_t num = o.num_embeddings(), dim = o.embedding_dim();
  BRISK_CHECK(num >= 0 && dim >= 0, "EmbeddingBag", "sizes must be non-negative, got ", num, " and ", dim);
  BRISK_CHECK(!o.scale_grad_by_freq(), "EmbeddingBag", "scale_grad_by_freq=true is not supported by brisk");
  BRISK_CHECK(!o.sparse(), "EmbeddingBag", "sparse=true is not supported by brisk (no sparse gradients)");
  if (const auto pad = o.padding_idx()) {
    BRISK_CHECK(*pad >= -num && *pad < num, "EmbeddingBag", "padding_idx ", *pad, " is out of range for ", num,
                " embeddings");
    options.padding_idx(*pad < 0 ? *pad + num : *pad);
  }
  if (o._weight().defined()) {
    BRISK_CHECK(o._weight().dim() == 2 && o._weight().size(0) == num && o._weight().size(1) == dim, "EmbeddingBag",
                "_weight must have shape [", num, ", ", dim, "], got ", o._weight().sizes());
    weight = register_parameter("weight", o._weight());
  } else {
    weight = register_parameter("weight", empty({num, dim}, opts));
    reset_parameters();
  }
}
void EmbeddingBagImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx()).zero_();
  }
}
Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return F::embedding_bag(input, weight,
                          F::EmbeddingBagFuncOptions()
                              .offsets(offsets)
                              .max_norm(options.max_norm())
                              .norm_type(options.norm_type())
                              .mode(options.mode())
                              .per_sample_weights(per_sample_weights)
                              .include_last_offset(options.include_last_offset())
                              .padding_idx(options.padding_idx()));
}
std::string EmbeddingBagImpl::extra_repr() const {
  std::ostringstream os;
  os << options.num_embeddings() << ", " << options.embedding_dim();
  if (options.max_norm()) os << ", max_norm=" << *options.max_norm();
  if (options.norm_type() != 2.0) os << ", norm_type=" << options.norm_type();
  os << ", mode='" << embedding_bag_mode_name(options.mode()) << "'";
  if (options.include_last_offset()) os << ", include_last_offset=true";
  if (options.padding_idx()) os << ", padding_idx=" << *options.padding_idx();
  return os.str();
}

EmbeddingBag EmbeddingBag::from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& o) {
  BRISK_CHECK(embeddings.defined() && embeddings.dim() == 2, "EmbeddingBag::from_pretrained",
              "expected a 2-D embeddings tensor, got ", embeddings.defined() ? embeddings.sizes() : IntArrayRef{});
  EmbeddingBag e(EmbeddingBagOptions(embeddings.size(0), embeddings.size(1))
                     .max_norm(o.max_norm())
                     .norm_type(o.norm_type())
                     .scale_grad_by_freq(o.scale_grad_by_freq())
                     .mode(o.mode())
                     .sparse(o.sparse())
                     .include_last_offset(o.include_last_offset())
                     .padding_idx(o.padding_idx())
                     ._weight(embeddings),
                 TensorOptions(embeddings.dtype()).device(embeddings.device()));
  e->weight.requires_grad_(!o.freeze());
  return e;
}

}  // namespace brisk::nn

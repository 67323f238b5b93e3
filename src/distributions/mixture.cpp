// MixtureSameFamily (torch.distributions.MixtureSameFamily, torch 2.15).
#include "brisk/distributions.h"
#include "brisk/error.h"
#include "distributions/common.h"

namespace brisk::distributions {

using namespace detail;

namespace {
std::vector<int64_t> mixture_batch(const Categorical& mix, const DistributionPtr& comp) {
  BRISK_CHECK(comp != nullptr, "MixtureSameFamily", "the component distribution is null");
  const auto& cb = comp->batch_shape();
  const auto& mb = mix.batch_shape();
  BRISK_CHECK(!cb.empty() && cb.back() == mix.num_events(), "MixtureSameFamily",
              "the components' last batch dim must be the number of mixture components (",
              mix.num_events(), "), got batch shape ", shape_str(cb));
  const std::vector<int64_t> b(cb.begin(), cb.end() - 1);
  BRISK_CHECK(b == mb, "MixtureSameFamily", "the mixture's batch shape ", shape_str(mb),
              " differs from the components' ", shape_str(b));
  return b;
}
}  // namespace

MixtureSameFamily::MixtureSameFamily(const Categorical& mix, DistributionPtr comp, std::optional<bool> v)
    : Distribution(mixture_batch(mix, comp), comp->event_shape(), v), mixture(mix), components(std::move(comp)) {}

Tensor MixtureSameFamily::sample(const std::vector<int64_t>& shape) const {
  NoGradGuard ng;
  const int64_t ev = static_cast<int64_t>(event_shape_.size());
  const Tensor which = mixture.sample(shape);      // shape + batch
  const Tensor all = components->sample(shape);    // shape + batch + [K] + event
  // index of shape shape + batch + [1] + event
  Tensor idx = which;
  for (int64_t i = 0; i <= ev; ++i) idx = idx.unsqueeze(-1);
  std::vector<int64_t> target = dims(idx);
  for (int64_t i = 0; i < ev; ++i) target[target.size() - 1 - i] = event_shape_[event_shape_.size() - 1 - i];
  idx = idx.expand(target);
  return all.gather(-1 - ev, idx).squeeze(-1 - ev);
}

Tensor MixtureSameFamily::log_prob(const Tensor& value) const {
  validate_sample(value);
  const int64_t ev = static_cast<int64_t>(event_shape_.size());
  const Tensor lp = components->log_prob(value.unsqueeze(-1 - ev));  // shape + batch + [K]
  return (lp + mixture.logits.log_softmax(-1)).logsumexp({-1});
}

Tensor MixtureSameFamily::cdf(const Tensor& value) const {
  const int64_t ev = static_cast<int64_t>(event_shape_.size());
  BRISK_CHECK(ev == 0, "MixtureSameFamily", "cdf is defined for univariate components only");
  return (components->cdf(value.unsqueeze(-1)) * mixture.probs).sum({-1});
}

namespace {
Tensor pad_probs(const Tensor& p, int64_t ev) {
  Tensor r = p;
  for (int64_t i = 0; i < ev; ++i) r = r.unsqueeze(-1);
  return r;
}
}  // namespace

Tensor MixtureSameFamily::mean() const {
  const int64_t ev = static_cast<int64_t>(event_shape_.size());
  return (pad_probs(mixture.probs, ev) * components->mean()).sum({-1 - ev});
}

Tensor MixtureSameFamily::variance() const {
  const int64_t ev = static_cast<int64_t>(event_shape_.size());
  const Tensor p = pad_probs(mixture.probs, ev);
  const Tensor mean_cond_var = (p * components->variance()).sum({-1 - ev});
  const Tensor var_cond_mean = (p * (components->mean() - mean().unsqueeze(-1 - ev)).square()).sum({-1 - ev});
  return mean_cond_var + var_cond_mean;
}

DistributionPtr MixtureSameFamily::expand(const std::vector<int64_t>& bs) const {
  const auto mix = std::static_pointer_cast<Categorical>(mixture.expand(bs));
  return std::make_shared<MixtureSameFamily>(*mix, components->expand(concat(bs, {mixture.num_events()})), validate_);
}

}  // namespace brisk::distributions

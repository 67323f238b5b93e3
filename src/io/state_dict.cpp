// StateDict: named tensors in insertion order with unique names.
#include "brisk/io.h"

namespace brisk {

StateDict::StateDict(std::initializer_list<value_type> items) {
  reserve(items.size());
  for (const auto& [name, tensor] : items) insert(name, tensor);
}

Tensor& StateDict::insert(std::string name, Tensor tensor) {
  BRISK_CHECK(!contains(name), "StateDict", "the name '", name, "' is already present");
  index_.emplace(name, items_.size());
  items_.emplace_back(std::move(name), std::move(tensor));
  return items_.back().second;
}

const Tensor* StateDict::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

Tensor* StateDict::find(const std::string& name) {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

const Tensor& StateDict::at(const std::string& name) const {
  const Tensor* t = find(name);
  BRISK_CHECK(t != nullptr, "StateDict", "no tensor named '", name, "'");
  return *t;
}

Tensor& StateDict::at(const std::string& name) {
  Tensor* t = find(name);
  BRISK_CHECK(t != nullptr, "StateDict", "no tensor named '", name, "'");
  return *t;
}

bool StateDict::erase(const std::string& name) {
  auto it = index_.find(name);
  if (it == index_.end()) return false;
  size_t pos = it->second;
  index_.erase(it);
  items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(pos));
  for (size_t i = pos; i < items_.size(); ++i) index_[items_[i].first] = i;
  return true;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& kv : items_) out.push_back(kv.first);
  return out;
}

void StateDict::reserve(size_t n) {
  items_.reserve(n);
  index_.reserve(n);
}

void StateDict::clear() {
  items_.clear();
  index_.clear();
}

}  // namespace brisk

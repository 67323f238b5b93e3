// brisk::OrderedDict: a map that remembers insertion order (libtorch's
// torch::OrderedDict), the type of Module::named_parameters(),
// named_buffers(), named_children() and Sequential's named constructor.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "brisk/error.h"

namespace brisk {

/// Items are pairs with libtorch's accessors: `item.key()`, `item.value()`,
/// and also `item.first`, `item.second` and structured bindings
/// (`for (auto& [name, t] : m.named_parameters())`).
///
/// As libtorch's: insert() throws when the key is already present (update()
/// replaces), operator[] takes a key or a position, and iteration is in
/// insertion order.
template <class Key, class Value>
class OrderedDict {
 public:
  class Item : public std::pair<Key, Value> {
   public:
    using std::pair<Key, Value>::pair;
    const Key& key() const noexcept { return this->first; }
    Value& value() noexcept { return this->second; }
    const Value& value() const noexcept { return this->second; }
    Value& operator*() noexcept { return this->second; }
    const Value& operator*() const noexcept { return this->second; }
    Value* operator->() noexcept { return &this->second; }
    const Value* operator->() const noexcept { return &this->second; }
    const std::pair<Key, Value>& pair() const noexcept { return *this; }
  };
  using key_type = Key;
  using mapped_type = Value;
  using value_type = Item;
  using iterator = typename std::vector<Item>::iterator;
  using const_iterator = typename std::vector<Item>::const_iterator;

  /// `key_description` names what the keys are in error messages ("Key",
  /// "Parameter", "Module"), as libtorch's.
  explicit OrderedDict(std::string key_description = "Key") : key_description_(std::move(key_description)) {}
  OrderedDict(std::initializer_list<Item> items) : OrderedDict() {
    for (const auto& it : items) insert(it.first, it.second);
  }

  /// Adds `key`; throws brisk::Error when it is already present.
  Value& insert(Key key, Value value) {
    BRISK_CHECK(index_.count(key) == 0, "OrderedDict", key_description_, " '", key, "' already defined");
    index_.emplace(key, items_.size());
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().second;
  }
  /// Adds `key`, or replaces its value when present (keeps its position).
  Value& insert_or_assign(Key key, Value value) {
    auto f = index_.find(key);
    if (f != index_.end()) return items_[f->second].second = std::move(value);
    index_.emplace(key, items_.size());
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().second;
  }
  /// insert_or_assign for every item of `other`, in its order.
  void update(const OrderedDict& other) {
    for (const auto& it : other) insert_or_assign(it.first, it.second);
  }
  /// Removes `key` and returns its value; throws when absent.
  Value pop(const Key& key) {
    auto f = index_.find(key);
    BRISK_CHECK(f != index_.end(), "OrderedDict", key_description_, " '", key, "' is not defined");
    size_t pos = f->second;
    Value v = std::move(items_[pos].second);
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(pos));
    index_.erase(f);
    for (auto& kv : index_)
      if (kv.second > pos) --kv.second;
    return v;
  }
  void clear() {
    items_.clear();
    index_.clear();
  }
  void reserve(size_t n) {
    items_.reserve(n);
    index_.reserve(n);
  }

  bool contains(const Key& key) const noexcept { return index_.count(key) != 0; }
  /// The value of `key`, or null.
  const Value* find(const Key& key) const noexcept {
    auto f = index_.find(key);
    return f == index_.end() ? nullptr : &items_[f->second].second;
  }
  Value* find(const Key& key) noexcept {
    auto f = index_.find(key);
    return f == index_.end() ? nullptr : &items_[f->second].second;
  }
  /// The value of `key`; throws brisk::Error naming the key when absent.
  const Value& at(const Key& key) const {
    const Value* v = find(key);
    BRISK_CHECK(v, "OrderedDict", key_description_, " '", key, "' is not defined");
    return *v;
  }
  Value& at(const Key& key) { return const_cast<Value&>(std::as_const(*this).at(key)); }
  const Value& operator[](const Key& key) const { return at(key); }
  Value& operator[](const Key& key) { return at(key); }
  /// The item at `index` in insertion order; throws when out of range.
  const Item& operator[](size_t index) const {
    BRISK_CHECK(index < items_.size(), "OrderedDict", "index ", index, " is out of range for a dict of size ",
                items_.size());
    return items_[index];
  }
  Item& operator[](size_t index) { return const_cast<Item&>(std::as_const(*this)[index]); }
  const Item& front() const { return (*this)[0]; }
  const Item& back() const {
    BRISK_CHECK(!items_.empty(), "OrderedDict", "back() of an empty dict");
    return items_.back();
  }

  size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  bool is_empty() const noexcept { return items_.empty(); }
  const std::string& key_description() const noexcept { return key_description_; }
  std::vector<Key> keys() const {
    std::vector<Key> k;
    k.reserve(items_.size());
    for (const auto& it : items_) k.push_back(it.first);
    return k;
  }
  std::vector<Value> values() const {
    std::vector<Value> v;
    v.reserve(items_.size());
    for (const auto& it : items_) v.push_back(it.second);
    return v;
  }
  const std::vector<Item>& items() const noexcept { return items_; }
  /// The items as std::pair (libtorch's pairs()).
  std::vector<std::pair<Key, Value>> pairs() const { return {items_.begin(), items_.end()}; }
  iterator begin() noexcept { return items_.begin(); }
  iterator end() noexcept { return items_.end(); }
  const_iterator begin() const noexcept { return items_.begin(); }
  const_iterator end() const noexcept { return items_.end(); }

 private:
  std::string key_description_;
  std::vector<Item> items_;
  std::unordered_map<Key, size_t> index_;
};

}  // namespace brisk

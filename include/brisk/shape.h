// Sizes and strides: a small inline vector and a non-owning view of one.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iosfwd>
#include <vector>

namespace brisk {

/// Vector of int64 with N elements stored inline (no heap for ndim <= N).
template <size_t N>
class SmallVec {
 public:
  SmallVec() = default;
  explicit SmallVec(size_t n, int64_t v = 0) { resize(n, v); }
  SmallVec(const int64_t* b, const int64_t* e) { assign(b, e); }
  SmallVec(std::initializer_list<int64_t> l) { assign(l.begin(), l.end()); }
  SmallVec(const SmallVec& o) { assign(o.begin(), o.end()); }
  SmallVec(SmallVec&& o) noexcept { move_from(o); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      release();
      move_from(o);
    }
    return *this;
  }
  ~SmallVec() { release(); }

  void assign(const int64_t* b, const int64_t* e) {
    size_t n = static_cast<size_t>(e - b);
    reserve(n);
    // Shapes are short: a loop, not a call of memmove. Copying forwards is
    // right for the one overlap possible, b inside this vector (b >= data_).
    for (size_t i = 0; i < n; ++i) data_[i] = b[i];
    size_ = n;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    auto* p = static_cast<int64_t*>(std::malloc(n * sizeof(int64_t)));
    std::memcpy(p, data_, size_ * sizeof(int64_t));
    if (data_ != inline_) std::free(data_);
    data_ = p;
    cap_ = n;
  }
  void resize(size_t n, int64_t v = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  void push_back(int64_t v) {
    if (size_ == cap_) reserve(cap_ * 2);
    data_[size_++] = v;
  }
  void insert(size_t pos, int64_t v) {
    push_back(0);
    std::memmove(data_ + pos + 1, data_ + pos, (size_ - 1 - pos) * sizeof(int64_t));
    data_[pos] = v;
  }
  void erase(size_t pos) {
    std::memmove(data_ + pos, data_ + pos + 1, (size_ - 1 - pos) * sizeof(int64_t));
    --size_;
  }
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return data_; }
  const int64_t* data() const { return data_; }
  int64_t* begin() { return data_; }
  int64_t* end() { return data_ + size_; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  int64_t& operator[](size_t i) { return data_[i]; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t& back() { return data_[size_ - 1]; }
  bool operator==(const SmallVec& o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)  // shapes are short: no memcmp call
      if (data_[i] != o.data_[i]) return false;
    return true;
  }

 private:
  void release() {
    if (data_ != inline_) std::free(data_);
    data_ = inline_;
    cap_ = N;
    size_ = 0;
  }
  void move_from(SmallVec& o) {
    if (o.data_ == o.inline_) {
      for (size_t i = 0; i < o.size_; ++i) inline_[i] = o.inline_[i];
      data_ = inline_;
      cap_ = N;
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      o.data_ = o.inline_;
      o.cap_ = N;
    }
    size_ = o.size_;
    o.size_ = 0;
  }
  int64_t* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = N;
  int64_t inline_[N];
};

using DimVector = SmallVec<6>;

/// Non-owning view of a list of int64 (sizes, strides, dims). Built from an
/// initializer list, a vector, a DimVector or a single value.
class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  IntArrayRef(const int64_t& one) : data_(&one), size_(1) {}
  constexpr IntArrayRef(const int64_t* d, size_t n) : data_(d), size_(n) {}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  /// Valid for the full expression it appears in (a call's argument list).
  IntArrayRef(std::initializer_list<int64_t> l) : data_(l.begin()), size_(l.size()) {}
#pragma GCC diagnostic pop
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}
  template <size_t N>
  IntArrayRef(const SmallVec<N>& v) : data_(v.data()), size_(v.size()) {}

  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t back() const { return data_[size_ - 1]; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  bool equals(IntArrayRef o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (data_[i] != o.data_[i]) return false;
    return true;
  }
  bool operator==(IntArrayRef o) const { return equals(o); }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Prints "[2, 3]".
std::ostream& operator<<(std::ostream& os, IntArrayRef a);
template <size_t N>
std::ostream& operator<<(std::ostream& os, const SmallVec<N>& a) {
  return os << IntArrayRef(a);
}

/// Product of the values (1 for an empty list).
inline int64_t multiply(IntArrayRef a) {
  int64_t p = 1;
  for (auto v : a) p *= v;
  return p;
}

}  // namespace brisk

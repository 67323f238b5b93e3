// Checkpoints: named tensors saved to and loaded from safetensors files.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "brisk/tensor.h"

namespace brisk {

/// Named tensors in insertion order, with unique names and O(1) lookup by
/// name. Module::state_dict() returns one; brisk::save writes one.
/// Iteration yields `const std::pair<std::string, Tensor>&`; change a tensor
/// through `at(name)`.
class StateDict {
 public:
  using value_type = std::pair<std::string, Tensor>;
  using const_iterator = std::vector<value_type>::const_iterator;

  StateDict() = default;
  /// `StateDict sd{{"w", w}, {"b", b}};` (throws on a repeated name).
  StateDict(std::initializer_list<value_type> items);

  /// Appends `name`; throws brisk::Error if the name is already present.
  Tensor& insert(std::string name, Tensor tensor);
  /// Same as insert, so code written against a vector of pairs still reads.
  void push_back(value_type item) { insert(std::move(item.first), std::move(item.second)); }
  void emplace_back(std::string name, Tensor tensor) { insert(std::move(name), std::move(tensor)); }

  /// The tensor called `name`; throws brisk::Error naming it when absent.
  const Tensor& at(const std::string& name) const;
  Tensor& at(const std::string& name);
  /// The tensor called `name`, or nullptr.
  const Tensor* find(const std::string& name) const;
  Tensor* find(const std::string& name);
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  /// Removes `name` (keeping the order of the rest); false when absent.
  bool erase(const std::string& name);

  /// The names, in order.
  std::vector<std::string> keys() const;
  const std::vector<value_type>& items() const { return items_; }
  const value_type& operator[](size_t i) const { return items_[i]; }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void reserve(size_t n);
  void clear();
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

 private:
  std::vector<value_type> items_;
  std::unordered_map<std::string, size_t> index_;  // name -> position in items_
};

/// Free-form string metadata stored in a safetensors header ("__metadata__").
using Metadata = std::map<std::string, std::string>;

/// Writes `tensors` to `path` in the safetensors format, so the file opens in
/// Python (`safetensors.torch.load_file`). Non-contiguous and CUDA tensors are
/// written as contiguous CPU copies; the autograd history is not saved.
/// The write is atomic: the data goes to a temporary file in the same
/// directory, which is fsync'ed and renamed over `path`; on any error the
/// temporary file is removed and a previous file at `path` is left intact.
/// Throws brisk::Error (naming the tensor or the file) for an undefined
/// tensor, the reserved name "__metadata__", names or metadata that are not
/// UTF-8, or any I/O failure.
void save(const StateDict& tensors, const std::string& path, const Metadata& metadata = {});

/// Reads a safetensors file. The tensors come back in the header's order (for
/// files written by brisk::save, the order of the saved StateDict) as CPU
/// tensors. With `mmap` (the default) the file is mapped copy-on-write and
/// the tensors view the mapping without copying; the mapping lives until the
/// last tensor viewing it is gone, and writing to a tensor never changes the
/// file. With `mmap = false` every tensor is read into its own memory.
/// Any malformed, truncated or inconsistent file throws brisk::Error naming
/// the file and the problem. (A mapped file must not be truncated by another
/// process while its tensors are alive.)
StateDict load(const std::string& path, bool mmap = true);

/// The "__metadata__" of a safetensors file, reading only its header (which
/// is validated as fully as by load).
Metadata load_metadata(const std::string& path);

}  // namespace brisk

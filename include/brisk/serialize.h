// libtorch's save/load calls on brisk's checkpoint format (safetensors):
//
//   brisk::save(model, "model.safetensors");       // a holder, shared_ptr or Module
//   brisk::save(optimizer, "optim.safetensors");   // state and param groups
//   brisk::save(tensor, "x.safetensors");          // one tensor, or a vector of them
//   brisk::load(model, "model.safetensors");       // into the existing module
//
// Every file is a safetensors file (it opens in Python with
// safetensors.torch.load_file) written atomically by brisk::save; its
// metadata says what it holds ("brisk.kind": module, optimizer, tensor,
// tensors), so loading an optimizer's file into a module is a clear error. A
// libtorch or PyTorch `.pt` archive is recognised and rejected with a note on
// how to convert it. See docs/porting.md.
#pragma once
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "brisk/io.h"
#include "brisk/nn/module.h"
#include "brisk/optim.h"
#include "brisk/tensor.h"

namespace brisk {

/// The module's state_dict (parameters and buffers by dotted name).
void save(const nn::Module& module, const std::string& path);
template <class M>
void save(const nn::ModuleHolder<M>& module, const std::string& path) {
  save(static_cast<const nn::Module&>(*module), path);
}
template <class M>
  requires std::is_base_of_v<nn::Module, M>
void save(const std::shared_ptr<M>& module, const std::string& path) {
  BRISK_CHECK(module != nullptr, "save", "the module is null");
  save(static_cast<const nn::Module&>(*module), path);
}
/// The optimizer's state_dict (per-parameter state and param group options).
void save(const optim::Optimizer& optimizer, const std::string& path);
/// One tensor (CPU copy of its values; no autograd history).
void save(const Tensor& tensor, const std::string& path);
/// A list of tensors, in order.
void save(const std::vector<Tensor>& tensors, const std::string& path);

/// Loads a file written by save(module) into `module` (strict: every key must
/// match, shapes must agree; values are converted to the module's dtypes and
/// devices). Nothing changes unless every check passes.
void load(nn::Module& module, const std::string& path);
template <class M>
void load(nn::ModuleHolder<M>& module, const std::string& path) {
  load(static_cast<nn::Module&>(*module), path);
}
template <class M>
  requires std::is_base_of_v<nn::Module, M>
void load(const std::shared_ptr<M>& module, const std::string& path) {
  BRISK_CHECK(module != nullptr, "load", "the module is null");
  load(static_cast<nn::Module&>(*module), path);
}
/// Loads a file written by save(optimizer) into an optimizer over the same
/// parameters.
void load(optim::Optimizer& optimizer, const std::string& path);
/// Replaces `tensor` with the saved one (a CPU tensor, as libtorch's).
void load(Tensor& tensor, const std::string& path);
void load(std::vector<Tensor>& tensors, const std::string& path);

}  // namespace brisk

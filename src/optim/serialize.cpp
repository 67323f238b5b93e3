// brisk::save / brisk::load of modules, optimizers and tensors (libtorch's
// calls) on safetensors files. See include/brisk/serialize.h.
#include "brisk/serialize.h"

#include <string>

#include "brisk/autograd.h"

namespace brisk {
namespace {

constexpr const char* kKindKey = "brisk.kind";

void check_kind(const std::string& path, const char* want) {
  const Metadata meta = load_metadata(path);
  auto it = meta.find(kKindKey);
  if (it == meta.end()) return;  // a plain safetensors file: accepted, the keys decide
  BRISK_CHECK(it->second == want, "load", "'", path, "' holds ", it->second == "optimizer" ? "an " : "a ", it->second,
              " (saved by brisk::save), not ", std::string(want) == "optimizer" ? "an " : "a ", want);
}

}  // namespace

void save(const nn::Module& module, const std::string& path) {
  save(module.state_dict(), path, {{kKindKey, "module"}, {"brisk.module", module.name()}});
}

void save(const optim::Optimizer& optimizer, const std::string& path) {
  StateDict sd;
  for (const auto& [name, t] : optimizer.state_dict()) sd.insert(name, t);
  save(sd, path, {{kKindKey, "optimizer"}});
}

void save(const Tensor& tensor, const std::string& path) {
  BRISK_CHECK(tensor.defined(), "save", "the tensor is undefined");
  StateDict sd;
  sd.insert("tensor", tensor.detach());
  save(sd, path, {{kKindKey, "tensor"}});
}

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  StateDict sd;
  for (size_t i = 0; i < tensors.size(); ++i) {
    BRISK_CHECK(tensors[i].defined(), "save", "tensor ", i, " of the list is undefined");
    sd.insert(std::to_string(i), tensors[i].detach());
  }
  save(sd, path, {{kKindKey, "tensors"}, {"brisk.count", std::to_string(tensors.size())}});
}

void load(nn::Module& module, const std::string& path) {
  check_kind(path, "module");
  StateDict sd = load(path);
  NoGradGuard no_grad;
  module.load_state_dict(sd, /*strict=*/true);
}

void load(optim::Optimizer& optimizer, const std::string& path) {
  check_kind(path, "optimizer");
  optim::StateDict sd;
  for (const auto& [name, t] : load(path)) sd[name] = t;
  optimizer.load_state_dict(sd);
}

void load(Tensor& tensor, const std::string& path) {
  check_kind(path, "tensor");
  StateDict sd = load(path, /*mmap=*/false);
  BRISK_CHECK(sd.size() == 1 && sd.contains("tensor"), "load", "'", path,
              "' does not hold one tensor saved by brisk::save(tensor, path)");
  tensor = sd.at("tensor");
}

void load(std::vector<Tensor>& tensors, const std::string& path) {
  check_kind(path, "tensors");
  StateDict sd = load(path, /*mmap=*/false);
  std::vector<Tensor> out(sd.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor* t = sd.find(std::to_string(i));
    BRISK_CHECK(t != nullptr, "load", "'", path, "' does not hold a list of tensors saved by brisk::save (no tensor ",
                i, ")");
    out[i] = *t;
  }
  tensors = std::move(out);
}

}  // namespace brisk

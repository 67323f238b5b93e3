// Module holders and libtorch's module conventions: nn::Linear as a shared
// handle to LinearImpl, BRISK_MODULE / TORCH_MODULE for user modules,
// Sequential / ModuleList / ModuleDict / Functional / AnyModule, save/load.
#include <brisk/brisk.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace brisk {
namespace {

using brisk::testing::close;
using brisk::testing::expect_error;

// A user module in libtorch's style: members are holders, registered by name.
struct NetImpl : nn::Module {
  NetImpl(int64_t in, int64_t hidden) : fc1(in, hidden), fc2(hidden, 2) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  // forward takes its tensor by value, as libtorch's examples write it: it
  // does not override Module::forward(const Tensor&).
  Tensor forward(Tensor x) { return fc2(fc1(x).relu()); }
  nn::Linear fc1, fc2;
};
TORCH_MODULE(Net);

// The other libtorch form: members start empty and are assigned from
// register_module's result.
struct Net2Impl : nn::Module {
  Net2Impl() {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 2, 3)));
    drop = register_module("drop", nn::Dropout(0.5));
  }
  Tensor forward(const Tensor& x) override { return drop(conv(x)); }
  nn::Conv2d conv{nullptr};
  nn::Dropout drop{nullptr};
};
BRISK_MODULE(Net2);

TEST(Holders, CopyingAHolderSharesTheModule) {
  manual_seed(1);
  nn::Linear a(3, 4);
  nn::Linear b = a;
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a.ptr().use_count(), 2);
  {
    NoGradGuard ng;
    b->weight.fill_(0.5);
  }
  EXPECT_TRUE(a->weight.eq(0.5).all().item<bool>());
  std::shared_ptr<nn::LinearImpl> p = a;  // converts to the shared pointer
  EXPECT_EQ(p.get(), a.get());
  nn::Linear from_ptr(p);
  EXPECT_EQ(from_ptr.get(), a.get());
  EXPECT_FALSE(a.is_empty());
  EXPECT_TRUE(static_cast<bool>(a));
  // a Module reference through the holder
  nn::Module& m = *a;
  EXPECT_EQ(m.name(), "Linear");
  EXPECT_EQ(m.as<nn::Linear>(), a.get());
  EXPECT_EQ(m.as<nn::LinearImpl>(), a.get());
  EXPECT_EQ(m.as<nn::Conv2d>(), nullptr);
}

TEST(Holders, CallingTheHolderIsForward) {
  manual_seed(2);
  nn::Linear lin(5, 3);
  Tensor x = randn({4, 5});
  Tensor want = x.matmul(lin->weight.t()) + lin->bias;
  EXPECT_TRUE(lin(x).equal(want));
  EXPECT_TRUE(lin->forward(x).equal(want));
  EXPECT_TRUE((*lin)(x).equal(want));
  // gradients flow through the holder call like through forward
  lin(x).sum().backward();
  EXPECT_TRUE(close(lin->bias.grad(), full({3}, 4.0)));
}

TEST(Holders, EmptyHolderIsAClearError) {
  nn::Linear lin = nullptr;
  EXPECT_TRUE(lin.is_empty());
  EXPECT_FALSE(static_cast<bool>(lin));
  EXPECT_EQ(lin.ptr(), nullptr);  // ptr() does not throw
  expect_error([&] { (void)lin->weight; }, {"ModuleHolder", "Linear", "empty"});
  expect_error([&] { lin(randn({2, 3})); }, {"ModuleHolder", "Linear", "empty"});
  expect_error([&] { (void)*lin; }, {"Linear", "empty"});
  Net net = nullptr;
  expect_error([&] { net->parameters(); }, {"ModuleHolder", "Net holder is empty"});
  // assigning a module later
  lin = nn::Linear(3, 2);
  EXPECT_EQ(lin->weight.sizes(), IntArrayRef({2, 3}));
  // registering an empty holder fails by name
  nn::Sequential seq;
  expect_error([&] { seq->register_module("x", nn::Linear(nullptr)); }, {"register_module", "'x'", "null"});
}

TEST(Holders, DefaultConstructionUsesDefaultArguments) {
  nn::ReLU relu;  // ReLUImpl has a default constructor
  EXPECT_FALSE(relu.is_empty());
  EXPECT_TRUE(relu(tensor({-1.0, 2.0})).equal(tensor({0.0, 2.0})));
  nn::Sequential seq;
  EXPECT_EQ(seq->size(), 0u);
  nn::Flatten flat;
  EXPECT_EQ(flat(zeros({2, 3, 4})).sizes(), IntArrayRef({2, 12}));
}

TEST(Holders, UserModulesWithTorchModule) {
  manual_seed(3);
  Net net(4, 8);
  EXPECT_EQ(net->named_parameters().keys(),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  // the members and the registry share the modules
  EXPECT_EQ(net->named_children()["fc1"].get(), net->fc1.get());
  Tensor x = randn({3, 4});
  Tensor want = net->fc2->forward(net->fc1->forward(x).relu());
  EXPECT_TRUE(net(x).equal(want));
  EXPECT_TRUE(net->forward(x).equal(want));
  EXPECT_EQ(net->name(), "Net");  // the class name without "Impl", as the module prints
  std::ostringstream os;
  os << net;
  EXPECT_NE(os.str().find("Net("), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("(fc1): Linear(in_features=4, out_features=8, bias=true)"), std::string::npos);
  // register_module's result assigned to an empty member
  Net2 net2;
  EXPECT_EQ(net2->named_children().keys(), (std::vector<std::string>{"conv", "drop"}));
  EXPECT_EQ(net2->conv.get(), net2->named_children()["conv"].get());
  net2->eval();
  EXPECT_FALSE(net2->drop->is_training());
  EXPECT_EQ(net2(randn({1, 1, 5, 5})).sizes(), IntArrayRef({1, 2, 3, 3}));
  // a user module on the stack, as pytorch/examples' mnist writes it
  NetImpl plain(4, 8);
  EXPECT_EQ(plain.parameters().size(), 4u);
}

TEST(Holders, SequentialLikeLibtorch) {
  manual_seed(4);
  nn::Sequential seq(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ(seq->named_parameters().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  auto l0 = seq->ptr<nn::Linear>(0);
  nn::LinearImpl& l2 = seq->at<nn::LinearImpl>(2);
  Tensor x = randn({3, 4});
  Tensor want = (x.matmul(l0->weight.t()) + l0->bias).relu().matmul(l2.weight.t()) + l2.bias;
  EXPECT_TRUE(close(seq(x), want));
  EXPECT_EQ(seq[1]->name(), "ReLU");
  expect_error([&] { seq->ptr<nn::Conv2d>(0); }, {"AnyModule", "Linear", "not the requested type"});
  expect_error([&] { (void)seq[3]; }, {"Sequential", "index 3 is out of range"});
  // user modules (forward by value) and functions chain too
  Net net(2, 3);
  nn::Sequential mixed(nn::Linear(4, 2), net, nn::Functional(brisk::relu), nn::Functional([](const Tensor& t, double k) { return t * k; }, 2.0));
  Tensor y = mixed(x);
  Tensor want2 = net(mixed->at<nn::LinearImpl>(0)(x)).relu() * 2.0;
  EXPECT_TRUE(close(y, want2));
  // named construction, push_back, extend
  nn::Sequential named({{"enc", nn::Linear(2, 2)}, {"act", nn::Tanh()}});
  EXPECT_EQ(named->named_children().keys(), (std::vector<std::string>{"enc", "act"}));
  named->push_back("dec", nn::Linear(2, 1));
  named->push_back(nn::Sigmoid());
  EXPECT_EQ(named->named_children().keys(), (std::vector<std::string>{"enc", "act", "dec", "3"}));
  nn::Sequential both;
  both->extend(*seq);
  both->extend(*named);
  EXPECT_EQ(both->size(), 7u);
  EXPECT_EQ(both->ptr(0).get(), seq->ptr(0).get());  // shared, not copied
  // the old brisk form still works
  nn::Sequential old(std::initializer_list<nn::ModulePtr>{std::make_shared<nn::ReLUImpl>()});
  EXPECT_EQ(old->size(), 1u);
  // iteration yields AnyModules
  int n = 0;
  for (const nn::AnyModule& m : *seq) n += m.ptr()->parameters().empty() ? 0 : 1;
  EXPECT_EQ(n, 2);
  // a module without a one-tensor forward fails by name when the sequence runs
  nn::Sequential bad{nn::ModuleList(), nn::ReLU()};
  expect_error([&] { bad(x); }, {"ModuleList"});
  nn::Sequential empty;
  expect_error([&] { empty(x); }, {"Sequential", "empty"});
}

TEST(Holders, ModuleListAndModuleDict) {
  nn::ModuleList list(nn::Linear(2, 3), nn::ReLU());
  list->push_back(nn::Linear(3, 1));
  list->push_back(std::make_shared<nn::TanhImpl>());
  EXPECT_EQ(list->size(), 4u);
  EXPECT_EQ(list->named_parameters().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(list->ptr<nn::Linear>(2)->out_features, 1);
  EXPECT_EQ(list[1]->name(), "ReLU");
  list->insert(1, nn::Sigmoid());
  EXPECT_EQ(list[1]->name(), "Sigmoid");
  EXPECT_EQ(list->named_children().keys(), (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  EXPECT_EQ(list->at<nn::LinearImpl>(3).in_features, 3);
  expect_error([&] { list->at<nn::LinearImpl>(1); }, {"ModuleList", "Sigmoid", "not the requested type"});
  int linears = 0;
  for (const nn::ModulePtr& m : *list) linears += m->as<nn::Linear>() != nullptr;
  EXPECT_EQ(linears, 2);

  OrderedDict<std::string, nn::ModulePtr> modules;
  modules.insert("a", nn::Linear(2, 3).ptr());
  modules.insert("b", nn::Tanh().ptr());
  nn::ModuleDict dict(modules);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(dict->at<nn::Linear>("a")->out_features, 3);
  EXPECT_EQ(dict["b"]->name(), "Tanh");
  expect_error([&] { dict->insert("a", nn::ReLU()); }, {"register_module", "'a'"});
  nn::ModuleDict other;
  other->insert("a", nn::ReLU());
  other->insert("c", nn::ReLU());
  dict->update(*other);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(dict["a"]->name(), "ReLU");
  EXPECT_EQ(dict->pop("b")->name(), "Tanh");
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"a", "c"}));
  expect_error([&] { (void)dict["zz"]; }, {"ModuleDict", "'zz'"});
}

TEST(Holders, ReplaceAndUnregisterModules) {
  Net net(2, 3);
  net->fc2 = net->replace_module("fc2", nn::Linear(3, 5));
  EXPECT_EQ(net(randn({1, 2})).sizes(), IntArrayRef({1, 5}));
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"fc1", "fc2"}));
  nn::ModulePtr gone = net->unregister_module("fc1");
  EXPECT_EQ(gone.get(), net->fc1.get());
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"fc2"}));
  expect_error([&] { net->unregister_module("nope"); }, {"unregister_module", "'nope'"});
}

TEST(Holders, ToChannelsLastKeepsParametersNHWC) {
  manual_seed(5);
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
                       nn::Conv2d(8, 4, 3));
  Tensor x = randn({2, 3, 9, 9});
  model->eval();
  Tensor want = model(x);
  Tensor w = model->at<nn::Conv2dImpl>(0).weight;
  model->to(MemoryFormat::ChannelsLast);
  // the handles held elsewhere see the new layout, values unchanged
  EXPECT_TRUE(w.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(model->at<nn::Conv2dImpl>(3).weight.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(model->at<nn::Conv2dImpl>(0).bias.is_contiguous());
  Tensor y = model(x.contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(close(y, want, 1e-5, 1e-5));
  model->to(MemoryFormat::Contiguous);
  EXPECT_TRUE(w.is_contiguous());
  expect_error([&] { model->to(MemoryFormat::Preserve); }, {"Module::to", "Preserve"});
}

struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    dir = std::filesystem::temp_directory_path() / ("brisk_holders_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  ~TempDir() { std::filesystem::remove_all(dir); }
  std::string operator/(const std::string& f) const { return (dir / f).string(); }
};

TEST(Holders, SaveAndLoadModulesOptimizersTensors) {
  set_num_threads(1);
  TempDir tmp;
  manual_seed(6);
  Net net(4, 8);
  optim::Adam opt(net->parameters(), optim::AdamOptions(1e-2));
  Tensor x = randn({5, 4});
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    net(x).square().sum().backward();
    opt.step();
  }
  brisk::save(net, tmp / "net.safetensors");
  brisk::save(opt, tmp / "opt.safetensors");
  Tensor t = arange(6.0).reshape({2, 3});
  brisk::save(t, tmp / "t.safetensors");
  brisk::save(std::vector<Tensor>{t, ones({2}, kInt64)}, tmp / "ts.safetensors");

  manual_seed(7);
  Net net2(4, 8);
  optim::Adam opt2(net2->parameters(), optim::AdamOptions(1e-2));
  EXPECT_FALSE(net2->fc1->weight.equal(net->fc1->weight));
  brisk::load(net2, tmp / "net.safetensors");
  brisk::load(opt2, tmp / "opt.safetensors");
  for (const auto& item : net->named_parameters())
    EXPECT_TRUE(net2->named_parameters()[item.key()].equal(item.value())) << item.key();
  // one more step on each gives the same parameters: the optimizer state came back
  for (auto* pair : {&net, &net2}) {
    optim::Adam& o = pair == &net ? opt : opt2;
    o.zero_grad();
    (*pair)(x).square().sum().backward();
    o.step();
  }
  EXPECT_TRUE(net2->fc2->weight.equal(net->fc2->weight));
  Tensor back;
  brisk::load(back, tmp / "t.safetensors");
  EXPECT_TRUE(back.equal(t));
  std::vector<Tensor> list;
  brisk::load(list, tmp / "ts.safetensors");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_TRUE(list[1].equal(ones({2}, kInt64)));
  // shared_ptr modules, as `auto model = std::make_shared<NetImpl>(...)`
  auto shared = std::make_shared<NetImpl>(4, 8);
  brisk::load(shared, tmp / "net.safetensors");
  EXPECT_TRUE(shared->fc1->bias.equal(brisk::load(tmp / "net.safetensors").at("fc1.bias")));

  // wrong kinds and wrong modules are clear errors, and leave the target alone
  expect_error([&] { brisk::load(net2, tmp / "opt.safetensors"); }, {"load", "holds an optimizer", "not a module"});
  expect_error([&] { brisk::load(opt2, tmp / "net.safetensors"); }, {"load", "holds a module", "not an optimizer"});
  expect_error([&] { brisk::load(back, tmp / "ts.safetensors"); }, {"load", "holds a tensors"});
  Net small(4, 3);
  Tensor before = small->fc1->weight.clone();
  expect_error([&] { brisk::load(small, tmp / "net.safetensors"); }, {"fc1.weight", "shape"});
  EXPECT_TRUE(small->fc1->weight.equal(before));
  // a libtorch .pt archive (a zip file) is recognised
  {
    std::ofstream f(tmp / "model.pt", std::ios::binary);
    const char zip[] = "PK\x03\x04\x14\x00\x00\x00\x08\x00archive/data.pkl";
    f.write(zip, sizeof(zip));
  }
  expect_error([&] { brisk::load(net2, tmp / "model.pt"); }, {"load", "zip archive", "torch.save", "safetensors"});
  // the write is atomic: a failed save leaves the previous file
  expect_error([&] { brisk::save(Tensor(), tmp / "t.safetensors"); }, {"save", "undefined"});
  brisk::load(back, tmp / "t.safetensors");
  EXPECT_TRUE(back.equal(t));
}

}  // namespace
}  // namespace brisk

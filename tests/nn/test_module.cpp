// nn::Module: registration, names, traversal, state dicts, modes, printing.
#include <brisk/nn.h>

#include <sstream>

#include "test_util.h"

using namespace brisk;
using brisk::testing::expect_error;
namespace nn = brisk::nn;

namespace {

// A user-defined module in the libtorch style.
struct Net : nn::Module {
  Net() : nn::Module("Net") {
    fc1 = register_module("fc1", std::make_shared<nn::LinearImpl>(4, 3));
    fc2 = register_module("fc2", std::make_shared<nn::LinearImpl>(3, 2, /*bias=*/false));
    scale = register_parameter("scale", ones({1}));
    steps = register_buffer("steps", zeros({}, kInt64));
  }
  Tensor forward(const Tensor& x) override { return fc2->forward(fc1->forward(x).relu()) * scale; }
  std::shared_ptr<nn::LinearImpl> fc1, fc2;
  Tensor scale, steps;
};

// Layers kept in a plain std::vector are not registered.
struct Unregistered : nn::Module {
  Unregistered() : nn::Module("Unregistered") { layers.push_back(std::make_shared<nn::LinearImpl>(2, 2)); }
  std::vector<std::shared_ptr<nn::LinearImpl>> layers;
};

std::vector<std::string> keys_of(const OrderedDict<std::string, Tensor>& d) { return d.keys(); }

}  // namespace

TEST(Module, RegistrationAndNames) {
  auto net = std::make_shared<Net>();
  EXPECT_EQ(keys_of(net->named_parameters()),
            (std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "fc2.weight"}));
  EXPECT_EQ(keys_of(net->named_parameters(false)), (std::vector<std::string>{"scale"}));
  EXPECT_EQ(net->parameters().size(), 4u);
  EXPECT_EQ(keys_of(net->named_buffers()), (std::vector<std::string>{"steps"}));
  EXPECT_EQ(net->buffers().size(), 1u);
  // The member and the registry share one tensor.
  EXPECT_TRUE(net->named_parameters()["fc1.weight"].is_same(net->fc1->weight));
  EXPECT_TRUE(net->fc1->weight.requires_grad());
  EXPECT_TRUE(net->fc1->weight.is_leaf());
  EXPECT_FALSE(net->steps.requires_grad());
  // children / modules
  EXPECT_EQ(net->children().size(), 2u);
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"fc1", "fc2"}));
  auto mods = net->named_modules();
  EXPECT_EQ(mods.keys(), (std::vector<std::string>{"", "fc1", "fc2"}));
  EXPECT_EQ(mods[""].get(), net.get());
  EXPECT_EQ(net->num_parameters(), 1 + 12 + 3 + 6);
  // forward through the user module
  Tensor y = net->forward(randn({5, 4}));
  EXPECT_EQ(y.sizes(), IntArrayRef({5, 2}));
}

TEST(Module, RegistrationErrors) {
  nn::Module m("M");
  m.register_parameter("w", zeros({2}));
  expect_error([&] { m.register_parameter("w", zeros({2})); }, {"register_parameter", "'w'", "already"});
  expect_error([&] { m.register_buffer("w", zeros({2})); }, {"register_buffer", "'w'"});
  expect_error([&] { m.register_parameter("a.b", zeros({2})); }, {"register_parameter", "'.'"});
  expect_error([&] { m.register_parameter("", zeros({2})); }, {"register_parameter", "empty"});
  expect_error([&] { m.register_parameter("i", zeros({2}, kInt64)); }, {"register_parameter", "floating"});
  expect_error([&] { m.register_module("c", std::shared_ptr<nn::LinearImpl>()); }, {"register_module", "null"});
  // A parameter registered from a non-leaf becomes a leaf.
  Tensor base = ones({2}).requires_grad_();
  Tensor p = m.register_parameter("p", base * 2);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
  // forward of a module without one
  expect_error([&] { m.forward(ones({1})); }, {"forward", "M"});
}

TEST(Module, PlainVectorIsNotRegistered) {
  Unregistered u;
  EXPECT_TRUE(u.parameters().empty());
  EXPECT_TRUE(u.state_dict().empty());
  // A ModuleList registers them.
  nn::ModuleList list{std::make_shared<nn::LinearImpl>(2, 2), std::make_shared<nn::ReLUImpl>()};
  EXPECT_EQ(keys_of(list->named_parameters()), (std::vector<std::string>{"0.weight", "0.bias"}));
  EXPECT_EQ(list->size(), 2u);
  EXPECT_EQ(list[1]->name(), "ReLU");
  expect_error([&] { (void)list[5]; }, {"ModuleList", "5"});
}

TEST(Module, SharedParametersCountOnce) {
  auto fc = std::make_shared<nn::LinearImpl>(3, 3);
  nn::Sequential seq;
  seq->push_back(fc);
  seq->push_back(fc);  // the same layer twice (weight tying)
  EXPECT_EQ(seq->parameters().size(), 2u);
  EXPECT_EQ(seq->modules().size(), 2u);  // itself and fc once
  EXPECT_EQ(seq->state_dict().size(), 4u);  // both names are saved
}

TEST(Module, SequentialForward) {
  manual_seed(0);
  auto seq = std::make_shared<nn::SequentialImpl>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::LinearImpl>(4, 8), std::make_shared<nn::ReLUImpl>(), std::make_shared<nn::LinearImpl>(8, 2)});
  EXPECT_EQ(keys_of(seq->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = randn({3, 4});
  auto l0 = std::static_pointer_cast<nn::LinearImpl>((*seq)[0]);
  auto l2 = std::static_pointer_cast<nn::LinearImpl>((*seq)[2]);
  Tensor want = (x.matmul(l0->weight.t()) + l0->bias).relu().matmul(l2->weight.t()) + l2->bias;
  EXPECT_TRUE(brisk::testing::close((*seq)(x), want));
  // a module without forward(Tensor) in a Sequential fails by name
  nn::Sequential bad{std::make_shared<nn::ModuleListImpl>()};
  expect_error([&] { bad->forward(x); }, {"forward", "ModuleList"});
  // named entries
  nn::Sequential named;
  named->push_back("enc", std::make_shared<nn::LinearImpl>(2, 2));
  EXPECT_EQ(keys_of(named->named_parameters()), (std::vector<std::string>{"enc.weight", "enc.bias"}));
}

TEST(Module, ModuleDict) {
  nn::ModuleDict d(std::vector<std::pair<std::string, nn::ModulePtr>>{{"a", std::make_shared<nn::LinearImpl>(2, 3)}, {"b", std::make_shared<nn::TanhImpl>()}});
  EXPECT_TRUE(d->contains("a"));
  EXPECT_FALSE(d->contains("c"));
  EXPECT_EQ(d->size(), 2u);
  EXPECT_EQ(d["b"]->name(), "Tanh");
  expect_error([&] { (void)d["zz"]; }, {"ModuleDict", "'zz'"});
  EXPECT_EQ(keys_of(d->named_parameters()), (std::vector<std::string>{"a.weight", "a.bias"}));
}

TEST(Module, StateDictRoundTrip) {
  manual_seed(1);
  auto a = std::make_shared<Net>();
  auto b = std::make_shared<Net>();
  EXPECT_FALSE(a->fc1->weight.equal(b->fc1->weight));
  nn::StateDict sd = a->state_dict();
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"scale", "steps", "fc1.weight", "fc1.bias", "fc2.weight"}));
  // state_dict holds the module's own tensors
  EXPECT_TRUE(sd.at("fc1.weight").is_same(a->fc1->weight));
  Tensor b_weight = b->fc1->weight;
  auto r = b->load_state_dict(sd);
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(r.unexpected_keys.empty());
  for (const auto& [k, v] : a->state_dict()) EXPECT_TRUE(v.equal(b->state_dict().at(k))) << k;
  // loaded in place: handles held elsewhere see the values
  EXPECT_TRUE(b_weight.is_same(b->fc1->weight));
  EXPECT_TRUE(b_weight.equal(a->fc1->weight));
  EXPECT_FALSE(b_weight.is_alias_of(a->fc1->weight));
  // the same outputs
  Tensor x = randn({2, 4});
  EXPECT_TRUE(a->forward(x).equal(b->forward(x)));
  // load converts dtypes
  nn::StateDict sd64;
  for (const auto& [k, v] : sd) sd64.insert(k, v.is_floating_point() ? v.to(kDouble) * 0 + 1 : v);
  b->load_state_dict(sd64);
  EXPECT_EQ(b->fc1->weight.dtype(), kFloat);
  EXPECT_TRUE(b->fc1->weight.equal(ones({3, 4})));
}

TEST(Module, StrictLoadErrors) {
  auto net = std::make_shared<Net>();
  nn::StateDict sd = net->state_dict();
  Tensor before = net->fc1->weight.clone();

  nn::StateDict missing;
  for (const auto& [k, v] : sd)
    if (k != "fc1.bias") missing.insert(k, v.clone());
  expect_error([&] { net->load_state_dict(missing); }, {"load_state_dict", "missing", "'fc1.bias'"});

  nn::StateDict extra;
  for (const auto& [k, v] : sd) extra.insert(k, v.clone());
  extra.insert("fc3.weight", zeros({1}));
  expect_error([&] { net->load_state_dict(extra); }, {"load_state_dict", "unexpected", "'fc3.weight'"});

  nn::StateDict wrong;
  for (const auto& [k, v] : sd) wrong.insert(k, k == "fc1.weight" ? zeros({4, 3}) : v.clone());
  expect_error([&] { net->load_state_dict(wrong); }, {"load_state_dict", "'fc1.weight'", "[4, 3]", "[3, 4]"});
  // a shape mismatch also fails without strict, and nothing was copied
  expect_error([&] { net->load_state_dict(wrong, false); }, {"size mismatch"});
  EXPECT_TRUE(net->fc1->weight.equal(before));

  // non-strict: loads what matches and reports the rest
  for (const auto& [k, v] : missing) Tensor(v).fill_(0.5);
  missing.insert("extra", zeros({1}));
  auto r = net->load_state_dict(missing, false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"fc1.bias"}));
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"extra"}));
  EXPECT_TRUE(net->fc1->weight.equal(full({3, 4}, 0.5)));
}

TEST(Module, TrainEval) {
  auto net = std::make_shared<nn::SequentialImpl>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::LinearImpl>(2, 2), std::make_shared<nn::DropoutImpl>(0.5)});
  EXPECT_TRUE(net->is_training());
  net->eval();
  for (auto& m : net->modules()) EXPECT_FALSE(m->is_training()) << m->name();
  net->train();
  for (auto& m : net->modules()) EXPECT_TRUE(m->is_training()) << m->name();
  net->train(false);
  EXPECT_FALSE((*net)[1]->is_training());
}

TEST(Module, ZeroGrad) {
  auto net = std::make_shared<Net>();
  net->forward(randn({3, 4})).sum().backward();
  for (const auto& [k, p] : net->named_parameters()) EXPECT_TRUE(p.grad().defined()) << k;
  net->zero_grad(false);
  for (const auto& [k, p] : net->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << k;
    EXPECT_TRUE(p.grad().equal(zeros_like(p))) << k;
  }
  net->zero_grad();  // set to none by default
  for (const auto& [k, p] : net->named_parameters()) EXPECT_FALSE(p.grad().defined()) << k;
}

TEST(Module, ToDtype) {
  auto net = std::make_shared<Net>();
  Tensor w = net->fc1->weight;  // a handle held elsewhere (an optimizer)
  Tensor before = w.clone();
  net->forward(randn({2, 4})).sum().backward();
  net->to(kDouble);
  EXPECT_EQ(w.dtype(), kDouble);
  EXPECT_EQ(net->fc1->weight.dtype(), kDouble);
  EXPECT_TRUE(w.is_same(net->fc1->weight));
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.equal(before.to(kDouble)));
  EXPECT_EQ(w.grad().dtype(), kDouble);
  EXPECT_EQ(net->steps.dtype(), kInt64);  // integer buffers stay
  // the converted module trains in float64
  net->zero_grad();
  net->forward(randn({2, 4}, kDouble)).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kDouble);
  expect_error([&] { net->to(kInt32); }, {"Module::to", "floating"});
}

TEST(Module, ToCudaFailsCleanly) {
  auto net = std::make_shared<Net>();
  Tensor before = net->fc1->weight.clone();
  bool threw = false;
  try {
    net->to(Device(kCUDA));
  } catch (const brisk::Error&) {
    threw = true;
  }
  if (threw) {  // a CPU-only build: the module is unchanged
    EXPECT_TRUE(net->fc1->weight.is_cpu());
    EXPECT_TRUE(net->fc1->weight.equal(before));
  }
}

TEST(Module, Apply) {
  auto net = std::make_shared<Net>();
  std::vector<std::string> order;
  net->apply([&](nn::Module& m) {
    order.push_back(m.name());
    if (auto* lin = dynamic_cast<nn::LinearImpl*>(&m)) nn::init::zeros_(lin->weight);
  });
  EXPECT_EQ(order, (std::vector<std::string>{"Linear", "Linear", "Net"}));
  EXPECT_TRUE(net->fc1->weight.equal(zeros({3, 4})));
  EXPECT_TRUE(net->fc1->weight.requires_grad());
}

TEST(Module, Printing) {
  auto seq = std::make_shared<nn::SequentialImpl>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::LinearImpl>(784, 128), std::make_shared<nn::ReLUImpl>(), std::make_shared<nn::DropoutImpl>(0.25),
      std::make_shared<nn::LinearImpl>(128, 10, false)});
  const std::string want =
      "Sequential(  # 101760 parameters\n"
      "  (0): Linear(in_features=784, out_features=128, bias=true)  # 100480 parameters\n"
      "  (1): ReLU()\n"
      "  (2): Dropout(p=0.25)\n"
      "  (3): Linear(in_features=128, out_features=10, bias=false)  # 1280 parameters\n"
      ")";
  EXPECT_EQ(nn::to_string(*seq), want);
  std::ostringstream os;
  os << *std::make_shared<Net>();
  EXPECT_EQ(os.str(),
            "Net(  # 22 parameters\n"
            "  (fc1): Linear(in_features=4, out_features=3, bias=true)  # 15 parameters\n"
            "  (fc2): Linear(in_features=3, out_features=2, bias=false)  # 6 parameters\n"
            ")");
  EXPECT_EQ(nn::to_string(nn::LayerNorm(std::vector<int64_t>{8})), "LayerNorm((8,), eps=1e-05, elementwise_affine=true)  # 16 parameters");
  EXPECT_EQ(nn::to_string(nn::Embedding(10, 3, 0)), "Embedding(10, 3, padding_idx=0)  # 30 parameters");
}

TEST(Module, OrderedDict) {
  OrderedDict<std::string, int> d;
  d.insert("b", 1);
  d.insert("a", 2);
  expect_error([&] { d.insert("b", 3); }, {"OrderedDict", "'b' already defined"});  // as libtorch's
  d.insert_or_assign("b", 3);  // replaces, keeps its place
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(d["b"], 3);
  EXPECT_EQ(d.find("z"), nullptr);
  expect_error([&] { (void)d.at("z"); }, {"'z'"});
  // libtorch's item accessors, positional access, structured bindings
  EXPECT_EQ(d[0].key(), "b");
  EXPECT_EQ(d[1].value(), 2);
  EXPECT_EQ(d.front().value(), 3);
  EXPECT_EQ(d.back().key(), "a");
  expect_error([&] { (void)d[size_t(2)]; }, {"OrderedDict", "index 2 is out of range"});
  int sum = 0;
  for (const auto& [k, v] : d) sum += v + static_cast<int>(k.size());
  EXPECT_EQ(sum, 7);
  for (auto& item : d) item.value() *= 10;
  EXPECT_EQ(d["a"], 20);
  EXPECT_EQ(d.pop("b"), 30);
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(d["a"], 20);  // positions renumbered
  OrderedDict<std::string, int> other{{"c", 1}, {"a", 5}};
  d.update(other);
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(d["a"], 5);
}

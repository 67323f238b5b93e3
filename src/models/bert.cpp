// BERT encoders with HuggingFace's module tree and parameter names. See
// include/brisk/models/bert.h and docs/design/models.md.
#include "brisk/models/bert.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "brisk/autograd.h"
#include "brisk/error.h"
#include "brisk/io.h"
#include "brisk/nn/attention.h"
#include "brisk/nn/functional.h"
#include "brisk/ops.h"
#include "io/json.h"

namespace brisk::models {
namespace {

constexpr const char* kConfig = "BertConfig";
constexpr const char* kBert = "BertModel";

Tensor activation(const Tensor& x, const std::string& act) {
  if (act == "gelu") return nn::functional::gelu(x);
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") return nn::functional::gelu(x, "tanh");
  return nn::functional::relu(x);  // validate() admitted only these
}

}  // namespace

// ---- config ------------------------------------------------------------------

BertConfig BertConfig::from_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  BRISK_CHECK(in.good(), kConfig, "cannot open '", path, "'");
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  json::Reader r(text, kConfig, "'" + path + "'");
  BertConfig c;
  auto read_int = [&](const std::string& key) {
    BRISK_CHECK(r.peek_kind() == json::Reader::Kind::Number, kConfig, "'", path, "': \"", key, "\" must be a number");
    uint64_t v = 0;
    BRISK_CHECK(json::to_uint(r.read_number(), uint64_t{1} << 40, &v), kConfig, "'", path, "': \"", key,
                "\" must be a non-negative integer");
    return static_cast<int64_t>(v);
  };
  auto read_double = [&](const std::string& key) {
    BRISK_CHECK(r.peek_kind() == json::Reader::Kind::Number, kConfig, "'", path, "': \"", key, "\" must be a number");
    return std::stod(r.read_number());
  };
  BRISK_CHECK(r.peek_kind() == json::Reader::Kind::Object, kConfig, "'", path, "' is not a JSON object");
  r.begin_object();
  std::string key;
  while (r.next_key(&key)) {
    if (key == "vocab_size") c.vocab_size = read_int(key);
    else if (key == "hidden_size") c.hidden_size = read_int(key);
    else if (key == "num_hidden_layers") c.num_hidden_layers = read_int(key);
    else if (key == "num_attention_heads") c.num_attention_heads = read_int(key);
    else if (key == "intermediate_size") c.intermediate_size = read_int(key);
    else if (key == "max_position_embeddings") c.max_position_embeddings = read_int(key);
    else if (key == "type_vocab_size") c.type_vocab_size = read_int(key);
    else if (key == "layer_norm_eps") c.layer_norm_eps = read_double(key);
    else if (key == "hidden_dropout_prob") c.hidden_dropout_prob = read_double(key);
    else if (key == "attention_probs_dropout_prob") c.attention_probs_dropout_prob = read_double(key);
    else if (key == "hidden_act") {
      BRISK_CHECK(r.peek_kind() == json::Reader::Kind::String, kConfig, "'", path, "': \"hidden_act\" must be a string");
      c.hidden_act = r.read_string();
    } else if (key == "model_type") {
      BRISK_CHECK(r.peek_kind() == json::Reader::Kind::String, kConfig, "'", path, "': \"model_type\" must be a string");
      const std::string type = r.read_string();
      BRISK_CHECK(type == "bert", kConfig, "'", path, "' describes a \"", type, "\" model, not \"bert\"");
    } else if (key == "position_embedding_type") {
      BRISK_CHECK(r.peek_kind() == json::Reader::Kind::String, kConfig, "'", path,
                  "': \"position_embedding_type\" must be a string");
      const std::string type = r.read_string();
      BRISK_CHECK(type == "absolute", kConfig, "'", path, "': position_embedding_type \"", type,
                  "\" is not implemented (only \"absolute\")");
    } else {
      r.skip_value();
    }
  }
  r.finish();
  c.validate();
  return c;
}

void BertConfig::validate() const {
  BRISK_CHECK(vocab_size > 0 && hidden_size > 0 && num_hidden_layers >= 0 && num_attention_heads > 0 &&
                  intermediate_size > 0 && max_position_embeddings > 0 && type_vocab_size > 0,
              kConfig, "sizes must be positive (vocab_size ", vocab_size, ", hidden_size ", hidden_size,
              ", num_hidden_layers ", num_hidden_layers, ", num_attention_heads ", num_attention_heads,
              ", intermediate_size ", intermediate_size, ", max_position_embeddings ", max_position_embeddings,
              ", type_vocab_size ", type_vocab_size, ")");
  BRISK_CHECK(hidden_size % num_attention_heads == 0, kConfig, "hidden_size ", hidden_size,
              " is not a multiple of num_attention_heads ", num_attention_heads);
  BRISK_CHECK(hidden_act == "gelu" || hidden_act == "gelu_new" || hidden_act == "gelu_pytorch_tanh" ||
                  hidden_act == "relu",
              kConfig, "hidden_act \"", hidden_act, "\" is not implemented (gelu, gelu_new, gelu_pytorch_tanh, relu)");
  BRISK_CHECK(layer_norm_eps > 0, kConfig, "layer_norm_eps must be positive, got ", layer_norm_eps);
  BRISK_CHECK(hidden_dropout_prob >= 0 && hidden_dropout_prob < 1 && attention_probs_dropout_prob >= 0 &&
                  attention_probs_dropout_prob < 1,
              kConfig, "dropout probabilities must be in [0, 1)");
}

// ---- modules -------------------------------------------------------------------

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertConfig& c) : nn::Module("BertEmbeddings") {
  word_embeddings = register_module("word_embeddings", nn::Embedding(c.vocab_size, c.hidden_size, /*padding_idx=*/0));
  position_embeddings = register_module("position_embeddings", nn::Embedding(c.max_position_embeddings, c.hidden_size));
  token_type_embeddings = register_module("token_type_embeddings", nn::Embedding(c.type_vocab_size, c.hidden_size));
  LayerNorm = register_module("LayerNorm", nn::LayerNorm(nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps)));
  dropout = register_module("dropout", nn::Dropout(c.hidden_dropout_prob));
  position_ids = register_buffer("position_ids", arange(c.max_position_embeddings, kLong).unsqueeze(0));
}

Tensor BertEmbeddingsImpl::forward(const Tensor& input_ids, const Tensor& token_type_ids) {
  BRISK_CHECK(input_ids.defined() && input_ids.dim() == 2, "BertEmbeddings",
              "input_ids must be a (batch, seq) tensor, got ", input_ids.defined() ? input_ids.dim() : 0, " dims");
  const int64_t seq = input_ids.size(1);
  BRISK_CHECK(seq <= position_ids.size(1), "BertEmbeddings", "a sequence of ", seq,
              " tokens is longer than max_position_embeddings ", position_ids.size(1));
  Tensor types = token_type_ids.defined() ? token_type_ids : zeros_like(input_ids);
  BRISK_CHECK(types.sizes() == input_ids.sizes(), "BertEmbeddings", "token_type_ids ", types.sizes(),
              " must have the shape of input_ids ", input_ids.sizes());
  // HuggingFace's order of the sums (float addition is not associative).
  Tensor x = word_embeddings->forward(input_ids) + token_type_embeddings->forward(types);
  x = x + position_embeddings->forward(position_ids.narrow(1, 0, seq));
  return dropout->forward(LayerNorm->forward(x));
}

BertSelfAttentionImpl::BertSelfAttentionImpl(const BertConfig& c)
    : nn::Module("BertSelfAttention"),
      num_heads(c.num_attention_heads),
      head_dim(c.hidden_size / c.num_attention_heads),
      dropout_p(c.attention_probs_dropout_prob) {
  query = register_module("query", nn::Linear(c.hidden_size, c.hidden_size));
  key = register_module("key", nn::Linear(c.hidden_size, c.hidden_size));
  value = register_module("value", nn::Linear(c.hidden_size, c.hidden_size));
}

Tensor BertSelfAttentionImpl::forward(const Tensor& x, const Tensor& mask) {
  const int64_t batch = x.size(0), seq = x.size(1);
  auto heads = [&](const Tensor& t) { return t.view({batch, seq, num_heads, head_dim}).transpose(1, 2); };
  Tensor out = nn::functional::scaled_dot_product_attention(heads(query->forward(x)), heads(key->forward(x)),
                                                            heads(value->forward(x)), mask,
                                                            is_training() ? dropout_p : 0.0);
  return out.transpose(1, 2).reshape({batch, seq, num_heads * head_dim});
}

BertResidualOutputImpl::BertResidualOutputImpl(int64_t in_features, const BertConfig& c)
    : nn::Module("BertOutput") {
  dense = register_module("dense", nn::Linear(in_features, c.hidden_size));
  LayerNorm = register_module("LayerNorm", nn::LayerNorm(nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps)));
  dropout = register_module("dropout", nn::Dropout(c.hidden_dropout_prob));
}

Tensor BertResidualOutputImpl::forward(const Tensor& x, const Tensor& residual) {
  return LayerNorm->forward(dropout->forward(dense->forward(x)) + residual);
}

BertAttentionImpl::BertAttentionImpl(const BertConfig& c) : nn::Module("BertAttention") {
  self = register_module("self", BertSelfAttention(c));
  output = register_module("output", BertResidualOutput(c.hidden_size, c));
}

Tensor BertAttentionImpl::forward(const Tensor& x, const Tensor& mask) {
  return output->forward(self->forward(x, mask), x);
}

BertIntermediateImpl::BertIntermediateImpl(const BertConfig& c) : nn::Module("BertIntermediate"), act(c.hidden_act) {
  dense = register_module("dense", nn::Linear(c.hidden_size, c.intermediate_size));
}

Tensor BertIntermediateImpl::forward(const Tensor& x) { return activation(dense->forward(x), act); }

BertLayerImpl::BertLayerImpl(const BertConfig& c) : nn::Module("BertLayer") {
  attention = register_module("attention", BertAttention(c));
  intermediate = register_module("intermediate", BertIntermediate(c));
  output = register_module("output", BertResidualOutput(c.intermediate_size, c));
}

Tensor BertLayerImpl::forward(const Tensor& x, const Tensor& mask) {
  BRISK_CHECK(x.defined() && x.dim() == 3, "BertLayer", "expects (batch, seq, hidden) input, got ",
              x.defined() ? x.dim() : 0, " dims");
  Tensor a = attention->forward(x, mask);
  return output->forward(intermediate->forward(a), a);
}

BertPoolerImpl::BertPoolerImpl(const BertConfig& c) : nn::Module("BertPooler") {
  dense = register_module("dense", nn::Linear(c.hidden_size, c.hidden_size));
}

Tensor BertPoolerImpl::forward(const Tensor& hidden) { return dense->forward(hidden.select(1, 0)).tanh(); }

BertModelImpl::BertModelImpl(const BertConfig& c) : nn::Module("BertModel"), config(c) {
  config.validate();
  embeddings = register_module("embeddings", BertEmbeddings(config));
  auto encoder = std::make_shared<nn::Module>("BertEncoder");
  layers = nn::ModuleList();
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) layers->push_back(BertLayer(config));
  encoder->register_module("layer", layers);
  register_module("encoder", encoder);
  if (config.add_pooling_layer) pooler = register_module("pooler", BertPooler(config));
}

Tensor BertModelImpl::forward(const Tensor& input_ids, const Tensor& attention_mask, const Tensor& token_type_ids) {
  Tensor x = embeddings->forward(input_ids, token_type_ids);
  Tensor mask;  // (batch, 1, 1, seq) bool: which keys take part
  if (attention_mask.defined()) {
    BRISK_CHECK(attention_mask.sizes() == input_ids.sizes(), kBert, "attention_mask ", attention_mask.sizes(),
                " must have the shape of input_ids ", input_ids.sizes());
    mask = attention_mask.ne(0).unsqueeze(1).unsqueeze(2);
  }
  for (size_t i = 0; i < layers->size(); ++i) x = layers->at<BertLayerImpl>(i).forward(x, mask);
  return x;
}

Tensor BertModelImpl::pool(const Tensor& last_hidden_state) {
  BRISK_CHECK(pooler, kBert, "this model was built without a pooler (add_pooling_layer = false)");
  return pooler->forward(last_hidden_state);
}

void BertModelImpl::load_safetensors(const std::string& path) {
  StateDict file = brisk::load(path, /*mmap=*/true);
  // A BertFor* checkpoint keeps the encoder under "bert." (next to its heads).
  bool prefixed = false, bare = false;
  for (const auto& [name, t] : file) {
    prefixed = prefixed || name.rfind("bert.", 0) == 0;
    bare = bare || name.rfind("embeddings.", 0) == 0;
  }
  const bool strip = prefixed && !bare;
  StateDict mine;
  for (const auto& [name, t] : file) {
    if (strip && name.rfind("bert.", 0) != 0) continue;  // a head's tensor
    std::string key = strip ? name.substr(5) : name;
    if (key.rfind("cls.", 0) == 0) continue;                // pretraining / classification heads
    if (!pooler && key.rfind("pooler.", 0) == 0) continue;  // built without the pooler
    mine.insert(std::move(key), t);
  }
  // position_ids is a buffer HuggingFace stopped saving: keep ours when absent.
  if (!mine.contains("embeddings.position_ids")) mine.insert("embeddings.position_ids", embeddings->position_ids);
  NoGradGuard no_grad;
  nn::LoadStateDictResult r = load_state_dict(mine, /*strict=*/false);
  auto list = [](const std::vector<std::string>& keys) {
    std::string s;
    for (const auto& k : keys) s += (s.empty() ? "" : ", ") + k;
    return s;
  };
  BRISK_CHECK(r.missing_keys.empty(), kBert, "'", path, "' lacks ", r.missing_keys.size(), " of the model's tensors: ",
              list(r.missing_keys));
  BRISK_CHECK(r.unexpected_keys.empty(), kBert, "'", path, "' has tensors this BERT does not: ",
              list(r.unexpected_keys), " (is the config right?)");
}

// ---- pooling -------------------------------------------------------------------

Tensor mean_pool(const Tensor& hidden, const Tensor& attention_mask) {
  BRISK_CHECK(hidden.defined() && hidden.dim() == 3, "mean_pool", "hidden must be (batch, seq, dim), got ",
              hidden.defined() ? hidden.dim() : 0, " dims");
  BRISK_CHECK(attention_mask.defined() && attention_mask.dim() == 2 && attention_mask.size(0) == hidden.size(0) &&
                  attention_mask.size(1) == hidden.size(1),
              "mean_pool", "attention_mask must be (batch, seq) = (", hidden.size(0), ", ", hidden.size(1), ")");
  Tensor m = attention_mask.to(hidden.scalar_type()).unsqueeze(-1);
  return (hidden * m).sum({1}) / clamp(m.sum({1}), 1e-9);
}

Tensor l2_normalize(const Tensor& x, double eps) {
  BRISK_CHECK(x.defined() && x.dim() >= 1, "l2_normalize", "expects a tensor with at least one dim");
  return x / clamp(norm(x, 2, {-1}, /*keepdim=*/true), eps);
}

}  // namespace brisk::models

// BERT encoders (the architecture of HuggingFace's BertModel) built from
// brisk's nn modules, with HuggingFace's parameter names, so that a
// pretrained model.safetensors loads by name:
//
//   auto cfg = brisk::models::BertConfig::from_json_file(dir + "/config.json");
//   brisk::models::BertModel bert(cfg);
//   bert->load_safetensors(dir + "/model.safetensors");   // memory-mapped
//   bert->eval();
//   brisk::InferenceMode guard;
//   Tensor hidden = bert->forward(ids, mask);             // (batch, seq, hidden)
//   Tensor emb = brisk::models::mean_pool(hidden, mask);  // sentence embeddings
//
// The encoder layer (BertLayer) is usable on its own. See
// docs/design/models.md for why these live in the library and how they
// match sentence-transformers' all-MiniLM-L6-v2 bit for bit in float32.
#pragma once
#include <cstdint>
#include <string>

#include "brisk/nn/layers.h"
#include "brisk/nn/module.h"
#include "brisk/tensor.h"

namespace brisk::models {

/// HuggingFace's BertConfig (the fields an encoder needs). from_json_file
/// reads a config.json; unknown keys are ignored, and a model type or
/// activation brisk does not implement is a brisk::Error.
struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  std::string hidden_act = "gelu";  ///< "gelu" (erf), "gelu_new"/"gelu_pytorch_tanh" (tanh), "relu"
  bool add_pooling_layer = true;    ///< the [CLS] pooler (BertModel's default)

  static BertConfig from_json_file(const std::string& path);
  /// Throws brisk::Error naming the first inconsistent field.
  void validate() const;
};

/// Word, position and token-type embeddings, summed, then LayerNorm and
/// dropout ("embeddings.*").
class BertEmbeddingsImpl : public nn::Module {
 public:
  explicit BertEmbeddingsImpl(const BertConfig& config);
  /// input_ids (batch, seq) int64; token_type_ids the same shape, or
  /// undefined for all zeros. Returns (batch, seq, hidden).
  Tensor forward(const Tensor& input_ids, const Tensor& token_type_ids);
  nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  nn::LayerNorm LayerNorm{nullptr};  // NOLINT: HuggingFace's name
  nn::Dropout dropout{nullptr};
  Tensor position_ids;  ///< buffer (1, max_position_embeddings): 0, 1, 2, ...
};
BRISK_MODULE(BertEmbeddings);

/// Multi-head self-attention with separate query/key/value projections
/// ("attention.self.*"); the heads run in scaled_dot_product_attention.
class BertSelfAttentionImpl : public nn::Module {
 public:
  explicit BertSelfAttentionImpl(const BertConfig& config);
  /// x (batch, seq, hidden); mask broadcastable to (batch, heads, seq, seq),
  /// bool (true = attend) or additive float, or undefined.
  Tensor forward(const Tensor& x, const Tensor& mask);
  nn::Linear query{nullptr}, key{nullptr}, value{nullptr};
  int64_t num_heads, head_dim;
  double dropout_p;
};
BRISK_MODULE(BertSelfAttention);

/// dense + dropout + residual + LayerNorm, the block that follows attention
/// ("attention.output.*") and the feed-forward ("output.*").
class BertResidualOutputImpl : public nn::Module {
 public:
  BertResidualOutputImpl(int64_t in_features, const BertConfig& config);
  Tensor forward(const Tensor& x, const Tensor& residual);
  nn::Linear dense{nullptr};
  nn::LayerNorm LayerNorm{nullptr};  // NOLINT: HuggingFace's name
  nn::Dropout dropout{nullptr};
};
BRISK_MODULE(BertResidualOutput);

/// "attention.*": self-attention and its output block.
class BertAttentionImpl : public nn::Module {
 public:
  explicit BertAttentionImpl(const BertConfig& config);
  Tensor forward(const Tensor& x, const Tensor& mask);
  BertSelfAttention self{nullptr};
  BertResidualOutput output{nullptr};
};
BRISK_MODULE(BertAttention);

/// "intermediate.*": dense + activation.
class BertIntermediateImpl : public nn::Module {
 public:
  explicit BertIntermediateImpl(const BertConfig& config);
  Tensor forward(const Tensor& x) override;
  nn::Linear dense{nullptr};
  std::string act;
};
BRISK_MODULE(BertIntermediate);

/// One post-LayerNorm transformer encoder layer ("encoder.layer.N.*").
class BertLayerImpl : public nn::Module {
 public:
  explicit BertLayerImpl(const BertConfig& config);
  Tensor forward(const Tensor& x, const Tensor& mask);
  BertAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertResidualOutput output{nullptr};
};
BRISK_MODULE(BertLayer);

/// "pooler.*": tanh(dense(hidden[:, 0])).
class BertPoolerImpl : public nn::Module {
 public:
  explicit BertPoolerImpl(const BertConfig& config);
  Tensor forward(const Tensor& hidden) override;
  nn::Linear dense{nullptr};
};
BRISK_MODULE(BertPooler);

/// HuggingFace's BertModel: embeddings, `encoder.layer` (a ModuleList of
/// BertLayer) and an optional pooler.
class BertModelImpl : public nn::Module {
 public:
  explicit BertModelImpl(const BertConfig& config);
  /// input_ids (batch, seq) int64; attention_mask the same shape (1 = token,
  /// 0 = padding; int64, bool or float) or undefined for all tokens;
  /// token_type_ids as BertEmbeddings. Returns the last hidden state
  /// (batch, seq, hidden).
  Tensor forward(const Tensor& input_ids, const Tensor& attention_mask = {}, const Tensor& token_type_ids = {});
  /// The pooler's output for a last hidden state (throws without a pooler).
  Tensor pool(const Tensor& last_hidden_state);
  /// Loads a HuggingFace safetensors checkpoint by name (memory-mapped;
  /// values copied into the parameters). In a BertFor* checkpoint (the
  /// encoder under "bert.") the prefix is removed and the heads' tensors are
  /// ignored, as are "cls.*" and a pooler the model was built without. Every
  /// tensor of the model must be in the file with its shape, and the file may
  /// hold no other encoder tensor; otherwise a brisk::Error names the keys.
  void load_safetensors(const std::string& path);

  BertConfig config;
  BertEmbeddings embeddings{nullptr};
  nn::ModuleList layers{nullptr};  ///< registered as "encoder.layer" (see the constructor)
  BertPooler pooler{nullptr};      ///< null when config.add_pooling_layer is false
};
BRISK_MODULE(BertModel);

/// Sentence-transformers' mean pooling: the mean of the token vectors of
/// `hidden` (batch, seq, dim) where `attention_mask` (batch, seq) is nonzero;
/// a row with no tokens gives zeros (the count is clamped to 1e-9, as
/// sentence-transformers does).
Tensor mean_pool(const Tensor& hidden, const Tensor& attention_mask);

/// Row-wise L2 normalization x / max(||x||, eps), torch.nn.functional.normalize.
Tensor l2_normalize(const Tensor& x, double eps = 1e-12);

}  // namespace brisk::models

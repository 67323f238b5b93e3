// Text: the BERT WordPiece tokenizer (library brisk::text, built where ICU is
// found; link brisk::text, it is not part of brisk/brisk.h).
//
//   auto tok = brisk::text::BertTokenizer::from_file("vocab.txt");
//   std::vector<int64_t> ids = tok.encode("Hello world!");  // 101 7592 2088 999 102
//   brisk::text::Encoding batch = tok.encode_batch({"a", "b c"});
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "brisk/tensor.h"

namespace brisk::text {

/// How BertTokenizer normalizes and cuts text; the defaults are those of
/// bert-base-uncased and its descendants (all-MiniLM-L6-v2).
struct BertTokenizerOptions {
  /// Lowercase every character after accent stripping.
  bool lowercase = true;
  /// NFD-decompose and drop nonspacing marks; unset: do it when lowercasing.
  std::optional<bool> strip_accents;
  /// Put spaces around CJK ideographs, so that each is a word of its own.
  bool handle_chinese_chars = true;
  /// The most tokens encode() returns, [CLS] and [SEP] included.
  int64_t max_length = 256;
  /// A longer word (in code points, after normalization) becomes [UNK].
  int64_t max_input_chars_per_word = 100;
};

/// A padded batch from BertTokenizer::encode_batch.
struct Encoding {
  Tensor input_ids;       // int64 (batch, len), right-padded with the pad id
  Tensor attention_mask;  // int64 (batch, len), 1 for tokens, 0 for padding
};

/// BERT's WordPiece tokenizer, giving the same ids as HuggingFace's fast
/// BertTokenizer (Rust `tokenizers`): the special tokens [PAD] [UNK] [CLS]
/// [SEP] [MASK] (those in the vocabulary) are matched verbatim in the raw
/// text, even inside a word; the text between them goes through
/// BertNormalizer (clean text, CJK spacing, accent stripping, lowercasing),
/// BertPreTokenizer (whitespace and punctuation) and greedy longest-match
/// WordPiece with the "##" continuation prefix. The Unicode versions it
/// follows: Note [Reference tokenizer's Unicode tables] in
/// src/text/bert_tokenizer.cpp. Thread-safe: every method is const.
class BertTokenizer {
 public:
  /// Reads a vocab.txt (one token per line, the id is the line number).
  /// Throws brisk::Error naming the path when the file cannot be read, and
  /// when [UNK], [CLS], [SEP] or [PAD] is missing from it.
  static BertTokenizer from_file(const std::string& vocab_txt_path, BertTokenizerOptions opts = {});

  /// The ids of "[CLS] text [SEP]", the text's tokens cut to
  /// options().max_length - 2. Throws brisk::Error on invalid UTF-8.
  std::vector<int64_t> encode(std::string_view utf8_text) const;
  /// The wordpieces of the text, without [CLS]/[SEP] and not truncated.
  std::vector<std::string> tokenize(std::string_view utf8_text) const;
  /// encode() of each text, right-padded with pad_id() to the longest,
  /// rounded up to a multiple of pad_to_multiple_of.
  Encoding encode_batch(const std::vector<std::string>& texts, int64_t pad_to_multiple_of = 1) const;

  /// The id of a vocabulary entry, or unk_id() when it has none (as
  /// HuggingFace's convert_tokens_to_ids).
  int64_t token_to_id(std::string_view token) const;
  /// The vocabulary entry of an id; throws brisk::Error when out of range.
  const std::string& id_to_token(int64_t id) const;

  int64_t vocab_size() const { return static_cast<int64_t>(tokens_.size()); }
  int64_t pad_id() const { return pad_id_; }
  int64_t cls_id() const { return cls_id_; }
  int64_t sep_id() const { return sep_id_; }
  int64_t unk_id() const { return unk_id_; }
  const BertTokenizerOptions& options() const { return opts_; }

 private:
  // Transparent hashing: lookups by string_view build no std::string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Vocab = std::unordered_map<std::string, int64_t, Hash, std::equal_to<>>;

  BertTokenizer() = default;
  /// Appends the ids (and, when `pieces` is given, the strings) of the
  /// text's tokens to `ids` until it holds `limit` ids.
  void encode_into(std::string_view utf8_text, std::vector<int64_t>& ids, std::vector<std::string>* pieces,
                   size_t limit) const;
  /// WordPiece of one pre-tokenized word (UTF-8, `chars` code points).
  void wordpiece(std::string_view word, size_t chars, std::vector<int64_t>& ids,
                 std::vector<std::string>* pieces) const;

  BertTokenizerOptions opts_;
  std::vector<std::string> tokens_;  // id -> token
  Vocab vocab_;                      // token -> id (the last line wins for a repeated token)
  std::vector<std::pair<std::string, int64_t>> special_;  // matched verbatim in the raw text
  int64_t pad_id_ = 0, cls_id_ = 0, sep_id_ = 0, unk_id_ = 0;
};

}  // namespace brisk::text

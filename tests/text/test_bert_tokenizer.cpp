// brisk::text::BertTokenizer against HuggingFace's fast BertTokenizer (Rust
// `tokenizers`): the ids of tests/models/sentences.txt written by
// tools/models/minilm_reference.py, and unit cases whose expected tokens and
// ids were printed by the reference tokenizer (tokenizers 0.23.3, the
// all-MiniLM-L6-v2 tokenizer.json; tests/models/vocab.txt is its vocab.txt).
#include "test_util.h"

#if BRISK_HAVE_TEXT

#include <brisk/text.h>

#include "models/minilm_reference.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using brisk::text::BertTokenizer;
using brisk::text::BertTokenizerOptions;
using Ids = std::vector<int64_t>;
using Tokens = std::vector<std::string>;

std::filesystem::path models_dir() {
  const char* dir = std::getenv("BRISK_TEST_DIR");
  return dir ? std::filesystem::path(dir) / "models" : std::filesystem::path();
}

#define NEED_TEST_DIR() \
  if (std::getenv("BRISK_TEST_DIR") == nullptr) GTEST_SKIP() << "BRISK_TEST_DIR is not set (CTest sets it)"

BertTokenizer load(BertTokenizerOptions opts = {}) {
  return BertTokenizer::from_file((models_dir() / "vocab.txt").string(), opts);
}

TEST(BertTokenizer, MatchesReferenceOnSentences) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  const std::vector<std::string> sentences = minilm::sentences();
  const std::vector<Ids> want = minilm::reference().ids;
  ASSERT_EQ(sentences.size(), want.size());
  ASSERT_EQ(sentences.size(), 60u);
  for (size_t i = 0; i < sentences.size(); ++i)
    EXPECT_EQ(tok.encode(sentences[i]), want[i]) << "sentence " << i + 1 << ": " << sentences[i];
}

TEST(BertTokenizer, Vocabulary) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  EXPECT_EQ(tok.vocab_size(), 30522);
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.unk_id(), 100);
  EXPECT_EQ(tok.cls_id(), 101);
  EXPECT_EQ(tok.sep_id(), 102);
  EXPECT_EQ(tok.token_to_id("[MASK]"), 103);
  EXPECT_EQ(tok.token_to_id("hello"), 7592);
  EXPECT_EQ(tok.token_to_id("##ization"), 3989);
  EXPECT_EQ(tok.token_to_id("not-a-token"), tok.unk_id());
  EXPECT_EQ(tok.id_to_token(7592), "hello");
  brisk::testing::expect_error([&] { tok.id_to_token(30522); }, {"BertTokenizer", "30522"});
  brisk::testing::expect_error([&] { tok.id_to_token(-1); }, {"BertTokenizer", "-1"});
}

TEST(BertTokenizer, WordPieces) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  EXPECT_EQ(tok.tokenize("unaffable"), (Tokens{"una", "##ffa", "##ble"}));
  EXPECT_EQ(tok.encode("unaffable"), (Ids{101, 14477, 20961, 3468, 102}));
  EXPECT_EQ(tok.tokenize("He's playing tokenization games"),
            (Tokens{"he", "'", "s", "playing", "token", "##ization", "games"}));
  EXPECT_EQ(tok.tokenize("xqzxqzxqz"), (Tokens{"x", "##q", "##z", "##x", "##q", "##z", "##x", "##q", "##z"}));
  // a word whose rest matches nothing is one [UNK], not a prefix and an [UNK]
  EXPECT_EQ(tok.encode("x\u2603y hello"), (Ids{101, 100, 7592, 102}));
  EXPECT_EQ(tok.encode(""), (Ids{101, 102}));
  EXPECT_EQ(tok.encode(" \t\n "), (Ids{101, 102}));
}

TEST(BertTokenizer, StripsAccentsBeforeLowercasing) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  EXPECT_EQ(tok.tokenize("Café naïve ÉCOLE Ångström"), (Tokens{"cafe", "naive", "ecole", "ang", "##strom"}));
  EXPECT_EQ(tok.tokenize("ünïcödé"), (Tokens{"unicode"}));
  // U+0130: stripped first it is "I" then "i"; lowercased unstripped it is
  // "i" + U+0307, which the vocabulary does not know
  EXPECT_EQ(tok.encode("\u0130stanbul"), (Ids{101, 9960, 102}));
  BertTokenizerOptions keep;
  keep.strip_accents = false;
  const BertTokenizer unstripped = load(keep);
  EXPECT_EQ(unstripped.tokenize("Café naïve"), (Tokens{"[UNK]", "[UNK]"}));
  EXPECT_EQ(unstripped.encode("\u0130stanbul"), (Ids{101, 100, 102}));
}

TEST(BertTokenizer, ChineseCharactersAreWords) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  EXPECT_EQ(tok.tokenize("我爱北京天安门"), (Tokens{"我", "[UNK]", "北", "京", "天", "安", "[UNK]"}));
  // kana is not in BERT's CJK ranges: one word, cut by WordPiece
  EXPECT_EQ(tok.tokenize("日本語テキスト"), (Tokens{"日", "本", "語", "テ", "##キ", "##ス", "##ト"}));
  BertTokenizerOptions off;
  off.handle_chinese_chars = false;
  EXPECT_EQ(load(off).tokenize("我爱北京"), (Tokens{"[UNK]"}));
}

TEST(BertTokenizer, PunctuationIsIsolated) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  EXPECT_EQ(tok.tokenize("a,b.c!?(x)"), (Tokens{"a", ",", "b", ".", "c", "!", "?", "(", "x", ")"}));
  EXPECT_EQ(tok.tokenize("¿Qué? «sí» — no…"), (Tokens{"¿", "que", "?", "«", "si", "»", "—", "no", "…"}));
  EXPECT_EQ(tok.tokenize("Hello, world!"), (Tokens{"hello", ",", "world", "!"}));
}

TEST(BertTokenizer, SpecialTokensInTextAreMatchedVerbatim) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  EXPECT_EQ(tok.tokenize("[CLS] x [MASK] [cls] [SEP]"),
            (Tokens{"[CLS]", "x", "[MASK]", "[", "cl", "##s", "]", "[SEP]"}));
  EXPECT_EQ(tok.encode("[CLS] x [MASK] [cls] [SEP]"), (Ids{101, 101, 1060, 103, 1031, 18856, 2015, 1033, 102, 102}));
  // inside a word too, and only before normalization: [CL\u0301S] is text
  EXPECT_EQ(tok.encode("foo[CLS]bar[MASK][mask] [CL\u0301S]"),
            (Ids{101, 29379, 101, 3347, 103, 1031, 7308, 1033, 1031, 18856, 2015, 1033, 102}));
}

TEST(BertTokenizer, TruncatesToMaxLength) {
  NEED_TEST_DIR();
  const std::string text = "The quick brown fox jumps over the lazy dog.";
  EXPECT_EQ(load().encode(text), (Ids{101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 1012, 102}));
  BertTokenizerOptions opts;
  opts.max_length = 8;
  const BertTokenizer tok = load(opts);
  EXPECT_EQ(tok.encode(text), (Ids{101, 1996, 4248, 2829, 4419, 14523, 2058, 102}));
  EXPECT_EQ(tok.tokenize(text).size(), 10u);  // tokenize does not truncate
  // a word's pieces are cut too, and a special token is a token
  EXPECT_EQ(tok.encode("unaffable unaffable unaffable").size(), 8u);
  EXPECT_EQ(tok.encode("a [SEP] b c d e f g h"), (Ids{101, 1037, 102, 1038, 1039, 1040, 1041, 102}));
  opts.max_length = 2;
  EXPECT_EQ(load(opts).encode(text), (Ids{101, 102}));
  opts.max_length = 1;
  brisk::testing::expect_error([&] { load(opts); }, {"BertTokenizer", "max_length 1"});
}

TEST(BertTokenizer, LongWordIsUnknown) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  const Tokens hundred = tok.tokenize(std::string(100, 'a'));  // at the limit: WordPiece
  ASSERT_EQ(hundred.size(), 50u);
  EXPECT_EQ(hundred.front(), "aaa");
  EXPECT_EQ(hundred.back(), "##a");
  EXPECT_EQ(tok.tokenize(std::string(101, 'a')), (Tokens{"[UNK]"}));
  // the limit counts code points, not bytes: 60 two-byte letters pass
  std::string e_acute;
  for (int i = 0; i < 60; ++i) e_acute += "\u00e9";
  EXPECT_EQ(tok.tokenize(e_acute).front(), "ee");
  BertTokenizerOptions opts;
  opts.max_input_chars_per_word = 5;
  EXPECT_EQ(load(opts).tokenize("hello worlds"), (Tokens{"hello", "[UNK]"}));
}

TEST(BertTokenizer, EncodeBatchPadsAndMasks) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  const brisk::text::Encoding enc = tok.encode_batch({"Hello world!", "", "a b"});
  ASSERT_EQ(enc.input_ids.sizes(), brisk::IntArrayRef({3, 5}));
  ASSERT_EQ(enc.attention_mask.sizes(), brisk::IntArrayRef({3, 5}));
  EXPECT_EQ(enc.input_ids.dtype(), brisk::kLong);
  EXPECT_EQ(enc.attention_mask.dtype(), brisk::kLong);
  const int64_t* ids = enc.input_ids.data_ptr<int64_t>();
  const int64_t* mask = enc.attention_mask.data_ptr<int64_t>();
  EXPECT_EQ(Ids(ids, ids + 15), (Ids{101, 7592, 2088, 999, 102, 101, 102, 0, 0, 0, 101, 1037, 1038, 102, 0}));
  EXPECT_EQ(Ids(mask, mask + 15), (Ids{1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0}));

  const brisk::text::Encoding padded = tok.encode_batch({"Hello world!", "a"}, 8);
  ASSERT_EQ(padded.input_ids.sizes(), brisk::IntArrayRef({2, 8}));
  const int64_t* pm = padded.attention_mask.data_ptr<int64_t>();
  EXPECT_EQ(Ids(pm, pm + 16), (Ids{1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0}));
  const int64_t* pi = padded.input_ids.data_ptr<int64_t>();
  EXPECT_EQ(pi[8 + 3], tok.pad_id());

  EXPECT_EQ(tok.encode_batch({}).input_ids.sizes(), brisk::IntArrayRef({0, 0}));
  brisk::testing::expect_error([&] { tok.encode_batch({"a"}, 0); }, {"BertTokenizer", "pad_to_multiple_of 0"});
}

// Strings the randomized comparison with the reference turned up, where the
// reference's Unicode tables differ from ICU's (Note [Reference tokenizer's
// Unicode tables] in src/text/bert_tokenizer.cpp); the ids are the
// reference's, printed by Python `tokenizers`.
TEST(BertTokenizer, ReferenceUnicodeTables) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  // U+1734 was Mn in Unicode 8.0 (stripped); U+1885 Lo, U+A9BD Mc (kept);
  // U+166D and U+111C9 were punctuation
  EXPECT_EQ(tok.encode("a\u1734b a\u1885b a\uA9BDb a\u166Db a\U000111C9b"),
            (Ids{101, 11113, 100, 100, 1037, 100, 1038, 1037, 100, 1038, 102}));
  // U+2028 is whitespace; U+0085 is a control (removed); U+08E2 (9.0) and
  // U+13430 (12.0) are format characters the reference does not know
  EXPECT_EQ(tok.encode("a\u2028b a\u0085b a\u08E2b a\U00013430b"), (Ids{101, 1037, 1038, 11113, 100, 100, 102}));
  // CJK compatibility ideographs are words of their own
  EXPECT_EQ(tok.encode("\uF900\uFA6A\U0002F800x"), (Ids{101, 100, 100, 100, 1060, 102}));
  EXPECT_EQ(tok.encode("\u01C4emal \uFB01ne \u0149"), (Ids{101, 100, 1984, 2638, 100, 102}));
  // control and format characters vanish, U+FFFD too
  EXPECT_EQ(tok.encode(std::string("hel\x01lo\u200b w\u00adorld\ufffd", 20)), (Ids{101, 7592, 2088, 102}));
}

TEST(BertTokenizer, InvalidUtf8Throws) {
  NEED_TEST_DIR();
  const BertTokenizer tok = load();
  brisk::testing::expect_error([&] { tok.encode("abc\xff"); }, {"BertTokenizer", "UTF-8", "byte offset 3"});
  brisk::testing::expect_error([&] { tok.encode("ab\xc3"); }, {"BertTokenizer", "byte offset 2"});  // truncated
  brisk::testing::expect_error([&] { tok.tokenize("\xc0\xaf"); }, {"BertTokenizer", "byte offset 0"});  // overlong
  brisk::testing::expect_error([&] { tok.encode("x\xed\xa0\x80"); }, {"BertTokenizer", "byte offset 1"});  // surrogate
  brisk::testing::expect_error([&] { tok.encode_batch({"ok", "\x80"}); }, {"BertTokenizer", "byte offset 0"});
}

TEST(BertTokenizer, BadVocabularyThrows) {
  const std::string missing = (std::filesystem::temp_directory_path() / "brisk_no_such_vocab.txt").string();
  brisk::testing::expect_error([&] { BertTokenizer::from_file(missing); }, {"BertTokenizer", missing});
  const std::string partial = (std::filesystem::temp_directory_path() / "brisk_partial_vocab.txt").string();
  {
    std::ofstream out(partial);
    out << "[PAD]\n[CLS]\n[SEP]\nhello\n";
  }
  brisk::testing::expect_error([&] { BertTokenizer::from_file(partial); }, {"BertTokenizer", partial, "[UNK]"});
  std::filesystem::remove(partial);
}

}  // namespace

#else

TEST(BertTokenizer, NotBuilt) { GTEST_SKIP() << "brisk::text is not built (ICU was not found)"; }

#endif  // BRISK_HAVE_TEXT

// BertTokenizer (include/brisk/text.h): HuggingFace's fast BERT tokenizer
// step by step, with ICU for the Unicode properties and NFD.
//
// The reference is the Rust `tokenizers` crate as configured by a BERT
// tokenizer.json:
//   AddedVocabulary   the special tokens, matched verbatim in the raw text;
//                     the text between them goes through the rest alone
//   BertNormalizer    clean_text, handle_chinese_chars, strip_accents, lowercase
//   BertPreTokenizer  split on whitespace, isolate each punctuation character
//   WordPiece         greedy longest match first, "##" continuation prefix
//   TemplateProcessing  [CLS] A [SEP], A truncated to max_length - 2
#include "brisk/text.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>

#include "brisk/error.h"
#include "brisk/ops.h"

namespace brisk::text {

namespace {

constexpr const char* kOp = "BertTokenizer";

// Note [Reference tokenizer's Unicode tables]
// The reference's Unicode data is of three ages, and ICU (72: Unicode 15.0)
// is asked only what each of them knew:
// - "control" (Cc, Cf, Co: not Cn nor Cs), "nonspacing mark" (Mn) and
//   "punctuation" (P*) come from the unicode_categories crate, generated from
//   Unicode 8.0: a character assigned later (an Mn of 9.0, the Egyptian
//   format controls of 12.0) is in none of its tables, and a few characters
//   have changed category since (kUnicode8Categories);
// - NFD comes from the unicode-normalization-alignments crate, Unicode 9.0:
//   a later character neither decomposes (U+11938, 13.0) nor has a
//   combining class (it is not reordered);
// - whitespace and lowercasing come from Rust's std, whose Unicode is newer
//   than ICU's: kNewerLowercase holds the case pairs ICU 72 lacks.
// All of it was found by comparing every code point, and random strings,
// with the reference (tokenizers 0.23.3); another ICU may need the lists
// revisited (the tests compare ids with the reference's).

/// Whether `c` was assigned by Unicode `major`.0 (unassigned ones have age 0.0).
bool assigned_by(UChar32 c, uint8_t major) {
  UVersionInfo age;
  u_charAge(c, age);
  return age[0] < major || (age[0] == major && age[1] == 0);
}

/// The characters whose general category in Unicode 8.0 is not ICU's.
struct OldCategory {
  UChar32 c;
  UCharCategory category;
};
constexpr OldCategory kUnicode8Categories[] = {
    {0x166D, U_OTHER_PUNCTUATION},       // CANADIAN SYLLABICS CHI SIGN: So since 12.0
    {0x1734, U_NON_SPACING_MARK},        // HANUNOO SIGN PAMUDPOD: Mc since 14.0
    {0x1885, U_OTHER_LETTER},            // MONGOLIAN LETTER ALI GALI BALUDA: Mn since 9.0
    {0x1886, U_OTHER_LETTER},            // MONGOLIAN LETTER ALI GALI THREE BALUDA: Mn since 9.0
    {0xA9BD, U_COMBINING_SPACING_MARK},  // JAVANESE CONSONANT SIGN KERET: Mn since 12.0
    {0x111C9, U_OTHER_PUNCTUATION},      // SHARADA SANDHI MARK: Mn since 11.0
};

/// The general category of `c` in the unicode_categories crate (Unicode 8.0).
UCharCategory category(UChar32 c) {
  if (c < 0x80) return static_cast<UCharCategory>(u_charType(c));
  for (const OldCategory& old : kUnicode8Categories)
    if (old.c == c) return old.category;
  if (!assigned_by(c, 8)) return U_UNASSIGNED;
  return static_cast<UCharCategory>(u_charType(c));
}

/// Case pairs of Unicode 16 and 17 that ICU 72 lacks (Rust's std has them):
/// [first, last] lowercase to c + offset.
struct CaseRange {
  UChar32 first, last;
  int32_t offset;
};
constexpr CaseRange kNewerLowercase[] = {
    {0x1C89, 0x1C89, 1},                // CYRILLIC CAPITAL LETTER TJE
    {0xA7CB, 0xA7CB, 0x0264 - 0xA7CB},  // Latin capitals of 16.0 and 17.0
    {0xA7CC, 0xA7CC, 1},
    {0xA7CE, 0xA7CE, 1},
    {0xA7D2, 0xA7D2, 1},
    {0xA7D4, 0xA7D4, 1},
    {0xA7DA, 0xA7DA, 1},
    {0xA7DC, 0xA7DC, 0x019B - 0xA7DC},
    {0x10D50, 0x10D65, 0x20},  // Garay
    {0x16EA0, 0x16EB8, 0x1B},  // Beria Erfe
};

/// Rust char::is_whitespace: the White_Space property (\t \n \v \f \r, space,
/// U+0085, U+00A0, U+1680, U+2000-200A, U+2028-2029, U+202F, U+205F, U+3000).
bool is_whitespace(UChar32 c) { return u_isUWhiteSpace(c); }

/// BertNormalizer's is_control: Cc, Cf, Co, but for \t \n \r (whitespace there).
bool is_control(UChar32 c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const UCharCategory cat = category(c);
  return cat == U_CONTROL_CHAR || cat == U_FORMAT_CHAR || cat == U_PRIVATE_USE_CHAR;
}

/// BERT's _is_chinese_char: the CJK Unified and Compatibility Ideograph blocks.
bool is_chinese(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_nonspacing_mark(UChar32 c) { return category(c) == U_NON_SPACING_MARK; }

/// BertPreTokenizer's is_bert_punc: ASCII punctuation or a P* category.
bool is_punctuation(UChar32 c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  switch (category(c)) {
    case U_CONNECTOR_PUNCTUATION:
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION: return true;
    default: return false;
  }
}

/// Rust char::to_lowercase, one code point at a time (no final-sigma rule):
/// the simple mapping but for U+0130, whose full lowercase is "i\u0307".
void append_lowercase(UChar32 c, std::u32string& out) {
  if (c == 0x130) {
    out += U'i';
    out += U'\u0307';
    return;
  }
  UChar32 lower = u_tolower(c);
  if (lower == c)
    for (const CaseRange& r : kNewerLowercase)
      if (c >= r.first && c <= r.last) lower = c + r.offset;
  out += static_cast<char32_t>(lower);
}

/// Decodes UTF-8; throws naming the byte offset of the first invalid sequence.
std::u32string decode_utf8(std::string_view s) {
  BRISK_CHECK(s.size() <= static_cast<size_t>(INT32_MAX), kOp, "the text has ", s.size(),
              " bytes, more than the 2^31 - 1 supported");
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const int32_t n = static_cast<int32_t>(s.size());
  for (int32_t i = 0; i < n;) {
    const int32_t at = i;
    UChar32 c;
    U8_NEXT(p, i, n, c);  // rejects overlong forms, surrogates and truncated sequences
    if (c < 0) {
      const char* hex = "0123456789abcdef";
      const char byte[] = {hex[p[at] >> 4], hex[p[at] & 15], '\0'};
      BRISK_FAIL(kOp, "invalid UTF-8 at byte offset ", at, " (byte 0x", byte, ")");
    }
    out += static_cast<char32_t>(c);
  }
  return out;
}

void append_utf8(char32_t c, std::string& out) {
  char buf[4];
  int32_t len = 0;
  U8_APPEND_UNSAFE(buf, len, c);
  out.append(buf, static_cast<size_t>(len));
}

/// The canonical combining class in Unicode 9.0 (0 for later characters).
uint8_t combining_class(char32_t c) {
  if (c < 0x300) return 0;
  const uint8_t ccc = u_getCombiningClass(static_cast<UChar32>(c));
  return ccc != 0 && assigned_by(static_cast<UChar32>(c), 9) ? ccc : 0;
}

/// NFD as of Unicode 9.0 (Note [Reference tokenizer's Unicode tables]), then
/// drop the nonspacing marks. ICU's Normalizer2 cannot be held to 9.0, so
/// this decomposes one code point at a time and sorts the marks itself.
std::u32string strip_accents(const std::u32string& s) {
  // Below U+00C0 nothing decomposes and nothing is a mark.
  if (std::all_of(s.begin(), s.end(), [](char32_t c) { return c < 0xC0; })) return s;
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  BRISK_CHECK(U_SUCCESS(status), kOp, "ICU has no NFD data: ", u_errorName(status));
  std::u32string d;
  d.reserve(s.size());
  icu::UnicodeString piece;
  for (char32_t c : s) {
    // full canonical decompositions (Hangul's too); a decomposition never changes once assigned
    if (c >= 0xC0 && nfd->getDecomposition(static_cast<UChar32>(c), piece) &&
        assigned_by(static_cast<UChar32>(c), 9)) {
      for (int32_t i = 0; i < piece.length(); i = piece.moveIndex32(i, 1))
        d += static_cast<char32_t>(piece.char32At(i));
    } else {
      d += c;
    }
  }
  // Canonical ordering: each run of nonzero combining classes, stably sorted.
  for (size_t i = 0; i < d.size();) {
    if (combining_class(d[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && combining_class(d[j]) != 0) ++j;
    if (j - i > 1)
      std::stable_sort(d.begin() + static_cast<ptrdiff_t>(i), d.begin() + static_cast<ptrdiff_t>(j),
                       [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  std::erase_if(d, [](char32_t c) { return is_nonspacing_mark(static_cast<UChar32>(c)); });
  return d;
}

/// BertNormalizer on [begin, end) of the decoded text.
std::u32string normalize(const char32_t* begin, const char32_t* end, const BertTokenizerOptions& opts) {
  std::u32string s;
  s.reserve(static_cast<size_t>(end - begin));
  for (const char32_t* p = begin; p != end; ++p) {
    UChar32 c = static_cast<UChar32>(*p);
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;  // clean_text
    if (is_whitespace(c)) c = ' ';
    if (opts.handle_chinese_chars && is_chinese(c)) {
      s += U' ';
      s += static_cast<char32_t>(c);
      s += U' ';
    } else {
      s += static_cast<char32_t>(c);
    }
  }
  if (opts.strip_accents.value_or(opts.lowercase)) s = strip_accents(s);
  if (opts.lowercase) {
    std::u32string lower;
    lower.reserve(s.size());
    for (char32_t c : s) append_lowercase(static_cast<UChar32>(c), lower);
    s = std::move(lower);
  }
  return s;
}

}  // namespace

BertTokenizer BertTokenizer::from_file(const std::string& vocab_txt_path, BertTokenizerOptions opts) {
  BRISK_CHECK(opts.max_length >= 2, kOp, "max_length ", opts.max_length, " leaves no room for [CLS] and [SEP]");
  BRISK_CHECK(opts.max_input_chars_per_word >= 0, kOp, "max_input_chars_per_word ",
              opts.max_input_chars_per_word, " is negative");
  std::ifstream in(vocab_txt_path, std::ios::binary);
  BRISK_CHECK(in.is_open(), kOp, "cannot open the vocabulary file '", vocab_txt_path, "'");
  BertTokenizer tok;
  tok.opts_ = opts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // a repeated token keeps its last id, as tokenizers' WordPiece::read_file
    tok.vocab_.insert_or_assign(line, static_cast<int64_t>(tok.tokens_.size()));
    tok.tokens_.push_back(std::move(line));
  }
  BRISK_CHECK(!in.bad(), kOp, "cannot read the vocabulary file '", vocab_txt_path, "'");
  BRISK_CHECK(!tok.tokens_.empty(), kOp, "the vocabulary file '", vocab_txt_path, "' is empty");
  auto required = [&](const char* name) {
    auto it = tok.vocab_.find(std::string_view(name));
    BRISK_CHECK(it != tok.vocab_.end(), kOp, "the vocabulary file '", vocab_txt_path, "' has no ", name,
                " token (", tok.tokens_.size(), " lines read)");
    return it->second;
  };
  tok.pad_id_ = required("[PAD]");
  tok.unk_id_ = required("[UNK]");
  tok.cls_id_ = required("[CLS]");
  tok.sep_id_ = required("[SEP]");
  for (const char* name : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    auto it = tok.vocab_.find(std::string_view(name));
    if (it != tok.vocab_.end()) tok.special_.emplace_back(name, it->second);
  }
  return tok;
}

void BertTokenizer::wordpiece(std::string_view word, size_t chars, std::vector<int64_t>& ids,
                              std::vector<std::string>* pieces) const {
  auto push = [&](int64_t id) {
    ids.push_back(id);
    if (pieces) pieces->push_back(tokens_[static_cast<size_t>(id)]);
  };
  if (chars > static_cast<size_t>(opts_.max_input_chars_per_word)) return push(unk_id_);
  const size_t first = ids.size();
  std::string piece;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    int64_t id = -1;
    while (start < end) {
      piece.assign(start > 0 ? "##" : "");
      piece.append(word.substr(start, end - start));
      if (auto it = vocab_.find(piece); it != vocab_.end()) {
        id = it->second;
        break;
      }
      do --end;  // back one code point
      while (end > start && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80);
    }
    if (id < 0) {  // some suffix matches nothing: the whole word is unknown
      ids.resize(first);
      if (pieces) pieces->resize(first);
      return push(unk_id_);
    }
    push(id);
    start = end;
  }
}

void BertTokenizer::encode_into(std::string_view utf8_text, std::vector<int64_t>& ids,
                                std::vector<std::string>* pieces, size_t limit) const {
  const std::u32string text = decode_utf8(utf8_text);
  std::string word;
  // BertPreTokenizer and WordPiece on one stretch of text between special tokens.
  auto ordinary = [&](const char32_t* begin, const char32_t* end) {
    const std::u32string s = normalize(begin, end, opts_);
    size_t chars = 0;
    auto flush = [&] {
      if (chars > 0) wordpiece(word, chars, ids, pieces);
      word.clear();
      chars = 0;
    };
    for (char32_t c : s) {
      if (ids.size() >= limit) return;
      if (is_whitespace(static_cast<UChar32>(c))) {
        flush();
      } else if (is_punctuation(static_cast<UChar32>(c))) {
        flush();
        append_utf8(c, word);
        chars = 1;
        flush();
      } else {
        append_utf8(c, word);
        ++chars;
      }
    }
    flush();
  };
  const char32_t* data = text.data();
  const size_t n = text.size();
  size_t done = 0;  // text[0, done) is tokenized
  for (size_t i = 0; i < n && ids.size() < limit; ++i) {
    if (data[i] != U'[') continue;
    // The special tokens all start with '[' and hold no other '[': no two
    // matches overlap, so a scan finds what the reference's Aho-Corasick
    // (leftmost longest) finds.
    for (const auto& [name, id] : special_) {
      if (n - i < name.size() || !std::equal(name.begin(), name.end(), data + i)) continue;
      ordinary(data + done, data + i);
      if (ids.size() >= limit) break;
      ids.push_back(id);
      if (pieces) pieces->push_back(name);
      done = i + name.size();
      i = done - 1;
      break;
    }
  }
  if (ids.size() < limit) ordinary(data + done, data + n);
  if (ids.size() > limit) {
    ids.resize(limit);
    if (pieces) pieces->resize(limit);
  }
}

std::vector<int64_t> BertTokenizer::encode(std::string_view utf8_text) const {
  std::vector<int64_t> ids{cls_id_};
  encode_into(utf8_text, ids, nullptr, static_cast<size_t>(opts_.max_length) - 1);
  ids.push_back(sep_id_);
  return ids;
}

std::vector<std::string> BertTokenizer::tokenize(std::string_view utf8_text) const {
  std::vector<int64_t> ids;
  std::vector<std::string> pieces;
  encode_into(utf8_text, ids, &pieces, SIZE_MAX);
  return pieces;
}

Encoding BertTokenizer::encode_batch(const std::vector<std::string>& texts, int64_t pad_to_multiple_of) const {
  BRISK_CHECK(pad_to_multiple_of >= 1, kOp, "pad_to_multiple_of ", pad_to_multiple_of, " must be at least 1");
  std::vector<std::vector<int64_t>> rows;
  rows.reserve(texts.size());
  int64_t len = 0;
  for (const std::string& t : texts) {
    rows.push_back(encode(t));
    len = std::max(len, static_cast<int64_t>(rows.back().size()));
  }
  len = (len + pad_to_multiple_of - 1) / pad_to_multiple_of * pad_to_multiple_of;
  const int64_t batch = static_cast<int64_t>(rows.size());
  Encoding out{empty({batch, len}, TensorOptions(kLong)), empty({batch, len}, TensorOptions(kLong))};
  int64_t* ids = out.input_ids.data_ptr<int64_t>();
  int64_t* mask = out.attention_mask.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int64_t>& row = rows[static_cast<size_t>(b)];
    const int64_t n = static_cast<int64_t>(row.size());
    std::copy(row.begin(), row.end(), ids + b * len);
    std::fill(ids + b * len + n, ids + (b + 1) * len, pad_id_);
    std::fill(mask + b * len, mask + b * len + n, int64_t{1});
    std::fill(mask + b * len + n, mask + (b + 1) * len, int64_t{0});
  }
  return out;
}

int64_t BertTokenizer::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? unk_id_ : it->second;
}

const std::string& BertTokenizer::id_to_token(int64_t id) const {
  BRISK_CHECK(id >= 0 && id < vocab_size(), kOp, "id ", id, " is out of the vocabulary [0, ", vocab_size(), ")");
  return tokens_[static_cast<size_t>(id)];
}

}  // namespace brisk::text

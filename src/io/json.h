// A small strict JSON reader (pull style) and writer helpers for file
// headers (safetensors). The input is untrusted: every malformed byte is a
// brisk::Error, never a crash; there is no recursion and no tree, so memory
// stays proportional to what the caller keeps.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace brisk::json {

/// Reads one JSON document (RFC 8259) token by token; the caller walks the
/// structure it expects, and anything else is an error
/// "[<op>] <context>: invalid JSON at byte <k>: <what>".
class Reader {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Reader(std::string_view text, const char* op, std::string context) : s_(text), op_(op), context_(std::move(context)) {}

  /// The kind of the next value (after whitespace); fails at the end.
  Kind peek_kind();
  /// Consumes '{'; then `next_key` returns false at the closing '}'.
  void begin_object();
  bool next_key(std::string* key);
  /// Consumes '['; then `next_item` returns false at the closing ']'.
  void begin_array();
  bool next_item();
  /// A string value, decoded to UTF-8 (escapes, surrogate pairs checked).
  std::string read_string();
  /// A number's literal text.
  std::string read_number();
  /// Consumes a `null`.
  void read_null();
  /// Consumes `true` or `false`.
  bool read_bool();
  /// Consumes the next value whatever it is, nested objects and arrays
  /// included (without recursion: memory grows with the nesting depth, the
  /// stack does not).
  void skip_value();
  /// Checks that only whitespace follows the document.
  void finish();
  /// Fails at the current position.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void skip_ws();
  bool at_end() const { return pos_ >= s_.size(); }
  uint32_t hex4();
  bool list_next(char close, bool* first);

  std::string_view s_;
  const char* op_;
  std::string context_;
  size_t pos_ = 0;
  bool first_ = false;  // just after '{' or '['
};

const char* kind_name(Reader::Kind k);

/// A JSON number literal as an integer in [0, max]; false if it is negative,
/// has a fraction or exponent, or exceeds max.
bool to_uint(const std::string& literal, uint64_t max, uint64_t* out);

/// Appends `s` as a JSON string literal (quotes included), escaping as
/// serde_json does: \" \\ \b \f \n \r \t, other control bytes as \u00xx.
void append_quoted(std::string& out, std::string_view s);

/// Whether `s` is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF).
bool is_utf8(std::string_view s);

}  // namespace brisk::json

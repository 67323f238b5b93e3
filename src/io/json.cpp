// Strict JSON for file headers: see json.h.
#include "io/json.h"

#include <vector>

#include "brisk/error.h"

namespace brisk::json {

namespace {

// Length of the well-formed UTF-8 sequence starting at s[i] (a lead byte
// >= 0x80), or 0 if it is malformed (Unicode table 3-7).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // > U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

void Reader::fail(const std::string& what) const {
  BRISK_FAIL(op_, context_, ": invalid JSON at byte ", pos_, ": ", what);
}

void Reader::skip_ws() {
  while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
}

Reader::Kind Reader::peek_kind() {
  skip_ws();
  if (at_end()) fail("unexpected end of input");
  switch (s_[pos_]) {
    case '{': return Kind::Object;
    case '[': return Kind::Array;
    case '"': return Kind::String;
    case 't':
    case 'f': return Kind::Bool;
    case 'n': return Kind::Null;
    default:
      if (s_[pos_] == '-' || (s_[pos_] >= '0' && s_[pos_] <= '9')) return Kind::Number;
      fail("unexpected character");
  }
}

void Reader::begin_object() {
  if (peek_kind() != Kind::Object) fail("expected an object");
  ++pos_;
  first_ = true;
}

void Reader::begin_array() {
  if (peek_kind() != Kind::Array) fail("expected an array");
  ++pos_;
  first_ = true;
}

// Consumes the ',' between items or the closing bracket; true if an item follows.
bool Reader::list_next(char close, bool* first) {
  skip_ws();
  if (at_end()) fail(close == '}' ? "unterminated object" : "unterminated array");
  if (*first) {
    *first = false;
    if (s_[pos_] == close) {
      ++pos_;
      return false;
    }
    return true;
  }
  if (s_[pos_] == close) {
    ++pos_;
    return false;
  }
  if (s_[pos_] != ',') fail(close == '}' ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array");
  ++pos_;
  skip_ws();
  if (!at_end() && s_[pos_] == close) fail("trailing comma");
  return true;
}

bool Reader::next_key(std::string* key) {
  bool first = first_;
  first_ = false;
  if (!list_next('}', &first)) return false;
  if (peek_kind() != Kind::String) fail("expected a string key");
  *key = read_string();
  skip_ws();
  if (at_end() || s_[pos_] != ':') fail("expected ':' after an object key");
  ++pos_;
  return true;
}

bool Reader::next_item() {
  bool first = first_;
  first_ = false;
  return list_next(']', &first);
}

uint32_t Reader::hex4() {
  if (s_.size() - pos_ < 4) fail("truncated \\u escape");
  uint32_t cp = 0;
  for (int k = 0; k < 4; ++k) {
    char c = s_[pos_];
    cp <<= 4;
    if (c >= '0' && c <= '9') cp |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') cp |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') cp |= static_cast<uint32_t>(c - 'A' + 10);
    else fail("invalid hex digit in a \\u escape");
    ++pos_;
  }
  return cp;
}

std::string Reader::read_string() {
  if (peek_kind() != Kind::String) fail("expected a string");
  ++pos_;  // '"'
  std::string out;
  while (true) {
    if (at_end()) fail("unterminated string");
    unsigned char c = static_cast<unsigned char>(s_[pos_]);
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (c < 0x20) fail("control character in a string");
    if (c >= 0x80) {
      size_t n = utf8_sequence_length(s_, pos_);
      if (n == 0) fail("invalid UTF-8");
      out.append(s_.substr(pos_, n));
      pos_ += n;
      continue;
    }
    if (c != '\\') {
      out += static_cast<char>(c);
      ++pos_;
      continue;
    }
    if (s_.size() - pos_ < 2) fail("unterminated string");
    char e = s_[pos_ + 1];
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        pos_ += 2;
        uint32_t cp = hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in a \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (s_.substr(pos_, 2) != "\\u") fail("lone high surrogate in a \\u escape");
          pos_ += 2;
          uint32_t lo = hex4();
          if (lo < 0xDC00 || lo > 0xDFFF) fail("lone high surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        append_utf8(out, cp);
        continue;
      }
      default:
        fail("invalid escape in a string");
    }
    pos_ += 2;
  }
}

std::string Reader::read_number() {
  if (peek_kind() != Kind::Number) fail("expected a number");
  size_t start = pos_;
  auto digits = [&] {
    size_t d = pos_;
    while (!at_end() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ - d;
  };
  if (s_[pos_] == '-') ++pos_;
  if (!at_end() && s_[pos_] == '0') {
    ++pos_;
  } else if (digits() == 0) {
    fail("invalid number");
  }
  if (!at_end() && s_[pos_] == '.') {
    ++pos_;
    if (digits() == 0) fail("invalid number");
  }
  if (!at_end() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
    ++pos_;
    if (!at_end() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
    if (digits() == 0) fail("invalid number");
  }
  if (!at_end() && (s_[pos_] == '.' || (s_[pos_] >= '0' && s_[pos_] <= '9'))) fail("invalid number");
  return std::string(s_.substr(start, pos_ - start));
}

void Reader::skip_value() {
  std::vector<bool> open;  // the containers entered: true for an object
  for (;;) {
    switch (peek_kind()) {
      case Kind::Object: begin_object(); open.push_back(true); break;
      case Kind::Array: begin_array(); open.push_back(false); break;
      case Kind::String: read_string(); break;
      case Kind::Number: read_number(); break;
      case Kind::Bool: read_bool(); break;
      case Kind::Null: read_null(); break;
    }
    // to the next value of the innermost open container, closing finished ones
    for (;;) {
      if (open.empty()) return;
      std::string key;
      if (open.back() ? next_key(&key) : next_item()) break;
      open.pop_back();
    }
  }
}

void Reader::read_null() {
  if (peek_kind() != Kind::Null || s_.substr(pos_, 4) != "null") fail("expected null");
  pos_ += 4;
}

bool Reader::read_bool() {
  if (peek_kind() == Kind::Bool) {
    if (s_.substr(pos_, 4) == "true") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "false") {
      pos_ += 5;
      return false;
    }
  }
  fail("expected true or false");
}

void Reader::finish() {
  skip_ws();
  if (!at_end()) fail("unexpected data after the JSON value");
}

const char* kind_name(Reader::Kind k) {
  using Kind = Reader::Kind;
  switch (k) {
    case Kind::Null: return "null";
    case Kind::Bool: return "boolean";
    case Kind::Number: return "number";
    case Kind::String: return "string";
    case Kind::Array: return "array";
    case Kind::Object: return "object";
  }
  return "?";
}

bool to_uint(const std::string& literal, uint64_t max, uint64_t* out) {
  if (literal.empty()) return false;
  uint64_t v = 0;
  for (char c : literal) {
    if (c < '0' || c > '9') return false;  // sign, fraction or exponent
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > max / 10) return false;
    v *= 10;
    if (d > max - v) return false;
    v += d;
  }
  *out = v;
  return true;
}

void append_quoted(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

bool is_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace brisk::json

// The all-MiniLM-L6-v2 reference the model and tokenizer tests share:
// tests/models/sentences.txt (one sentence per line, \t \n \r \\ escaped) and
// tests/models/minilm_reference.txt (their token ids and sentence-transformers'
// embeddings, written by tools/models/minilm_reference.py), and where the
// model files are.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace minilm {

/// tests/ (CTest sets BRISK_TEST_DIR), or "" outside CTest.
inline std::string test_dir() {
  const char* dir = std::getenv("BRISK_TEST_DIR");
  return dir ? dir : "";
}

/// The model folder: $BRISK_MINILM_DIR, else scripts/fetch-minilm.sh's
/// .cache/models/all-MiniLM-L6-v2; "" when neither has the files.
inline std::string model_dir() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("BRISK_MINILM_DIR")) candidates.emplace_back(env);
  if (!test_dir().empty()) candidates.push_back(test_dir() + "/../.cache/models/all-MiniLM-L6-v2");
  for (const auto& c : candidates)
    if (std::filesystem::exists(c + "/model.safetensors") && std::filesystem::exists(c + "/config.json") &&
        std::filesystem::exists(c + "/vocab.txt"))
      return c;
  return "";
}

/// A line of sentences.txt with its escapes decoded.
inline std::string unescape(const std::string& line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size()) {
      const char c = line[++i];
      out += c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c;
    } else {
      out += line[i];
    }
  }
  return out;
}

/// The sentences, decoded.
inline std::vector<std::string> sentences() {
  std::ifstream in(test_dir() + "/models/sentences.txt", std::ios::binary);
  EXPECT_TRUE(in.good()) << "tests/models/sentences.txt is missing";
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(unescape(line));
  return out;
}

struct Reference {
  std::vector<std::vector<int64_t>> ids;  ///< per sentence, [CLS] ... [SEP], at most 256
  std::vector<std::vector<float>> emb;    ///< per sentence, 384 floats of unit norm
};

inline Reference reference() {
  Reference r;
  std::ifstream in(test_dir() + "/models/minilm_reference.txt");
  EXPECT_TRUE(in.good()) << "tests/models/minilm_reference.txt is missing";
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string tag;
    size_t n = 0;
    s >> tag >> n;
    if (tag == "ids") {
      r.ids.emplace_back(n);
      for (auto& v : r.ids.back()) s >> v;
    } else if (tag == "emb") {
      r.emb.emplace_back(n);
      for (auto& v : r.emb.back()) s >> v;
    }
    EXPECT_FALSE(s.fail()) << "malformed reference line: " << line.substr(0, 60);
  }
  EXPECT_EQ(r.ids.size(), r.emb.size());
  return r;
}

/// Cosine similarity of a[0..b.size()) and b, in double.
inline double cosine(const float* a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

}  // namespace minilm

/// Skips a test that needs the model files, saying how to get them.
#define REQUIRE_MINILM()                                                                                   \
  if (minilm::model_dir().empty())                                                                         \
  GTEST_SKIP() << "all-MiniLM-L6-v2 is not installed: run scripts/fetch-minilm.sh (or set BRISK_MINILM_DIR)"

#include "io/shipped.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn {

// Defined in the generated shipped_data.cpp (core/CMakeLists.txt).
struct ShippedFile {
  std::string_view path, bytes;
};
extern const ShippedFile kShippedFiles[];
extern const std::size_t kShippedFileCount;

std::string_view shipped_file(std::string_view path) {
  for (std::size_t i = 0; i < kShippedFileCount; ++i)
    if (kShippedFiles[i].path == path) return kShippedFiles[i].bytes;
  return {};
}

const Vocabulary& lesson_vocabulary() {
  static const Vocabulary vocab =
      parse_vocabulary(shipped_file("vocab/lesson-vocab.txt"), "lesson-vocab.txt");
  return vocab;
}

const Vocabulary& bert_vocabulary() {
  static const Vocabulary vocab = parse_vocabulary(
      shipped_file("vocab/bert-base-uncased-vocab.txt"), "bert-base-uncased-vocab.txt");
  return vocab;
}

std::vector<std::string> shipped_config_names() {
  return {"bert-base", "tiny"};
}

std::optional<EncoderConfig> shipped_config(std::string_view name) {
  if (name.ends_with(".json")) name.remove_suffix(5);
  for (const std::string& known : shipped_config_names()) {
    if (known != name) continue;
    const std::string file = fmt::format("configs/{}.json", name);
    return parse_config(std::string(shipped_file(file)), file);
  }
  return std::nullopt;
}

EncoderConfig tiny_config() {
  return *shipped_config("tiny");
}

bool uses_bert_vocabulary(const EncoderConfig& config) {
  return config.vocab_size == bert_vocabulary().size();
}

}  // namespace attn

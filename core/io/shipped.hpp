// The data attn ships, compiled into libattn from data/ at build time, so that attn needs no
// checkout at run time: the lesson vocabulary (data/vocab/lesson-vocab.txt), BERT's vocabulary
// (data/vocab/bert-base-uncased-vocab.txt) and the configs (data/configs/*.json).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/config.hpp"
#include "io/tokenizer.hpp"

namespace attn {

// The bytes of a file under data/, by its path there ("vocab/lesson-vocab.txt"); empty when attn
// does not ship it.
std::string_view shipped_file(std::string_view path);

const Vocabulary& lesson_vocabulary();
const Vocabulary& bert_vocabulary();

// The shipped configs by name: "tiny" (the lessons' default: D 6, 2 heads, 2 layers, the lesson
// vocabulary) and "bert-base" (bert-base-uncased's). A ".json" after the name is allowed.
std::optional<EncoderConfig> shipped_config(std::string_view name);
std::vector<std::string> shipped_config_names();
EncoderConfig tiny_config();

// Whether a config's vocabulary is BERT's (30522 tokens), so that text goes through BERT's
// vocabulary rather than the lesson's.
bool uses_bert_vocabulary(const EncoderConfig& config);

}  // namespace attn

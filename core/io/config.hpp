// A Hugging Face config.json (BertConfig's fields), read with nlohmann-json and checked.
#pragma once

#include <cstddef>
#include <exception>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace attn {

struct EncoderConfig {
  std::size_t hidden_size = 768;              // D
  std::size_t num_attention_heads = 12;       // H
  std::size_t intermediate_size = 3072;       // F
  std::size_t num_hidden_layers = 12;         // layers
  std::size_t vocab_size = 30522;             // V
  std::size_t max_position_embeddings = 512;  // P
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  double layer_norm_eps = 1e-12;
  std::string hidden_act = "gelu";  // gelu (erf), gelu_new / gelu_pytorch_tanh (tanh)
};

// Reads and checks a config.json: the fields above with the right JSON types (other fields are
// ignored), positive sizes, H dividing D, 0 <= dropout < 1, eps > 0, a known activation.
// Throws attn::Error naming the file, the field and the fix.
// nlohmann-json's parse error as a message shows it: "syntax error while parsing value - invalid
// literal at byte 2" (without its id and what it read last); e.what() for any other exception.
std::string json_error_reason(const std::exception& e);

EncoderConfig load_config(const std::string& path);
EncoderConfig parse_config(const std::string& text, const std::string& name);
// The checks of load_config on a config whose fields were set some other way (command line).
void validate_config(const EncoderConfig& config, const std::string& name);

// The pieces of parse_config, for readers of other models' config.json. `name` is shown in
// errors as given (quote it).
// A config.json's text, within a config's size cap (1 MiB).
std::string read_config_text(const std::string& path);
// The text as a JSON object: UTF-8, JSON, an object.
nlohmann::json parse_config_object(const std::string& text, const std::string& name);
// EncoderConfig's fields of a parsed config.json, checked (validate_config).
EncoderConfig encoder_config(const nlohmann::json& doc, const std::string& name);
// A size field from 1 to 1e9; `fallback` when the field is absent.
std::size_t config_size(const nlohmann::json& doc, const char* key, std::size_t fallback,
                        const std::string& name);
// A number field; `fallback` when the field is absent.
double config_real(const nlohmann::json& doc, const char* key, double fallback,
                   const std::string& name);

}  // namespace attn

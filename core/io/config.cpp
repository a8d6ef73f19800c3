#include "io/config.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/heads.hpp"
#include "io/file_io.hpp"
#include "io/tokenizer.hpp"

namespace attn {

namespace {
constexpr std::size_t kMaxSize = 1'000'000'000;

}  // namespace

std::size_t config_size(const nlohmann::json& doc, const char* key, std::size_t fallback,
                        const std::string& name) {
  if (!doc.contains(key)) return fallback;
  const nlohmann::json& v = doc[key];
  // nlohmann reads a whole number past 2^64-1 as a double: that is a size too large, not a fraction.
  const bool too_large = v.is_number_float() && v.get<double>() >= 18446744073709551616.0;
  if (!v.is_number_integer() && !too_large) {
    throw Error(ErrorKind::bad_file, "load_config",
                fmt::format("'{}': \"{}\" is {}, expected a whole number", name, key, v.dump()))
        .about("config");
  }
  if (too_large) {
    throw Error(ErrorKind::bad_file, "load_config",
                fmt::format("'{}': \"{}\" is {}, expected a size from 1 to {}", name, key, v.dump(),
                            kMaxSize))
        .about("config");
  }
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() == 0 || v.get<std::uint64_t>() > kMaxSize
                             : (v.get<std::int64_t>() < 1 ||
                                v.get<std::int64_t>() > static_cast<std::int64_t>(kMaxSize))) {
    throw Error(ErrorKind::bad_file, "load_config",
                fmt::format("'{}': \"{}\" is {}, expected a size from 1 to {}", name, key, v.dump(),
                            kMaxSize))
        .about("config");
  }
  return v.get<std::size_t>();
}

double config_real(const nlohmann::json& doc, const char* key, double fallback,
                   const std::string& name) {
  if (!doc.contains(key)) return fallback;
  const nlohmann::json& v = doc[key];
  if (!v.is_number())
    throw Error(ErrorKind::bad_file, "load_config",
                fmt::format("'{}': \"{}\" is {}, expected a number", name, key, v.dump()))
        .about("config");
  return v.get<double>();
}

void validate_config(const EncoderConfig& c, const std::string& name) {
  for (const auto& [key, value] : {std::pair{"hidden_size", c.hidden_size},
                                   {"num_attention_heads", c.num_attention_heads},
                                   {"intermediate_size", c.intermediate_size},
                                   {"num_hidden_layers", c.num_hidden_layers},
                                   {"vocab_size", c.vocab_size},
                                   {"max_position_embeddings", c.max_position_embeddings}}) {
    if (value == 0 || value > kMaxSize) {
      throw Error(
          ErrorKind::bad_file, "load_config",
          fmt::format("{}: {} is {}, expected a size from 1 to {}", name, key, value, kMaxSize))
          .about("config");
    }
  }
  if (!heads_divide(c.hidden_size, c.num_attention_heads)) {
    throw Error(
        ErrorKind::bad_file, "load_config",
        fmt::format("{}: hidden_size {} is not divisible by num_attention_heads {}: each head has "
                    "hidden_size / heads numbers",
                    name, c.hidden_size, c.num_attention_heads))
        .about("config");
  }
  for (const auto& [key, p] :
       {std::pair{"hidden_dropout_prob", c.hidden_dropout_prob},
        std::pair{"attention_probs_dropout_prob", c.attention_probs_dropout_prob}}) {
    if (!(p >= 0.0 && p < 1.0)) {
      throw Error(ErrorKind::bad_file, "load_config",
                  fmt::format("{}: {} {} is outside [0, 1)", name, key, p))
          .about("config");
    }
  }
  if (!(c.layer_norm_eps > 0.0) || !std::isfinite(c.layer_norm_eps)) {
    throw Error(ErrorKind::bad_file, "load_config",
                fmt::format("{}: layer_norm_eps {} must be a positive number such as 1e-12", name,
                            c.layer_norm_eps))
        .about("config");
  }
  if (c.hidden_act != "gelu" && c.hidden_act != "gelu_new" && c.hidden_act != "gelu_pytorch_tanh") {
    throw Error(
        ErrorKind::bad_file, "load_config",
        fmt::format("{}: hidden_act \"{}\" is not one the book's FeedForward has: use gelu (erf) "
                    "or gelu_new / gelu_pytorch_tanh (tanh)",
                    name, c.hidden_act))
        .about("config");
  }
}

std::string json_error_reason(const std::exception& e) {
  // e.what(): "[json.exception.parse_error.101] parse error at line 1, column 20: syntax error
  // while parsing value - invalid literal; last read: '...'": the reason and the byte only.
  std::string reason = e.what();
  const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&e);
  if (parse == nullptr) return reason;
  if (const auto at = reason.find("syntax error"); at != std::string::npos)
    reason = reason.substr(at);
  if (const auto last = reason.find("; last read"); last != std::string::npos) reason.resize(last);
  return fmt::format("{} at byte {}", reason, parse->byte);
}

nlohmann::json parse_config_object(const std::string& text, const std::string& name) {
  if (std::size_t bad = 0; !is_valid_utf8(text, &bad)) {
    throw Error(
        ErrorKind::bad_file, "load_config",
        fmt::format("'{}' is not UTF-8 text: byte {:#04x} at offset {} does not start a UTF-8 "
                    "character; a config.json is UTF-8 JSON, save it again as UTF-8",
                    name, static_cast<unsigned char>(text[bad]), bad))
        .about("config");
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(ErrorKind::bad_file, "load_config",
                fmt::format("'{}' is not JSON ({}): a Hugging Face config.json is one JSON object",
                            name, json_error_reason(e)))
        .about("config");
  } catch (const nlohmann::json::out_of_range&) {  // a number such as 1e400
    throw Error(ErrorKind::bad_file, "load_config",
                fmt::format("'{}' holds a number too large for a double (above "
                            "1.8e308): write every number within that range",
                            name))
        .about("config");
  }
  if (!doc.is_object()) {
    throw Error(ErrorKind::bad_file, "load_config",
                fmt::format("'{}' holds JSON {}, not an object like a Hugging Face config.json",
                            name, doc.type_name()))
        .about("config");
  }
  return doc;
}

EncoderConfig encoder_config(const nlohmann::json& doc, const std::string& name) {
  EncoderConfig c;
  c.hidden_size = config_size(doc, "hidden_size", c.hidden_size, name);
  c.num_attention_heads = config_size(doc, "num_attention_heads", c.num_attention_heads, name);
  c.intermediate_size = config_size(doc, "intermediate_size", c.intermediate_size, name);
  c.num_hidden_layers = config_size(doc, "num_hidden_layers", c.num_hidden_layers, name);
  c.vocab_size = config_size(doc, "vocab_size", c.vocab_size, name);
  c.max_position_embeddings =
      config_size(doc, "max_position_embeddings", c.max_position_embeddings, name);
  c.hidden_dropout_prob = config_real(doc, "hidden_dropout_prob", c.hidden_dropout_prob, name);
  c.attention_probs_dropout_prob =
      config_real(doc, "attention_probs_dropout_prob", c.attention_probs_dropout_prob, name);
  c.layer_norm_eps = config_real(doc, "layer_norm_eps", c.layer_norm_eps, name);
  if (doc.contains("hidden_act")) {
    if (!doc["hidden_act"].is_string()) {
      throw Error(ErrorKind::bad_file, "load_config",
                  fmt::format("'{}': \"hidden_act\" is {}, expected a string such as \"gelu\"",
                              name, doc["hidden_act"].dump()))
          .about("config");
    }
    c.hidden_act = doc["hidden_act"].get<std::string>();
  }
  validate_config(c, "'" + name + "'");
  return c;
}

EncoderConfig parse_config(const std::string& text, const std::string& name) {
  return encoder_config(parse_config_object(text, name), name);
}

std::string read_config_text(const std::string& path) {
  // bert-base-uncased's config.json has 570 bytes; 1 MiB leaves room for label maps.
  const SizeCap cap{std::uint64_t{1} << 20, "a config.json may have (1 MiB)",
                    "is it the right file? bert-base-uncased's has 570 bytes"};
  const std::vector<unsigned char> bytes = read_file(path, "a config.json file", cap);
  return std::string(bytes.begin(), bytes.end());
}

EncoderConfig load_config(const std::string& path) {
  return parse_config(read_config_text(path), printable(path));
}

}  // namespace attn

// attn summary <model>: the table torchinfo prints for the same PyTorch module and call.
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attention.hpp"
#include "common.hpp"
#include "count.hpp"
#include "embedding.hpp"
#include "error.hpp"
#include "feed_forward.hpp"
#include "layer_norm.hpp"
#include "multi_head.hpp"
#include "positional_encoding.hpp"
#include "encoder.hpp"
#include "09-encoder/encoder_lesson.hpp"
#include "summary.hpp"

namespace attn::cli {

namespace {
struct SummaryCliOptions {
  std::string model;
  std::size_t batch = 1, seq = 5, d_model = 0, heads = 0, head_size = 0;  // 0: the model's default
  std::size_t d_ff = 0;  // 0: 4 * d_model
  std::size_t vocab_size = 30522;  // V of embedding (BERT-base's)
  std::size_t max_positions = 512;  // P of positional-encoding (BERT-base's)
  std::string variant = "book";
  std::string col_names = "output_size,num_params";
  int col_width = 25, depth = 3, verbose = 1;
  std::string torchinfo_format = "current";
  Format format = Format::text;
  std::string config;  // encoder: a config.json (default: the encoder lesson's tiny config)
  std::size_t layers = 0;
  bool no_embeddings = false;
  std::string norm = "pre";
};

struct Described {
  Module module;
  std::vector<LayerInfo> layers;
  std::vector<SummaryInput> inputs;  // empty: one float32 input of shape (B, T, D)
};

// The encoder's config: --config (or a shipped name), then the explicit sizes.
EncoderConfig encoder_config(const SummaryCliOptions& o) {
  EncoderConfig c = o.config.empty() ? lessons::tiny_config() : resolve_config(o.config);
  if (o.d_model != 0) c.hidden_size = o.d_model;
  if (o.heads != 0) c.num_attention_heads = o.heads;
  if (o.d_ff != 0) c.intermediate_size = o.d_ff;
  if (o.layers != 0) c.num_hidden_layers = o.layers;
  validate_config(c, o.config.empty() ? "the tiny config" : o.config);
  return c;
}

// The models `attn summary` knows: name, one line of help, and how to describe it.
struct SummaryModel {
  std::string_view name;
  std::string_view help;
  Described (*describe)(const SummaryCliOptions& o, const Shape& input);
};

MultiHeadVariant parse_variant(const std::string& name) {
  for (MultiHeadVariant v :
       {MultiHeadVariant::narrow, MultiHeadVariant::wide, MultiHeadVariant::book, MultiHeadVariant::fused})
    if (variant_name(v) == name) return v;
  throw Error("--variant", fmt::format("'{}' is not a variant: use narrow, wide, book or fused", name));
}

const std::vector<SummaryModel>& summary_models() {
  static const std::vector<SummaryModel> models = {
      {"self-attention", "seed 004's SelfAttention(D)",
       [](const SummaryCliOptions& o, const Shape& input) {
         return Described{describe_self_attention(o.d_model), trace_self_attention(o.d_model, input), {}};
       }},
      {"attention-head", "seed 000's AttentionHead(D, hs)",
       [](const SummaryCliOptions& o, const Shape& input) {
         const std::size_t hs = o.head_size != 0 ? o.head_size : o.d_model;
         return Described{describe_attention_head(o.d_model, hs), trace_attention_head(o.d_model, hs, input), {}};
       }},
      {"embedding", "nn.Embedding(V, D) on ids (B, T), --vocab-size V",
       [](const SummaryCliOptions& o, const Shape& input) {
         const Shape ids(input.begin(), input.end() - 1);  // (B,T): the ids, not (B,T,D)
         return Described{describe_embedding(o.vocab_size, o.d_model), trace_embedding(o.vocab_size, o.d_model, ids),
                          {{ids, std::size_t{8}}}};  // int64 ids
       }},
      {"positional-encoding", "the book's position_embeddings = nn.Embedding(P, D) on arange(T), --max-positions P",
       [](const SummaryCliOptions& o, const Shape& input) {
         const Shape ids = {1, input[1]};  // position_ids = torch.arange(T).unsqueeze(0)
         if (o.seq > o.max_positions) {
           throw Error("--max-positions", fmt::format("--seq {} is more than the {} positions of the table: give "
                                                      "--max-positions {} or more", o.seq, o.max_positions, o.seq));
         }
         return Described{describe_position_embedding(o.max_positions, o.d_model),
                          trace_position_embedding(o.max_positions, o.d_model, ids), {{ids, std::size_t{8}}}};
       }},
      {"multi-head", "MultiHeadAttention, --variant narrow|wide|book|fused",
       [](const SummaryCliOptions& o, const Shape& input) {
         const MultiHeadVariant v = parse_variant(o.variant);
         return Described{describe_multi_head(v, o.d_model, o.heads), trace_multi_head(v, o.d_model, o.heads, input), {}};
       }},
      {"layer-norm", "nn.LayerNorm(D)",
       [](const SummaryCliOptions& o, const Shape& input) {
         return Described{describe_layer_norm(o.d_model), trace_layer_norm(o.d_model, input), {}};
       }},
      {"feed-forward", "the book's FeedForward(D, F), --d-ff F (default 4 x D)",
       [](const SummaryCliOptions& o, const Shape& input) {
         if (o.variant != "book") throw Error("--variant", "feed-forward's summary is the book's FeedForward: drop --variant");
         const std::size_t f = o.d_ff != 0 ? o.d_ff : 4 * o.d_model;
         return Described{describe_feed_forward(FeedForwardVariant::book, o.d_model, f),
                          trace_feed_forward(FeedForwardVariant::book, o.d_model, f, input),
                          {}};
       }},
        {"embeddings", "the book's Embeddings: token + position tables, LayerNorm, dropout (--config)",
       [](const SummaryCliOptions& o, const Shape&) {
         const EncoderConfig c = encoder_config(o);
         const Shape input = {o.batch, o.seq};
         Trace trace;
         const Module m = describe_embeddings(c);
         trace_embeddings(trace, m, input);
         return Described{m, trace.layers(), {{input, std::size_t{8}}}};
       }},
      {"encoder", "the book's TransformerEncoder (--config, --layers, --no-embeddings, --norm)",
       [](const SummaryCliOptions& o, const Shape&) {
         const EncoderConfig c = encoder_config(o);
         const bool embeddings = !o.no_embeddings;
         const NormPlacement norm = o.norm == "post" ? NormPlacement::post : NormPlacement::pre;
         const Shape input = embeddings ? Shape{o.batch, o.seq} : Shape{o.batch, o.seq, c.hidden_size};
         return Described{describe_encoder(c, embeddings), trace_encoder(c, embeddings, norm, input),
                          {{input, embeddings ? std::size_t{8} : std::size_t{4}}}};
       }},
};
  return models;
}

std::string model_names() {
  std::vector<std::string_view> names;
  for (const SummaryModel& m : summary_models()) names.push_back(m.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

Described describe(const SummaryCliOptions& o) {
  const Shape input = {o.batch, o.seq, o.d_model};  // the attention and norm models' (B, T, D)
  for (const SummaryModel& m : summary_models())
    if (m.name == o.model) return m.describe(o, input);
  throw Error("summary", fmt::format("unknown model '{}': use {}", o.model, model_names()));
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    names.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

int run_summary(SummaryCliOptions o) {
  bool known = false;
  for (const SummaryModel& m : summary_models()) known = known || m.name == o.model;
  if (o.model.empty()) {
    throw Error("summary", fmt::format("give a model, e.g. `attn summary multi-head`; the models: {}", model_names()));
  }
  if (!known) throw Error("summary", fmt::format("unknown model '{}': use {}", o.model, model_names()));
  if (o.head_size != 0 && o.model != "attention-head") {
    throw Error("--head-size", "only attention-head has a head size: use `attn summary attention-head`");
  }
  if (o.model != "encoder" && o.model != "embeddings") {
    if (!o.config.empty() || o.layers != 0 || o.no_embeddings) {
      throw Error("summary", "--config, --layers and --no-embeddings are the encoder's: use `attn summary encoder`");
    }
    if (o.d_model == 0) o.d_model = 6;
    if (o.heads == 0) o.heads = 2;
  }
  const Described d = describe(o);
  SummaryOptions options;
  options.col_names = split_names(o.col_names);
  options.col_width = o.col_width;
  options.depth = o.depth;
  options.verbose = o.verbose;
  options.format = o.torchinfo_format == "0.1" ? TorchinfoFormat::v0_1 : TorchinfoFormat::current;
  const std::vector<SummaryInput> inputs =
      d.inputs.empty() ? std::vector<SummaryInput>{{{o.batch, o.seq, o.d_model}, 4}} : d.inputs;
  const std::string table = format_summary(d.layers, inputs, options);
  std::string out;
  if (o.format == Format::json) {
    nlohmann::ordered_json doc;
    doc["model"] = o.model;
    doc["class_name"] = d.module.class_name;
    doc["input_size"] = inputs.front().shape;
    doc["layers"] = nlohmann::ordered_json::array();
    for (const LayerInfo& l : d.layers) {
      Count own;
      for (const ParameterInfo& p : l.parameters)
        own += Count::product(p.shape);
      doc["layers"].push_back({{"class_name", l.class_name},
                               {"var_name", l.var_name},
                               {"depth", l.depth},
                               {"input_shape", l.executed ? nlohmann::ordered_json(l.input_shape) : nullptr},
                               {"output_shape", l.executed ? nlohmann::ordered_json(l.output_shape) : nullptr},
                               {"own_parameters", own.value()}});
    }
    doc["total_params"] = count_parameters(d.module);
    doc["state_dict"] = nlohmann::ordered_json::array();
    for (const StateDictEntry& e : state_dict_entries(d.module)) doc["state_dict"].push_back({{"key", e.key}, {"shape", e.shape}});
    doc["table"] = table;
    out = doc.dump(2) + "\n";
  } else {
    out = table;
  }
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}
}  // namespace

void setup_summary(CLI::App& app) {
  auto o = std::make_shared<SummaryCliOptions>();
  CLI::App* sub = app.add_subcommand("summary", "torchinfo's summary table for a model: " + model_names());
  // The model's name is checked in run_summary, whose message lists the models.
  sub->add_option("model", o->model, "one of: " + model_names())->option_text("MODEL");
  sub->add_option("--batch", o->batch, "B of the input (default 1)")->check(size_validator())->option_text("B");
  sub->add_option("--seq", o->seq, "T of the input (default 5)")->check(size_validator())->option_text("T");
  sub->add_option("--d-model", o->d_model, "D, the model width (default 6)")->check(size_validator())->option_text("D");
  sub->add_option("--vocab-size", o->vocab_size, "V for embedding (default 30522, BERT's)")->check(size_validator())->option_text("V");
  sub->add_option("--max-positions", o->max_positions, "P for positional-encoding (default 512, BERT's)")
      ->check(size_validator())
      ->option_text("P");
  sub->add_option("--config", o->config, "encoder: a config.json, or bert-base / tiny (the shipped ones)")
      ->option_text("FILE");
  sub->add_option("--layers", o->layers, "encoder: N layers (overrides the config)")->check(size_validator())->option_text("N");
  sub->add_flag("--no-embeddings", o->no_embeddings, "encoder: the layers only, on hidden states (B, T, D)");
  sub->add_option("--norm", o->norm, "encoder: pre (default) or post")
      ->check(CLI::IsMember({"pre", "post"}))
      ->option_text("pre|post");
  sub->add_option("--heads", o->heads, "H for multi-head (default 2)")->check(size_validator())->option_text("H");
  sub->add_option("--head-size", o->head_size, "hs for attention-head (default D)")
      ->check(size_validator())
      ->option_text("HS");
  sub->add_option("--d-ff", o->d_ff, "F, the feed-forward width (default 4 x D; the encoder: its config's)")
      ->check(size_validator())
      ->option_text("F");
  sub->add_option("--variant", o->variant, "multi-head's variant: narrow, wide, book (default) or fused")
      ->check(CLI::IsMember({"narrow", "wide", "book", "fused"}))
      ->option_text("narrow|wide|book|fused");
  sub->add_option("--col-names", o->col_names,
                  "columns, comma-separated: input_size, output_size, num_params, params_percent, kernel_size, "
                  "mult_adds, trainable (default output_size,num_params)")
      ->option_text("NAMES");
  sub->add_option("--col-width", o->col_width, "column width (default 25)")->check(CLI::Range(1, 200))->option_text("N");
  sub->add_option("--depth", o->depth, "deepest level shown (default 3)")->check(CLI::Range(0, 100))->option_text("N");
  sub->add_option("--verbose", o->verbose, "0, 1 (default) or 2: also a row per parameter")
      ->check(CLI::Range(0, 2))
      ->option_text("0|1|2");
  sub->add_option("--torchinfo-format", o->torchinfo_format,
                  "current (torchinfo 1.8, default) or 0.1 (torchinfo 0.1.0, seed 004's tables)")
      ->check(CLI::IsMember({"current", "0.1"}))
      ->option_text("current|0.1");
  sub->add_option("--format", o->format, "text (default) or json")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Format>{{"text", Format::text}, {"json", Format::json}}))
      ->option_text("text|json");
  add_memory_option(*sub);
  sub->callback([o] { exit_code() = run_summary(*o); });
}

}  // namespace attn::cli

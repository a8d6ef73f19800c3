#include "models.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {
// The options of a model, by the names ModelInfo::takes uses; --batch and --seq are every model's.
const std::vector<std::pair<std::string_view, std::string_view>> kModelOptions = {
    {"d_model", "--d-model"}, {"heads", "--heads"},           {"head_size", "--head-size"},
    {"d_ff", "--d-ff"},       {"vocab_size", "--vocab-size"}, {"max_positions", "--max-positions"},
    {"layers", "--layers"},   {"variant", "--variant"},       {"kind", "--kind"},
    {"norm", "--norm"},       {"config", "--config"},         {"no_embeddings", "--no-embeddings"}};

std::vector<const lessons::ModelInfo*> models() {
  std::vector<const lessons::ModelInfo*> all;
  for (const lessons::LessonInfo& lesson : lessons::catalog())
    for (const lessons::ModelInfo& model : lesson.models)
      all.push_back(&model);
  return all;
}

bool given(const CLI::App& app, std::string_view option) {
  const CLI::Option* o = app.get_option_no_throw(std::string(option));
  return o != nullptr && o->count() > 0;
}
}  // namespace

void add_model_options(CLI::App& app, ModelCliOptions& o, bool with_d_model) {
  lessons::ModelRequest& r = o.request;
  if (with_d_model) {
    app.add_option("--d-model", r.d_model, "D, the model width (default: the lesson's)")
        ->check(size_validator())
        ->option_text("D");
  }
  app.add_option("--heads", r.heads, "H, multi-head's and the encoder's heads")
      ->check(size_validator())
      ->option_text("H");
  app.add_option("--head-size", r.head_size, "hs of attention-head (default D)")
      ->check(size_validator())
      ->option_text("HS");
  app.add_option("--d-ff", r.d_ff,
                 "F, the feed-forward width (default 4 x D; the encoder: its config's)")
      ->check(size_validator())
      ->option_text("F");
  app.add_option("--vocab-size", r.vocab_size, "V of embedding and the encoder")
      ->check(size_validator())
      ->option_text("V");
  app.add_option("--max-positions", r.max_positions,
                 "P of positional-encoding (default 512) and the encoder")
      ->check(size_validator())
      ->option_text("P");
  app.add_option("--layers", r.layers, "encoder: N layers (overrides the config)")
      ->check(size_validator())
      ->option_text("N");
  app.add_option("--variant", r.variant,
                 "multi-head: narrow|wide|book|fused; layer-norm: torch|seed001; feed-forward: "
                 "book|relu|gelu-last")
      ->check(not_empty_validator("--variant", "book"))
      ->option_text("NAME");
  app.add_option("--kind", r.kind, "positional-encoding: sinusoidal (default) or learned")
      ->check(choice_validator("a kind of encoding", {"sinusoidal", "learned"}))
      ->option_text("sinusoidal|learned");
  app.add_option("--norm", r.norm, "encoder: pre (default) or post")
      ->check(choice_validator("a placement", {"pre", "post"}))
      ->option_text("pre|post");
  app.add_option("--config", o.config,
                 "encoder: a config.json, or bert-base / tiny (the shipped ones)")
      ->check(not_empty_validator("--config", "bert-base"))
      ->option_text("FILE");
  app.add_flag("--no-embeddings", o.no_embeddings,
               "encoder: the layers only, on hidden states (B, T, D)");
}

std::vector<std::string> model_words() {
  std::vector<std::string> names;
  for (const lessons::ModelInfo* m : models())
    names.emplace_back(m->name);
  return names;
}

std::string model_names() {
  return or_list(model_words());
}

const lessons::ModelInfo& find_model(const std::string& name, std::string_view command) {
  const std::vector<const lessons::ModelInfo*> all = models();
  const auto it = std::find_if(all.begin(), all.end(),
                               [&](const lessons::ModelInfo* m) { return m->name == name; });
  if (it == all.end()) {
    throw Error(ErrorKind::bad_value, command,
                fmt::format("unknown model '{}': use {}", printable(name), model_names()))
        .about("model");
  }
  return **it;
}

void refuse_other_options(const CLI::App& app, const lessons::ModelInfo& model,
                          std::string_view command, std::string_view usage) {
  for (const auto& [name, option] : kModelOptions) {
    if (!given(app, option)) continue;
    if (std::find(model.takes.begin(), model.takes.end(), name) != model.takes.end()) continue;
    std::vector<std::string> takes = {"--batch", "--seq"};
    for (const auto& [other, spelt] : kModelOptions)
      if (std::find(model.takes.begin(), model.takes.end(), other) != model.takes.end())
        takes.emplace_back(spelt);
    throw Error(ErrorKind::bad_value, command,
                fmt::format("`attn {} {}` does not take it: it takes {}", usage, model.name,
                            or_list(takes, "and")))
        .about(std::string(name));
  }
}

bool any_model_option(const CLI::App& app) {
  return std::any_of(kModelOptions.begin(), kModelOptions.end(), [&](const auto& entry) {
    return entry.first != "d_model" && given(app, entry.second);
  });
}

lessons::ModelRequest resolved_request(const ModelCliOptions& o) {
  lessons::ModelRequest r = o.request;
  if (!o.config.empty()) r.config = resolve_config(o.config);
  r.embeddings = !o.no_embeddings;
  return r;
}

}  // namespace attn::cli

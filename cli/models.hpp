// The models of the lesson catalog on the command line, shared by `attn summary` and
// `attn backward --model`: their names, the options that size them, and the refusal of an option
// a model does not read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "catalog.hpp"

namespace attn::cli {

struct ModelCliOptions {
  lessons::ModelRequest request;
  std::string config;
  bool no_embeddings = false;
};

// --heads --head-size --d-ff --vocab-size --max-positions --layers --variant --kind --norm
// --config --no-embeddings, and --d-model when `with_d_model` (a lesson's own options may add it).
void add_model_options(CLI::App& app, ModelCliOptions& options, bool with_d_model = true);

// "embedding, self-attention, ... or encoder"
std::string model_names();
// {"embedding", "self-attention", ..., "encoder"}
std::vector<std::string> model_words();
// The model of that name; throws attn::Error about "model" listing the names.
const lessons::ModelInfo& find_model(const std::string& name, std::string_view command);
// Throws attn::Error about the first model option given that the model does not read; `usage` is
// how the command names a model ("summary", "backward --model").
void refuse_other_options(const CLI::App& app, const lessons::ModelInfo& model,
                          std::string_view command, std::string_view usage);
// Whether any model option (not --batch, --seq, --d-model) was given.
bool any_model_option(const CLI::App& app);
// The request with --config read and --no-embeddings applied.
lessons::ModelRequest resolved_request(const ModelCliOptions& options);

}  // namespace attn::cli

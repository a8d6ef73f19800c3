// attn summary <model>: the table torchinfo prints for the same PyTorch module and call. The
// models are those of the lesson catalog (lessons/catalog.hpp), with the lessons' defaults.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/budget.hpp"
#include "base/count.hpp"
#include "base/error.hpp"
#include "catalog.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "models.hpp"
#include "module_size.hpp"
#include "options.hpp"
#include "output.hpp"
#include "pretrained.hpp"
#include "summary.hpp"
#include "trace.hpp"

namespace attn::cli {

namespace {

struct SummaryCliOptions {
  std::string model, pretrained;
  ModelCliOptions models;
  std::string col_names = "output_size,num_params";
  int col_width = 25, depth = 3, verbose = 1;
  std::string torchinfo_format = "current";
  render::Format format = render::Format::text;
};

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

int print_summary(const SummaryCliOptions& o, const lessons::ModelDescription& d);

std::string json_document(const SummaryCliOptions& o, const lessons::ModelDescription& d,
                          const std::string& table) {
  nlohmann::ordered_json doc;
  doc["model"] = o.pretrained.empty() ? o.model : o.pretrained;
  doc["class_name"] = d.module.class_name;
  doc["input_size"] = d.inputs.front().shape;
  doc["layers"] = nlohmann::ordered_json::array();
  for (const LayerInfo& l : d.layers) {
    Count own;
    for (const ParameterInfo& p : l.parameters)
      own += Count::product(p.shape);
    doc["layers"].push_back(
        {{"class_name", l.class_name},
         {"var_name", l.var_name},
         {"depth", l.depth},
         {"input_shape", l.executed ? nlohmann::ordered_json(l.input_shape) : nullptr},
         {"output_shape", l.executed ? nlohmann::ordered_json(l.output_shape) : nullptr},
         {"own_parameters", own.value()}});
  }
  doc["total_params"] = count_parameters(d.module);
  doc["state_dict"] = nlohmann::ordered_json::array();
  for (const StateDictEntry& e : state_dict_entries(d.module))
    doc["state_dict"].push_back({{"key", e.key}, {"shape", e.shape}});
  doc["table"] = table;
  return doc.dump(2) + "\n";
}

// --pretrained: transformers' BertModel (what AutoModel.from_pretrained builds) of a BERT folder's
// config.json, or the GPT-2 class its config.json names (GPT2LMHeadModel for the hub's gpt2), on
// input_ids (B, T); no weights are read.
lessons::ModelDescription pretrained_description(const SummaryCliOptions& o, const CLI::App& sub) {
  if (!o.model.empty())
    throw Error(ErrorKind::bad_value, "summary",
                fmt::format("--pretrained names the model: drop '{}'", printable(o.model)))
        .about("model");
  if (any_model_option(sub) || sub.count("--d-model") > 0)
    throw Error(ErrorKind::bad_value, "summary",
                "--pretrained's config.json gives the sizes: keep only --batch and --seq")
        .about("pretrained");
  PretrainedFolder folder = open_folder(o.pretrained);
  const lessons::ModelRequest& r = o.models.request;
  const auto check_seq = [&](std::size_t positions) {
    if (r.seq > positions)
      throw Error(
          ErrorKind::bad_size, "summary",
          fmt::format("{} tokens, more than the model's {} positions: give --seq {} or less", r.seq,
                      positions, positions))
          .about("seq");
  };
  if (is_gpt2(folder)) {
    const PretrainedGpt2 gpt2 = open_gpt2(std::move(folder), false);
    check_budget("summary", planned_summary(gpt2_size(gpt2.config, gpt2.heads), "L"));
    check_seq(gpt2.config.sizes.max_position_embeddings);
    const Shape ids = {r.batch, r.seq};
    return {describe_gpt2(gpt2.config, gpt2.heads),
            trace_gpt2(gpt2.config, gpt2.heads, ids),
            {SummaryInput{ids, 8}}};
  }
  const PretrainedBert bert = open_bert(std::move(folder), false);
  check_budget("summary", planned_summary(bert_size(bert.config, BertHeads::none, true), "L"));
  check_seq(bert.config.sizes.max_position_embeddings);
  const Shape ids = {r.batch, r.seq};
  return {describe_bert(bert.config, BertHeads::none, true),
          trace_bert(bert.config, BertHeads::none, ids, true),
          {SummaryInput{ids, 8}}};
}

int run_summary(SummaryCliOptions& o, const CLI::App& sub) {
  if (!o.pretrained.empty()) return print_summary(o, pretrained_description(o, sub));
  if (o.model.empty()) {
    throw Error(
        ErrorKind::bad_value, "summary",
        fmt::format("give a model, e.g. `attn summary multi-head`; the models: {}", model_names()))
        .about("model");
  }
  const lessons::ModelInfo& model = find_model(o.model, "summary");
  refuse_other_options(sub, model, "summary", "summary");
  // A large model's describe checks its module tree before it builds it; every model's table
  // is checked here, before its rows are made.
  const lessons::ModelDescription d = model.describe(resolved_request(o.models));
  check_budget("summary", planned_summary(module_size(d.module), ""));
  return print_summary(o, d);
}

int print_summary(const SummaryCliOptions& o, const lessons::ModelDescription& d) {
  SummaryOptions options;
  options.col_names = split_names(o.col_names);
  options.col_width = o.col_width;
  options.depth = o.depth;
  options.verbose = o.verbose;
  options.format = o.torchinfo_format == "0.1" ? TorchinfoFormat::v0_1 : TorchinfoFormat::current;
  const std::string table = format_summary(d.module, d.layers, d.inputs, options);
  const std::string out = o.format == render::Format::json ? json_document(o, d, table) : table;
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<SummaryCliOptions>();
  lessons::ModelRequest& r = o->models.request;
  CLI::App* sub = app.add_subcommand(
      "summary", "torchinfo's summary table for a lesson's model: " + model_names());
  // The model's name is checked in run_summary, whose message lists the models.
  offer_words(sub->add_option("model", o->model, "one of: " + model_names()), model_words())
      ->option_text("MODEL");
  add_pretrained_option(*sub, o->pretrained)
      ->check(not_empty_validator("--pretrained", "bert-base-uncased"));
  sub->add_option("--batch", r.batch, "B of the input (default 1)")
      ->check(size_validator())
      ->option_text("B");
  sub->add_option("--seq", r.seq, "T of the input (default 5)")
      ->check(size_validator())
      ->option_text("T");
  add_model_options(*sub, o->models);
  sub->add_option(
         "--col-names", o->col_names,
         "columns, comma-separated: input_size, output_size, num_params, params_percent, kernel_size, "
         "mult_adds, trainable (default output_size,num_params)")
      ->option_text("NAMES");
  sub->add_option("--col-width", o->col_width, "column width (default 25)")
      ->check(whole_number_validator(1, 200))
      ->option_text("N");
  sub->add_option("--depth", o->depth, "deepest level shown (default 3)")
      ->check(whole_number_validator(0, 100))
      ->option_text("N");
  sub->add_option("--verbose", o->verbose, "0, 1 (default) or 2: also a row per parameter")
      ->check(whole_number_validator(0, 2))
      ->option_text("0|1|2");
  sub->add_option(
         "--torchinfo-format", o->torchinfo_format,
         "current (torchinfo's main branch, default) or 0.1 (torchinfo 0.1.0, seed 004's tables)")
      ->check(choice_validator("a torchinfo format", {"current", "0.1"}))
      ->option_text("current|0.1");
  sub->add_option("--format", o->format, "text (default) or json")
      ->transform(enum_validator<render::Format>(
          "a format", {{"text", render::Format::text}, {"json", render::Format::json}}))
      ->option_text("text|json");
  add_memory_option(*sub);
  door_callback(*sub, [o, sub, &context] { context.exit_code = run_summary(*o, *sub); });
}

const Registration kRegistration{"summary", setup};

}  // namespace

}  // namespace attn::cli

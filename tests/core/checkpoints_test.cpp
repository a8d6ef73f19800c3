// The checkpoints shipped in data/checkpoints/ (made by data/checkpoints/make.sh with attn train):
// each one reaches 99% on its task's held-out set, as its manifest says, and its attention shows
// the pattern the lessons point to.
#include <algorithm>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "gpt2.hpp"
#include "io/pretrained.hpp"
#include "train/gpt_run.hpp"
#include "train/induction.hpp"
#include "train/seq2seq.hpp"
#include "train/trainer.hpp"

namespace {

std::string checkpoint_path(const std::string& name) {
  return std::string(ATTN_SOURCE_DIR) + "/data/checkpoints/" + name;
}

struct Loaded {
  attn::TrainConfig config;
  attn::TokenClassifier model;
};

Loaded load(const std::string& name) {
  attn::Metadata metadata;
  const attn::StateDict weights =
      attn::read_weights(checkpoint_path(name + ".safetensors"), &metadata);
  Loaded l{attn::train_config_from_metadata(metadata, name), {}};
  REQUIRE(std::holds_alternative<attn::Task>(l.config.task));
  l.model = std::get<attn::TokenClassifier>(attn::model_from_checkpoint(l.config, weights, name));
  return l;
}

}  // namespace

TEST_CASE("every shipped checkpoint gets at least 99% of its held-out tokens right",
          "[checkpoints]") {
  const auto manifest =
      nlohmann::json::parse(attn::testing::read_text(checkpoint_path("manifest.json")));
  REQUIRE(manifest["checkpoints"].size() == 8);
  for (const auto& entry : manifest["checkpoints"]) {
    if (entry.contains("kind")) continue;  // the encoder-decoder, below
    const std::string name = entry["name"];
    INFO(name);
    Loaded l = load(name);
    CHECK(std::string(attn::task_name(l.config.task)) == name);
    l.config.seed = entry["seed"];  // the held-out set's stream
    const attn::Evaluation e = attn::evaluate(l.model, attn::held_out_set(l.config));
    CHECK(e.token_accuracy >= 0.99);
    CHECK(e.token_accuracy == Approx(entry["held_out_token_accuracy"].get<double>()).margin(1e-3));
  }
}

TEST_CASE("the reverse checkpoint has a head on the anti-diagonal: query i looks at key T-1-i",
          "[checkpoints]") {
  const Loaded l = load("reverse");
  attn::Rng rng(7);
  const attn::TaskBatch b =
      attn::make_task_batch(std::get<attn::Task>(l.config.task), l.config.sizes, 16, rng);
  const attn::EncoderTape tape = attn::forward_tape(l.model.encoder, b.ids);
  const attn::Tensor4& w = tape.layers.front().attention.weights;  // (B,H,T,T)
  const std::size_t heads = w.shape(1), t = w.shape(2);
  bool found = false;
  for (std::size_t h = 0; h < heads; ++h) {
    std::size_t on_anti_diagonal = 0;
    for (std::size_t s = 0; s < w.shape(0); ++s)
      for (std::size_t i = 0; i < t; ++i) {
        std::size_t best = 0;
        for (std::size_t j = 1; j < t; ++j)
          if (w(s, h, i, j) > w(s, h, i, best)) best = j;
        on_anti_diagonal += best == t - 1 - i;
      }
    found = found || on_anti_diagonal == w.shape(0) * t;
  }
  CHECK(found);
}

TEST_CASE(
    "the shipped encoder-decoder decodes at least 98% of its held-out sources exactly, and "
    "its cross-attention reads the source backwards",
    "[checkpoints][transformer]") {
  const auto manifest =
      nlohmann::json::parse(attn::testing::read_text(checkpoint_path("manifest.json")));
  const nlohmann::json* entry = nullptr;
  for (const auto& e : manifest["checkpoints"])
    if (e["name"] == "transformer-reverse") entry = &e;
  REQUIRE(entry != nullptr);
  attn::Metadata metadata;
  const std::string path = checkpoint_path("transformer-reverse.safetensors");
  const attn::StateDict weights = attn::read_weights(path, &metadata);
  attn::TrainConfig config = attn::train_config_from_metadata(metadata, path);
  REQUIRE(attn::is_seq2seq(config.task));
  const attn::Seq2SeqTask task = std::get<attn::Seq2SeqTask>(config.task);
  const attn::Transformer model =
      std::get<attn::Transformer>(attn::model_from_checkpoint(config, weights, path));
  config.seed = (*entry)["seed"];
  const attn::Seq2SeqEvaluation e = attn::evaluate(model, task, attn::held_out_examples(config));
  CHECK(e.exact_match >= 0.98);
  CHECK(e.exact_match == Approx((*entry)["held_out_exact_match"].get<double>()).margin(2e-3));
  // Under 2 MB, and the anti-diagonal: writing token i of n, the heads' mean weight is largest
  // on source position n-1-i or beside it (the last layer shares the work with the first).
  CHECK(std::filesystem::file_size(path) < 2'000'000);
  const std::vector<std::int64_t> source = attn::parse_source(task, "abcdefgh");
  std::vector<std::int64_t> target = attn::seq2seq_answer(task, source);
  attn::Ids s({1, source.size()}), t({1, target.size()});
  std::copy(source.begin(), source.end(), s.begin());
  t(0, 0) = attn::kStartId;
  std::copy(target.begin(), target.end() - 1, t.begin() + 1);
  const attn::Array causal = attn::target_causal_mask({target.size()}, target.size());
  const attn::TransformerTape tape = attn::forward(model, s, t, nullptr, &causal);
  const attn::Tensor4& w = tape.decoder_layers.back().cross_attention.weights;  // (1,H,T,S)
  const std::size_t rows = w.shape(2), cols = w.shape(3);
  for (std::size_t i = 0; i < rows; ++i) {
    std::vector<double> mean(cols, 0.0);
    for (std::size_t h = 0; h < w.shape(1); ++h)
      for (std::size_t j = 0; j < cols; ++j)
        mean[j] += w(0, h, i, j);
    const auto best = static_cast<long>(std::max_element(mean.begin(), mean.end()) - mean.begin());
    INFO("row " << i << ": largest at " << best);
    CHECK(std::abs(best - static_cast<long>(cols - 1 - i)) <= 1);
  }
}

TEST_CASE("gpt-char measures the validation loss its manifest records, under 2 MB",
          "[checkpoints][gpt_train]") {
  const auto manifest =
      nlohmann::json::parse(attn::testing::read_text(checkpoint_path("manifest.json")));
  const auto entry = *std::find_if(manifest["checkpoints"].begin(), manifest["checkpoints"].end(),
                                   [](const auto& e) { return e["name"] == "gpt-char"; });
  std::uintmax_t bytes = 0;
  for (const auto& file : std::filesystem::directory_iterator(checkpoint_path("gpt-char")))
    bytes += file.file_size();
  CHECK(bytes < 2'000'000);
  const attn::PretrainedFolder folder = attn::open_pretrained(checkpoint_path("gpt-char"));
  const attn::Gpt2Config config = attn::gpt2_config(folder);
  attn::GptModel model = attn::gpt_from_weights(
      config,
      attn::check_gpt2_weights(config, attn::read_pretrained_weights(folder, attn::gpt2_reads),
                               "gpt-char"),
      "gpt-char");
  // The run of make.sh's command: its held-out windows, from the shipped corpus and seed 0.
  const std::string text =
      attn::testing::read_text(std::string(ATTN_SOURCE_DIR) + "/data/corpus/moby-dick.txt");
  const attn::TextTokenizer tokenizer = attn::character_tokenizer(text, "moby-dick.txt");
  REQUIRE(tokenizer.bpe.size() == config.sizes.vocab_size);
  attn::GptTrainConfig c;
  c.layers = 4;
  c.heads = 4;
  c.d_model = 96;
  c.d_ff = 384;
  c.block = 128;
  c.steps = 4000;
  attn::GptTraining run(c, attn::split_corpus(attn::encode_text(tokenizer, text), c.block),
                        std::move(model), attn::GptOptimizer{}, 4000, {});
  const attn::GptEvaluation e = run.evaluate();
  CHECK(e.validation_loss < 2.2);
  CHECK(e.validation_loss == Approx(entry["validation_loss"].get<double>()).margin(1e-3));
  CHECK(entry["validation_loss_at_start"].get<double>() > e.validation_loss + 2.0);
}

TEST_CASE("induction measures the repeats' loss its manifest records, and its record says how",
          "[checkpoints][induction]") {
  const auto manifest =
      nlohmann::json::parse(attn::testing::read_text(checkpoint_path("manifest.json")));
  const auto entry = *std::find_if(manifest["checkpoints"].begin(), manifest["checkpoints"].end(),
                                   [](const auto& e) { return e["name"] == "induction"; });
  const attn::PretrainedFolder folder = attn::open_pretrained(checkpoint_path("induction"));
  const attn::InductionRecord record = attn::read_induction_record(folder.metadata, "induction");
  CHECK(record.config.seed == 0);
  CHECK(record.config.steps == 3000);
  const attn::Gpt2Config config = attn::gpt2_config(folder);
  attn::GptModel model = attn::gpt_from_weights(
      config,
      attn::check_gpt2_weights(config, attn::read_pretrained_weights(folder, attn::gpt2_reads),
                               "induction"),
      "induction");
  model.attention_only = true;
  const attn::InductionMeasure m =
      attn::measure_induction(model, attn::held_out_sequences(record.config));
  CHECK(m.repeat_loss == Approx(entry["repeat_loss"].get<double>()).margin(1e-3));
  CHECK(entry["repeat_loss_at_start"].get<double>() > m.repeat_loss + 2.5);
  CHECK(m.previous[0][0].on_target > 0.9);
  CHECK(m.induction[1][1].on_target > 0.9);
}

// attn train from the command line: a short run learns its task on held-out sequences, the log
// is in the JSON, the checkpoint holds the book's keys and the task in its metadata, the same
// seed gives the same checkpoint bits, and bad options are refused.
#include <cmath>
#include <filesystem>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "io/weights.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

using attn::testing::run_attn;
using attn::testing::ScratchDir;

TEST_CASE("attn train learns reverse, logs every step and saves a checkpoint", "[cli][train]") {
  ScratchDir dir("train");
  const std::string checkpoint = (dir.path / "reverse.safetensors").string();
  const auto run = run_attn({"train", "--task", "reverse", "--steps", "300", "--format", "json",
                             "--save-checkpoint", checkpoint});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  CHECK(doc["lesson"] == "train");
  CHECK(doc["settings"]["task"] == "reverse");
  // The log: every step's loss, accuracy (%) and learning rate.
  REQUIRE(doc["curves"].size() == 3);
  const auto& loss = doc["curves"][0]["values"];
  REQUIRE(loss.size() == 300);
  CHECK(loss[0].get<double>() > 1.5);  // about ln 8 at the start
  CHECK(loss[299].get<double>() < 0.05);
  CHECK(doc["curves"][1]["values"][299].get<double>() > 99.0);
  CHECK(doc["curves"][2]["values"][299].get<double>() == Approx(0.0003).epsilon(1e-4));
  const auto& steps = doc["steps"];
  REQUIRE(steps.size() == 3);
  CHECK(steps[0]["name"] == "input");
  CHECK(steps[0]["dtype"] == "int64");
  CHECK(steps[1]["name"] == "held_out_accuracy");
  CHECK(steps[1]["values"][0].get<double>() >= 0.99);  // of the held-out tokens
  CHECK(steps[2]["name"] == "output");
  CHECK(steps[2]["shape"] == nlohmann::json::array({1, 8, 8}));
  for (const auto& check : doc["checks"])
    CHECK(check["passed"] == true);
  CHECK(doc["parameters"] == 17928);

  attn::Metadata metadata;
  const attn::StateDict weights = attn::read_weights(checkpoint, &metadata);
  CHECK(weights.count("encoder.embeddings.token_embeddings.weight") == 1);
  CHECK(weights.count("encoder.layers.1.attention.heads.1.q.weight") == 1);
  CHECK(weights.at("head.weight").shape == attn::Shape{8, 32});
  const auto model = nlohmann::json::parse(metadata.at("attn_model"));
  CHECK(model["task"] == "reverse");
  CHECK(model["layers"] == 2);
  CHECK(nlohmann::json::parse(metadata.at("attn_training"))["steps"] == 300);

  // The text view: the curves and the held-out accuracy, and nothing on stderr off a terminal.
  const auto text = run_attn({"train", "--task", "reverse", "--steps", "50"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.err.empty());
  CHECK(text.out.find("Loss on each step's batch") != std::string::npos);
  CHECK(text.out.find("The held-out set: 10,000 sequences") != std::string::npos);
  // --quiet: the trained head's output.
  const auto quiet = run_attn({"train", "--task", "reverse", "--steps", "50", "--quiet"});
  REQUIRE(quiet.exit_code == 0);
  CHECK(quiet.out.rfind("[3/3] output, shape (1, 8, 8)", 0) == 0);
}

TEST_CASE("attn train: the same seed gives the same checkpoint bits, another seed others",
          "[cli][train][determinism]") {
  ScratchDir dir("train-determinism");
  const auto train = [&](const std::string& name, const std::string& seed) {
    const std::string path = (dir.path / name).string();
    const auto run = run_attn({"train", "--task", "histogram", "--steps", "40", "--seed", seed,
                               "--quiet", "--save-checkpoint", path});
    REQUIRE(run.exit_code == 0);
    return attn::testing::read_text(path);
  };
  const std::string a = train("a.safetensors", "3");
  CHECK(a == train("b.safetensors", "3"));
  CHECK(a != train("c.safetensors", "4"));
}

TEST_CASE("attn train learns the masked task on text and scores only the masked positions",
          "[cli][train][masked]") {
  ScratchDir dir("train-masked");
  const std::string checkpoint = (dir.path / "masked.safetensors").string();
  const auto run = run_attn({"train", "--task", "masked", "--tokens", "16", "--steps", "300",
                             "--format", "json", "--save-checkpoint", checkpoint});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  CHECK(doc["settings"]["V"] == 28);
  CHECK(doc["steps"].back()["shape"] == nlohmann::json::array({1, 16, 27}));  // 27 classes
  const double first = doc["curves"][0]["values"][0], last = doc["curves"][0]["values"][299];
  CHECK(first > 3.0);  // about ln 27 at the start
  CHECK(last < first - 0.6);
  // Chance is 1 in 27; 300 steps of the default model fill in about a fifth of held-out gaps.
  CHECK(doc["steps"][1]["values"][0].get<double>() > 0.12);

  // The trained model on a text with gaps: an output at each '?', nothing elsewhere.
  const auto shown = run_attn(
      {"encoder", "--checkpoint", checkpoint, "--text", "th? cat s?t on t", "--color", "never"});
  INFO(shown.err);
  REQUIRE(shown.exit_code == 0);
  CHECK(shown.out.find("Linear(32, 27)") != std::string::npos);
  CHECK(shown.out.find("positions right") == std::string::npos);  // the text does not say
}

TEST_CASE("attn train --dropout: seeded masks, the same bits run after run, and it still learns",
          "[cli][train][dropout]") {
  ScratchDir dir("train-dropout");
  const auto train = [&](const std::string& name, const std::string& dropout) {
    const std::string path = (dir.path / name).string();
    const auto run = run_attn({"train", "--task", "reverse", "--steps", "600", "--dropout", dropout,
                               "--format", "json", "--save-checkpoint", path});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    const auto doc = nlohmann::json::parse(run.out);
    CHECK(doc["steps"][1]["values"][0].get<double>() >= 0.99);  // held-out tokens right
    return attn::testing::read_text(path);
  };
  const std::string a = train("a.safetensors", "0.1");
  CHECK(a == train("b.safetensors", "0.1"));
  CHECK(a != train("c.safetensors", "0.2"));
  attn::Metadata metadata;
  attn::read_weights((dir.path / "a.safetensors").string(), &metadata);
  CHECK(nlohmann::json::parse(metadata.at("attn_training"))["dropout"].get<double>() ==
        Approx(0.1));
}

TEST_CASE("attn train shows AdamW's state for one weight over the first steps, as the run had it",
          "[cli][train][adamw]") {
  const auto run = run_attn({"train", "--task", "reverse", "--steps", "20", "--format", "json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  const nlohmann::json* table = nullptr;
  for (const auto& t : doc["tables"])
    if (t["title"].get<std::string>().rfind("AdamW on one weight", 0) == 0) table = &t;
  REQUIRE(table != nullptr);
  REQUIRE((*table)["rows"].size() == 3);
  // step, lr, g, m, v, m̂, v̂, m̂/√v̂, Δp: printed to 4 significant digits (lr to 3).
  const auto cell = [&](std::size_t row, std::size_t column) {
    return std::stod((*table)["rows"][row][column].get<std::string>());
  };
  const double lr = cell(0, 1), g1 = cell(0, 2), g2 = cell(1, 2);
  CHECK(std::fabs(g1) > 0.0);
  // torch.optim.AdamW's moments: m = β1 m + (1 - β1) g, v = β2 v + (1 - β2) g², from zero.
  CHECK(cell(0, 3) == Approx(0.1 * g1).epsilon(2e-3));
  CHECK(cell(0, 4) == Approx(0.001 * g1 * g1).epsilon(2e-3));
  CHECK(cell(1, 3) == Approx(0.9 * cell(0, 3) + 0.1 * g2).epsilon(5e-3));
  CHECK(cell(1, 4) == Approx(0.999 * cell(0, 4) + 0.001 * g2 * g2).epsilon(5e-3));
  // After bias correction step 1 is lr·sign(g): m̂/√v̂ = ±1, Δp = -lr·sign(g) beside a decay of
  // lr·wd·p, far below the printed digits.
  CHECK(std::fabs(cell(0, 7)) == Approx(1.0).epsilon(1e-4));
  CHECK(cell(0, 8) == Approx(g1 > 0.0 ? -lr : lr).epsilon(2e-3));
  bool checked = false;
  for (const auto& check : doc["checks"])
    if (check["name"].get<std::string>().rfind("step 1 moves the weight by -lr·sign(g)", 0) == 0) {
      CHECK(check["passed"] == true);
      checked = true;
    }
  CHECK(checked);
}

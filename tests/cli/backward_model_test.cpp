// attn backward --model: y.backward(G) on every model of the catalog, from the weights, input and
// G of a torch autograd fixture (data/generator/gradients.py), every saved gradient held to
// PyTorch's .grad; and the bad inputs.
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {
// Sums of up to B·T products in two orders: float32 round-off, as in tests/core/gradients_test.
constexpr attn::testing::Tolerance kGradient{2e-5, 1e-4};

struct Case {
  std::string fixture;             // data/fixtures/gradients/<fixture>.npz
  std::vector<std::string> model;  // the words after `attn backward`
  std::string input = "input.x";   // the fixture's input: input.x, or ids
};

const std::vector<Case> kCases = {
    {"layer_norm", {"--model", "layer-norm", "--d-model", "12"}},
    {"layer_norm_seed001", {"--model", "layer-norm", "--variant", "seed001", "--d-model", "12"}},
    {"unmasked_self_attention", {"--model", "self-attention", "--d-model", "12"}},
    {"unmasked_head_hs4", {"--model", "attention-head", "--d-model", "12", "--head-size", "4"}},
    {"unmasked_multi_head_narrow",
     {"--model", "multi-head", "--variant", "narrow", "--d-model", "12", "--heads", "3"}},
    {"unmasked_multi_head_wide",
     {"--model", "multi-head", "--variant", "wide", "--d-model", "12", "--heads", "3"}},
    {"unmasked_multi_head_book",
     {"--model", "multi-head", "--variant", "book", "--d-model", "12", "--heads", "3"}},
    {"unmasked_multi_head_fused",
     {"--model", "multi-head", "--variant", "fused", "--d-model", "12", "--heads", "3"}},
    {"feed_forward_book", {"--model", "feed-forward", "--d-model", "12", "--d-ff", "20"}},
    {"feed_forward_relu",
     {"--model", "feed-forward", "--variant", "relu", "--d-model", "12", "--d-ff", "20"}},
    {"feed_forward_gelu_last",
     {"--model", "feed-forward", "--variant", "gelu-last", "--d-model", "12", "--d-ff", "20"}},
    {"embedding_repeated_ids",
     {"--model", "embedding", "--d-model", "12", "--vocab-size", "17"},
     "ids"},
    {"position_embedding",
     {"--model", "positional-encoding", "--kind", "learned", "--d-model", "12", "--max-positions",
      "9", "--seq", "5"},
     ""},
    {"embeddings",
     {"--model", "embeddings", "--d-model", "12", "--vocab-size", "17", "--max-positions", "9"},
     "ids"},
    {"encoder_pre",
     {"--model", "encoder", "--d-model", "12", "--heads", "3", "--d-ff", "20", "--layers", "2",
      "--vocab-size", "17", "--max-positions", "9"},
     "ids"},
    {"encoder_post",
     {"--model", "encoder", "--norm", "post", "--d-model", "12", "--heads", "3", "--d-ff", "20",
      "--layers", "2", "--vocab-size", "17", "--max-positions", "9"},
     "ids"},
    {"encoder_layer_pre",
     {"--model", "encoder", "--no-embeddings", "--d-model", "12", "--heads", "3", "--d-ff", "20",
      "--layers", "1", "--max-positions", "9"}},
    {"encoder_layer_post",
     {"--model", "encoder", "--no-embeddings", "--norm", "post", "--d-model", "12", "--heads", "3",
      "--d-ff", "20", "--layers", "1", "--max-positions", "9"}},
};
}  // namespace

TEST_CASE("attn backward --model: every gradient it saves equals torch autograd's",
          "[cli][backward][gradients]") {
  ScratchDir scratch("backward-model");
  for (const Case& c : kCases) {
    DYNAMIC_SECTION(c.fixture) {
      const attn::StateDict fixture =
          attn::read_weights(attn::testing::fixture_path("gradients/" + c.fixture + ".npz"));
      attn::StateDict weights;
      for (const auto& [key, value] : fixture)
        if (key.starts_with("param.")) weights[key.substr(6)] = value;
      const fs::path dir = scratch.path / c.fixture;
      fs::create_directories(dir);
      const std::string weights_file = (dir / "w.safetensors").string();
      attn::write_weights(weights_file, weights);
      const std::string g = (dir / "g.npy").string();
      attn::write_npy(g, fixture.at("grad_output"));
      std::vector<std::string> args = {"backward"};
      args.insert(args.end(), c.model.begin(), c.model.end());
      args.insert(args.end(), {"--weights", weights_file, "--grad-output", g, "--save",
                               (dir / "out").string()});
      if (!c.input.empty()) {
        const std::string x = (dir / "x.npy").string();
        attn::write_npy(x, fixture.at(c.input));
        args.insert(args.end(), {"--input", x});
      }
      const auto run = run_attn(args);
      INFO(run.err);
      REQUIRE(run.exit_code == 0);
      CHECK_ALLCLOSE(attn::read_npy((dir / "out" / "output.npy").string()), fixture.at("output"),
                     kGradient);
      std::size_t checked = 0;
      for (const auto& [key, value] : fixture) {
        if (!key.starts_with("grad.")) continue;
        const bool input = key == "grad.x";
        const fs::path file = dir / "out" / (input ? "grad_input.npy" : key + ".npy");
        INFO(key);
        REQUIRE(fs::exists(file));
        CHECK_ALLCLOSE(attn::read_npy(file.string()), value, kGradient);
        ++checked;
      }
      CHECK(checked >= 1);
      // Ids get no gradient, as in PyTorch.
      CHECK(fs::exists(dir / "out" / "grad_input.npy") == (c.input == "input.x"));
    }
  }
}

TEST_CASE("attn backward --model refuses what does not fit, in one line", "[cli][backward]") {
  ScratchDir scratch("backward-bad");
  const std::string g = (scratch.path / "g.npy").string();
  attn::write_npy(g, attn::make_float32({1, 5, 7}, std::vector<float>(35, 0.5f)));
  const std::string ids = (scratch.path / "ids.npy").string();
  attn::write_npy(ids, attn::make_int64({1, 3}, {1, 2, 99999}));
  const std::string x = (scratch.path / "x.npy").string();
  attn::write_npy(x, attn::make_float32({1, 2, 4}, std::vector<float>(8, 1.0f)));
  struct Bad {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Bad> cases = {
      {{"backward", "--model", "nope"}, "--model: unknown model 'nope'"},
      {{"backward", "--model", "multi-head", "--grad-output", g},
       "--grad-output: '" + g + "' is float32 (1, 5, 7), but the output"},
      {{"backward", "--model", "embedding", "--input", ids}, "holds the id 99999"},
      {{"backward", "--model", "layer-norm", "--input", x}, "the model is D = 6 wide"},
      {{"backward", "--model", "embedding", "--input", x}, "this model reads token ids"},
      {{"backward", "--model", "layer-norm", "--heads", "2"},
       "--heads: `attn backward --model layer-norm`"},
      {{"backward", "--grad-output", g}, "--grad-output is for `attn backward --model NAME`"},
      {{"backward", "--model", "multi-head", "--grad-output",
        (scratch.path / "missing.npy").string()},
       "--grad-output"},
  };
  for (const Bad& c : cases) {
    const auto run = run_attn(c.args);
    INFO(c.args[2] << ": " << run.err);
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK(run.err.find(c.says) != std::string::npos);
    CHECK(attn::testing::line_count(run.err) == 1);
  }
}

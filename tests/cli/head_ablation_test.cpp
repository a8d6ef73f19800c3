// Lesson 05's "why several heads" measured: `attn multi-head --checkpoint` with the head ablation
// table and its check lines, a planted checkpoint whose head was re-initialised (the checks must
// fail), and --ablate's refusals.
#include <string>

#include <catch2/catch.hpp>

#include "base/random.hpp"
#include "io/weights.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

using attn::testing::run_attn;

TEST_CASE("previous-minus-mirror's heads each lean to one relation, and each is needed",
          "[ablation][checkpoint]") {
  const auto run = run_attn({"multi-head", "--checkpoint", "previous-minus-mirror"});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("✓ each relation has a head that leans to it") != std::string::npos);
  CHECK(run.out.find("✓ either head alone ablated: accuracy below 0.5") != std::string::npos);
  CHECK(run.out.find("✗") == std::string::npos);
}

TEST_CASE("reverse's and previous-token's heads are redundant", "[ablation][checkpoint]") {
  for (const std::string checkpoint : {"reverse", "previous-token"}) {
    const auto run = run_attn({"multi-head", "--checkpoint", checkpoint});
    INFO(checkpoint << "\n" << run.err);
    CHECK(run.exit_code == 0);
    CHECK(run.out.find("✓ the heads are redundant: one ablated, the accuracy stays") !=
          std::string::npos);
    CHECK(run.out.find("✓ every head ablated: the accuracy drops") != std::string::npos);
  }
}

TEST_CASE("a checkpoint whose head does something else fails the checks", "[ablation][planted]") {
  // previous-minus-mirror with head 1's q, k and v drawn again: it attends elsewhere.
  attn::testing::ScratchDir dir("head-ablation");
  attn::Metadata metadata;
  attn::StateDict weights = attn::read_weights(
      std::string(ATTN_SOURCE_DIR) + "/data/checkpoints/previous-minus-mirror.safetensors",
      &metadata);
  attn::Rng rng(11);
  std::size_t redrawn = 0;
  for (auto& [key, array] : weights) {
    if (key.find("attention.heads.1.") == std::string::npos) continue;
    std::vector<float> values(array.size());
    for (float& value : values)
      value = static_cast<float>(rng.normal()) * 0.3f;
    array = attn::make_float32(array.shape, values);
    ++redrawn;
  }
  REQUIRE(redrawn == 6);
  const std::string planted = (dir.path / "planted.safetensors").string();
  attn::write_weights(planted, weights, metadata);
  const auto run = run_attn({"multi-head", "--checkpoint", planted});
  INFO(run.out << run.err);
  CHECK(run.exit_code == 1);
  CHECK(run.out.find("✗ FAILED each relation has a head that leans to it") != std::string::npos);
}

TEST_CASE("with --ablate, the accuracy with and without the heads", "[ablation]") {
  const auto run =
      run_attn({"multi-head", "--checkpoint", "previous-minus-mirror", "--ablate", "0.1"});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("ablating layer 0 head 1: held-out token accuracy 1.000 -> 0.3") !=
        std::string::npos);
}

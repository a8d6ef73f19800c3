// The memory budget: how a plan's peak is counted, what a refusal carries, and the sizes of module
// trees too large to build, held equal to the trees themselves.
#include "base/budget.hpp"

#include <limits>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "encoder.hpp"
#include "memory_limit.hpp"
#include "module_size.hpp"
#include "multi_head.hpp"

using attn::Held;
using attn::MemoryPlan;

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;

// Restores the output cost set by a test.
struct OutputCost {
  explicit OutputCost(attn::OutputCost cost) { attn::set_output_cost(std::move(cost)); }
  ~OutputCost() { attn::set_output_cost(nullptr); }
};
}  // namespace

TEST_CASE(
    "a plan's peak is the largest of computing, computing after the steps are shown, and showing",
    "[budget]") {
  const MemoryPlan plan = {{"X", {kMiB}, "T"},
                           {"a forward's temporaries", {3 * kMiB}, "T", 4, Held::before_shown},
                           {"a step shown", {2 * kMiB}, "T", 4, Held::shown},
                           {"a copy of the weights", {kMiB}, "D", 4, Held::weights}};
  // Before the steps are shown: X, the temporaries, the weights (5 MiB floats).
  CHECK(attn::planned_bytes(plan) == 4 * 5 * kMiB);
  {
    // Showing the step costs 10 bytes a value: 4 (step) + 4 (weights) + 20 MiB.
    const OutputCost cost([](const MemoryPlan& result) {
      std::size_t values = 0;
      for (const attn::PlannedTensor& t : result)
        if (t.held == Held::shown) values += t.shape.front();
      return MemoryPlan{{"the text", {values}, "T", 10, Held::shown}};
    });
    CHECK(attn::planned_bytes(plan) == 4 * 3 * kMiB + 10 * 2 * kMiB);
  }
  CHECK(attn::planned_bytes({}) == 0);
  // Objects cost kObjectBytes each beside their elements; sizes that overflow saturate.
  CHECK(attn::planned_bytes({{"entries", {10}, "", 4, Held::computing, 3}}) ==
        40 + 3 * attn::kObjectBytes);
  const std::size_t huge = std::size_t{1} << 40;
  CHECK(attn::planned_bytes({{"X", {huge, huge}}, {"Y", {1}}}) ==
        std::numeric_limits<std::size_t>::max());
}

TEST_CASE("a refusal is too_large, names the largest part and is driven by its largest axes",
          "[budget]") {
  try {
    attn::check_budget("test",
                       {{"X", {1, 5, 6}, "B T D"}, {"the scores", {1, 4, 50000, 50000}, "B H T T"}},
                       std::size_t{1} << 30);
    FAIL("no refusal");
  } catch (const attn::Error& e) {
    CHECK(e.kind() == attn::ErrorKind::too_large);
    CHECK(e.function() == "test");
    CHECK(e.detail() ==
          "these sizes need about 37.3 GiB (the largest part is the scores (1, 4, 50000, 50000)), "
          "more than the "
          "memory limit of 1 GiB (the limit given): use smaller sizes");
    // B = 1 cannot be lowered; T before H, each letter once.
    CHECK(e.sizes() == std::vector<std::string>{"T", "H"});
  }
  try {
    attn::check_budget("test", {{"the weights", {1000000, 510}, "L D/F"}}, kMiB);
    FAIL("no refusal");
  } catch (const attn::Error& e) {
    CHECK(e.sizes() == std::vector<std::string>{"L", "D", "F"});
  }
}

TEST_CASE("format_bytes keeps three digits and never an exponent", "[budget]") {
  CHECK(attn::format_bytes(1000.0 * kMiB) == "1000 MiB");
  CHECK(attn::format_bytes(1023.9 * kMiB) == "1024 MiB");
  CHECK(attn::format_bytes(999.4 * kMiB) == "999 MiB");
  CHECK(attn::format_bytes(1024.0 * kMiB) == "1 GiB");
}

TEST_CASE("module sizes from one head and one layer equal the trees' own", "[budget][module]") {
  for (auto [d, h] : {std::pair<std::size_t, std::size_t>{6, 2}, {12, 3}, {768, 12}}) {
    for (auto v : {attn::MultiHeadVariant::narrow, attn::MultiHeadVariant::wide,
                   attn::MultiHeadVariant::book, attn::MultiHeadVariant::fused}) {
      INFO("D = " << d << ", H = " << h << ", " << attn::variant_name(v));
      const attn::ModuleSize planned = attn::multi_head_size(v, d, h);
      const attn::ModuleSize built = attn::module_size(attn::describe_multi_head(v, d, h));
      CHECK(planned.parameters == built.parameters);
      CHECK(planned.tensors == built.tensors);
      CHECK(planned.modules.value() >= built.modules.value());
      // The list of heads, built one by one, has a block header the plan leaves out.
      CHECK(planned.bytes.value() >= built.bytes.value() - 64);
    }
  }
  attn::EncoderConfig config;  // BERT-base's numbers
  for (std::size_t layers : {1, 2, 12}) {
    config.num_hidden_layers = layers;
    for (bool embeddings : {false, true}) {
      INFO(layers << " layers, embeddings " << embeddings);
      const attn::ModuleSize planned = attn::encoder_size(config, embeddings);
      const attn::Module model = attn::describe_encoder(config, embeddings);
      CHECK(planned.parameters ==
            attn::Count(static_cast<std::uint64_t>(attn::count_parameters(model))));
      CHECK(planned.tensors == attn::Count(attn::state_dict_entries(model).size()));
      CHECK(planned.bytes.value() >=
            attn::module_size(model).bytes.value() - 64 * static_cast<std::int64_t>(layers));
    }
  }
}

TEST_CASE("a tree too large for the limit is refused before it is built, naming its copies",
          "[budget][module]") {
  const attn::testing::MemoryLimit limit(64 * kMiB);
  try {
    attn::describe_multi_head(attn::MultiHeadVariant::book, 1000000000, 1000000000);
    FAIL("no refusal");
  } catch (const attn::Error& e) {
    CHECK(e.kind() == attn::ErrorKind::too_large);
    CHECK(e.function() == "describe_multi_head");
    CHECK(e.sizes() == std::vector<std::string>{"H"});
  }
  attn::EncoderConfig config;
  config.num_hidden_layers = 1000000000;
  CHECK_THROWS_WITH(attn::describe_encoder(config, true),
                    Catch::Contains("the layers' module tree (1000000000, "));
}

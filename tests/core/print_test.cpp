// format_torch against repr() from PyTorch 1.13 (data/fixtures/print/, written by
// data/generator/printing.py), plus a few cases built in place.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/array.hpp"
#include "base/error.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/print.hpp"

namespace {

attn::PrintOptions options_from_json(const nlohmann::json& json) {
  attn::PrintOptions options;
  options.precision = json.at("precision").get<int>();
  options.threshold = json.at("threshold").is_null() ? std::numeric_limits<std::size_t>::max()
                                                     : json.at("threshold").get<std::size_t>();
  options.edgeitems = json.at("edgeitems").get<std::size_t>();
  options.linewidth = json.at("linewidth").get<std::size_t>();
  if (!json.at("sci_mode").is_null()) options.sci_mode = json.at("sci_mode").get<bool>();
  return options;
}

std::string fixture_dir() {
  const std::string cases = attn::testing::fixture_path("print/cases.json");
  return cases.substr(0, cases.size() - std::string("cases.json").size());
}

}  // namespace

TEST_CASE("format_torch matches repr() of PyTorch 1.13 on every fixture", "[print]") {
  const std::string dir = fixture_dir();
  const auto cases = nlohmann::json::parse(attn::testing::read_text(dir + "cases.json"));
  REQUIRE(cases.size() >= 35);
  for (const auto& item : cases) {
    const std::string name = item.at("name").get<std::string>();
    DYNAMIC_SECTION(name) {
      const attn::Array array = attn::read_npy(dir + item.at("npy").get<std::string>());
      const std::string expected =
          attn::testing::read_text(dir + item.at("repr").get<std::string>());
      INFO("case " << name << " (" << item.at("npy").get<std::string>() << ")");
      CHECK(attn::format_torch(array, options_from_json(item.at("options"))) == expected);
    }
  }
}

TEST_CASE("0-d tensors print without brackets", "[print]") {
  CHECK(attn::format_torch(attn::make_float32({}, {3.14159265f})) == "tensor(3.1416)");
  CHECK(attn::format_torch(attn::make_float32({}, {-0.0f})) == "tensor(-0.)");
  CHECK(attn::format_torch(attn::make_float32({}, {std::nanf("")})) == "tensor(nan)");
  CHECK(attn::format_torch(attn::make_int64({}, {42})) == "tensor(42)");
  CHECK(attn::format_torch(attn::make_int32({}, {-7})) == "tensor(-7, dtype=torch.int32)");
  CHECK(attn::format_torch(attn::make_float64({}, {2.5})) == "tensor(2.5000, dtype=torch.float64)");
  CHECK(attn::format_torch(attn::make_bool({}, {true})) == "tensor(True)");
}

TEST_CASE("empty tensors print their size unless 1-d, and their dtype unless float32", "[print]") {
  CHECK(attn::format_torch(attn::make_float32({0}, {})) == "tensor([])");
  CHECK(attn::format_torch(attn::make_float32({0, 3}, {})) == "tensor([], size=(0, 3))");
  CHECK(attn::format_torch(attn::make_float32({2, 0, 4}, {})) == "tensor([], size=(2, 0, 4))");
  CHECK(attn::format_torch(attn::make_int64({0}, {})) == "tensor([], dtype=torch.int64)");
  CHECK(attn::format_torch(attn::make_bool({0, 3}, {})) ==
        "tensor([], size=(0, 3), dtype=torch.bool)");
}

TEST_CASE("notation follows torch's choice", "[print]") {
  CHECK(attn::format_torch(attn::make_float32({3}, {1, 2, 3})) == "tensor([1., 2., 3.])");
  CHECK(attn::format_torch(attn::make_float32({2}, {1e-5f, 1})) ==
        "tensor([1.0000e-05, 1.0000e+00])");
  // the width stays the one the automatic choice computed
  attn::PrintOptions fixed;
  fixed.sci_mode = false;
  CHECK(attn::format_torch(attn::make_float32({2}, {1e-5f, 1}), fixed) ==
        "tensor([    0.0000,     1.0000])");
  CHECK(attn::format_torch(attn::make_float32({3}, {-0.0f, 0.0f, 1.25f})) ==
        "tensor([-0.0000, 0.0000, 1.2500])");
}

TEST_CASE("full_print_options never summarises", "[print]") {
  std::vector<std::int64_t> values(1001);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<std::int64_t>(i);
  const attn::Array array = attn::make_int64({1001}, values);
  CHECK(attn::format_torch(array).find("...") != std::string::npos);
  CHECK(attn::format_torch(array, attn::full_print_options()).find("...") == std::string::npos);
}

TEST_CASE("format_torch refuses what torch refuses", "[print]") {
  attn::PrintOptions no_edges;
  no_edges.threshold = 5;
  no_edges.edgeitems = 0;
  // torch.stack([]) fails for rank >= 2; a vector prints " ..." and then all of itself
  CHECK_THROWS_AS(attn::format_torch(attn::make_float32({2, 5}, std::vector<float>(10)), no_edges),
                  attn::Error);
  CHECK(attn::format_torch(attn::make_int64({6}, {0, 1, 2, 3, 4, 5}), no_edges) ==
        "tensor([ ..., 0, 1, 2, 3, 4, 5])");

  attn::PrintOptions negative;
  negative.precision = -1;
  CHECK_THROWS_AS(attn::format_torch(attn::make_float32({1}, {1}), negative), attn::Error);
}

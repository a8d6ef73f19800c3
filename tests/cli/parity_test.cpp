// PyTorch parity from the command line: `attn <lesson> --input X.npy --save DIR` must write the
// output PyTorch computes from X (data/generator/lessons.py) and print it exactly as torch does.
#include <filesystem>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "run_attn.hpp"
#include "tolerant_text.hpp"

namespace fs = std::filesystem;

TEST_CASE("every lesson equals PyTorch on the fixtures and prints torch's repr", "[cli][parity]") {
  for (const std::string lesson : {"dot-product", "scaling", "softmax"}) {
    const auto cases = nlohmann::json::parse(
        attn::testing::read_text(attn::testing::fixture_path(lesson + "/cases.json")));
    REQUIRE(cases.size() >= 4);
    for (const auto& c : cases) {
      const std::string name = c["name"];
      DYNAMIC_SECTION(lesson << " " << name) {
        const fs::path dir = fs::temp_directory_path() /
                             fmt::format("attn-parity-{}-{}-{}", lesson, name, ::getpid());
        fs::remove_all(dir);
        std::vector<std::string> args = {
            lesson, "--input",
            attn::testing::fixture_path(lesson + "/" + c["input"].get<std::string>()), "--save",
            dir.string()};
        for (const auto& a : c["args"])
          args.push_back(a);
        const auto result = attn::testing::run_attn(args);
        INFO("stderr: " << result.err);
        REQUIRE(result.exit_code == 0);
        const auto expected = attn::read_npy(
            attn::testing::fixture_path(lesson + "/" + c["output"].get<std::string>()));
        CHECK_ALLCLOSE(attn::read_npy((dir / "output.npy").string()), expected);
        const std::string repr = attn::testing::read_text(
            attn::testing::fixture_path(lesson + "/" + c["repr"].get<std::string>()));
        CHECK_PRINTED(result.out, repr);
        fs::remove_all(dir);
      }
    }
  }
}

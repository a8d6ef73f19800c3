// Positional encodings: seed 001's sinusoidal table bit for bit against PyTorch's (torch's sin
// and cos are SLEEF's), the book's learned table, and the identities lesson 06 teaches.
#include "positional_encoding.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "base/random.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/weights.hpp"
#include "kernels/torch_order.hpp"
#include "state_dict.hpp"

using attn::Tensor2;
using attn::Tensor3;

namespace {
const std::string kFolder = "positional-encoding/";

std::string fnv1a64(const float* data, std::size_t count) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < count * sizeof(float); ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

bool same_bits(const attn::Array& a, const attn::Array& b) {
  return a.shape == b.shape && a.dtype == b.dtype && a.bytes == b.bytes;
}

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
}  // namespace

TEST_CASE("the sinusoidal table is bit-identical to seed 001's in torch 1.13",
          "[positional-encoding][fixtures]") {
  const auto doc = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path(kFolder + "tables.json")));
  REQUIRE(doc["tables"].size() >= 50);
  for (const auto& t : doc["tables"]) {
    const std::size_t p = t["positions"], d = t["d_model"];
    DYNAMIC_SECTION("P=" << p << " D=" << d) {
      const attn::SinusoidalTable table = attn::sinusoidal_table(p, d);
      std::vector<float> last(table.pe.data() + (p - 1) * d,
                              table.pe.data() + (p - 1) * d + std::min<std::size_t>(d, 8));
      INFO("last row, attn: " << fmt::format("{}", fmt::join(last, ", "))
                              << "\nlast row, torch: " << t["last_row"].dump());
      CHECK(fnv1a64(table.pe.data(), table.pe.size()) == t["fnv1a64"].get<std::string>());
    }
  }
  // One table in full, for a readable failure (P=50, D=13: odd).
  const attn::SinusoidalTable table = attn::sinusoidal_table(50, 13);
  const auto expected =
      attn::read_npy(attn::testing::fixture_path(kFolder + "table_p50_d13_pe.npy"));
  CHECK_ALLCLOSE(attn::to_array(table.pe), expected);
  CHECK(same_bits(attn::to_array(table.pe), expected));
  CHECK(same_bits(attn::to_array(table.div_term), attn::read_npy(attn::testing::fixture_path(
                                                      kFolder + "table_p50_d13_div_term.npy"))));
}

TEST_CASE("each fixture case: the rows added and the output equal PyTorch's",
          "[positional-encoding][fixtures]") {
  const auto cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path(kFolder + "cases.json")));
  REQUIRE(cases.size() >= 8);
  for (const auto& c : cases) {
    const std::string name = c["name"];
    DYNAMIC_SECTION(name) {
      const std::size_t positions = c["max_positions"];
      const Tensor3 x = attn::to_tensor<3>(
          attn::read_npy(attn::testing::fixture_path(kFolder + c["input"].get<std::string>())),
          "x");
      const std::size_t tokens = x.shape(1), width = x.shape(2);
      Tensor2 pe;
      if (c["kind"] == "sinusoidal") {
        const attn::SinusoidalTable table = attn::sinusoidal_table(positions, width);
        pe = attn::first_positions(table.pe, tokens);
        CHECK(same_bits(attn::to_array(table.div_term),
                        attn::read_npy(attn::testing::fixture_path(
                            kFolder + c["div_term"].get<std::string>()))));
      } else {
        const attn::StateDict weights = attn::read_weights(
            attn::testing::fixture_path(kFolder + c["weights"].get<std::string>()));
        attn::Rng rng(0);
        attn::PositionEmbedding embedding = attn::init_position_embedding(rng, positions, width);
        attn::load_state_dict(embedding, attn::describe_position_embedding(positions, width),
                              weights, "fixture");
        pe = attn::first_positions(embedding.weight, tokens);
        CHECK(attn::count_parameters(attn::describe_position_embedding(positions, width)) ==
              c["parameters"].get<std::int64_t>());
      }
      const auto expected_pe =
          attn::read_npy(attn::testing::fixture_path(kFolder + c["pe"].get<std::string>()));
      CHECK_ALLCLOSE(attn::to_array(pe), expected_pe);
      CHECK(same_bits(attn::to_array(pe), expected_pe));
      const auto expected =
          attn::read_npy(attn::testing::fixture_path(kFolder + c["output"].get<std::string>()));
      const Tensor3 output = attn::add_positions(x, pe);
      CHECK_ALLCLOSE(attn::to_array(output), expected);
      CHECK(same_bits(attn::to_array(output), expected));
    }
  }
}

TEST_CASE("SLEEF's sin and cos, as libsleef 3.5.1 (AVX2) returns them",
          "[positional-encoding][sleef]") {
  // x, sin and cos with every lane of the group below 125 (narrow) and with a lane at 300 (wide):
  // from Sleef_sinf8_u10avx2 / Sleef_cosf8_u10avx2 of Debian's libsleef3, which libtorch_cpu links.
  struct Sample {
    float x, sin_narrow, sin_wide, cos_narrow, cos_wide;
  };
  const Sample samples[] = {
      {0x1p-1f, 0x1.eaee88p-2f, 0x1.eaee88p-2f, 0x1.c1528p-1f, 0x1.c1528p-1f},
      {0x1p+0f, 0x1.aed548p-1f, 0x1.aed548p-1f, 0x1.14a282p-1f, 0x1.14a282p-1f},
      {0x1.921fb6p+1f, -0x1.777a5cp-24f, -0x1.777a5cp-24f, -0x1p+0f, -0x1p+0f},
      {0x1.f3f5c2p+6f, -0x1.3f6e4ap-1f, -0x1.3f6e4ap-1f, 0x1.90228ap-1f, 0x1.90228ap-1f},
      {0x1.f4p+6f, -0x1.3b69a8p-1f, -0x1.3b69a8p-1f, 0x1.934f5p-1f, 0x1.934f5p-1f},
      {0x1.ffp+8f, 0x1.c37768p-1f, 0x1.c37768p-1f, -0x1.e2ffcap-2f, -0x1.e2ffcap-2f},
      {0x1.e848p+19f, -0x1.6664b2p-2f, -0x1.6664b2p-2f, 0x1.df9dfap-1f, 0x1.df9dfap-1f},
      {0x1p+30f, -0x1.3c1236p-1f, -0x1.3c1236p-1f, 0x1.92cb46p-1f, 0x1.92cb46p-1f},
      {-0x1.dp+2f, -0x1.a56adcp-1f, -0x1.a56adcp-1f, 0x1.22c6f6p-1f, 0x1.22c6f6p-1f},
      // the reduction the group takes changes the last bit here
      {0x1.12216ap+1f, 0x1.aed198p-1f, 0x1.aed19ap-1f, attn::sleef_cos_u10(0x1.12216ap+1f, false),
       attn::sleef_cos_u10(0x1.12216ap+1f, true)},
      {0x1.b463aep+4f, 0x1.aed524p-1f, 0x1.aed526p-1f, attn::sleef_cos_u10(0x1.b463aep+4f, false),
       attn::sleef_cos_u10(0x1.b463aep+4f, true)},
  };
  for (const Sample& s : samples) {
    INFO(fmt::format("x = {:a}", s.x));
    CHECK(bits(attn::sleef_sin_u10(s.x, false)) == bits(s.sin_narrow));
    CHECK(bits(attn::sleef_sin_u10(s.x, true)) == bits(s.sin_wide));
    CHECK(bits(attn::sleef_cos_u10(s.x, false)) == bits(s.cos_narrow));
    CHECK(bits(attn::sleef_cos_u10(s.x, true)) == bits(s.cos_wide));
  }
  // torch_sin picks the reduction per group of 8: a neighbour of 300 changes x's last bit.
  const float x = 0x1.12216ap+1f;
  float alone[9] = {x, 1, 2, 3, 4, 5, 6, 7, 300}, out[9];
  attn::torch_sin(alone, out, 9);
  CHECK(bits(out[0]) == bits(0x1.aed198p-1f));  // the 300 is in the next group
  float grouped[8] = {x, 300, 2, 3, 4, 5, 6, 7};
  attn::torch_sin(grouped, out, 8);
  CHECK(bits(out[0]) == bits(0x1.aed19ap-1f));
  // within 1 ulp of the true value everywhere
  for (float v = -300.0f; v < 300.0f; v += 0.37f) {
    CHECK(std::fabs(attn::sleef_sin_u10(v, true) -
                    static_cast<float>(std::sin(static_cast<double>(v)))) <= 1.2e-7f);
    CHECK(std::fabs(attn::sleef_cos_u10(v, true) -
                    static_cast<float>(std::cos(static_cast<double>(v)))) <= 1.2e-7f);
  }
  CHECK(std::isnan(attn::sleef_sin_u10(std::numeric_limits<float>::infinity(), true)));
  CHECK(std::isnan(attn::sleef_cos_u10(std::numeric_limits<float>::quiet_NaN(), true)));
  CHECK(std::signbit(attn::sleef_sin_u10(-0.0f, false)));
}

TEST_CASE("the sinusoidal table's identities, odd and even widths",
          "[positional-encoding][invariants]") {
  for (std::size_t width : {1, 2, 5, 12, 13}) {
    DYNAMIC_SECTION("D=" << width) {
      const std::size_t positions = 40;
      const attn::SinusoidalTable t = attn::sinusoidal_table(positions, width);
      REQUIRE(t.div_term.size() == (width + 1) / 2);
      REQUIRE(t.pe.shape(0) == positions);
      REQUIRE(t.pe.shape(1) == width);
      CHECK(t.div_term(0) == 1.0f);
      for (std::size_t j = 0; j < width; ++j)
        CHECK(t.pe(0, j) == (j % 2 == 0 ? 0.0f : 1.0f));  // sin 0, cos 0
      for (std::size_t p = 0; p < positions; ++p) {
        for (std::size_t j = 0; j < width; ++j) {
          CHECK(std::fabs(t.pe(p, j)) <= 1.0f);
          const double angle = static_cast<double>(p) * t.div_term(j / 2);
          CHECK(std::fabs(t.pe(p, j) - (j % 2 == 0 ? std::sin(angle) : std::cos(angle))) <= 1e-6);
        }
        for (std::size_t j = 0; j + 1 < width; j += 2)
          CHECK(std::fabs(t.pe(p, j) * t.pe(p, j) + t.pe(p, j + 1) * t.pe(p, j + 1) - 1.0f) <=
                1e-6f);
      }
      // PE[p]·PE[p+k] over the sin/cos pairs depends only on k
      const std::size_t paired = width - width % 2;
      for (std::size_t k = 0; k < positions; ++k) {
        double first = 0.0;
        for (std::size_t j = 0; j < paired; ++j)
          first += static_cast<double>(t.pe(0, j)) * t.pe(k, j);
        for (std::size_t p = 1; p + k < positions; ++p) {
          double dot = 0.0;
          for (std::size_t j = 0; j < paired; ++j)
            dot += static_cast<double>(t.pe(p, j)) * t.pe(p + k, j);
          CHECK(std::fabs(dot - first) <= 1e-5);
        }
      }
    }
  }
  // A longer table starts with the shorter one (what seed 001's slice pe[:, :T] relies on), except
  // in the last group of 8 angles: P=125, D=12 has 750 angles, and in the longer table angles 750
  // and 751 (row 125: 125 and 27.4) join angles 744..749 (row 124), whose group turns wide.
  const attn::SinusoidalTable shorter = attn::sinusoidal_table(125, 12),
                              longer = attn::sinusoidal_table(512, 12);
  for (std::size_t p = 0; p < 125; ++p)
    for (std::size_t j = 0; j < 12; ++j) {
      if (p < 124) {
        CHECK(bits(shorter.pe(p, j)) == bits(longer.pe(p, j)));
      } else {
        CHECK(std::fabs(shorter.pe(p, j) - longer.pe(p, j)) <= 1.2e-7f);
      }
    }
}

TEST_CASE("the learned table: nn.Embedding(P, D), its keys, counts and lookup",
          "[positional-encoding][learned]") {
  // sum(p.numel()) of nn.Embedding(512, 768) and (16, 6) in python3-torch 1.13
  CHECK(attn::count_parameters(attn::describe_position_embedding(512, 768)) == 393216);
  CHECK(attn::count_parameters(attn::describe_position_embedding(16, 6)) == 96);
  attn::Rng rng(3);
  attn::PositionEmbedding e = attn::init_position_embedding(rng, 7, 12);
  std::vector<attn::StateDictEntry> visited;
  attn::visit_parameters(e, [&](const std::string& key, float*, const attn::Shape& shape) {
    visited.push_back({key, shape});
  });
  const auto expected = attn::state_dict_entries(attn::describe_position_embedding(7, 12));
  REQUIRE(visited.size() == expected.size());
  CHECK(visited[0].key == "weight");
  CHECK(visited[0].shape == expected[0].shape);
  // N(0, 1) at init
  double sum = 0.0, squares = 0.0;
  attn::Rng big_rng(5);
  const attn::PositionEmbedding big = attn::init_position_embedding(big_rng, 512, 64);
  for (float v : big.weight)
    sum += v, squares += static_cast<double>(v) * v;
  const double n = static_cast<double>(big.weight.size()), mean = sum / n;
  CHECK(std::fabs(mean) < 0.03);
  CHECK(std::fabs(squares / n - mean * mean - 1.0) < 0.05);
  // rows 0..T-1, added to every sequence of the batch
  const Tensor2 rows = attn::first_positions(e.weight, 5);
  for (std::size_t p = 0; p < 5; ++p)
    for (std::size_t j = 0; j < 12; ++j)
      CHECK(rows(p, j) == e.weight(p, j));
  attn::Rng x_rng(9);
  const Tensor3 x = attn::randn(x_rng, 2, 5, 12);
  const Tensor3 y = attn::add_positions(x, rows);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t p = 0; p < 5; ++p)
      for (std::size_t j = 0; j < 12; ++j)
        CHECK(y(b, p, j) == x(b, p, j) + rows(p, j));
  const auto layers = attn::trace_position_embedding(7, 12, {1, 5});
  REQUIRE(layers.size() == 1);
  CHECK(layers[0].class_name == "Embedding");
  CHECK(layers[0].output_shape == attn::Shape{1, 5, 12});
}

TEST_CASE("positional-encoding errors name the function and the shapes",
          "[positional-encoding][errors]") {
  attn::Rng rng(1);
  const attn::PositionEmbedding e = attn::init_position_embedding(rng, 4, 6);
  CHECK_THROWS_WITH(attn::first_positions(e.weight, 5),
                    Catch::Contains("[first_positions]") && Catch::Contains("(4, 6)"));
  const Tensor3 x = attn::randn(rng, 2, 5, 12);
  CHECK_THROWS_WITH(attn::add_positions(x, attn::first_positions(e.weight, 4)),
                    Catch::Contains("[add_positions]") && Catch::Contains("(2, 5, 12)") &&
                        Catch::Contains("(4, 6)"));
  CHECK_THROWS_WITH(attn::sinusoidal_table(0, 6), Catch::Contains("[sinusoidal_table]"));
  CHECK_THROWS_WITH(attn::sinusoidal_table(5, 0), Catch::Contains("width=0"));
}

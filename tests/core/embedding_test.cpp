// nn.Embedding against PyTorch (tables saved by data/generator/tokens.py, BERT-base's from a
// shared formula), the lookup's invariants on odd sizes, the state_dict keys, the parameter
// count and torchinfo's row.
#include <cmath>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "base/error.hpp"
#include "embedding.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "io/tokenizer.hpp"
#include "io/weights.hpp"
#include "state_dict.hpp"
#include "summary.hpp"

namespace {
attn::Ids ids_of(const attn::Array& a) {
  REQUIRE(a.dtype == attn::Dtype::int64);
  REQUIRE(a.rank() == 2);
  attn::Ids ids({a.shape[0], a.shape[1]});
  for (std::size_t i = 0; i < a.size(); ++i)
    ids.data()[i] = a.integer(i);
  return ids;
}
}  // namespace

TEST_CASE("the lookup equals PyTorch's nn.Embedding with the same table", "[embedding]") {
  const auto cases = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("tokens/cases.json")));
  REQUIRE(cases.size() >= 4);
  const attn::Vocabulary vocab =
      attn::read_vocabulary(std::string(ATTN_SOURCE_DIR) + "/data/vocab/lesson-vocab.txt");
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c["name"].get<std::string>()) {
      const attn::StateDict weights = attn::read_weights(
          attn::testing::fixture_path("tokens/" + c["weights"].get<std::string>()));
      const attn::Shape shape = weights.at("weight").shape;
      const attn::Module model = attn::describe_embedding(shape[0], shape[1]);
      CHECK(attn::count_parameters(model) == c["parameters"].get<std::int64_t>());
      attn::Embedding table{attn::Tensor2({shape[0], shape[1]})};
      attn::load_state_dict(table, model, weights, "fixture");
      const attn::Ids ids = ids_of(attn::read_npy(
          attn::testing::fixture_path("tokens/" + c["input_ids"].get<std::string>())));
      // The tokenizer gives the ids torch was given.
      const attn::Encoding e =
          attn::encode(c["text"].get<std::string>(), vocab, c["add_special_tokens"].get<bool>());
      CHECK(std::vector<std::int64_t>(ids.begin(), ids.end()) == e.ids);
      attn::Tensor3 out = attn::forward(table, ids);
      if (c["scale_by_sqrt_d"].get<bool>())
        out = out * static_cast<float>(std::sqrt(static_cast<double>(shape[1])));
      // A lookup (and one float product) is exact: no tolerance.
      CHECK_ALLCLOSE(
          attn::to_array(out),
          attn::read_npy(attn::testing::fixture_path("tokens/" + c["output"].get<std::string>())),
          attn::testing::Tolerance{0.0, 0.0});
    }
  }
}

TEST_CASE("BERT-base's table (30522 x 768, from the shared formula) gives PyTorch's lookup",
          "[embedding]") {
  const auto c = nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("tokens/bert_base.json")));
  const std::size_t rows = c["shape"][0], width = c["shape"][1];
  attn::Embedding table{attn::Tensor2({rows, width})};
  for (std::size_t i = 0; i < table.weight.size(); ++i) {
    const auto r = static_cast<std::int64_t>((i * 7919) % 2001);
    table.weight.data()[i] = static_cast<float>(0.02 * (static_cast<double>(r) / 1000.0 - 1.0));
  }
  const auto ids_list = c["ids"].get<std::vector<std::int64_t>>();
  attn::Ids ids({1, ids_list.size()});
  std::copy(ids_list.begin(), ids_list.end(), ids.begin());
  CHECK_ALLCLOSE(
      attn::to_array(attn::forward(table, ids)),
      attn::read_npy(attn::testing::fixture_path("tokens/" + c["output"].get<std::string>())),
      attn::testing::Tolerance{0.0, 0.0});
  CHECK(attn::count_parameters(attn::describe_embedding(30522, 768)) == 23'440'896);
  CHECK(c["parameters"] == 23'440'896);
}

TEST_CASE("out[b, t] is row ids[b, t] of the table, on odd sizes", "[embedding]") {
  attn::Rng rng(7);
  const std::size_t B = 2, T = 5, V = 11, D = 12;
  const attn::Embedding table = attn::init_embedding(rng, V, D);
  attn::Ids ids({B, T});
  for (std::size_t i = 0; i < ids.size(); ++i)
    ids.data()[i] = static_cast<std::int64_t>((i * 7) % V);
  const attn::Tensor3 out = attn::forward(table, ids);
  REQUIRE(attn::shape_of(out) == attn::Shape{B, T, D});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t d = 0; d < D; ++d)
        CHECK(out(b, t, d) == table.weight(static_cast<std::size_t>(ids(b, t)), d));
  const attn::Array a = attn::to_array(ids);
  CHECK(a.dtype == attn::Dtype::int64);
  CHECK(a.shape == attn::Shape{B, T});
  CHECK(a.integer(6) == ids(1, 1));
}

TEST_CASE("an id outside the table is refused, named with its place", "[embedding]") {
  attn::Rng rng(1);
  const attn::Embedding table = attn::init_embedding(rng, 4, 3);
  for (const std::int64_t bad : {std::int64_t{4}, std::int64_t{-1}, std::int64_t{1000}}) {
    attn::Ids ids({2, 3});
    ids.fill(0);
    ids(1, 2) = bad;
    std::size_t at = 0;
    CHECK(attn::first_id_out_of_range(ids, 4, &at) == std::optional<std::int64_t>(bad));
    CHECK(at == 5);
    try {
      attn::forward(table, ids);
      FAIL("no error for id " << bad);
    } catch (const attn::Error& e) {
      CHECK(std::string(e.what()) ==
            fmt::format("[embedding] id {} (sequence 1, token 2) is outside the table's 4 rows: "
                        "ids must be 0..3",
                        bad));
    }
  }
}

TEST_CASE("the table starts as N(0, 1) draws, PyTorch's default", "[embedding]") {
  attn::Rng rng(3);
  const attn::Embedding table = attn::init_embedding(rng, 500, 64);
  double sum = 0.0, squares = 0.0;
  for (float w : table.weight)
    sum += w, squares += static_cast<double>(w) * w;
  const double n = static_cast<double>(table.weight.size());
  const double mean = sum / n, std = std::sqrt(squares / n - mean * mean);
  CHECK(std::fabs(mean) < 0.02);
  CHECK(std::fabs(std - 1.0) < 0.02);
}

TEST_CASE("state_dict keys and torchinfo's row", "[embedding]") {
  const attn::Module model = attn::describe_embedding(20, 300);
  CHECK(model.class_name == "Embedding");
  const auto entries = attn::state_dict_entries(model);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].key == "weight");
  CHECK(entries[0].shape == attn::Shape{20, 300});
  attn::Rng rng(0);
  attn::Embedding table = attn::init_embedding(rng, 20, 300);
  std::vector<std::string> visited;
  attn::visit_parameters(table, [&](const std::string& key, float*, const attn::Shape& shape) {
    visited.push_back(key);
    CHECK(shape == attn::Shape{20, 300});
  });
  CHECK(visited == std::vector<std::string>{"weight"});
  CHECK(attn::collect_state_dict(table).at("weight").shape == attn::Shape{20, 300});
  // torchinfo's tests/test_output/lstm.out has nn.Embedding(20, 300) on ids (1, 100): output
  // [1, 100, 300], 6,000 parameters, 6,000 mult-adds (B x numel), weight's kernel [300, 20].
  const auto layers = attn::trace_embedding(20, 300, {1, 100});
  REQUIRE(layers.size() == 1);
  CHECK(layers[0].input_shape == attn::Shape{1, 100});
  CHECK(layers[0].output_shape == attn::Shape{1, 100, 300});
  attn::SummaryOptions options;
  options.col_names = {"kernel_size", "output_size", "num_params", "mult_adds"};
  options.col_width = 20;
  options.verbose = 2;
  const std::string text = attn::format_summary(layers, {{{1, 100}, 8}}, options);
  INFO(text);
  auto line_starting = [&](const std::string& start) {
    const std::size_t at = text.find("\n" + start);
    return at == std::string::npos ? std::string()
                                   : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  const std::string row = line_starting("Embedding ");
  CHECK(row.find("[1, 100, 300]") != std::string::npos);
  CHECK(row.find("6,000                6,000") != std::string::npos);
  CHECK(line_starting("├─weight").find("[300, 20]") != std::string::npos);
}

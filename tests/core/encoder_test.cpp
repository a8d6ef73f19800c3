// The book's encoder: module tree, parameter counts against PyTorch's, the summary against real
// torchinfo, configs, and pre-LN/post-LN against PyTorch-made fixtures.
#include "encoder.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "fixtures.hpp"
#include "io/npy.hpp"
#include "state_dict.hpp"
#include "summary.hpp"

namespace {
attn::EncoderConfig bert_base() {
  return attn::load_config(std::string(ATTN_SOURCE_DIR) + "/data/configs/bert-base.json");
}
}  // namespace

TEST_CASE("BERT-base counts: 7,087,872 per layer, 108,890,112 with embeddings and 12 layers",
          "[encoder][parameters]") {
  const attn::EncoderConfig config = bert_base();
  attn::EncoderConfig one = config;
  one.num_hidden_layers = 1;
  CHECK(attn::count_parameters(attn::describe_encoder(one, false)) == 7087872);
  CHECK(attn::count_parameters(attn::describe_encoder(config, true)) == 108890112);
  CHECK(attn::count_parameters(attn::describe_embeddings(config)) ==
        23440896 + 512 * 768 + 2 * 768);
}

TEST_CASE("an encoder past 2^63-1 parameters is refused, naming its sizes",
          "[encoder][parameters]") {
  attn::EncoderConfig config = bert_base();
  config.hidden_size = 1000000000;
  config.intermediate_size = 1000000000;
  config.num_attention_heads = 1;
  config.num_hidden_layers = 1;  // 6,000,000,010,000,000,000 parameters: they fit
  CHECK(attn::count_parameters(attn::describe_encoder(config, false)) == 6000000010000000000);
  config.num_hidden_layers = 2;
  try {
    attn::describe_encoder(config, false);
    FAIL("two layers of 6e18 parameters were not refused");
  } catch (const attn::Error& e) {
    CHECK(e.kind() == attn::ErrorKind::too_large);
    CHECK(std::string(e.what()) ==
          "[describe_encoder] the TransformerEncoder with L = 2, D = 1000000000, "
          "F = 1000000000 has more than 2^63-1 parameters");
    CHECK(e.sizes() == std::vector<std::string>{"L", "D", "F"});
  }
  CHECK_THROWS_WITH(
      attn::describe_encoder(config, true),
      Catch::Contains("L = 2, D = 1000000000, F = 1000000000, V = 30522, P = 512 has more"));
}

TEST_CASE("state_dict keys: a bare layer, and the whole encoder", "[encoder][state_dict]") {
  attn::EncoderConfig config =
      attn::load_config(std::string(ATTN_SOURCE_DIR) + "/data/configs/tiny.json");
  attn::Rng rng(1);
  attn::Encoder encoder = attn::init_encoder(rng, config, attn::NormPlacement::pre, true);
  std::vector<std::string> keys;
  visit_parameters(
      encoder, [&](const std::string& key, float*, const attn::Shape&) { keys.push_back(key); });
  const auto expected = attn::state_dict_entries(attn::describe_encoder(config, true));
  REQUIRE(keys.size() == expected.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    CHECK(keys[i] == expected[i].key);
  CHECK(keys.front() == "embeddings.token_embeddings.weight");
  CHECK(std::find(keys.begin(), keys.end(), "layers.1.attention.heads.1.q.weight") != keys.end());
  config.num_hidden_layers = 1;
  const auto bare = attn::state_dict_entries(attn::describe_encoder(config, false));
  CHECK(bare.front().key == "layer_norm_1.weight");
}

TEST_CASE("the BERT-base encoder layer's summary matches real torchinfo", "[encoder][summary]") {
  attn::EncoderConfig config = bert_base();
  config.num_hidden_layers = 1;
  const auto rows = attn::trace_encoder(config, false, attn::NormPlacement::pre, {1, 5, 768});
  const std::string golden = std::string(ATTN_GOLDEN_DIR) + "/torchinfo/";
  CHECK(attn::format_summary(rows, {{{1, 5, 768}, 4}}, {}) ==
        attn::testing::read_text(
            golden + "06_book_transformerencoderlayer_bertbase__defaultcols__depth3.txt"));
  attn::SummaryOptions seed;
  seed.col_names = {"input_size", "output_size", "kernel_size", "num_params", "mult_adds"};
  seed.col_width = 16;
  CHECK(attn::format_summary(rows, {{{1, 5, 768}, 4}}, seed) ==
        attn::testing::read_text(
            golden + "06_book_transformerencoderlayer_bertbase__seedcols_verbose1__depth3.txt"));
}

TEST_CASE("torchinfo 0.1.0's totals for BERT-base's 12-layer encoder on ids (1, 5)",
          "[encoder][summary]") {
  // torchinfo 0.1.0 (tag v0.1.0), depth 3, input_data = ids (1, 5): apply_hooks hooks down to
  // depth 4, so summary_list holds Embeddings (1), its four children (2), the 12 layers (2), their
  // LayerNorms, MultiHeadAttention and FeedForward (3), and output_linear, linear_1, GELU,
  // linear_2, Dropout (4); the ModuleLists never run and the AttentionHeads (5) are not hooked.
  // ModelStatistics, in elements:
  //   total_input  = prod((1, 5)) = 5 (int64 ids counted as float32)
  //   total_params = rows at depth 3 + leaves above: 12 * (1,536 + 2,362,368 + 1,536 + 4,722,432)
  //                  + 23,440,896 + 393,216 + 1,536 = 108,890,112
  //   total_output = 2 * prod(output) of the leaves with parameters (depth 4 included): 2 * (3 *
  //                  3,840 + 12 * (3,840 * 4 + 15,360)) = 760,320
  //   mult-adds    = every hooked row, containers too (their dotted "...weight" parameters times
  //                  prod(output[:2]) = 5): 143,009,280 + 12 * 76,096,512 = 1,056,167,424
  // to_bytes(n) = n * 4 / 1e6: 0.00002, 3.04128, 435.560448 and 109,650,437 * 4 / 1e6 =
  // 438.601748. (Divided by 1024**2, as attn did: 0.00, 2.90, 415.38, 418.28.) Replayed once
  // with a Python copy of 0.1.0's arithmetic on this module tree.
  const auto rows = attn::trace_encoder(bert_base(), true, attn::NormPlacement::pre, {1, 5});
  attn::SummaryOptions options;
  options.format = attn::TorchinfoFormat::v0_1;
  const std::string table = attn::format_summary(rows, {{{1, 5}, 8}}, options);
  const std::string divider(90, '=');
  const std::string totals = divider + "\n" +
                             "Total params: 108,890,112\n"
                             "Trainable params: 108,890,112\n"
                             "Non-trainable params: 0\n"
                             "Total mult-adds (G): 1.06\n" +
                             divider + "\n" +
                             "Input size (MB): 0.00\n"
                             "Forward/backward pass size (MB): 3.04\n"
                             "Params size (MB): 435.56\n"
                             "Estimated Total Size (MB): 438.60\n" +
                             divider + "\n";
  REQUIRE(table.size() > totals.size());
  CHECK(table.substr(table.size() - totals.size()) == totals);
}

TEST_CASE("configs: the shipped files load, bad ones are refused with the field named",
          "[encoder][config]") {
  const attn::EncoderConfig b = bert_base();
  CHECK(b.hidden_size == 768);
  CHECK(b.num_attention_heads == 12);
  CHECK(b.intermediate_size == 3072);
  CHECK(b.vocab_size == 30522);
  CHECK(b.layer_norm_eps == 1e-12);
  CHECK_THROWS_WITH(attn::parse_config("{", "c.json"), Catch::Contains("'c.json' is not JSON"));
  CHECK_THROWS_WITH(attn::parse_config("[1]", "c.json"), Catch::Contains("not an object"));
  CHECK_THROWS_WITH(attn::parse_config(R"({"hidden_size": "768"})", "c.json"),
                    Catch::Contains("\"hidden_size\" is \"768\", expected a whole number"));
  CHECK_THROWS_WITH(attn::parse_config(R"({"hidden_size": 0})", "c.json"),
                    Catch::Contains("hidden_size"));
  CHECK_THROWS_WITH(
      attn::parse_config(R"({"hidden_size": 100, "num_attention_heads": 12})", "c.json"),
      Catch::Contains("not divisible by num_attention_heads 12"));
  CHECK_THROWS_WITH(attn::parse_config(R"({"hidden_act": "swish"})", "c.json"),
                    Catch::Contains("swish"));
  CHECK_THROWS_WITH(attn::parse_config(R"({"layer_norm_eps": -1})", "c.json"),
                    Catch::Contains("layer_norm_eps"));
  CHECK_THROWS_WITH(attn::parse_config(R"({"hidden_dropout_prob": 1.5})", "c.json"),
                    Catch::Contains("hidden_dropout_prob"));
  CHECK_THROWS_WITH(attn::parse_config(R"({"vocab_size": -3})", "c.json"),
                    Catch::Contains("vocab_size"));
}

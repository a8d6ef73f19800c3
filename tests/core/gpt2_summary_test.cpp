// trace_gpt2's rows through format_summary against the tables the real torchinfo prints for
// data/generator/gpt2.py's GPT2Model and GPT2LMHeadModel (transformers' class and attribute names,
// use_cache on as GPT2Config has it), made by data/torchinfo_gpt2.py (tests/golden/torchinfo/
// README.md). Legend: B batch, T tokens, D n_embd, H n_head, F n_inner, L n_layer, V vocab_size,
// P n_positions.
#include "gpt2.hpp"

#include <string>

#include <catch2/catch.hpp>

#include "summary.hpp"
#include "torchinfo_golden.hpp"

namespace {

using attn::Gpt2Heads;

attn::Gpt2Config gpt2_config(std::size_t d, std::size_t h, std::size_t f, std::size_t layers,
                             std::size_t vocab, std::size_t positions) {
  attn::Gpt2Config config = attn::default_gpt2_config();
  config.sizes = {.hidden_size = d,
                  .num_attention_heads = h,
                  .intermediate_size = f,
                  .num_hidden_layers = layers,
                  .vocab_size = vocab,
                  .max_position_embeddings = positions,
                  .layer_norm_eps = 1e-5,
                  .hidden_act = "gelu_new"};
  return config;
}

enum class Sizes { d21, d12, gpt2 };

struct GoldenCase {
  const char* file;  // in tests/golden/torchinfo/gpt2/
  Gpt2Heads heads;
  Sizes sizes;
  attn::Shape ids;
  int depth;
  bool all_columns;  // else torchinfo's default output_size, num_params
};

const GoldenCase kCases[] = {
    {"GPT2Model_d21_b2_t5__defaultcols__depth3.txt", Gpt2Heads::none, Sizes::d21, {2, 5}, 3, false},
    {"GPT2Model_d21_b2_t5__allcols__depth7.txt", Gpt2Heads::none, Sizes::d21, {2, 5}, 7, true},
    {"GPT2LMHeadModel_d21_b2_t5__defaultcols__depth3.txt",
     Gpt2Heads::lm_head,
     Sizes::d21,
     {2, 5},
     3,
     false},
    {"GPT2LMHeadModel_d21_b2_t5__allcols__depth7.txt",
     Gpt2Heads::lm_head,
     Sizes::d21,
     {2, 5},
     7,
     true},
    {"GPT2LMHeadModel_d12_b1_t6__defaultcols__depth2.txt",
     Gpt2Heads::lm_head,
     Sizes::d12,
     {1, 6},
     2,
     false},
    {"GPT2LMHeadModel_gpt2_b1_t8__defaultcols__depth3.txt",
     Gpt2Heads::lm_head,
     Sizes::gpt2,
     {1, 8},
     3,
     false},
    {"GPT2Model_gpt2_b1_t8__allcols__depth4.txt", Gpt2Heads::none, Sizes::gpt2, {1, 8}, 4, true},
};

attn::Gpt2Config sizes_of(Sizes sizes) {
  switch (sizes) {
    case Sizes::d21:
      return gpt2_config(21, 3, 36, 2, 297, 32);
    case Sizes::d12:
      return gpt2_config(12, 4, 48, 3, 297, 24);  // n_inner null: 4D
    case Sizes::gpt2:
      break;
  }
  return gpt2_config(768, 12, 3072, 12, 50257, 1024);
}

}  // namespace

TEST_CASE("trace_gpt2's table equals torchinfo's for transformers' GPT-2 classes",
          "[gpt2][summary]") {
  for (const GoldenCase& c : kCases) {
    DYNAMIC_SECTION(c.file) {
      const attn::Gpt2Config config = sizes_of(c.sizes);
      const attn::SummaryOptions options = attn::testing::torchinfo_options(c.depth, c.all_columns);
      const std::string got = attn::format_summary(
          attn::describe_gpt2(config, c.heads), attn::trace_gpt2(config, c.heads, c.ids),
          {attn::SummaryInput{c.ids, sizeof(std::int64_t)}}, options);
      CHECK(got == attn::testing::torchinfo_golden("gpt2", c.file));
    }
  }
}

TEST_CASE("trace_gpt2 refuses input_ids that are not (B,T)", "[gpt2][summary]") {
  CHECK_THROWS_AS(attn::trace_gpt2(gpt2_config(21, 3, 36, 2, 297, 32), Gpt2Heads::none, {2, 5, 21}),
                  attn::Error);
}

// trace_bert's rows through format_summary against the tables the real torchinfo prints for
// data/generator/bert.py's BertModel, BertForMaskedLM and BertForPreTraining (transformers' class
// and attribute names), made by data/torchinfo_bert.py (tests/golden/torchinfo/README.md).
// Legend: B batch, T tokens, D hidden_size, H heads, F intermediate_size, L layers, V vocabulary,
// P positions.
#include "bert.hpp"

#include <string>

#include <catch2/catch.hpp>

#include "summary.hpp"
#include "torchinfo_golden.hpp"

namespace {

using attn::BertHeads;

attn::BertConfig bert_config(std::size_t d, std::size_t h, std::size_t f, std::size_t layers,
                             std::size_t vocab, std::size_t positions) {
  attn::BertConfig config;
  config.sizes.hidden_size = d;
  config.sizes.num_attention_heads = h;
  config.sizes.intermediate_size = f;
  config.sizes.num_hidden_layers = layers;
  config.sizes.vocab_size = vocab;
  config.sizes.max_position_embeddings = positions;
  return config;
}

struct GoldenCase {
  const char* file;  // in tests/golden/torchinfo/bert/
  BertHeads heads;
  bool bert_base;  // else D 12, H 3, F 20, L 2, V 59, P 24
  attn::Shape ids;
  int depth;
  bool all_columns;  // else torchinfo's default output_size, num_params
};

const GoldenCase kCases[] = {
    {"BertModel_d12_b2_t7__defaultcols__depth3.txt", BertHeads::none, false, {2, 7}, 3, false},
    {"BertModel_d12_b2_t7__allcols__depth7.txt", BertHeads::none, false, {2, 7}, 7, true},
    {"BertForMaskedLM_d12_b2_t7__defaultcols__depth3.txt",
     BertHeads::masked_lm,
     false,
     {2, 7},
     3,
     false},
    {"BertForMaskedLM_d12_b2_t7__allcols__depth7.txt",
     BertHeads::masked_lm,
     false,
     {2, 7},
     7,
     true},
    {"BertForPreTraining_d12_b2_t7__defaultcols__depth3.txt",
     BertHeads::pretraining,
     false,
     {2, 7},
     3,
     false},
    {"BertForPreTraining_d12_b2_t7__allcols__depth7.txt",
     BertHeads::pretraining,
     false,
     {2, 7},
     7,
     true},
    {"BertModel_bertbase_b1_t8__defaultcols__depth3.txt", BertHeads::none, true, {1, 8}, 3, false},
    {"BertForPreTraining_bertbase_b1_t8__allcols__depth4.txt",
     BertHeads::pretraining,
     true,
     {1, 8},
     4,
     true},
};

}  // namespace

TEST_CASE("trace_bert's table equals torchinfo's for transformers' BERT classes",
          "[bert][summary]") {
  for (const GoldenCase& c : kCases) {
    DYNAMIC_SECTION(c.file) {
      const attn::BertConfig config = c.bert_base ? bert_config(768, 12, 3072, 12, 30522, 512)
                                                  : bert_config(12, 3, 20, 2, 59, 24);
      const bool pooler = c.heads != BertHeads::masked_lm;  // BertForMaskedLM has none
      const attn::SummaryOptions options = attn::testing::torchinfo_options(c.depth, c.all_columns);
      const std::string got =
          attn::format_summary(attn::describe_bert(config, c.heads, pooler),
                               attn::trace_bert(config, c.heads, c.ids, pooler),
                               {attn::SummaryInput{c.ids, sizeof(std::int64_t)}}, options);
      CHECK(got == attn::testing::torchinfo_golden("bert", c.file));
    }
  }
}

TEST_CASE("trace_bert refuses input_ids that are not (B,T)", "[bert][summary]") {
  CHECK_THROWS_AS(attn::trace_bert(bert_config(12, 3, 20, 2, 59, 24), BertHeads::none, {2, 7, 12}),
                  attn::Error);
}

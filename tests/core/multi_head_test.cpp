// Attention layers: module trees, state_dict keys, parameter counts against PyTorch's numbers,
// summaries against real torchinfo, and the identities lesson 05 teaches.
#include "multi_head.hpp"

#include <cmath>
#include <set>

#include <catch2/catch.hpp>

#include "allclose.hpp"
#include "dot_product.hpp"
#include "fixtures.hpp"
#include "state_dict.hpp"
#include "summary.hpp"

using attn::MultiHeadVariant;
using attn::Tensor3;

namespace {
constexpr const auto& kVariants = attn::kMultiHeadVariants;

// The keys and shapes visit_parameters offers, in order.
template <class Layer>
std::vector<attn::StateDictEntry> visited(Layer& layer) {
  std::vector<attn::StateDictEntry> out;
  visit_parameters(layer, [&](const std::string& key, float*, const attn::Shape& shape) {
    out.push_back({key, shape});
  });
  return out;
}

bool same_entries(const std::vector<attn::StateDictEntry>& a,
                  const std::vector<attn::StateDictEntry>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].key != b[i].key || a[i].shape != b[i].shape) return false;
  return true;
}
}  // namespace

TEST_CASE("parameter counts equal PyTorch's sum(p.numel())", "[multi-head][parameters]") {
  // Numbers from the issue and the notebooks, computed with python3-torch 1.13.
  CHECK(attn::count_parameters(attn::describe_self_attention(6)) == 108);
  CHECK(attn::count_parameters(attn::describe_multi_head(MultiHeadVariant::wide, 6, 8)) == 1158);
  CHECK(attn::count_parameters(attn::describe_multi_head(MultiHeadVariant::narrow, 256, 8)) ==
        262400);
  CHECK(attn::count_parameters(attn::describe_multi_head(MultiHeadVariant::book, 768, 12)) ==
        2362368);
  CHECK(attn::count_parameters(attn::describe_multi_head(MultiHeadVariant::fused, 512, 8)) ==
        4 * 512 * 512);
  CHECK(attn::count_parameters(attn::describe_attention_head(768, 64)) == 147648);
  // narrow's count does not depend on the number of heads
  for (std::size_t h : {1, 2, 4, 8, 16, 32})
    CHECK(attn::count_parameters(attn::describe_multi_head(MultiHeadVariant::narrow, 256, h)) ==
          262400);
}

TEST_CASE("a count past 2^63-1 (torch's int64) is refused, not wrapped",
          "[multi-head][parameters]") {
  // wide, H = 1: 4·D² + D parameters; D = 1518500249 is the largest that fits.
  CHECK(attn::count_parameters(attn::describe_multi_head(MultiHeadVariant::wide, 1518500249, 1)) ==
        9223372026370748253);
  for (const auto& [d, h] :
       {std::pair<std::size_t, std::size_t>{1518500250, 1}, {1000000000, 1000000000}}) {
    try {
      attn::describe_multi_head(MultiHeadVariant::wide, d, h);
      FAIL("no error for D = " << d << ", H = " << h);
    } catch (const attn::Error& e) {
      CHECK(e.kind() == attn::ErrorKind::too_large);
      CHECK(e.function() == "describe_multi_head");
      CHECK(e.detail() == "the wide MultiHeadAttention with D = " + std::to_string(d) +
                              " and H = " + std::to_string(h) + " has more than 2^63-1 parameters");
      CHECK(e.sizes() == std::vector<std::string>{"D", "H"});
    }
  }
  // D·H itself past 2^64 would wrap before anything is counted.
  CHECK_THROWS_AS(
      attn::describe_multi_head(MultiHeadVariant::wide, std::size_t{1} << 33, std::size_t{1} << 33),
      attn::Error);
  // A tree built by hand, two Linears of 2^62 weights: 2^63 is one too many; count_parameters
  // names the class.
  attn::Module big{"Big",
                   "",
                   {},
                   {attn::linear_module("a", std::size_t{1} << 32, std::size_t{1} << 30, false),
                    attn::linear_module("b", std::size_t{1} << 32, std::size_t{1} << 30, false)}};
  CHECK_THROWS_WITH(attn::count_parameters(big),
                    "[count_parameters] Big has more than 2^63-1 parameters");
  big.children.pop_back();
  CHECK(attn::count_parameters(big) == std::int64_t{1} << 62);
}

TEST_CASE("the visited parameters are exactly the module tree's state_dict",
          "[multi-head][state_dict]") {
  attn::Rng rng(1);
  for (MultiHeadVariant v : kVariants) {
    DYNAMIC_SECTION(attn::variant_name(v)) {
      attn::MultiHeadAttention layer = attn::init_multi_head(rng, v, 12, 3);
      CHECK(same_entries(visited(layer),
                         attn::state_dict_entries(attn::describe_multi_head(v, 12, 3))));
    }
  }
  attn::SelfAttention self = attn::init_self_attention(rng, 6);
  CHECK(same_entries(visited(self), attn::state_dict_entries(attn::describe_self_attention(6))));
  attn::AttentionHead head = attn::init_attention_head(rng, 6, 3);
  CHECK(same_entries(visited(head), attn::state_dict_entries(attn::describe_attention_head(6, 3))));
  const auto keys =
      attn::state_dict_entries(attn::describe_multi_head(MultiHeadVariant::book, 12, 3));
  CHECK(keys.front().key == "heads.0.q.weight");
  CHECK(keys.back().key == "output_linear.bias");
}

TEST_CASE("a state_dict round trip through load and collect keeps every value",
          "[multi-head][state_dict]") {
  attn::Rng rng(2);
  attn::MultiHeadAttention a = attn::init_multi_head(rng, MultiHeadVariant::book, 12, 3);
  attn::MultiHeadAttention b = attn::init_multi_head(rng, MultiHeadVariant::book, 12, 3);
  const attn::StateDict weights = attn::collect_state_dict(a);
  attn::load_state_dict(b, attn::describe_multi_head(MultiHeadVariant::book, 12, 3), weights,
                        "test");
  attn::Rng data(3);
  const Tensor3 x = attn::randn(data, 2, 5, 12);
  CHECK_ALLCLOSE(attn::to_array(forward(a, x, nullptr).output),
                 attn::to_array(forward(b, x, nullptr).output), attn::testing::Tolerance{0, 0});
}

TEST_CASE("weights of another model are refused, listing the keys", "[multi-head][state_dict]") {
  attn::Rng rng(4);
  attn::MultiHeadAttention wide = attn::init_multi_head(rng, MultiHeadVariant::wide, 6, 2);
  const attn::StateDict wrong = attn::collect_state_dict(wide);
  attn::MultiHeadAttention book = attn::init_multi_head(rng, MultiHeadVariant::book, 6, 2);
  CHECK_THROWS_WITH(
      attn::load_state_dict(book, attn::describe_multi_head(MultiHeadVariant::book, 6, 2), wrong,
                            "w.npz"),
      Catch::Contains("'w.npz' does not fit MultiHeadAttention") &&
          Catch::Contains("missing heads.0.q.weight") &&
          Catch::Contains("unexpected tokeys.weight"));
  // Same keys, other sizes: the shapes are named.
  attn::MultiHeadAttention narrow = attn::init_multi_head(rng, MultiHeadVariant::narrow, 6, 2);
  CHECK_THROWS_WITH(
      attn::load_state_dict(narrow, attn::describe_multi_head(MultiHeadVariant::narrow, 6, 2),
                            wrong, "w.npz"),
      Catch::Contains("tokeys.weight is (12, 6) but the model needs (6, 6)"));
}

TEST_CASE("book with zero biases computes the same function as fused with stacked weights",
          "[multi-head]") {
  attn::Rng rng(5);
  attn::BookMultiHead book = attn::init_book_multi_head(rng, 12, 3);
  for (attn::AttentionHead& h : book.heads)
    h.q.bias.fill(0), h.k.bias.fill(0), h.v.bias.fill(0);
  book.output_linear.bias.fill(0);
  const Tensor3 x = attn::randn(rng, 2, 5, 12);
  const Tensor3 mask = attn::attention_mask(2, 5, true, {5, 3});
  CHECK_ALLCLOSE(attn::to_array(forward(book, x, &mask).output),
                 attn::to_array(forward(attn::stack_book_heads(book), x, &mask).output));
}

TEST_CASE("heads sized by D/H: D not divisible by H is refused with both numbers", "[multi-head]") {
  CHECK_THROWS_WITH(attn::head_size(MultiHeadVariant::book, 10, 4),
                    Catch::Contains("[multi_head] d_model=10 is not divisible by heads=4"));
  CHECK(attn::head_size(MultiHeadVariant::wide, 10, 4) == 10);
  CHECK_THROWS_AS(attn::head_size(MultiHeadVariant::fused, 8, 0), attn::Error);
}

TEST_CASE("masks: causal hides the future, lengths hide the padding", "[attention][mask]") {
  const Tensor3 mask = attn::attention_mask(2, 4, true, {4, 2});
  attn::Rng rng(6);
  attn::SelfAttention layer = attn::init_self_attention(rng, 6);
  const Tensor3 x = attn::randn(rng, 2, 4, 6);
  const attn::AttentionSteps s = forward(layer, x, &mask);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t j = 0; j < 4; ++j)
        if (j > i || (b == 1 && j >= 2)) CHECK(s.weights(b, i, j) == 0.0f);
  CHECK_THROWS_WITH(attn::attention_mask(2, 4, false, {4}),
                    Catch::Contains("1 lengths for a batch of 2"));
  CHECK_THROWS_WITH(attn::attention_mask(1, 4, false, {5}), Catch::Contains("outside 1..4"));
}

TEST_CASE("summaries of the attention layers match real torchinfo", "[multi-head][summary]") {
  const std::string golden = std::string(ATTN_GOLDEN_DIR) + "/torchinfo/";
  attn::SummaryOptions seed_columns;
  seed_columns.col_names = {"input_size", "output_size", "kernel_size", "num_params", "mult_adds"};
  seed_columns.col_width = 16;
  const std::vector<attn::SummaryInput> input = {{{4, 5, 6}, 4}};

  CHECK(attn::format_summary(attn::trace_self_attention(6, {4, 5, 6}), input, {}) ==
        attn::testing::read_text(golden +
                                 "01_seed004_selfattention_k6__defaultcols__depthdefault.txt"));
  attn::SummaryOptions verbose2 = seed_columns;
  verbose2.verbose = 2;
  CHECK(attn::format_summary(attn::trace_self_attention(6, {4, 5, 6}), input, verbose2) ==
        attn::testing::read_text(
            golden + "01_seed004_selfattention_k6__seedcols_verbose2__depthdefault.txt"));
  const auto wide = attn::trace_multi_head(MultiHeadVariant::wide, 6, 8, {4, 5, 6});
  CHECK(attn::format_summary(wide, input, seed_columns) ==
        attn::testing::read_text(golden +
                                 "02_seed004_mha_wide_k6_h8__seedcols_verbose1__depth3.txt"));
  CHECK(attn::format_summary(wide, input, verbose2) ==
        attn::testing::read_text(golden +
                                 "02_seed004_mha_wide_k6_h8__seedcols_verbose2__depthdefault.txt"));
  attn::SummaryOptions old = verbose2;
  old.format = attn::TorchinfoFormat::v0_1;
  CHECK(attn::format_summary(attn::trace_self_attention(6, {4, 5, 6}), input, old) ==
        attn::testing::read_text(
            golden + "v0.1.0/01_seed004_selfattention_k6__seedcols_verbose2__depthdefault.txt"));
  CHECK(attn::format_summary(wide, input, old) ==
        attn::testing::read_text(
            golden + "v0.1.0/02_seed004_mha_wide_k6_h8__seedcols_verbose2__depthdefault.txt"));
}

TEST_CASE("the float64 forward of every variant is the float32 forward without its round-off",
          "[multi-head][float64]") {
  attn::Rng rng(8), data(9);
  const Tensor3 x = attn::randn(data, 2, 7, 12);
  const Tensor3 mask = attn::attention_mask(2, 7, true, {7, 4});
  for (MultiHeadVariant v : kVariants) {
    INFO(attn::variant_name(v));
    const attn::MultiHeadAttention layer = attn::init_multi_head(rng, v, 12, 3);
    for (const Tensor3* m : {static_cast<const Tensor3*>(nullptr), &mask}) {
      const Tensor3 single = forward(layer, x, m).output;
      const attn::Tensor3d twice = attn::forward_float64(layer, x, m);
      const float diff = attn::max_difference(single, twice);
      CHECK(diff > 0.0f);  // float32 rounds; float64 (almost) does not
      CHECK(diff <= 1e-6f);
    }
  }
  // A wrong reference would not be close: the heads of another layer give another function.
  const attn::MultiHeadAttention a = attn::init_multi_head(rng, MultiHeadVariant::book, 12, 3);
  const attn::MultiHeadAttention b = attn::init_multi_head(rng, MultiHeadVariant::book, 12, 3);
  CHECK(attn::max_difference(forward(a, x, nullptr).output, attn::forward_float64(b, x, nullptr)) >
        1e-2f);
}

TEST_CASE("the float64 attention of one head and of dot products match their float32 forms",
          "[attention][float64]") {
  attn::Rng rng(10), data(11);
  const Tensor3 x = attn::randn(data, 3, 9, 8);
  const attn::SelfAttention self = attn::init_self_attention(rng, 8);
  const attn::AttentionHead head = attn::init_attention_head(rng, 8, 5);
  const Tensor3 causal = attn::attention_mask(3, 9, true, {});
  CHECK(attn::max_difference(forward(self, x, &causal).output,
                             attn::forward_float64(self, x, &causal)) <= 1e-6f);
  CHECK(attn::max_difference(forward(head, x, nullptr).output,
                             attn::forward_float64(head, x, nullptr)) <= 1e-6f);
  for (float divisor : {1.0f, std::sqrt(8.0f)}) {
    CHECK(attn::max_difference(attn::dot_product_attention(x, divisor).output,
                               attn::dot_product_attention_float64(x, divisor)) <= 1e-5f);
  }
}

// core/head_scan: planted attention patterns are named for what they are, the probe set repeats
// its first half and nothing inside it, a GPT-2 with a hand-made previous-token head is found by
// the scan, and ablating that head changes the model's loss where ablating an idle head does not.
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "gpt2.hpp"
#include "head_scan.hpp"
#include "train/gpt2_ablation.hpp"

namespace {

// Two layers of three heads whose causal weights are planted by rule, on ids (B,T): layer 0 head 0
// on the previous token, head 1 on the first token, head 2 uniform; layer 1 head 0 on the token
// after the earlier copy (induction), head 1 on the earlier copy (duplicate), head 2 on itself.
std::vector<attn::Tensor4> planted(const attn::Ids& ids) {
  const std::size_t batch = ids.shape(0), tokens = ids.shape(1);
  std::vector<attn::Tensor4> out(2, attn::Tensor4::from_shape({batch, 3, tokens, tokens}));
  for (attn::Tensor4& w : out)
    w.fill(0.0f);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < tokens; ++t) {
      out[0](b, 0, t, t == 0 ? 0 : t - 1) = 1.0f;
      out[0](b, 1, t, 0) = 1.0f;
      for (std::size_t j = 0; j <= t; ++j)
        out[0](b, 2, t, j) = 1.0f / static_cast<float>(t + 1);
      std::size_t copy = t;
      for (std::size_t j = 0; j < t; ++j)
        if (ids(b, j) == ids(b, t)) copy = j;
      out[1](b, 0, t, copy < t ? copy + 1 : t) = 1.0f;
      out[1](b, 1, t, copy) = 1.0f;
      out[1](b, 2, t, t) = 1.0f;
    }
  return out;
}

attn::ProbeTokens letters() {
  return {0, 26, std::int64_t{26}, std::nullopt};
}

}  // namespace

TEST_CASE("the scan names planted heads for their patterns, and a uniform head for none",
          "[head_scan]") {
  attn::Rng rng(3);
  const attn::ProbeSet set = attn::repeated_probe(rng, 6, 21, letters());
  const attn::HeadScan scan =
      attn::scan_heads(planted, 2, 3, true, attn::standard_patterns(true), {set}, 4);
  const auto named = [&](std::size_t layer, std::size_t head) {
    const auto best = scan.best(layer, head);
    REQUIRE(best);
    return std::make_pair(scan.patterns[best->pattern].name, best->holds());
  };
  CHECK(named(0, 0) == std::make_pair(std::string("previous"), true));
  CHECK(named(0, 1) == std::make_pair(std::string("first"), true));
  CHECK(named(1, 0) == std::make_pair(std::string("induction"), true));
  CHECK(named(1, 1) == std::make_pair(std::string("duplicate"), true));
  CHECK(named(1, 2) == std::make_pair(std::string("diagonal"), true));
  CHECK_FALSE(named(0, 2).second);  // uniform: at uniform's share on every pattern
  const auto best = scan.best(0, 2);
  CHECK(std::abs(best->lift()) < 1e-6);
  // The induction head scores 1 on induction and nothing on the other heads' keys.
  std::size_t induction = 0;
  while (scan.patterns[induction].name != "induction")
    ++induction;
  CHECK(scan.score(0, induction, 1, 0).on_target == Approx(1.0));
  CHECK(scan.score(0, induction, 0, 1).on_target < 0.1);
  // The table's label for a head that holds its pattern takes the article its name needs.
  CHECK(attn::pattern_head("induction") == "an induction head");
  CHECK(attn::pattern_head("previous") == "a previous head");
}

TEST_CASE("repeated_probe: BOS, an odd token, a first half without repeats, then its copy",
          "[head_scan]") {
  attn::Rng rng(5);
  const attn::ProbeSet set = attn::repeated_probe(rng, 4, 12, letters());
  REQUIRE(set.ids.shape(0) == 4);
  REQUIRE(set.ids.shape(1) == 12);
  // BOS, 11 drawn tokens: one fresh, five, and the five again from position 7.
  CHECK(set.copies_from == 7);
  for (std::size_t s = 0; s < 4; ++s) {
    CHECK(set.ids(s, 0) == 26);
    std::set<std::int64_t> first = {set.ids(s, 1)};
    for (std::size_t t = 2; t <= 6; ++t) {
      first.insert(set.ids(s, t));
      CHECK(set.ids(s, t + 5) == set.ids(s, t));
      CHECK(set.ids(s, t) < 26);
    }
    CHECK(first.size() == 6);
  }
  attn::Rng again(5);
  const bool same = attn::repeated_probe(again, 4, 12, letters()).ids == set.ids;
  CHECK(same);
  CHECK_THROWS_AS(attn::repeated_probe(rng, 0, 12, letters()), attn::Error);
  CHECK_THROWS_AS(attn::repeated_probe(rng, 2, 2, letters()), attn::Error);
}

namespace {

// A one-block GPT-2 (D 16, 2 heads of 8, 8 positions, 8 tokens) by hand: token v embeds as e_{8+v}
// and position t as e_t, so ln_1 of every input is one scaled vector with two spikes. Head 0's
// query at t reads position t's spike moved to t-1 and its key reads position spikes: a
// previous-token head. Its value carries the token spikes, which c_proj writes back on the token
// dimensions: the stream after the block holds the previous token too. Head 1 is idle (no query,
// key or value). The MLP is zero; the LM head is wte.
attn::Gpt2 hand_made_gpt2() {
  attn::Gpt2Config c = attn::default_gpt2_config();
  c.sizes.hidden_size = 16;
  c.sizes.num_attention_heads = 2;
  c.sizes.intermediate_size = 4;
  c.sizes.num_hidden_layers = 1;
  c.sizes.vocab_size = 8;
  c.sizes.max_position_embeddings = 8;
  c.bos_token_id = c.eos_token_id = 7;
  attn::Rng rng(1);
  attn::Gpt2 model = attn::init_gpt2(rng, c);
  model.wte.weight.fill(0.0f);
  model.wpe.weight.fill(0.0f);
  for (std::size_t i = 0; i < 8; ++i) {
    model.wte.weight(i, 8 + i) = 1.0f;
    model.wpe.weight(i, i) = 1.0f;
  }
  attn::EncoderLayer& block = model.layers[0];
  block.layer_norm_1.weight.fill(1.0f);
  block.layer_norm_1.bias.fill(0.0f);
  for (attn::AttentionHead& head : block.attention.heads)
    for (attn::Linear* l : {&head.q, &head.k, &head.v}) {
      l->weight.fill(0.0f);
      l->bias.fill(0.0f);
    }
  attn::AttentionHead& previous = block.attention.heads[0];
  for (std::size_t i = 0; i < 8; ++i) {
    if (i + 1 < 8) previous.q.weight(i, i + 1) = 3.0f;  // position t's spike, as t-1's
    previous.k.weight(i, i) = 1.0f;
    previous.v.weight(i, 8 + i) = 1.0f;  // the key's token
  }
  block.attention.output_linear.weight.fill(0.0f);
  block.attention.output_linear.bias.fill(0.0f);
  for (std::size_t i = 0; i < 8; ++i)
    block.attention.output_linear.weight(8 + i, i) = 1.0f;
  for (attn::Linear* l : {&block.feed_forward.linear_1, &block.feed_forward.linear_2}) {
    l->weight.fill(0.0f);
    l->bias.fill(0.0f);
  }
  model.ln_f.weight.fill(1.0f);
  model.ln_f.bias.fill(0.0f);
  return model;
}

}  // namespace

TEST_CASE("a hand-made previous-token head is found, and only its ablation changes the loss",
          "[head_scan]") {
  attn::Gpt2 model = hand_made_gpt2();
  attn::Rng rng(2);
  const attn::ProbeSet set = attn::repeated_probe(rng, 5, 8, {0, 7, std::int64_t{7}, std::nullopt});
  const attn::HeadScan scan = attn::scan_heads(attn::gpt2_weights(model), 1, 2, true,
                                               attn::standard_patterns(true), {set}, 2);
  const auto best = scan.best(0, 0);
  REQUIRE(best);
  CHECK(scan.patterns[best->pattern].name == "previous");
  CHECK(best->score.on_target > 0.95);
  CHECK_FALSE(scan.best(0, 1)->holds());  // the idle head attends uniformly

  const auto ablated = [&](std::size_t head, attn::AblationMode mode) {
    return attn::measure_head_ablation(model, set.ids, {{0, head}}, mode);
  };
  const attn::HeadAblationEffect idle = ablated(1, attn::AblationMode::zero);
  const attn::HeadAblationEffect previous = ablated(0, attn::AblationMode::zero);
  CHECK(idle.loss_after == Approx(idle.loss_before).margin(1e-6));
  CHECK(std::abs(previous.loss_after - previous.loss_before) > 0.01);
  CHECK(previous.tokens == 5 * 7);
  // Its mean over the probe keeps what it writes on average, not the previous token itself.
  const attn::HeadAblationEffect mean = ablated(0, attn::AblationMode::mean);
  CHECK(std::abs(mean.loss_after - mean.loss_before) > 0.01);
  // Scored from the copy on: fewer predictions.
  CHECK(attn::measure_head_ablation(model, set.ids, {}, attn::AblationMode::zero, set.copies_from)
            .tokens == 5 * (7 - set.copies_from));
}

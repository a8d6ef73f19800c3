// The induction task (core/train/induction.hpp) and the attention-only engine under it: the
// engine's gradient against finite differences with the MLPs left out, the MLPs never trained,
// its logits against the readable GPT-2 forward (which runs the zero MLPs), the sequences and
// their held-out split, the ablation's rows of attn.c_proj, the composition scores.
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "fast/gpt_train.hpp"
#include "gpt2.hpp"
#include "io/weights.hpp"
#include "train/induction.hpp"
#include "train/tasks.hpp"

namespace {

attn::InductionConfig tiny_task() {
  attn::InductionConfig c;
  c.vocab = 6;
  c.tokens = 10;
  c.min_period = 3;
  c.max_period = 5;
  c.rule_steps = 2;
  c.layers = 2;
  c.heads = 2;
  c.d_model = 8;
  c.batch = 3;
  c.steps = 4;
  c.eval_sequences = 5;
  return c;
}

std::vector<std::int32_t> tiny_ids() {
  return {6, 1, 4, 1, 5, 2, 3, 5, 2, 3, 0, 4, 3, 2, 2, 1, 0, 5, 3, 1};  // (2,10)
}

}  // namespace

TEST_CASE("attention only: the gradient agrees with finite differences, the MLPs get none",
          "[induction]") {
  attn::GptModel model = attn::init_gpt(attn::induction_model_config(tiny_task()), 3, true);
  for (float& p : model.params)
    p *= 3.0f;  // away from uniform attention, where finite differences still hold
  const std::vector<std::int32_t> ids = tiny_ids();
  std::vector<std::int32_t> targets(ids.begin() + 1, ids.end());
  targets.push_back(2);
  attn::GptEngine engine(model, 2, 10);
  engine.forward(model, ids.data(), targets.data(), 2, 10);
  engine.backward(model, ids.data(), targets.data());
  const std::vector<float> grad = engine.gradient();
  for (const attn::GptTensor& t : model.tensors) {
    if (attn::mlp_tensor(t)) {
      for (std::size_t i = 0; i < t.count(); ++i)
        REQUIRE(grad[t.offset + i] == 0.0f);
      continue;
    }
    for (std::size_t i : {std::size_t{0}, t.count() / 2, t.count() - 1}) {
      const std::size_t at = t.offset + i;
      const float kept = model.params[at];
      const float h = 3e-3f;
      model.params[at] = kept + h;
      const double up = engine.forward(model, ids.data(), targets.data(), 2, 10);
      model.params[at] = kept - h;
      const double down = engine.forward(model, ids.data(), targets.data(), 2, 10);
      model.params[at] = kept;
      const double numeric = (up - down) / (2.0 * h);
      INFO(t.key << "[" << i << "]: backward " << grad[at] << ", finite differences " << numeric);
      CHECK(std::abs(numeric - grad[at]) <= 2e-3 + 2e-2 * std::abs(numeric));
    }
  }
}

TEST_CASE("attention only: AdamW never moves ln_2 or the MLP, whose weights stay zero",
          "[induction]") {
  attn::GptModel model = attn::init_gpt(attn::induction_model_config(tiny_task()), 4, true);
  const attn::GptModel before = model;
  const std::vector<std::int32_t> ids = tiny_ids();
  attn::GptEngine engine(model, 2, 10);
  attn::GptOptimizer optimizer;
  for (int step = 0; step < 3; ++step) {
    engine.forward(model, ids.data(), ids.data(), 2, 10);
    engine.backward(model, ids.data(), ids.data());
    engine.update(model, optimizer, 0.01f);
  }
  bool moved = false;
  for (const attn::GptTensor& t : model.tensors)
    for (std::size_t i = 0; i < t.count(); ++i) {
      const float now = model.params[t.offset + i], was = before.params[t.offset + i];
      if (attn::mlp_tensor(t)) {
        REQUIRE(now == was);
        if (t.key.find(".mlp.") != std::string::npos) REQUIRE(now == 0.0f);
      } else {
        moved = moved || now != was;
      }
    }
  CHECK(moved);
}

TEST_CASE("attention only: the engine's logits equal GPT-2's readable forward on the saved model",
          "[induction]") {
  const attn::Gpt2Config config = attn::induction_model_config(tiny_task());
  attn::GptModel model = attn::init_gpt(config, 5, true);
  for (float& p : model.params)
    p *= 20.0f;
  attn::StateDict saved = attn::gpt_state_dict(model);
  const attn::Gpt2 readable = attn::load_gpt2(config, std::move(saved), "the engine's model");
  const std::vector<std::int32_t> ids = tiny_ids();
  attn::Gpt2Input input;
  input.ids = attn::Ids::from_shape({2, 10});
  for (std::size_t i = 0; i < ids.size(); ++i)
    input.ids.flat(i) = ids[i];
  const attn::Gpt2Steps steps = attn::forward(readable, input);
  attn::GptEngine engine(model, 2, 10);
  engine.forward(model, ids.data(), nullptr, 2, 10);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 10; ++t)
      for (std::size_t v = 0; v < 7; ++v) {
        INFO("logit (" << b << ", " << t << ", " << v << ")");
        REQUIRE(engine.logits(b, t)[v] == Approx(steps.logits(b, t, v)).margin(1e-4).epsilon(1e-4));
      }
  // The engine's attention weights are the readable forward's, (B,H,T,T) per block.
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t i = 0; i < 2 * 2 * 10 * 10; ++i)
      REQUIRE(engine.attention(l)[i] ==
              Approx(steps.layers[l].attention.weights.flat(i)).margin(1e-5));
}

TEST_CASE("induction sequences: BOS, random tokens, a segment and its copy", "[induction]") {
  const attn::InductionConfig c = tiny_task();
  attn::Rng rng(11);
  std::set<std::size_t> starts, periods;
  for (int i = 0; i < 50; ++i) {
    const bool held_out = i % 2 == 1;
    const attn::InductionSequence s = attn::draw_induction_sequence(c, rng, 0.0, held_out);
    REQUIRE(s.ids.size() == c.tokens + 1);
    CHECK(s.ids[0] == static_cast<std::int32_t>(c.vocab));
    CHECK(s.period >= c.min_period);
    CHECK(s.period <= c.max_period);
    CHECK(s.start >= 1);
    CHECK(s.start + 2 * s.period <= c.tokens + 1);
    starts.insert(s.start);
    periods.insert(s.period);
    for (std::size_t t = 1; t <= c.tokens; ++t) {
      CHECK(s.ids[t] < static_cast<std::int32_t>(c.vocab));
      if (t >= s.start + s.period && t < s.start + 2 * s.period)
        CHECK(s.ids[t] == s.ids[t - s.period]);
    }
    CHECK(attn::held_out_tokens(std::vector<std::int64_t>(s.ids.begin(), s.ids.end())) == held_out);
    // The copy's predictions after its first token are the repeats.
    for (std::size_t t = 0; t < c.tokens; ++t)
      CHECK(attn::predicts_repeat(s, t) ==
            (t >= s.start + s.period && t + 1 < s.start + 2 * s.period));
  }
  CHECK(starts.size() > 1);  // no fixed position finds the copy
  CHECK(periods.size() == c.max_period - c.min_period + 1);
}

TEST_CASE("the rule: outside the pair, the token two back predicts the next, fading to 0",
          "[induction]") {
  attn::InductionConfig c = tiny_task();
  c.vocab = 20;
  c.tokens = 40;
  c.rule_steps = 10;
  const std::vector<std::int32_t> rule = attn::induction_rule(c.vocab);
  CHECK(std::set<std::int32_t>(rule.begin(), rule.end()).size() == c.vocab);  // a permutation
  CHECK(rule == attn::induction_rule(c.vocab));
  c.rule_floor = 0.1f;
  CHECK(attn::rule_probability(c, 0) == Approx(0.5));
  CHECK(attn::rule_probability(c, 5) == Approx(0.3));
  CHECK(attn::rule_probability(c, 10) == Approx(0.1));
  CHECK(attn::rule_probability(c, 11) == Approx(0.1));
  c.rule_floor = 0.0f;
  CHECK(attn::rule_probability(c, 10) == 0.0);
  const auto followed = [&](double probability) {
    attn::Rng rng(5);
    std::size_t followers = 0, outside = 0;
    for (int i = 0; i < 200; ++i) {
      const attn::InductionSequence s = attn::draw_induction_sequence(c, rng, probability);
      for (std::size_t t = 3; t <= c.tokens; ++t) {
        const bool in_pair = t >= s.start && t < s.start + 2 * s.period;
        if (in_pair) continue;
        ++outside;
        followers += s.ids[t] == rule[static_cast<std::size_t>(s.ids[t - 2])] ? 1 : 0;
      }
    }
    return static_cast<double>(followers) / static_cast<double>(outside);
  };
  // With probability p a token follows the rule, else it is drawn: p + (1 - p) / V of them match.
  CHECK(followed(0.0) == Approx(1.0 / 20).margin(0.02));
  CHECK(followed(1.0) == 1.0);
  CHECK(followed(0.5) == Approx(0.5 + 0.5 / 20).margin(0.03));
}

TEST_CASE("no training sequence is a held-out one, replayed", "[induction]") {
  attn::InductionConfig c = tiny_task();
  c.steps = 30;
  const attn::InductionReplay replay = attn::replay_induction_training(c);
  CHECK(replay.drawn == 30 * c.batch);
  CHECK(replay.on_held_out_side == 0);
  CHECK(replay.equal_to_held_out == 0);
  std::set<std::vector<std::int32_t>> held;
  for (const attn::InductionSequence& s : attn::held_out_sequences(c))
    held.insert(s.ids);
  CHECK(!held.empty());
}

TEST_CASE("zero-ablation zeroes the head's rows of attn.c_proj's Conv1D weight", "[induction]") {
  const attn::GptModel model = attn::init_gpt(attn::induction_model_config(tiny_task()), 6, true);
  const attn::GptModel ablated = attn::ablate_head(model, 1, 1);
  const attn::StateDict before = attn::gpt_state_dict(model), after = attn::gpt_state_dict(ablated);
  const std::vector<float> w =
      attn::to_float_vector(after.at("transformer.h.1.attn.c_proj.weight"));
  const std::vector<float> kept =
      attn::to_float_vector(before.at("transformer.h.1.attn.c_proj.weight"));
  for (std::size_t row = 0; row < 8; ++row)  // (in, out) = (8, 8); head 1 reads rows 4..7
    for (std::size_t col = 0; col < 8; ++col)
      CHECK(w[row * 8 + col] == (row >= 4 ? 0.0f : kept[row * 8 + col]));
  CHECK(before.at("transformer.h.0.attn.c_proj.weight").bytes ==
        after.at("transformer.h.0.attn.c_proj.weight").bytes);
  CHECK_THROWS_AS(attn::ablate_head(model, 2, 0), attn::Error);
}

TEST_CASE("the composition scores lie in [0, 1], and a head's keys reading a head's output score 1",
          "[induction]") {
  // Head 0.0 writes only along e0 (W_OV = e0 e0ᵀ); head 1.0 keys read only e0 (W_QK = e0 e0ᵀ):
  // ‖W_QK W_OV‖ = ‖W_QK‖ ‖W_OV‖, a K-composition of 1, and no V-composition.
  attn::InductionConfig c = tiny_task();
  attn::GptModel model = attn::init_gpt(attn::induction_model_config(c), 7, true);
  const std::size_t D = 8;
  for (std::size_t layer = 0; layer < 2; ++layer) {
    float* qkv = model.at(2 + layer * 12 + 2);   // (3D, D)
    float* proj = model.at(2 + layer * 12 + 4);  // (D, D)
    std::fill_n(qkv, 3 * D * D, 0.0f);
    std::fill_n(proj, D * D, 0.0f);
    if (layer == 0) {
      qkv[2 * D * D] = 1.0f;  // v row 0 reads e0
      proj[0] = 1.0f;         // o writes e0 from v's row 0
    } else {
      qkv[0] = 1.0f;                      // q row 0 reads e0
      qkv[D * D] = 1.0f;                  // k row 0 reads e0
      qkv[2 * D * D + 1 * D + 1] = 1.0f;  // v row 1 reads e1
      proj[1 * D + 1] = 1.0f;             // o writes e1
    }
  }
  const attn::Composition found = attn::composition(model, 0, 0);
  CHECK(found.k == Approx(1.0));
  CHECK(found.q == Approx(1.0));
  CHECK(found.v == Approx(0.0).margin(1e-12));
  const attn::Composition random = attn::random_composition(8, 4, 20, 1);
  for (double x : {random.q, random.k, random.v}) {
    CHECK(x > 0.0);
    CHECK(x < 1.0);
  }
}

TEST_CASE("the induction config refuses sizes the task cannot have", "[induction]") {
  attn::InductionConfig c = tiny_task();
  c.vocab = 53;
  CHECK_THROWS_AS(attn::check_induction_config(c), attn::Error);
  c = tiny_task();
  c.min_period = c.max_period + 1;
  CHECK_THROWS_AS(attn::check_induction_config(c), attn::Error);
  c = tiny_task();
  c.max_period = c.tokens / 2 + 1;  // the segment and its copy do not fit
  CHECK_THROWS_AS(attn::check_induction_config(c), attn::Error);
  c = tiny_task();
  c.rule = 1.5f;
  CHECK_THROWS_AS(attn::check_induction_config(c), attn::Error);
  c = tiny_task();
  c.heads = 3;
  CHECK_THROWS_AS(attn::check_induction_config(c), attn::Error);
}

TEST_CASE("the run's record reads back from the checkpoint's metadata", "[induction]") {
  attn::InductionConfig c = tiny_task();
  attn::InductionTraining training(c);
  std::vector<attn::InductionEvaluation> history{training.evaluate()};
  training.step();
  history.push_back(training.evaluate());
  const attn::Metadata metadata{{"attn_induction", attn::induction_record(c, history)}};
  const attn::InductionRecord back = attn::read_induction_record(metadata, "saved");
  CHECK(back.config.vocab == c.vocab);
  CHECK(back.config.tokens == c.tokens);
  CHECK(back.config.max_period == c.max_period);
  CHECK(back.config.rule_steps == c.rule_steps);
  REQUIRE(back.history.size() == 2);
  CHECK(back.history[1].step == 1);
  CHECK(back.history[1].measure.repeat_loss == history[1].measure.repeat_loss);
  CHECK(back.history[1].measure.induction[1][0].on_target ==
        history[1].measure.induction[1][0].on_target);
  CHECK_THROWS_AS(attn::read_induction_record({}, "saved"), attn::Error);
  CHECK_THROWS_AS(attn::read_induction_record({{"attn_induction", "{}"}}, "saved"), attn::Error);
}

// GPT-2's forward with interventions (core/interp.hpp): with none it is forward(Gpt2); zeroing a
// head is zeroing the c_proj columns that read it; a batch whose rows carry different
// interventions is those runs one by one; activation patching and direct logit attribution match
// PyTorch's hooks (data/make_patch_fixture.py writes data/fixtures/patch/cases.json); and on
// weights made so that one head alone carries the earlier tokens, patching, attribution and
// ablation all name that head.
// Legend: B batch, T tokens, D n_embd, H n_head, hs head size, V vocab_size, L n_layer.
#include "interp.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "allclose.hpp"
#include "base/error.hpp"
#include "fixtures.hpp"
#include "io/pretrained.hpp"
#include "train/gpt2_ablation.hpp"

namespace {

using attn::Ids;
using attn::Tensor2;
using attn::Tensor3;

attn::Gpt2 load_d21() {
  const attn::PretrainedFolder opened =
      attn::open_pretrained(attn::testing::fixture_path("gpt2/d21_lm"));
  return attn::load_gpt2(attn::gpt2_config(opened), attn::read_pretrained_weights(opened),
                         opened.shown);
}

nlohmann::json patch_cases() {
  return nlohmann::json::parse(
      attn::testing::read_text(attn::testing::fixture_path("patch/cases.json")));
}

Ids ids_of(const std::vector<std::int64_t>& values) {
  Ids ids = Ids::from_shape({1, values.size()});
  std::copy(values.begin(), values.end(), ids.begin());
  return ids;
}

template <std::size_t N>
attn::Array array_of(const xt::xtensor<float, N>& t) {
  return attn::to_array(t);
}
attn::Array array_of(const nlohmann::json& rows) {  // a JSON list of lists of numbers
  Tensor2 out = Tensor2::from_shape({rows.size(), rows[0].size()});
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < rows[i].size(); ++j)
      out(i, j) = rows[i][j].get<float>();
  return attn::to_array(out);
}

const attn::testing::Tolerance kProduct{1e-4, 1e-4};  // through products: last bits differ

}  // namespace

TEST_CASE("with no intervention the forward is forward(Gpt2): logits, streams, heads, weights") {
  const attn::Gpt2 model = load_d21();
  Ids ids = Ids::from_shape({2, 7});
  for (std::size_t i = 0; i < ids.size(); ++i)
    ids.data()[i] = std::int64_t(i * 37 % 297);
  const attn::Gpt2Steps plain = attn::forward(model, {ids, {}});
  const attn::InterpRun run = attn::forward_with_interventions(model, ids);
  CHECK_ALLCLOSE(array_of(run.logits), array_of(plain.logits), kProduct);
  REQUIRE(run.residual.size() == model.layers.size() + 1);
  for (std::size_t l = 0; l <= model.layers.size(); ++l) {
    INFO("layer " << l);
    const Tensor3& expected = l == 0 ? plain.embedded : plain.layers[l - 1].output;
    CHECK_ALLCLOSE(array_of(run.residual[l]), array_of(expected), kProduct);
  }
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    CHECK_ALLCLOSE(array_of(run.heads[l]), array_of(plain.layers[l].attention.concatenated),
                   kProduct);
    CHECK_ALLCLOSE(array_of(run.attention[l]), array_of(plain.layers[l].attention.weights),
                   kProduct);
  }
  const attn::InterpRun last =
      attn::forward_with_interventions(model, ids, {}, false, attn::InterpLogits::last);
  CHECK(last.residual.empty());
  CHECK_ALLCLOSE(array_of(last.logits),
                 array_of(Tensor3(xt::view(plain.logits, xt::all(), xt::range(6, 7), xt::all()))),
                 kProduct);
}

TEST_CASE("zero-ablating a head equals zeroing the c_proj rows (Conv1D's in axis) that read it") {
  const attn::Gpt2 model = load_d21();
  const Ids ids = ids_of({5, 80, 13, 200, 7, 41});
  const std::size_t hs = 7;  // D 21 / H 3
  attn::Interventions zero;
  zero.heads.push_back(
      {1, 2, std::nullopt, std::nullopt, Tensor2(xt::zeros<float>({std::size_t{6}, hs}))});
  const attn::InterpRun ablated = attn::forward_with_interventions(model, ids, zero);

  attn::Gpt2 cut = model;
  auto& w = cut.layers[1].attention.output_linear.weight;  // (D_out, H·hs): Conv1D's transpose
  xt::view(w, xt::all(), xt::range(2 * hs, 3 * hs)) = 0.0f;
  const attn::Gpt2Steps plain = attn::forward(cut, {ids, {}});
  CHECK_ALLCLOSE(array_of(ablated.logits), array_of(plain.logits), kProduct);
  // and the ablated slice is what the cache holds
  CHECK(xt::amax(xt::abs(xt::view(ablated.heads[1], xt::all(), xt::all(),
                                  xt::range(2 * hs, 3 * hs))))() == 0.0f);
}

TEST_CASE("a batch whose rows carry different interventions is those runs one by one") {
  const attn::Gpt2 model = load_d21();
  const Ids one = ids_of({40, 71, 11, 203, 99});
  const Ids rows = xt::repeat(one, 3, 0);  // (3,5)
  Tensor2 values = xt::ones<float>({5, 7}) * 0.5f;
  attn::Tensor1 stream = xt::linspace<float>(-1.0f, 1.0f, 21);
  attn::Interventions batched;
  batched.heads.push_back({0, 1, std::size_t{0}, std::size_t{3}, values});
  batched.residual.push_back({1, 1, 2, stream});
  // row 2: nothing
  const attn::InterpRun together =
      attn::forward_with_interventions(model, rows, batched, false, attn::InterpLogits::last);

  attn::Interventions head_alone, stream_alone;
  head_alone.heads.push_back({0, 1, std::size_t{0}, std::size_t{3}, values});
  stream_alone.residual.push_back({1, 0, 2, stream});
  const Tensor3 expected[] = {
      attn::forward_with_interventions(model, one, head_alone, false, attn::InterpLogits::last)
          .logits,
      attn::forward_with_interventions(model, one, stream_alone, false, attn::InterpLogits::last)
          .logits,
      attn::forward_with_interventions(model, one, {}, false, attn::InterpLogits::last).logits};
  for (std::size_t b = 0; b < 3; ++b) {
    INFO("row " << b);
    CHECK_ALLCLOSE(array_of(Tensor3(xt::view(together.logits, xt::range(b, b + 1)))),
                   array_of(expected[b]), kProduct);
  }
  // the interventions change what they touch
  CHECK(std::fabs(expected[0](0, 0, 0) - expected[2](0, 0, 0)) > 1e-4f);
  CHECK(std::fabs(expected[1](0, 0, 0) - expected[2](0, 0, 0)) > 1e-4f);
}

TEST_CASE("activation patching and direct logit attribution match PyTorch's hooks") {
  const nlohmann::json cases = patch_cases();
  const attn::Gpt2 model = load_d21();
  const Ids clean = ids_of(cases["clean_ids"].get<std::vector<std::int64_t>>());
  const Ids corrupt = ids_of(cases["corrupt_ids"].get<std::vector<std::int64_t>>());
  const std::int64_t answer = cases["answer"], wrong = cases["wrong"];
  const attn::Patching p = attn::activation_patching(model, clean, corrupt, answer, wrong);
  CHECK(p.clean == Approx(cases["clean_difference"].get<double>()).margin(1e-4));
  CHECK(p.corrupt == Approx(cases["corrupt_difference"].get<double>()).margin(1e-4));
  CHECK_ALLCLOSE(array_of(p.residual_difference), array_of(cases["residual"]), kProduct);
  CHECK_ALLCLOSE(array_of(p.heads_difference), array_of(cases["heads"]), kProduct);
  // patching the clean stream at the only changed position before block 0 restores all of it
  CHECK(p.residual(0, 2) == Approx(1.0).margin(1e-4));
  CHECK(p.residual(0, 0) == Approx(0.0).margin(1e-4));

  const attn::InterpRun run = attn::forward_with_interventions(model, clean);
  const attn::LogitAttribution a = attn::direct_logit_attribution(model, run, 0, answer, wrong);
  const nlohmann::json& dla = cases["dla"];
  CHECK(a.embeddings == Approx(dla["embeddings"].get<double>()).margin(1e-4));
  CHECK(a.biases == Approx(dla["biases"].get<double>()).margin(1e-4));
  CHECK_ALLCLOSE(array_of(a.heads), array_of(dla["heads"]), kProduct);
  for (std::size_t l = 0; l < a.mlps.size(); ++l)
    CHECK(a.mlps[l] == Approx(dla["mlps"][l].get<double>()).margin(1e-4));
  CHECK(a.total == Approx(a.difference).margin(1e-4));
  CHECK(a.difference == Approx(p.clean).margin(1e-4));
}

namespace {

// Two blocks of two heads in which head 0.1 alone carries the earlier tokens to the last
// position: every other head's c_proj columns are 0 and the MLPs write nothing, so the last
// position sees position 0 only through head 0.1.
attn::Gpt2 one_head_carries() {
  attn::Gpt2Config config = attn::default_gpt2_config();
  config.sizes.hidden_size = 8;
  config.sizes.num_attention_heads = 2;
  config.sizes.intermediate_size = 16;
  config.sizes.num_hidden_layers = 2;
  config.sizes.vocab_size = 6;
  config.sizes.max_position_embeddings = 8;
  attn::Rng rng(5);
  attn::Gpt2 model = attn::init_gpt2(rng, config);
  for (std::size_t l = 0; l < 2; ++l) {
    auto& c_proj = model.layers[l].attention.output_linear;
    for (std::size_t h = 0; h < 2; ++h)
      if (!(l == 0 && h == 1)) xt::view(c_proj.weight, xt::all(), xt::range(h * 4, h * 4 + 4)) = 0;
    model.layers[l].feed_forward.linear_2.weight.fill(0.0f);
    model.layers[l].feed_forward.linear_2.bias.fill(0.0f);
  }
  // a head that reads position 0: its queries and keys are 0, so it averages every position
  model.layers[0].attention.heads[1].q.weight.fill(0.0f);
  model.layers[0].attention.heads[1].q.bias.fill(0.0f);
  return model;
}

}  // namespace

TEST_CASE("when one head carries the answer, patching, attribution and ablation name it") {
  const attn::Gpt2 model = one_head_carries();
  const Ids clean = ids_of({1, 4, 2, 3}), corrupt = ids_of({5, 4, 2, 3});  // position 0 differs
  const attn::InterpRun clean_run = attn::forward_with_interventions(model, clean);
  const attn::InterpRun corrupt_run = attn::forward_with_interventions(model, corrupt);
  // the answer and the wrong token: the two whose logits move the most apart between the runs
  std::int64_t answer = 0, wrong = 1;
  float best = -1;
  for (std::int64_t a = 0; a < 6; ++a)
    for (std::int64_t w = 0; w < 6; ++w) {
      const float gap = attn::logit_differences(clean_run.logits, a, w)[0] -
                        attn::logit_differences(corrupt_run.logits, a, w)[0];
      if (gap > best) best = gap, answer = a, wrong = w;
    }
  REQUIRE(best > 1e-3f);
  const attn::Patching p = attn::activation_patching(model, clean, corrupt, answer, wrong);
  CHECK(p.heads(0, 1) == Approx(1.0).margin(1e-4));  // head 0.1 restores all of it
  CHECK(p.heads(0, 0) == Approx(0.0).margin(1e-4));
  CHECK(p.heads(1, 0) == Approx(0.0).margin(1e-4));
  CHECK(p.heads(1, 1) == Approx(0.0).margin(1e-4));
  CHECK(p.residual(0, 0) == Approx(1.0).margin(1e-4));  // the changed token, before block 0
  CHECK(p.residual(0, 3) == Approx(0.0).margin(1e-4));
  CHECK(p.residual(1, 0) == Approx(0.0).margin(1e-4));  // after block 0 it is at the last position
  CHECK(p.residual(1, 3) == Approx(1.0).margin(1e-4));

  const attn::LogitAttribution a =
      attn::direct_logit_attribution(model, clean_run, 0, answer, wrong);
  CHECK(a.heads(0, 0) == 0.0f);  // its c_proj columns are 0
  CHECK(a.heads(1, 0) == 0.0f);
  CHECK(a.heads(1, 1) == 0.0f);
  CHECK(a.mlps[0] == 0.0f);
  CHECK(a.total == Approx(a.difference).margin(1e-5));

  // ablating head 0.1 makes the clean and the corrupt run alike; ablating 0.0 changes nothing
  attn::Interventions ablate;
  ablate.heads.push_back({0, 1, std::nullopt, std::nullopt, xt::zeros<float>({4, 4})});
  const float clean_after = attn::logit_differences(
      attn::forward_with_interventions(model, clean, ablate, false).logits, answer, wrong)[0];
  const float corrupt_after = attn::logit_differences(
      attn::forward_with_interventions(model, corrupt, ablate, false).logits, answer, wrong)[0];
  CHECK(clean_after == Approx(corrupt_after).margin(1e-5));

  Ids probe = Ids::from_shape({3, 4});
  for (std::size_t i = 0; i < probe.size(); ++i)
    probe.data()[i] = std::int64_t(i * 5 % 6);
  const attn::HeadAblationEffect kept =
      attn::measure_head_ablation(model, probe, {{0, 0}}, attn::AblationMode::zero);
  CHECK(kept.tokens == 9);
  CHECK(kept.loss_after == Approx(kept.loss_before).margin(1e-6));
  const attn::HeadAblationEffect lost =
      attn::measure_head_ablation(model, probe, {{0, 1}}, attn::AblationMode::zero);
  CHECK(std::fabs(lost.loss_after - lost.loss_before) > 1e-4);
  const attn::HeadAblationEffect mean =
      attn::measure_head_ablation(model, probe, {{0, 1}}, attn::AblationMode::mean);
  CHECK(std::fabs(mean.loss_after - mean.loss_before) > 1e-4);
  CHECK(mean.accuracy_before == lost.accuracy_before);
}

TEST_CASE("interventions and patching refuse what the model does not have") {
  const attn::Gpt2 model = load_d21();
  const Ids ids = ids_of({1, 2, 3});
  attn::Interventions bad;
  bad.heads.push_back({2, 0, std::nullopt, std::nullopt, xt::zeros<float>({3, 7})});
  CHECK_THROWS_WITH(attn::forward_with_interventions(model, ids, bad),
                    Catch::Contains("head 2.0 but the model has 2 layers of 3 heads"));
  bad.heads = {{0, 0, std::nullopt, std::nullopt, xt::zeros<float>({3, 6})}};
  CHECK_THROWS_WITH(attn::forward_with_interventions(model, ids, bad),
                    Catch::Contains("values are (3, 6) but (T, hs) is (3, 7)"));
  CHECK_THROWS_WITH(attn::activation_patching(model, ids, ids_of({1, 2}), 0, 1),
                    Catch::Contains("the same T"));
  CHECK_THROWS_WITH(attn::activation_patching(model, ids, ids, 0, 1),
                    Catch::Contains("nothing to restore"));
  CHECK_THROWS_WITH(attn::activation_patching(model, ids, ids_of({1, 2, 4}), 0, 297),
                    Catch::Contains("token id 297 is outside the vocabulary"));
  CHECK_THROWS_WITH(attn::measure_head_ablation(model, ids, {{0, 0}}, attn::AblationMode::mean),
                    Catch::Contains("at least 2 sequences"));
  CHECK_THROWS_WITH(
      attn::measure_head_ablation(model, xt::repeat(ids, 2, 0), {{0, 3}}, attn::AblationMode::zero),
      Catch::Contains("head 0.3 but the model has 2 layers of 3 heads"));
}

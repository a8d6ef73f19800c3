#include "18-induction/induction_lesson.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "base/count.hpp"
#include "base/error.hpp"

namespace attn::lessons {

namespace {

std::string with_commas(std::size_t n) {
  return attn::with_commas(static_cast<std::int64_t>(n));
}

std::string sequence_text(const std::vector<std::int32_t>& ids, std::size_t vocab) {
  std::string out;
  for (std::int32_t id : ids)
    out += static_cast<std::size_t>(id) == vocab ? '|' : token_letter(static_cast<std::size_t>(id));
  return out;
}

std::string head_name(std::size_t layer, std::size_t head) {
  return fmt::format("{}.{}", layer, head);
}

std::string score_text(const HeadPatternScore& s) {
  return fmt::format("{:.3f}", s.on_target);
}

// The head of `layer` with the highest score.
std::size_t best_head(const std::vector<std::vector<HeadPatternScore>>& scores, std::size_t layer) {
  const auto& row = scores[layer];
  return static_cast<std::size_t>(
      std::max_element(row.begin(), row.end(),
                       [](const HeadPatternScore& a, const HeadPatternScore& b) {
                         return a.on_target < b.on_target;
                       }) -
      row.begin());
}

}  // namespace

InductionLessonResult run_induction(InductionLessonOptions o) {
  InductionLessonResult result{LessonRun("induction"), {}, {}, {}, 0, 0};
  LessonRun& run = result.run;
  const InductionConfig& c = o.config;
  check_induction_config(c);
  const bool trains = !o.trained;
  const std::size_t V = c.vocab, T = c.tokens;
  const double ln_v = std::log(static_cast<double>(V));

  run.setting("task", "induction");
  run.setting("model", trains ? "attention-only gpt" : o.name);
  run.setting("V", std::to_string(V));
  run.setting("T", std::to_string(T));
  run.setting("segment", fmt::format("{} to {}", c.min_period, c.max_period));
  run.setting("rule", fmt::format("{:g} to 0 by step {}", c.rule, c.rule_steps));
  run.setting("layers", std::to_string(c.layers));
  run.setting("D", std::to_string(c.d_model));
  run.setting("H", std::to_string(c.heads));
  run.setting("steps", std::to_string(c.steps));
  run.setting("batch", std::to_string(c.batch));
  run.setting("lr", fmt::format("{:g}", c.lr));
  run.setting("seed", std::to_string(c.seed));

  run.section("task");
  const std::vector<InductionSequence> held_out = held_out_sequences(c);
  Table examples{"Held-out sequences: BOS (|), random tokens, a segment of m and its copy from s",
                 {"sequence", "segment m", "starts at s", "tokens"},
                 {}};
  for (std::size_t i = 0; i < 3; ++i)
    examples.rows.push_back({std::to_string(i), std::to_string(held_out[i].period),
                             std::to_string(held_out[i].start), sequence_text(held_out[i].ids, V)});
  run.table(std::move(examples));
  const InductionReplay replay = replay_induction_training(c);
  run.check("no training sequence is a held-out one",
            replay.on_held_out_side == 0 && replay.equal_to_held_out == 0,
            fmt::format("the {} sequences of {} steps of {}, replayed from seed {}: {} on the "
                        "held-out side of the hash, {} equal to one of the {} held-out sequences",
                        with_commas(replay.drawn), with_commas(c.steps), c.batch, c.seed,
                        replay.on_held_out_side, replay.equal_to_held_out, held_out.size()));

  run.section("model");
  std::unique_ptr<InductionTraining> training;
  if (trains) training = std::make_unique<InductionTraining>(c);
  result.model = trains ? training->model() : std::move(*o.trained);
  {
    const GptModel& model = result.model;
    run.parameters = static_cast<std::int64_t>(model.params.size());
    std::size_t trained = 0;
    float mlp_max = 0.0f;
    for (const GptTensor& t : model.tensors) {
      if (!mlp_tensor(t)) {
        trained += t.count();
        continue;
      }
      if (t.key.find(".mlp.") == std::string::npos) continue;
      for (std::size_t i = 0; i < t.count(); ++i)
        mlp_max = std::max(mlp_max, std::fabs(model.params[t.offset + i]));
    }
    Table sizes{"The model: GPT-2's blocks without their MLPs", {"", "value"}, {}};
    sizes.rows.push_back({"blocks", fmt::format("{} (pre-LN causal self-attention, {} heads of {} "
                                                "numbers)",
                                                c.layers, c.heads, c.d_model / c.heads)});
    sizes.rows.push_back({"embeddings", fmt::format("wte ({}, {}), wpe ({}, {}); wte is the LM "
                                                    "head too",
                                                    V + 1, c.d_model, T, c.d_model)});
    sizes.rows.push_back({"parameters trained", with_commas(trained)});
    sizes.rows.push_back(
        {"ln_2 and MLP", fmt::format("{} numbers kept for GPT2LMHeadModel, never trained",
                                     with_commas(model.params.size() - trained))});
    run.table(std::move(sizes));
    run.check("every MLP weight is zero, so each MLP adds gelu(0) = 0", mlp_max == 0.0f,
              fmt::format("max |mlp.*| = {:g}", mlp_max));
  }

  // Training (attn train --task induction), an evaluation every eval_interval steps.
  std::vector<InductionEvaluation>& history = result.history;
  if (trains) {
    const auto clock = std::chrono::steady_clock::now();
    const auto evaluate = [&] {
      InductionEvaluation e = training->evaluate();
      e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - clock).count();
      if (o.on_evaluation) o.on_evaluation(e);
      history.push_back(std::move(e));
    };
    evaluate();
    while (training->steps_done() < c.steps) {
      const float loss = training->step();
      result.losses.push_back(loss);
      if (o.on_step) o.on_step(training->steps_done(), loss);
      if (training->steps_done() % c.eval_interval == 0 || training->steps_done() == c.steps)
        evaluate();
    }
    result.model = training->model();
  } else {
    history = std::move(o.history);
  }
  const InductionMeasure now = measure_induction(result.model, held_out);
  if (history.empty())
    throw Error(ErrorKind::bad_value, "run_induction", "the run has no evaluation to show");

  // The heads the circuit is made of: the best previous-token head of layer 0 and the best
  // induction head of the last layer, as measured now.
  const std::size_t last = c.layers - 1;
  const std::size_t P = best_head(now.previous, 0), I = best_head(now.induction, last);
  result.previous_head = P;
  result.induction_head = I;

  run.section("phase-change");
  if (!result.losses.empty())
    run.curve({fmt::format("Loss on each step's batch (steps 1 to {})", result.losses.size()),
               result.losses});
  std::vector<double> repeats;
  Table table{
      fmt::format("Every evaluation on the {} held-out sequences", held_out.size()),
      {"step", "loss, random tokens", "loss, repeats", fmt::format("previous {}", head_name(0, P)),
       fmt::format("induction {}", head_name(last, I))},
      {}};
  for (const InductionEvaluation& e : history) {
    table.rows.push_back({std::to_string(e.step), fmt::format("{:.4f}", e.measure.first_loss),
                          fmt::format("{:.4f}", e.measure.repeat_loss),
                          score_text(e.measure.previous[0][P]),
                          score_text(e.measure.induction[last][I])});
    repeats.push_back(e.measure.repeat_loss);
  }
  run.table(std::move(table));
  run.curve({"Loss on the repeats at each evaluation", repeats, 8});
  std::vector<double> steps, firsts, inductions;
  for (const InductionEvaluation& e : history) {
    steps.push_back(static_cast<double>(e.step));
    firsts.push_back(e.measure.first_loss);
    inductions.push_back(e.measure.induction[last][I].on_target);
  }
  run.step("evaluation_steps", "the steps after which each evaluation ran",
           make_float64({steps.size()}, steps), false);
  run.step("repeat_loss", "the loss on the repeats' predictions at each evaluation",
           make_float64({repeats.size()}, repeats), false);
  run.step("first_loss", "the loss on the random tokens' predictions at each evaluation",
           make_float64({firsts.size()}, firsts), false);
  run.step("induction_score",
           fmt::format("head {}'s induction score at each evaluation", head_name(last, I)),
           make_float64({inductions.size()}, inductions), false);
  // The drop: the first evaluation below ln V / 2; the plateau: the evaluations after step 0
  // and before it whose loss on the repeats stays within 10% of ln V.
  std::size_t drop = history.size(), plateau = 0, last_plateau = 0;
  for (std::size_t i = 0; i < history.size(); ++i)
    if (history[i].measure.repeat_loss < 0.5 * ln_v) {
      drop = i;
      break;
    }
  for (std::size_t i = 1; i < drop && i < history.size(); ++i)
    if (history[i].measure.repeat_loss >= 0.9 * ln_v) {
      ++plateau;
      last_plateau = i;
    }
  const bool dropped = drop < history.size();
  run.check("the loss on the repeats sat on a plateau near ln V, then dropped",
            dropped && plateau > 0,
            dropped ? fmt::format("ln V = {:.3f}; at {} evaluations after step 0 it stayed above "
                                  "{:.3f} (the last at step {}: {:.3f}); at step {} it was {:.3f}, "
                                  "below ln V / 2",
                                  ln_v, plateau, 0.9 * ln_v, history[last_plateau].step,
                                  history[last_plateau].measure.repeat_loss, history[drop].step,
                                  history[drop].measure.repeat_loss)
                    : fmt::format("it never fell below ln V / 2 = {:.3f}", 0.5 * ln_v));
  const InductionEvaluation& final_eval = history.back();
  run.check("the loss on the random tokens stays near ln V: nothing can predict a random token",
            std::fabs(now.first_loss - ln_v) < 0.15,
            fmt::format("{:.4f} against ln {} = {:.4f}", now.first_loss, V, ln_v));
  // A head matching one token cannot tell the copy from a token that recurs by chance among the
  // random ones, so it hedges: the repeats' loss stays well above 0.
  run.check("after the drop the repeats are predicted", now.repeat_loss < ln_v / 3.0,
            fmt::format("loss {:.4f} on the repeats, under ln V / 3 = {:.4f} (step {})",
                        now.repeat_loss, ln_v / 3.0, final_eval.step));
  if (dropped && plateau > 0) {
    const double before = history[last_plateau].measure.induction[last][I].on_target,
                 after = final_eval.measure.induction[last][I].on_target;
    run.check(fmt::format("head {}'s induction score rose with the drop", head_name(last, I)),
              before < 0.3 && after > 0.5,
              fmt::format("{:.3f} at step {} (plateau), {:.3f} at step {}", before,
                          history[last_plateau].step, after, final_eval.step));
  }

  run.section("heads");
  Table heads{fmt::format("Every head on the {} held-out sequences: mean weight on the target keys",
                          held_out.size()),
              {"head", "induction", "uniform", "previous token", "uniform"},
              {}};
  for (std::size_t l = 0; l < c.layers; ++l)
    for (std::size_t h = 0; h < c.heads; ++h)
      heads.rows.push_back({head_name(l, h), score_text(now.induction[l][h]),
                            fmt::format("{:.3f}", now.induction[l][h].uniform),
                            score_text(now.previous[l][h]),
                            fmt::format("{:.3f}", now.previous[l][h].uniform)});
  run.table(std::move(heads));
  run.check(fmt::format("head {} is a previous-token head", head_name(0, P)),
            claim_holds(HeadsClaim::pattern, {now.previous[0][P]}),
            fmt::format("{:.3f} of each query's weight on the token before (uniform: {:.3f})",
                        now.previous[0][P].on_target, now.previous[0][P].uniform));
  run.check(fmt::format("head {} is an induction head", head_name(last, I)),
            claim_holds(HeadsClaim::pattern, {now.induction[last][I]}),
            fmt::format("{:.3f} of each query's weight on the token after the query's earlier "
                        "copies (uniform: {:.3f})",
                        now.induction[last][I].on_target, now.induction[last][I].uniform));

  run.section("circuit");
  const std::size_t hs = c.d_model / c.heads;
  const Composition found = composition(result.model, P, I);
  const Composition random = random_composition(c.d_model, hs, 200, c.seed);
  Table circuit{fmt::format("How head {} reads head {}'s output (LayerNorm left out)",
                            head_name(1, I), head_name(0, P)),
                {"composition", head_name(0, P) + " -> " + head_name(1, I), "random matrices"},
                {}};
  circuit.rows.push_back(
      {"K: the keys read it", fmt::format("{:.3f}", found.k), fmt::format("{:.3f}", random.k)});
  circuit.rows.push_back(
      {"Q: the queries read it", fmt::format("{:.3f}", found.q), fmt::format("{:.3f}", random.q)});
  circuit.rows.push_back(
      {"V: the values read it", fmt::format("{:.3f}", found.v), fmt::format("{:.3f}", random.v)});
  run.table(std::move(circuit));
  if (c.layers == 2)
    run.check(fmt::format("head {}'s keys read head {}'s output: K-composition above Q and V and "
                          "above random matrices'",
                          head_name(1, I), head_name(0, P)),
              found.k > found.q && found.k > found.v && found.k > 2.0 * random.k,
              fmt::format("K {:.3f}, Q {:.3f}, V {:.3f}; random matrices' K {:.3f}", found.k,
                          found.q, found.v, random.k));

  run.section("ablation");
  // Every head of the last layer that scores as an induction head, removed together.
  std::vector<std::size_t> induction_heads;
  for (std::size_t h = 0; h < c.heads; ++h)
    if (claim_holds(HeadsClaim::pattern, {now.induction[last][h]})) induction_heads.push_back(h);
  if (induction_heads.empty()) induction_heads.push_back(I);
  GptModel without_all = result.model;
  std::string all_names;
  for (std::size_t h : induction_heads) {
    without_all = ablate_head(std::move(without_all), last, h);
    all_names += (all_names.empty() ? "" : " and ") + head_name(last, h);
  }
  struct Row {
    std::string what;
    InductionMeasure m;
  };
  std::vector<Row> rows{
      {"nothing", now},
      {"head " + head_name(0, P), measure_induction(ablate_head(result.model, 0, P), held_out)},
      {"head " + head_name(last, I),
       measure_induction(ablate_head(result.model, last, I), held_out)},
      {(inductions.size() > 1 ? "heads " : "head ") + all_names,
       measure_induction(without_all, held_out)}};
  // The other layer-0 heads, each alone: which of them the circuit needs as well.
  for (std::size_t h = 0; h < c.heads; ++h)
    if (h != P)
      rows.push_back({"head " + head_name(0, h),
                      measure_induction(ablate_head(result.model, 0, h), held_out)});
  Table ablation{"Zero-ablation: the head's slice of attn.c_proj zeroed",
                 {"ablated", "loss, random tokens", "loss, repeats",
                  fmt::format("induction {}", head_name(last, I))},
                 {}};
  for (const Row& r : rows)
    ablation.rows.push_back({r.what, fmt::format("{:.4f}", r.m.first_loss),
                             fmt::format("{:.4f}", r.m.repeat_loss),
                             score_text(r.m.induction[last][I])});
  run.table(std::move(ablation));
  const InductionMeasure &without_p = rows[1].m, &without_i = rows[2].m, &without_every = rows[3].m;
  run.check(fmt::format("without head {} the repeats' loss goes back up", head_name(0, P)),
            without_p.repeat_loss > now.repeat_loss + 0.25 * ln_v,
            fmt::format("{:.4f} -> {:.4f} (ln V = {:.3f})", now.repeat_loss, without_p.repeat_loss,
                        ln_v));
  run.check(fmt::format("without head {}, head {}'s induction score collapses", head_name(0, P),
                        head_name(last, I)),
            without_p.induction[last][I].on_target < 0.5 * now.induction[last][I].on_target,
            fmt::format("{:.3f} -> {:.3f}", now.induction[last][I].on_target,
                        without_p.induction[last][I].on_target));
  run.check(fmt::format("without head {} the repeats' loss goes up", head_name(last, I)),
            without_i.repeat_loss > now.repeat_loss + 0.1 * ln_v,
            fmt::format("{:.4f} -> {:.4f}", now.repeat_loss, without_i.repeat_loss));
  run.check(fmt::format("without {} the repeats' loss returns to the plateau", all_names),
            without_every.repeat_loss > 0.75 * ln_v,
            fmt::format("{:.4f} -> {:.4f}, above 3/4 of ln V = {:.4f}", now.repeat_loss,
                        without_every.repeat_loss, 0.75 * ln_v));
  return result;
}

}  // namespace attn::lessons

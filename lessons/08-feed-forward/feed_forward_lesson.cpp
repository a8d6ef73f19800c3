// Lesson 08, the feed-forward block. Legend: B batch, T tokens, D model width, F feed-forward
// width.
#include "08-feed-forward/feed_forward_lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/count.hpp"
#include "base/names.hpp"
#include "base/random.hpp"
#include "feed_forward.hpp"
#include "module_size.hpp"
#include "multi_head.hpp"
#include "state_dict.hpp"

namespace attn::lessons {

namespace {
// Seeded streams apart from the others: Rng(seed ^ stream).
constexpr std::uint64_t kWeightsStream =
    0xfeedf0dULL;  // the block's weights, apart from the input's draws

constexpr FeedForwardVariant kVariants[] = {FeedForwardVariant::book, FeedForwardVariant::relu,
                                            FeedForwardVariant::gelu_last};
// min over x of GELU: -0.169971 at x = -0.7518 (tanh form: -0.170041 at x = -0.7525).
constexpr float kGeluMinimum = -0.16998f, kGeluTanhMinimum = -0.17005f;

float max_abs(const Tensor3& a) {
  float m = 0.0f;
  for (float v : a)
    m = std::max(m, std::fabs(v));
  return m;
}

// nn.Linear(in, out)'s parameter count, "D·F + F", from the module tree.
std::string linear_count(std::size_t in, std::size_t out) {
  return with_commas(count_parameters(linear_module("", in, out, true)));
}

std::string first_weight_key(FeedForwardVariant v) {
  return state_dict_entries(describe_feed_forward(v, 1, 1)).front().key;
}

std::string_view class_of(FeedForwardVariant v) {
  static constexpr Named<FeedForwardVariant> kClasses[] = {
      {FeedForwardVariant::book, "seed 003 FeedForward"},
      {FeedForwardVariant::relu, "seed 001 FeedForwardNeuralNetwork"},
      {FeedForwardVariant::gelu_last, "seed 000 FeedForward (Sequential)"}};
  return name_in(kClasses, v, "");
}

// F from the weights file (the first Linear's weight is (F, D)), after checking its D; refuses a
// file that holds another variant's keys with the --variant to use.
std::optional<std::size_t> weights_d_ff(const StateDict& weights, const std::string& source,
                                        FeedForwardVariant v, std::size_t width, bool from_input) {
  const std::string key = first_weight_key(v);
  const auto it = weights.find(key);
  if (it == weights.end()) {
    for (FeedForwardVariant other : kVariants) {
      if (other != v && weights.count(first_weight_key(other))) {
        throw Error(ErrorKind::bad_value, "feed_forward_lesson",
                    fmt::format("'{}' holds {}'s keys ({}): add <variant> {}", source,
                                class_of(other), first_weight_key(other), variant_name(other)))
            .about("weights");
      }
    }
    return std::nullopt;  // check_state_dict lists what is missing
  }
  const Shape& shape = it->second.shape;
  if (shape.size() != 2) return std::nullopt;
  if (shape[1] != width) {
    throw Error(
        ErrorKind::bad_size, "feed_forward_lesson",
        fmt::format("'{}' is for D = {} ({} is (F, D) = {}), but the input has D = {}: {} {}",
                    source, shape[1], key, shape_string(shape), width,
                    from_input ? "give an <input> of width" : "add <d_model>", shape[1]))
        .about("weights");
  }
  return shape[0];
}

Table gelu_table() {
  const std::vector<float> points = {-3.0f, -2.0f, -1.0f, -0.75f, -0.5f,
                                     0.0f,  0.5f,  1.0f,  2.0f,   3.0f};
  Tensor3 x({1, 1, points.size()});
  std::copy(points.begin(), points.end(), x.begin());
  const Tensor3 exact = gelu(x, GeluApproximation::none),
                approximated = gelu(x, GeluApproximation::tanh);
  const Tensor3 rectified = relu(x);
  Table t{"GELU beside ReLU at a few points", {"x", "GELU, erf", "GELU, tanh", "ReLU"}, {}};
  for (std::size_t i = 0; i < points.size(); ++i) {
    t.rows.push_back({fmt::format("{:.2f}", points[i]), fmt::format("{:.4f}", exact.data()[i]),
                      fmt::format("{:.4f}", approximated.data()[i]),
                      fmt::format("{:.4f}", rectified.data()[i])});
  }
  return t;
}

// Each token fed alone must give its own row of the output (the first 8 tokens of sequence 0).
void check_position_wise(LessonRun& run, const FeedForward& layer, const Tensor3& x,
                         const Tensor3& output) {
  const std::size_t width = x.shape(2), tokens = std::min<std::size_t>(x.shape(1), 8);
  float worst = 0.0f;
  for (std::size_t t = 0; t < tokens; ++t) {
    Tensor3 token({1, 1, width});
    std::copy(x.data() + t * width, x.data() + (t + 1) * width, token.data());
    const Tensor3 alone = forward(layer, token).output;  // (1,1,D)
    for (std::size_t i = 0; i < width; ++i) {
      const float d = std::fabs(alone.data()[i] - output.data()[t * width + i]);
      if (!std::isnan(worst) && (std::isnan(d) || d > worst)) worst = d;
    }
  }
  run.check(
      "position-wise: each token fed alone gives its own row", worst <= 1e-5f,
      fmt::format("{} token{}, max |difference| = {:.3g}", tokens, tokens == 1 ? "" : "s", worst));
}

// linear_2(linear_1(X)) against the single Linear W = W2 W1, b = W2 b1 + b2.
Tensor3 check_collapse(LessonRun& run, const FeedForward& layer, const Tensor3& x,
                       const Tensor3& two_linears, const std::string& what) {
  const std::size_t width = x.shape(2), d_ff = layer.linear_1.weight.shape(0);
  const Tensor3 one_linear =
      forward(compose_linears(layer.linear_1, layer.linear_2), x);  // (B,T,D)
  const float diff = max_difference(two_linears, one_linear);
  run.check(fmt::format("{} = X (W2 W1)ᵀ + (W2 b1 + b2)", what),
            diff <= 1e-5f + 1e-4f * max_abs(one_linear),
            fmt::format("max |difference| = {:.3g}", diff));
  Table t{"What the two Linears cost, and the one Linear they equal",
          {"", "formula", "parameters"},
          {}};
  const Count both = parameter_count(linear_module("", width, d_ff, true)) +
                     parameter_count(linear_module("", d_ff, width, true));
  t.rows.push_back({fmt::format("Linear({0}, {1}), Linear({1}, {0})", width, d_ff), "2·D·F + F + D",
                    with_commas(both.value())});
  t.rows.push_back({fmt::format("Linear({0}, {0})", width), "D² + D", linear_count(width, width)});
  run.table(std::move(t));
  return one_linear;
}

void parameters_section(LessonRun& run, std::size_t width, std::size_t d_ff) {
  run.section("parameters");
  Table t{"The 4x rule and the parameter count",
          {"", "D", "F", "F / D", "Linear(D, F): D·F + F", "Linear(F, D): F·D + D", "total"},
          {}};
  auto row = [&](std::string name, std::size_t d, std::size_t f) {
    t.rows.push_back(
        {std::move(name), with_commas(static_cast<std::int64_t>(d)),
         with_commas(static_cast<std::int64_t>(f)),
         fmt::format("{:.4g}", static_cast<double>(f) / static_cast<double>(d)), linear_count(d, f),
         linear_count(f, d),
         with_commas(count_parameters(describe_feed_forward(FeedForwardVariant::book, d, f)))});
  };
  row("this run", width, d_ff);
  row("Transformer (2017)", 512, 2048);
  row("BERT-base", 768, 3072);
  run.table(std::move(t));
  const std::int64_t bert =
      count_parameters(describe_feed_forward(FeedForwardVariant::book, 768, 3072));
  const std::int64_t attention =
      count_parameters(describe_multi_head(MultiHeadVariant::book, 768, 12));
  run.check("BERT-base's FeedForward has 4,722,432 parameters", bert == 4722432,
            fmt::format("its state_dict holds {}", with_commas(bert)));
  const double ratio = static_cast<double>(bert) / static_cast<double>(attention);
  run.check("about twice BERT-base's attention", std::fabs(ratio - 2.0) < 0.01,
            fmt::format("MultiHeadAttention(768, 12) holds {} (ratio {:.3f})",
                        with_commas(attention), ratio));
}

// A variant's opening: its section, its parameters, the input and the first Linear's output,
// called `linear` as the variant's module names it.
void show_first_linear(LessonRun& run, const FeedForward& layer, const Tensor3& x,
                       const FeedForwardSteps& s, std::string_view section,
                       std::string_view linear) {
  const std::size_t width = x.shape(2), d_ff = layer.linear_1.weight.shape(0);
  run.section(section);
  run.table(parameter_table(describe_feed_forward(layer.variant, width, d_ff), true));
  run.step("input", "X, one row of width D per token", to_array(x));
  run.section("hidden");
  run.step(
      "hidden",
      fmt::format("{}(X) = X W1ᵀ + b1, each token from width {} to width {}", linear, width, d_ff),
      to_array(s.hidden));
}

void run_book(LessonRun& run, const FeedForward& layer, const Tensor3& x) {
  const std::size_t width = x.shape(2);
  const bool exact = layer.approximate == GeluApproximation::none;
  const FeedForwardSteps s = forward(layer, x);
  show_first_linear(run, layer, x, s, "intro", "linear_1");
  run.section("activated");
  run.step("activated",
           exact ? "GELU(hidden) = hidden·Φ(hidden), the exact erf form"
                 : "GELU(hidden), the tanh approximation",
           to_array(s.activated));
  run.table(gelu_table());
  const float forms = max_difference(gelu(s.hidden, GeluApproximation::none),
                                     gelu(s.hidden, GeluApproximation::tanh));
  run.check("the tanh form is within 5e-4 of the exact GELU here", forms <= 5e-4f,
            fmt::format("max |erf - tanh| = {:.3g}", forms));
  run.section("output");
  run.step("output",
           fmt::format("linear_2(activated), back to width {} (dropout: the identity)", width),
           to_array(s.output));

  run.section("checks");
  check_position_wise(run, layer, x, s.output);
  run.section("collapse");
  const Tensor3 without_gelu = forward(layer.linear_2, s.hidden);  // (B,T,F) -> (B,T,D)
  const Tensor3 one_linear =
      check_collapse(run, layer, x, without_gelu, "without the GELU, linear_2(linear_1(X))");
  const float bent = max_difference(s.output, one_linear);
  run.check("with the GELU, the block is not that one Linear", bent > 1e-4f,
            fmt::format("max |FeedForward(X) - (X Wᵀ + b)| = {:.3g}", bent));

  run.section("variants");
  Table t{"The notebooks' other versions with these weights, against the book's output",
          {"--variant", "notebook", "order", "max |difference|"},
          {}};
  for (FeedForwardVariant v : {FeedForwardVariant::relu, FeedForwardVariant::gelu_last}) {
    FeedForward other = layer;
    other.variant = v;
    t.rows.push_back({std::string(variant_name(v)), std::string(class_of(v)),
                      v == FeedForwardVariant::relu ? "Linear, ReLU, Dropout, Linear"
                                                    : "Linear, Linear, GELU, Dropout",
                      fmt::format("{:.4f}", max_difference(forward(other, x).output, s.output))});
  }
  run.table(std::move(t));
}

void run_relu(LessonRun& run, const FeedForward& layer, const Tensor3& x) {
  const std::size_t width = x.shape(2);
  const FeedForwardSteps s = forward(layer, x);
  show_first_linear(run, layer, x, s, "intro_relu", "layer1");
  run.section("activated_relu");
  run.step("activated", "ReLU(hidden) = max(0, hidden); dropout passes it through",
           to_array(s.activated));
  std::size_t negative = 0, zeroed = 0;
  for (std::size_t i = 0; i < s.hidden.size(); ++i)
    if (s.hidden.data()[i] < 0.0f) ++negative, zeroed += s.activated.data()[i] == 0.0f;
  run.check("every negative hidden value became exactly 0", zeroed == negative,
            fmt::format("{} of {} hidden values were negative", negative, s.hidden.size()));
  run.section("output");
  run.step("output", fmt::format("layer2(activated), back to width {}", width), to_array(s.output));
  run.section("checks");
  check_position_wise(run, layer, x, s.output);
  FeedForward book = layer;
  book.variant = FeedForwardVariant::book;
  const float diff = max_difference(forward(book, x).output, s.output);
  run.check("GELU instead of ReLU (the book's block, same weights) changes the output", diff > 0.0f,
            fmt::format("max |difference| = {:.3g}", diff));
}

void run_gelu_last(LessonRun& run, const FeedForward& layer, const Tensor3& x) {
  const std::size_t width = x.shape(2);
  const FeedForwardSteps s = forward(layer, x);
  show_first_linear(run, layer, x, s, "intro_gelu_last", "net[0]");
  run.section("projected");
  run.step("projected",
           fmt::format("net[1](hidden), back to width {}: still a linear function of X", width),
           to_array(s.projected));
  run.section("collapse_gelu_last");
  check_collapse(run, layer, x, s.projected, "net[1](net[0](X))");
  run.section("output_gelu_last");
  const bool exact = layer.approximate == GeluApproximation::none;
  run.step("output",
           fmt::format("GELU(projected){}: the GELU comes last", exact ? "" : ", tanh form"),
           to_array(s.output));
  const float lowest =
      s.output.size() == 0 ? 0.0f : *std::min_element(s.output.begin(), s.output.end());
  const float floor = exact ? kGeluMinimum : kGeluTanhMinimum;
  run.check(fmt::format("no output is below GELU's minimum, {:.4f}", floor), lowest >= floor,
            fmt::format("smallest output = {:.4f}", lowest));
  run.section("checks");
  check_position_wise(run, layer, x, s.output);
  FeedForward book = layer;
  book.variant = FeedForwardVariant::book;
  const float diff = max_difference(forward(book, x).output, s.output);
  run.check("the book's order with the same weights gives another output", diff > 1e-4f,
            fmt::format("max |book - seed 000| = {:.3g}", diff));
}
}  // namespace

LessonRun run_feed_forward(const FeedForwardLessonOptions& options) {
  const auto [batch, tokens, width] = lesson_sizes(options.common);
  const std::optional<FeedForwardVariant> parsed = feed_forward_variant(options.variant);
  if (!parsed) {
    throw Error(ErrorKind::bad_value, "feed_forward_lesson",
                fmt::format("'{}' is not a feed-forward variant: use book, relu or gelu-last",
                            options.variant))
        .about("variant");
  }
  const FeedForwardVariant variant = *parsed;
  GeluApproximation approximate = GeluApproximation::none;
  if (options.gelu) {
    if (variant == FeedForwardVariant::relu) {
      throw Error(
          ErrorKind::bad_value, "feed_forward_lesson",
          "seed 001's block uses ReLU, not GELU: drop <gelu>, or use <variant> book or gelu-last")
          .about("gelu");
    }
    if (*options.gelu == "tanh") {
      approximate = GeluApproximation::tanh;
    } else if (*options.gelu != "erf") {
      throw Error(
          ErrorKind::bad_value, "feed_forward_lesson",
          fmt::format("'{}' is not a GELU form: use erf (nn.GELU()) or tanh", *options.gelu))
          .about("gelu");
    }
  }
  std::optional<std::size_t> file_d_ff;
  if (options.weights)
    file_d_ff = weights_d_ff(*options.weights, options.weights_name, variant, width,
                             options.common.input.has_value());
  const std::size_t d_ff = options.d_ff.value_or(file_d_ff.value_or(4 * width));
  // At the peak, the checks: X, the weights (the layer's, their copy in the run, another
  // variant's), the steps and their copies in the run, and either both GELU forms of the hidden
  // layer or another variant's forward beside the collapsed Linear's output.
  const ModuleSize size = module_size(describe_feed_forward(variant, width, d_ff));
  MemoryPlan plan = plan_lesson_input(options.common);
  append(plan, plan_weights_file(options.weights));
  plan.push_back(planned_weights("the weights", size, 2, " D/F"));
  plan.push_back(planned_weights("the weights", size, 1, " D/F", Held::weights));
  const MemoryPlan steps = plan_feed_forward(batch, tokens, width, d_ff);
  append(plan, steps);
  const bool gelu_last = variant == FeedForwardVariant::gelu_last;
  plan.push_back({"X", {batch, tokens, width}, "B T D", 4, Held::shown});
  plan.push_back({"the hidden layer", {batch, tokens, d_ff}, "B T F", 4, Held::shown});
  if (gelu_last) {
    plan.push_back({"the projection", {batch, tokens, width}, "B T D", 4, Held::shown});
  } else {
    plan.push_back({"the activated hidden layer", {batch, tokens, d_ff}, "B T F", 4, Held::shown});
  }
  plan.push_back({"the output", {batch, tokens, width}, "B T D", 4, Held::shown});
  MemoryPlan collapse = {{"the collapsed Linear's outputs", {2, batch, tokens, width}, " B T D"},
                         {"the collapsed Linear", {width + 1, width}, "D D"}};
  append(collapse, steps);
  append(plan,
         larger_of({{"both GELU forms of the hidden layer", {2, batch, tokens, d_ff}, " B T F"}},
                   collapse));
  check_budget("feed-forward", plan);
  const Tensor3 x = lesson_input(options.common, "(B, T, D)", {batch, tokens, width});  // (B,T,D)

  LessonRun run("feed-forward");
  record_settings(run, options.common,
                  {{"batch", batch}, {"seq", tokens}, {"d-model", width}, {"d-ff", d_ff}});
  run.setting("variant", std::string(variant_name(variant)));
  if (variant != FeedForwardVariant::relu)
    run.setting("gelu", approximate == GeluApproximation::none ? "erf" : "tanh");
  if (options.weights) run.setting("weights", options.weights_name);

  // The weights: from --weights, else PyTorch-style random initialisation from the seed.
  Rng rng(options.common.seed ^ kWeightsStream);
  FeedForward layer = init_feed_forward(rng, variant, width, d_ff, approximate);
  const Module model = describe_feed_forward(variant, width, d_ff);
  if (options.weights) load_state_dict(layer, model, *options.weights, options.weights_name);
  run.state_dict = collect_state_dict(layer);

  switch (variant) {
    case FeedForwardVariant::book:
      run_book(run, layer, x);
      break;
    case FeedForwardVariant::relu:
      run_relu(run, layer, x);
      break;
    case FeedForwardVariant::gelu_last:
      run_gelu_last(run, layer, x);
      break;
  }
  parameters_section(run, width, d_ff);
  run.parameters = count_parameters(model);
  return run;
}

}  // namespace attn::lessons

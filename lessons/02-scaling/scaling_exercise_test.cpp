// Grades lesson 02's exercise against PyTorch (data/generator/exercise_scaling.py) and against what
// the statistics must satisfy. The measurements are random, so each is checked at a fixed seed
// within about five standard errors of its expected value. Tags: [scaling] the lesson, [points=N]
// the marks, [.hidden] shown after the due date. The student's functions are called only through
// STUDENT(...), and expected values are used only in checks (see course/harness/grading.hpp).
#include <cmath>
#include <string>
#include <vector>

#include "grading.hpp"
#include "scaling_exercise.hpp"

using attn::Rng;
using attn::Tensor1;
using attn::Tensor2;
using attn::grading::expected;
using attn::grading::input;

namespace {

// Checks one measure_softmax_peak result against PyTorch's population values in
// data/fixtures/exercises/expected/scaling/<name>.npy: within 5 standard errors of the mean over
// `rows`. The table is read only inside the checks (it is empty in the probe).
void check_peak(const std::string& name, const attn::SoftmaxPeakComparison& got, std::size_t rows) {
  const Tensor2 table = expected<2>("scaling/" + name);  // (2,4) means, standard deviations
  const double values[4] = {got.unscaled.max_weight, got.unscaled.entropy, got.scaled.max_weight,
                            got.scaled.entropy};
  const char* labels[4] = {"unscaled.max_weight", "unscaled.entropy", "scaled.max_weight",
                           "scaled.entropy"};
  const auto tolerance = [&](std::size_t i) {
    return 5.0 * table(1, i) / std::sqrt(static_cast<double>(rows)) + 1e-6;
  };
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("measure_softmax_peak(D = " << got.d_model << ", " << rows << " rows)." << labels[i]
                                     << " = " << values[i] << ", PyTorch expects " << table(0, i)
                                     << " +- " << tolerance(i));
    CHECK(std::fabs(values[i] - table(0, i)) <= tolerance(i));
  }
}

// Five standard errors of the sample variance of q·k over n samples, relative to D:
// Var(q·k) = D and its fourth central moment is 3D^2 + 6D.
double variance_tolerance(std::size_t d_model, std::size_t samples) {
  return 5.0 *
         std::sqrt((2.0 + 6.0 / static_cast<double>(d_model)) / static_cast<double>(samples - 1));
}

}  // namespace

TEST_CASE("entropy of n equal weights is ln n", "[scaling][points=1]") {
  for (std::size_t n : {1, 3, 8, 13}) {
    const std::vector<float> weights(n, 1.0f / static_cast<float>(n));
    const double got = STUDENT(attn::exercise::entropy(weights.data(), n));
    INFO("entropy of " << n << " weights 1/" << n << " = " << got << ", expected ln " << n << " = "
                       << std::log(static_cast<double>(n)));
    CHECK(std::fabs(got - std::log(static_cast<double>(n))) <= 1e-6);
  }
}

TEST_CASE("entropy of a one-hot row is zero and zero weights add nothing", "[scaling][points=1]") {
  const std::vector<float> one_hot{0.0f, 0.0f, 1.0f, 0.0f};
  const double got = STUDENT(attn::exercise::entropy(one_hot.data(), one_hot.size()));
  INFO("entropy(0, 0, 1, 0) = " << got << ", expected 0");
  CHECK(std::fabs(got) <= 1e-12);
  const std::vector<float> halves{0.0f, 0.5f, 0.0f, 0.5f, 0.0f};
  const double two = STUDENT(attn::exercise::entropy(halves.data(), halves.size()));
  INFO("entropy(0, 0.5, 0, 0.5, 0) = " << two << ", expected ln 2 = " << std::log(2.0));
  CHECK(std::fabs(two - std::log(2.0)) <= 1e-6);
}

TEST_CASE("entropy matches torch.special.entr summed over rows of softmax weights",
          "[scaling][points=2]") {
  const Tensor2 weights = input<2>("scaling/entropy_weights");        // (5,7), some weights 0
  const Tensor1 entropies = expected<1>("scaling/entropy_expected");  // (5)
  for (std::size_t r = 0; r < weights.shape(0); ++r) {
    const float* row = weights.data() + r * weights.shape(1);
    const double got = STUDENT(attn::exercise::entropy(row, weights.shape(1)));
    INFO("entropy(row " << r << " of weights (5,7)) = " << got << ", PyTorch expects "
                        << entropies(r));
    CHECK(std::fabs(got - entropies(r)) <= 1e-6 + 1e-5 * std::fabs(entropies(r)));
  }
}

TEST_CASE(
    "measure_dot_product_spread gives a variance near D and a mean near 0 for D = 4 16 64 256",
    "[scaling][points=2]") {
  const double predicted =
      STUDENT(attn::grading::prediction(&attn::exercise::predicted_dot_spread_d64));
  const std::string prediction = "prediction, the standard deviation of q·k at D = 64";
  if (std::isnan(predicted))
    WARN(attn::grading::not_predicted(prediction, "predicted_dot_spread_d64"));
  Rng rng(2024);
  const std::size_t samples = 4000;
  for (std::size_t d_model : {4, 16, 64, 256}) {
    const attn::DotProductSpread s =
        STUDENT(attn::exercise::measure_dot_product_spread(rng, d_model, samples));
    if (d_model == 64 && !std::isnan(predicted))
      WARN(attn::grading::prediction_note(prediction, predicted, std::sqrt(s.variance), 2));
    const double mean_tolerance = 5.0 * std::sqrt(static_cast<double>(d_model) / samples);
    const double variance_ratio_tolerance = variance_tolerance(d_model, samples);
    INFO("measure_dot_product_spread(D = "
         << d_model << ", " << samples << " samples): d_model = " << s.d_model << ", mean = "
         << s.mean << " (expected 0 +- " << mean_tolerance << "), variance = " << s.variance
         << " (expected " << d_model << " +- " << variance_ratio_tolerance * d_model << ")");
    CHECK(s.d_model == d_model);
    CHECK(std::fabs(s.mean) <= mean_tolerance);
    CHECK(std::fabs(s.variance / static_cast<double>(d_model) - 1.0) <= variance_ratio_tolerance);
  }
}

TEST_CASE("measure_dot_product_spread divides the variance by D and not by sqrt(D)",
          "[scaling][points=2]") {
  Rng rng(7);
  const std::size_t samples = 4000;
  for (std::size_t d_model : {16, 256}) {
    const attn::DotProductSpread s =
        STUDENT(attn::exercise::measure_dot_product_spread(rng, d_model, samples));
    const double expected = s.variance / static_cast<double>(d_model);
    INFO("measure_dot_product_spread(D = " << d_model
                                           << "): scaled_variance = " << s.scaled_variance
                                           << ", expected variance / D = " << s.variance << " / "
                                           << d_model << " = " << expected << ", which is about 1");
    CHECK(std::fabs(s.scaled_variance - expected) <= 1e-6 * expected);
    CHECK(std::fabs(s.scaled_variance - 1.0) <= variance_tolerance(d_model, samples));
  }
}

TEST_CASE("measure_dot_product_spread draws from the generator it is given",
          "[scaling][points=1]") {
  Rng first(11), second(11);
  const attn::DotProductSpread a =
      STUDENT(attn::exercise::measure_dot_product_spread(first, 8, 500));
  const attn::DotProductSpread b =
      STUDENT(attn::exercise::measure_dot_product_spread(second, 8, 500));
  const attn::DotProductSpread c =
      STUDENT(attn::exercise::measure_dot_product_spread(first, 8, 500));
  INFO("two generators seeded 11 gave means "
       << a.mean << " and " << b.mean << " (expected equal); the first "
       << "one's next call gave " << c.mean << " (expected different)");
  CHECK(a.mean == b.mean);
  CHECK(a.variance == b.variance);
  CHECK(a.variance > 0.0);
  CHECK(c.mean != a.mean);
  CHECK(c.variance != a.variance);
}

TEST_CASE(
    "measure_softmax_peak gives near one-hot rows without scaling at D = 256 and spread rows with it",
    "[scaling][points=2]") {
  Rng rng(5);
  const std::size_t keys = 6;
  const attn::SoftmaxPeakComparison c =
      STUDENT(attn::exercise::measure_softmax_peak(rng, 256, keys, 200));
  INFO("measure_softmax_peak(D = 256, 6 keys, 200 rows): d_model = "
       << c.d_model << ", unscaled max_weight " << c.unscaled.max_weight << " entropy "
       << c.unscaled.entropy << ", scaled max_weight " << c.scaled.max_weight << " entropy "
       << c.scaled.entropy
       << "; PyTorch's population values are 0.945 0.134 unscaled and 0.421 1.465 scaled");
  CHECK(c.d_model == 256);
  for (const attn::SoftmaxPeak& p : {c.unscaled, c.scaled}) {
    CHECK(p.max_weight >= 1.0 / keys - 1e-6);
    CHECK(p.max_weight <= 1.0 + 1e-6);
    CHECK(p.entropy >= 0.0);
    CHECK(p.entropy <= std::log(static_cast<double>(keys)) + 1e-6);
  }
  CHECK(c.unscaled.max_weight > 0.88);
  CHECK(c.unscaled.entropy < 0.25);
  CHECK(c.scaled.max_weight < 0.5);
  CHECK(c.scaled.entropy > 1.35);
}

TEST_CASE("measure_softmax_peak matches the PyTorch population values at D = 64 with 8 keys",
          "[scaling][points=3]") {
  Rng rng(64);
  const attn::SoftmaxPeakComparison c =
      STUDENT(attn::exercise::measure_softmax_peak(rng, 64, 8, 1000));
  CHECK(c.d_model == 64);
  check_peak("peak_d64_k8", c, 1000);
}

// BEGIN HIDDEN TESTS
TEST_CASE("measure_softmax_peak matches the PyTorch population values at D = 5 with 13 keys",
          "[scaling][points=2][.hidden]") {
  Rng rng(13);
  const attn::SoftmaxPeakComparison c =
      STUDENT(attn::exercise::measure_softmax_peak(rng, 5, 13, 1000));
  CHECK(c.d_model == 5);
  check_peak("peak_d5_k13", c, 1000);
}

TEST_CASE("measure_softmax_peak stays finite at D = 1024 where unscaled scores overflow exp",
          "[scaling][points=1][.hidden]") {
  Rng rng(1024);
  const attn::SoftmaxPeakComparison c =
      STUDENT(attn::exercise::measure_softmax_peak(rng, 1024, 8, 100));
  INFO("measure_softmax_peak(D = 1024, 8 keys, 100 rows): unscaled max_weight "
       << c.unscaled.max_weight << " entropy " << c.unscaled.entropy << ", scaled max_weight "
       << c.scaled.max_weight << " entropy " << c.scaled.entropy
       << "; PyTorch's population values are 0.970 0.074 unscaled and 0.361 1.722 scaled");
  CHECK(std::isfinite(c.unscaled.max_weight));
  CHECK(std::isfinite(c.unscaled.entropy));
  CHECK(c.unscaled.max_weight > 0.9);
  CHECK(c.unscaled.max_weight <= 1.0 + 1e-6);
  CHECK(c.unscaled.entropy >= 0.0);
  CHECK(c.unscaled.entropy < 0.25);
  CHECK(c.scaled.max_weight < 0.5);
  CHECK(c.scaled.entropy > 1.5);
}
// END HIDDEN TESTS

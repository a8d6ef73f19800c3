// Grades lesson 02's exercise against PyTorch (data/generator/exercise_scaling.py) and against what
// the statistics must satisfy. The measurements are random, so each is checked at a fixed seed
// within about five standard errors of its expected value. Tags: [scaling] the lesson, [points=N]
// the marks, [.hidden] shown after the due date. The student's functions are called only through
// STUDENT(...), and expected values are used only in checks (see course/harness/grading.hpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
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

// The first n draws of a generator seeded `seed`, rounded to float as the exercise's entries are.
std::vector<float> replayed(std::uint64_t seed, std::size_t n) {
  Rng rng(seed);
  std::vector<float> draws(n);
  for (float& draw : draws)
    draw = static_cast<float>(rng.normal());
  return draws;
}

// Every (mean, sample variance) of the dots q·k at D = 1 when the draws pair up as (q, k) in some
// order: whichever order a solution draws q and k in, its statistics are one pairing's.
void pairings(std::vector<float> left, std::vector<float>& dots,
              std::vector<std::array<double, 2>>& found) {
  if (left.empty()) {
    double mean = 0.0, variance = 0.0;
    for (float dot : dots)
      mean += dot;
    mean /= static_cast<double>(dots.size());
    for (float dot : dots)
      variance += (dot - mean) * (dot - mean);
    found.push_back({mean, variance / static_cast<double>(dots.size() - 1)});
    return;
  }
  const float first = left.front();
  for (std::size_t j = 1; j < left.size(); ++j) {
    std::vector<float> rest;
    for (std::size_t i = 1; i < left.size(); ++i)
      if (i != j) rest.push_back(left[i]);
    dots.push_back(first * left[j]);
    pairings(rest, dots, found);
    dots.pop_back();
  }
}

// The mean over `rows` of each row's largest softmax weight and entropy, at D = 1, for every way
// `draws` can be cut into rows of a query and `keys` keys (order within a row does not matter).
std::vector<std::array<double, 2>> peaks(std::vector<float> draws, std::size_t keys) {
  std::vector<std::size_t> order(draws.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::vector<std::array<double, 2>> found;
  const std::size_t rows = draws.size() / (keys + 1);
  do {
    double max_weight = 0.0, entropy = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
      const float q = draws[order[r * (keys + 1)]];
      std::vector<double> scores(keys);
      for (std::size_t j = 0; j < keys; ++j)
        scores[j] = static_cast<double>(q * draws[order[r * (keys + 1) + 1 + j]]);
      const double largest = *std::max_element(scores.begin(), scores.end());
      double sum = 0.0;
      for (double score : scores)
        sum += std::exp(score - largest);
      double top = 0.0;
      for (double score : scores) {
        const double w = std::exp(score - largest) / sum;
        top = std::max(top, w);
        if (w > 0.0) entropy -= w * std::log(w);
      }
      max_weight += top;
    }
    found.push_back({max_weight / static_cast<double>(rows), entropy / static_cast<double>(rows)});
  } while (std::next_permutation(order.begin(), order.end()));
  return found;
}

bool near(double got, double want) {
  return std::fabs(got - want) <= 1e-5 * (1.0 + std::fabs(want));
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

TEST_CASE("measure_dot_product_spread is exact on 2 and 3 samples at D = 1 from a replayed seed",
          "[scaling][points=1]") {
  for (std::size_t samples : {2, 3}) {
    Rng rng(41);
    const attn::DotProductSpread s =
        STUDENT(attn::exercise::measure_dot_product_spread(rng, 1, samples));
    std::vector<float> dots;
    std::vector<std::array<double, 2>> found;
    pairings(replayed(41, 2 * samples), dots, found);
    bool matched = false;
    for (const auto& [mean, variance] : found)
      matched = matched || (near(s.mean, mean) && near(s.variance, variance));
    INFO("measure_dot_product_spread(seed 41, D = 1, "
         << samples << " samples): mean " << s.mean << ", variance " << s.variance
         << "; the draws paired as q, k give, "
            "for instance, mean "
         << found.front()[0] << " and variance " << found.front()[1]
         << " (divided by samples - 1)");
    CHECK(matched);
    CHECK(near(s.scaled_variance, s.variance));
  }
}

TEST_CASE("measure_softmax_peak is exact on 2 rows of 3 keys at D = 1 from a replayed seed",
          "[scaling][points=1]") {
  Rng rng(43);
  const attn::SoftmaxPeakComparison c = STUDENT(attn::exercise::measure_softmax_peak(rng, 1, 3, 2));
  const std::vector<std::array<double, 2>> found = peaks(replayed(43, 8), 3);
  bool matched = false;
  for (const auto& [max_weight, entropy] : found)
    matched =
        matched || (near(c.unscaled.max_weight, max_weight) && near(c.unscaled.entropy, entropy));
  INFO("measure_softmax_peak(seed 43, D = 1, 3 keys, 2 rows): unscaled max_weight "
       << c.unscaled.max_weight << " entropy " << c.unscaled.entropy
       << ", which no way of cutting the 8 draws into 2 rows of a query and 3 keys gives");
  CHECK(matched);
  INFO("at D = 1 the scaling divides by 1: scaled max_weight " << c.scaled.max_weight << " entropy "
                                                               << c.scaled.entropy);
  CHECK(near(c.scaled.max_weight, c.unscaled.max_weight));
  CHECK(near(c.scaled.entropy, c.unscaled.entropy));
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

// Grades lesson 11's exercise against PyTorch (data/generator/exercise_train.py): autograd's
// gradient of F.cross_entropy, checked by finite differences too, and torch.optim.AdamW's state
// after each of three steps. Tags: [train] the lesson, [points=N] the marks, [.hidden] shown
// after the due date.
#include <cmath>
#include <string>

#include "grading.hpp"
#include "train_exercise.hpp"

using attn::Tensor1;
using attn::Tensor3;
using attn::grading::check_close;
using attn::grading::expected;
using attn::grading::input;

namespace {

constexpr attn::testing::Tolerance kTolerance{1e-6, 1e-5};
// AdamW divides by sqrt(v) + eps: one float32 rounding of v moves the update by its ulps.
constexpr attn::testing::Tolerance kAdamW{1e-6, 1e-5};

attn::Ids labels_of(const std::string& name) {
  const attn::Tensor2 labels = input<2>("train/cross_entropy_" + name + "_labels");
  attn::Ids ids({labels.shape(0), labels.shape(1)});
  for (std::size_t i = 0; i < labels.size(); ++i)
    ids.data()[i] = static_cast<std::int64_t>(std::lround(labels.data()[i]));
  return ids;
}

void check_cross_entropy(const std::string& name) {
  const Tensor3 logits = input<3>("train/cross_entropy_" + name + "_logits");
  const attn::Ids labels = labels_of(name);
  const Tensor3 got = STUDENT(attn::exercise::cross_entropy_backward(logits, labels));
  check_close("cross_entropy_backward(logits " + attn::shape_string_of(logits) + ", labels)", got,
              expected<3>("train/cross_entropy_" + name + "_d_logits"), kTolerance);
}

// The mean cross-entropy in double, over the labels that are not -100.
double loss(const Tensor3& logits, const attn::Ids& labels) {
  const std::size_t classes = logits.shape(2);
  double total = 0.0;
  std::size_t scored = 0;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    if (labels.data()[r] == -100) continue;
    const float* z = logits.data() + r * classes;
    double sum = 0.0;
    for (std::size_t c = 0; c < classes; ++c)
      sum += std::exp(static_cast<double>(z[c]));
    total += std::log(sum) - z[labels.data()[r]];
    ++scored;
  }
  return total / static_cast<double>(scored);
}

void check_adamw(const std::string& name, const attn::exercise::AdamWSettings& settings) {
  const std::string at = "train/adamw_" + name + "_";
  attn::exercise::AdamWState state;
  state.value = input<1>(at + "value");
  state.first_moment = Tensor1::from_shape({state.value.size()});
  state.second_moment = Tensor1::from_shape({state.value.size()});
  state.first_moment.fill(0.0f);
  state.second_moment.fill(0.0f);
  for (int step = 1; step <= 3; ++step) {
    const Tensor1 grad = input<1>(at + "grad" + std::to_string(step));
    state = STUDENT(attn::exercise::adamw_step(state, grad, step, settings));
    const std::string call = "adamw_step(step " + std::to_string(step) + ", " + name + ")";
    check_close(call + ".value", state.value, expected<1>(at + "value" + std::to_string(step)),
                kAdamW);
    check_close(call + ".first_moment", state.first_moment,
                expected<1>(at + "first" + std::to_string(step)), kAdamW);
    check_close(call + ".second_moment", state.second_moment,
                expected<1>(at + "second" + std::to_string(step)), kAdamW);
  }
}

}  // namespace

TEST_CASE("cross_entropy_backward matches autograd on logits of shape 2x3x5", "[train][points=2]") {
  check_cross_entropy("b2_t3_c5");
}

TEST_CASE("cross_entropy_backward ignores the labels -100 and averages over the others",
          "[train][points=2]") {
  check_cross_entropy("b1_t4_c3_ignored");
}

TEST_CASE("cross_entropy_backward equals finite differences of the loss", "[train][points=2]") {
  Tensor3 logits = input<3>("train/cross_entropy_b3_t2_c7_logits");
  const attn::Ids labels = labels_of("b3_t2_c7");
  const Tensor3 got = STUDENT(attn::exercise::cross_entropy_backward(logits, labels));
  Tensor3 numeric(logits.shape());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const float keep = logits.data()[i];
    logits.data()[i] = keep + 1e-2f;
    const float up = logits.data()[i];
    const double l_up = loss(logits, labels);
    logits.data()[i] = keep - 1e-2f;
    const float down = logits.data()[i];
    const double l_down = loss(logits, labels);
    logits.data()[i] = keep;
    numeric.data()[i] = static_cast<float>((l_up - l_down) / (static_cast<double>(up) - down));
  }
  check_close("cross_entropy_backward(logits (3,2,7)) against (L(z + h) - L(z - h)) / 2h", got,
              numeric, attn::testing::Tolerance{2e-5, 1e-3});
}

TEST_CASE("adamw_step matches torch.optim.AdamW over three steps at its defaults",
          "[train][points=3]") {
  check_adamw("default", {});
}

TEST_CASE("adamw_step matches torch.optim.AdamW with a large learning rate and weight decay",
          "[train][points=2]") {
  check_adamw("strong", {5e-2f, 0.8f, 0.95f, 1e-6f, 0.3f});
}

// BEGIN HIDDEN TESTS
TEST_CASE("cross_entropy_backward: every scored row sums to zero", "[train][points=1][.hidden]") {
  const Tensor3 logits = input<3>("train/cross_entropy_b3_t2_c7_logits");
  const Tensor3 got =
      STUDENT(attn::exercise::cross_entropy_backward(logits, labels_of("b3_t2_c7")));
  for (std::size_t r = 0; r < 6; ++r) {
    double sum = 0.0;
    for (std::size_t c = 0; c < 7; ++c)
      sum += got.data()[r * 7 + c];
    INFO("row " << r << " sums to " << sum << ": softmax sums to 1 and the one-hot to 1");
    CHECK(std::fabs(sum) < 1e-6);
  }
  // Zeros sum to zero too: p - one_hot is negative at the label only (0 < p < 1).
  const attn::Ids labels = labels_of("b3_t2_c7");
  for (std::size_t r = 0; r < 6; ++r) {
    for (std::size_t c = 0; c < 7; ++c) {
      const bool label = static_cast<std::int64_t>(c) == labels.data()[r];
      INFO("row " << r << " (label " << labels.data()[r] << "), class " << c << ": "
                  << got.data()[r * 7 + c] << ", expected " << (label ? "< 0" : "> 0"));
      CHECK((label ? got.data()[r * 7 + c] < 0.0f : got.data()[r * 7 + c] > 0.0f));
    }
  }
}
// END HIDDEN TESTS

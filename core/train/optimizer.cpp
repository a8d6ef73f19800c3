#include "train/optimizer.hpp"

#include <cmath>

namespace attn {

namespace {
// The state vectors, one per slot, created at the first step and checked after.
void prepare(std::vector<std::vector<float>>& state, const std::vector<ParameterSlot>& slots,
             const char* who) {
  if (state.empty()) {
    for (const ParameterSlot& s : slots)
      state.emplace_back(s.count, 0.0f);
  }
  if (state.size() != slots.size())
    throw Error(ErrorKind::bad_size, who, "the parameters changed between steps");
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (state[i].size() != slots[i].count)
      throw Error(ErrorKind::bad_size, who,
                  fmt::format("{} changed size between steps", slots[i].key));
}
}  // namespace

void Sgd::step(const std::vector<ParameterSlot>& slots) {
  const bool first = buffers.empty();
  if (momentum != 0.0f) prepare(buffers, slots, "sgd");
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const ParameterSlot& s = slots[i];
    for (std::size_t j = 0; j < s.count; ++j) {
      float g = s.grad[j];
      if (weight_decay != 0.0f) g += weight_decay * s.value[j];
      if (momentum != 0.0f) {
        float& buf = buffers[i][j];
        buf = first ? g : momentum * buf + g;
        g = buf;
      }
      s.value[j] -= lr * g;
    }
  }
}

void AdamW::step(const std::vector<ParameterSlot>& slots) {
  prepare(m, slots, "adamw");
  prepare(v, slots, "adamw");
  ++steps;
  const double t = static_cast<double>(steps);
  const auto bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), t));
  const double bias_correction2 = 1.0 - std::pow(static_cast<double>(beta2), t);
  const float step_size = lr / bias_correction1;
  const auto correction2_root = static_cast<float>(std::sqrt(bias_correction2));
  const float decay = 1.0f - lr * weight_decay, keep1 = 1.0f - beta1, keep2 = 1.0f - beta2;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    // Four arrays that never overlap: said so, the loop runs in SIMD lanes (the same operations
    // in the same order on each element, so the same bits as one at a time).
    float* __restrict value = slots[i].value;
    const float* __restrict grad = slots[i].grad;
    float* __restrict first = m[i].data();
    float* __restrict second = v[i].data();
    for (std::size_t j = 0; j < slots[i].count; ++j) {
      const float g = grad[j];
      value[j] *= decay;
      first[j] = first[j] * beta1 + g * keep1;
      second[j] = second[j] * beta2 + g * g * keep2;
      const float denominator = std::sqrt(second[j]) / correction2_root + eps;
      value[j] += -step_size * (first[j] / denominator);
    }
  }
}

std::size_t optimizer_state_bytes(const Sgd& sgd, std::size_t parameters) {
  return sgd.momentum != 0.0f ? parameters * sizeof(float) : 0;
}

std::size_t optimizer_state_bytes(const AdamW&, std::size_t parameters) {
  return 2 * parameters * sizeof(float);
}

}  // namespace attn

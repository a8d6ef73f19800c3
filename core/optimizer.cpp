#include "optimizer.hpp"

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
  if (state.size() != slots.size()) throw Error(who, "the parameters changed between steps");
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (state[i].size() != slots[i].count)
      throw Error(who, fmt::format("{} changed size between steps", slots[i].key));
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
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const ParameterSlot& s = slots[i];
    for (std::size_t j = 0; j < s.count; ++j) {
      const float g = s.grad[j];
      s.value[j] *= 1.0f - lr * weight_decay;
      m[i][j] = m[i][j] * beta1 + g * (1.0f - beta1);
      v[i][j] = v[i][j] * beta2 + g * g * (1.0f - beta2);
      const float denominator = std::sqrt(v[i][j]) / correction2_root + eps;
      s.value[j] += -step_size * (m[i][j] / denominator);
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

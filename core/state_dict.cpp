#include "state_dict.hpp"

#include <cstring>
#include <set>

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn {

namespace {
// A key as a message shows it: '' for the empty key (an .npz member named .npy), escapes for
// control characters.
std::string shown_key(std::string_view key) {
  return key.empty() ? "''" : printable(key, 80);
}
}  // namespace

std::string state_dict_mismatch(const std::vector<StateDictEntry>& expected_entries,
                                const StateDict& weights) {
  std::vector<std::string> missing, wrong;
  std::set<std::string> expected;
  for (const StateDictEntry& e : expected_entries) {
    expected.insert(e.key);
    const auto it = weights.find(e.key);
    if (it == weights.end()) {
      missing.push_back(e.key);
    } else if (it->second.shape != e.shape) {
      wrong.push_back(fmt::format("{} is {} but the model needs {}", e.key,
                                  shape_string(it->second.shape), shape_string(e.shape)));
    } else if (it->second.dtype != Dtype::float32) {
      wrong.push_back(fmt::format("{} has dtype {} (save float32: .float())", e.key,
                                  dtype_name(it->second.dtype)));
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& [key, value] : weights)
    if (!expected.count(key)) unexpected.push_back(shown_key(key));
  if (missing.empty() && unexpected.empty() && wrong.empty()) return {};

  auto listed = [](const std::vector<std::string>& keys) {
    constexpr std::size_t kShown = 6;
    std::vector<std::string> shown(keys.begin(),
                                   keys.begin() + static_cast<long>(std::min(keys.size(), kShown)));
    if (keys.size() > kShown) shown.push_back(fmt::format("and {} more", keys.size() - kShown));
    return fmt::format("{}", fmt::join(shown, ", "));
  };
  std::vector<std::string> parts;
  if (!missing.empty()) parts.push_back(fmt::format("missing {}", listed(missing)));
  if (!unexpected.empty()) parts.push_back(fmt::format("unexpected {}", listed(unexpected)));
  if (!wrong.empty()) parts.push_back(listed(wrong));
  return fmt::format("{}", fmt::join(parts, "; "));
}

void check_state_dict(const Module& model, const StateDict& weights, std::string_view source) {
  const std::string mismatch = state_dict_mismatch(state_dict_entries(model), weights);
  if (mismatch.empty()) return;
  throw Error(
      ErrorKind::bad_value, "load_state_dict",
      fmt::format("'{}' does not fit {}: {}; export the state_dict of the same class with the "
                  "same sizes",
                  printable(source), model.class_name, mismatch))
      .about("weights");
}

void copy_parameter_in(const StateDict& weights, const std::string& key, float* data,
                       const Shape& shape) {
  const Array& a = weights.at(key);
  if (a.shape != shape || a.dtype != Dtype::float32) {
    throw Error(ErrorKind::bad_size, "load_state_dict",
                fmt::format("{} is {} {}, expected float32 {}", key, dtype_name(a.dtype),
                            shape_string(a.shape), shape_string(shape)));
  }
  if (!a.bytes.empty()) std::memcpy(data, a.bytes.data(), a.bytes.size());
}

void copy_parameter_out(StateDict& weights, const std::string& key, const float* data,
                        const Shape& shape) {
  Array a{Dtype::float32, shape, std::vector<unsigned char>(element_count(shape) * sizeof(float))};
  if (!a.bytes.empty()) std::memcpy(a.bytes.data(), data, a.bytes.size());
  weights[key] = std::move(a);
}

}  // namespace attn

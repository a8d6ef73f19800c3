// One fixture case: an .npz of arrays in data/fixtures/<folder>/ and its entry in that folder's
// cases.json (the module, sizes and options the generator used).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "allclose.hpp"
#include "base/tensor.hpp"
#include "fixtures.hpp"
#include "io/weights.hpp"

namespace attn::testing {

struct FixtureCase {
  std::string name;
  StateDict arrays;  // everything in the .npz
  nlohmann::json meta;

  const Array& at(const std::string& key) const {
    const auto it = arrays.find(key);
    if (it == arrays.end()) FAIL(name << ": the fixture has no " << key);
    return it->second;
  }
  Tensor3 tensor(const std::string& key) const { return to_tensor<3>(at(key), key); }
  bool has(const std::string& key) const { return arrays.count(key) > 0; }
};

inline FixtureCase load_case(const std::string& folder, const std::string& name) {
  const auto cases = nlohmann::json::parse(read_text(fixture_path(folder + "/cases.json")));
  return FixtureCase{name, read_weights(fixture_path(folder + "/" + name + ".npz")),
                     cases.at(name)};
}

// Copies the case's param.<key> arrays, or `weights` when given, into the layer.
template <class Layer>
void copy_case_parameters(Layer& layer, const FixtureCase& c, const StateDict* weights = nullptr) {
  visit_parameters(layer, [&](const std::string& key, float* data, const Shape& shape) {
    const Array& a = weights != nullptr ? weights->at(key) : c.at("param." + key);
    REQUIRE(a.shape == shape);
    const std::vector<float> values = to_float_vector(a);
    std::copy(values.begin(), values.end(), data);
  });
}

// Each parameter's gradient against the case's grad.<key>, or grad_sample.<key> (every 97th
// element) where the case keeps only a sample.
template <class Layer>
void check_case_gradients(Layer& grad, const FixtureCase& c, Tolerance tolerance) {
  std::size_t checked = 0;
  visit_parameters(grad, [&](const std::string& key, float* data, const Shape& shape) {
    INFO(c.name << ": grad." << key);
    const std::vector<float> values(data, data + element_count(shape));
    if (c.has("grad_sample." + key)) {
      std::vector<float> sampled;
      for (std::size_t i = 0; i < values.size(); i += 97)
        sampled.push_back(values[i]);
      CHECK_ALLCLOSE(make_float32({sampled.size()}, sampled), c.at("grad_sample." + key),
                     tolerance);
    } else {
      CHECK_ALLCLOSE(make_float32(shape, values), c.at("grad." + key), tolerance);
    }
    ++checked;
  });
  CHECK(checked > 0);
}

}  // namespace attn::testing

// The logit lens: each row's residual stream through ln_f and the unembedding. Legend: R = L + 1
// rows, T tokens, D n_embd, V vocab_size.
#include "logit_lens.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "base/error.hpp"
#include "layer_norm.hpp"
#include "matmul.hpp"

namespace attn {

double LogitLens::log_probability(std::size_t row, std::size_t t, std::int64_t token) const {
  return static_cast<double>(logits(row, t, static_cast<std::size_t>(token))) -
         static_cast<double>(log_normalizer(row, t));
}

double LogitLens::probability(std::size_t row, std::size_t t, std::int64_t token) const {
  return std::exp(log_probability(row, t, token));
}

LogitLens logit_lens(const Gpt2& model, const Gpt2Steps& steps) {
  const std::size_t layers = steps.layers.size(), rows = layers + 1;
  const std::size_t d = model.config.sizes.hidden_size;
  const Tensor3& embedded = steps.embedded;  // (B,T,D)
  if (embedded.shape(0) != 1 || embedded.shape(2) != d || layers != model.layers.size())
    throw Error(ErrorKind::bad_size, "logit_lens",
                fmt::format("steps of batch {}, width {} and {} blocks for a model of width {} and "
                            "{} blocks: run forward on one sequence of this model",
                            embedded.shape(0), embedded.shape(2), layers, d, model.layers.size()));
  const std::size_t tokens = embedded.shape(1);
  // x_0 .. x_L stacked: (1, R·T, D), so that ln_f and the unembedding run once over every row.
  Tensor3 stream = Tensor3::from_shape({1, rows * tokens, d});
  for (std::size_t l = 0; l < rows; ++l) {
    const Tensor3& x = l == 0 ? embedded : steps.layers[l - 1].output;  // (1,T,D)
    std::copy(x.begin(), x.end(), stream.begin() + static_cast<std::ptrdiff_t>(l * tokens * d));
  }
  const Tensor3 normed = forward(model.ln_f, stream).output;  // (1,R·T,D)
  const Tensor2& unembedding = model.lm_head.size() > 0 ? model.lm_head : model.wte.weight;
  const Tensor3 logits = linear(normed, unembedding, nullptr);  // (1,R·T,D) @ (V,D)ᵀ -> (1,R·T,V)
  const std::size_t vocab = unembedding.shape(0);
  LogitLens lens;
  lens.logits = Tensor3::from_shape({rows, tokens, vocab});
  std::copy(logits.begin(), logits.end(), lens.logits.begin());
  lens.log_normalizer = Tensor2::from_shape({rows, tokens});
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t t = 0; t < tokens; ++t) {
      const float* row = &lens.logits(r, t, 0);
      const double largest = *std::max_element(row, row + vocab);
      double sum = 0.0;
      for (std::size_t v = 0; v < vocab; ++v)
        sum += std::exp(static_cast<double>(row[v]) - largest);
      lens.log_normalizer(r, t) = static_cast<float>(largest + std::log(sum));
    }
  return lens;
}

Tensor3 lens_log_probs(const LogitLens& lens) {
  Tensor3 out = lens.logits;
  for (std::size_t r = 0; r < lens.rows(); ++r)
    for (std::size_t t = 0; t < lens.tokens(); ++t)
      for (std::size_t v = 0; v < lens.vocab(); ++v)
        out(r, t, v) = static_cast<float>(lens.log_probability(r, t, static_cast<std::int64_t>(v)));
  return out;
}

namespace {

void check_cell(const LogitLens& lens, std::size_t row, std::size_t t, std::string_view function) {
  if (row < lens.rows() && t < lens.tokens()) return;
  throw Error(ErrorKind::bad_size, function,
              fmt::format("row {} and position {} outside the lens's {} rows and {} positions", row,
                          t, lens.rows(), lens.tokens()));
}

// a before b: a higher logit, or the same logit and a smaller id.
bool ahead(const float* row, std::size_t a, std::size_t b) {
  return row[a] > row[b] || (row[a] == row[b] && a < b);
}

}  // namespace

std::vector<std::int64_t> lens_top_tokens(const LogitLens& lens, std::size_t row, std::size_t t,
                                          std::size_t k) {
  check_cell(lens, row, t, "lens_top_tokens");
  const float* logits = &lens.logits(row, t, 0);
  std::vector<std::size_t> order(lens.vocab());
  std::iota(order.begin(), order.end(), 0);
  k = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](std::size_t a, std::size_t b) { return ahead(logits, a, b); });
  return {order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k)};
}

std::size_t lens_rank(const LogitLens& lens, std::size_t row, std::size_t t, std::int64_t token) {
  check_cell(lens, row, t, "lens_rank");
  if (token < 0 || static_cast<std::size_t>(token) >= lens.vocab())
    throw Error(ErrorKind::bad_value, "lens_rank",
                fmt::format("token {} outside the vocabulary's {}", token, lens.vocab()));
  const float* logits = &lens.logits(row, t, 0);
  std::size_t before = 0;
  for (std::size_t v = 0; v < lens.vocab(); ++v)
    before += ahead(logits, v, static_cast<std::size_t>(token)) ? 1 : 0;
  return before + 1;
}

std::size_t lens_settles_at(const LogitLens& lens, std::size_t t, std::int64_t token) {
  std::size_t row = lens.rows();
  while (row > 0 && lens_rank(lens, row - 1, t, token) == 1)
    --row;
  return row;
}

MemoryPlan plan_logit_lens(const Gpt2Config& config, std::size_t tokens) {
  const EncoderConfig& c = config.sizes;
  const std::size_t rows = c.num_hidden_layers + 1;
  return {{"the lens's residual streams, ln_f's steps", {5, rows, tokens, c.hidden_size}, " L T D"},
          {"the lens's logits, and their copy", {2, rows, tokens, c.vocab_size}, " L T V"},
          {"the lens's normalizers", {rows, tokens}, "L T"}};
}

}  // namespace attn

#include "interp.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include "base/error.hpp"
#include "matmul.hpp"

namespace attn {

namespace {

[[noreturn]] void refuse(std::string_view function, const std::string& what) {
  throw Error(ErrorKind::bad_value, function, what);
}

void check_interventions(const Interventions& in, std::size_t layers, std::size_t heads,
                         std::size_t batch, std::size_t tokens, std::size_t width) {
  const std::size_t head_size = width / heads;
  for (const HeadIntervention& z : in.heads) {
    if (z.layer >= layers || z.head >= heads)
      refuse("interventions", fmt::format("head {}.{} but the model has {} layers of {} heads",
                                          z.layer, z.head, layers, heads));
    if ((z.row && *z.row >= batch) || (z.position && *z.position >= tokens))
      refuse("interventions",
             fmt::format("head {}.{} at row {}, position {} of a ({}, {}) batch", z.layer, z.head,
                         z.row.value_or(0), z.position.value_or(0), batch, tokens));
    if (z.values.shape(0) != tokens || z.values.shape(1) != head_size)
      throw Error(ErrorKind::bad_size, "interventions",
                  fmt::format("head {}.{}'s values are ({}, {}) but (T, hs) is ({}, {})", z.layer,
                              z.head, z.values.shape(0), z.values.shape(1), tokens, head_size));
  }
  for (const ResidualIntervention& r : in.residual) {
    if (r.layer > layers || r.row >= batch || r.position >= tokens)
      refuse("interventions",
             fmt::format("the residual stream entering block {} at row {}, position {}, but the "
                         "model has {} blocks and the batch is ({}, {})",
                         r.layer, r.row, r.position, layers, batch, tokens));
    if (r.values.size() != width)
      throw Error(
          ErrorKind::bad_size, "interventions",
          fmt::format("residual values have {} numbers but D is {}", r.values.size(), width));
  }
}

// R_l: the residual interventions at block `layer` (L: ln_f's input).
void apply_residual(Tensor3& x, const Interventions& in, std::size_t layer) {
  for (const ResidualIntervention& r : in.residual)
    if (r.layer == layer) std::copy(r.values.begin(), r.values.end(), &x(r.row, r.position, 0));
}

// Z_l: the head interventions at block `layer`, on z (B,T,H·hs).
void apply_heads(Tensor3& z, const Interventions& in, std::size_t layer, std::size_t head_size) {
  const std::size_t batch = z.shape(0), tokens = z.shape(1);
  for (const HeadIntervention& h : in.heads) {
    if (h.layer != layer) continue;
    for (std::size_t b = 0; b < batch; ++b) {
      if (h.row && *h.row != b) continue;
      for (std::size_t t = 0; t < tokens; ++t) {
        if (h.position && *h.position != t) continue;
        std::copy(&h.values(t, 0), &h.values(t, 0) + head_size, &z(b, t, h.head * head_size));
      }
    }
  }
}

// transformers' causal mask: float32's lowest on a key after the query.
Tensor3 causal_mask(std::size_t batch, std::size_t tokens) {
  Tensor3 mask = xt::zeros<float>({batch, tokens, tokens});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t q = 0; q < tokens; ++q)
      for (std::size_t k = q + 1; k < tokens; ++k)
        mask(b, q, k) = std::numeric_limits<float>::lowest();
  return mask;
}

const Tensor2& unembedding(const Gpt2& model) {
  return model.lm_head.size() > 0 ? model.lm_head : model.wte.weight;
}

}  // namespace

InterpRun forward_with_interventions(const Gpt2& model, const Ids& ids,
                                     const Interventions& interventions, bool cache,
                                     InterpLogits logits) {
  if (ids.dimension() != 2 || ids.shape(0) == 0 || ids.shape(1) == 0)
    throw Error(ErrorKind::bad_size, "interventions", "input_ids must be (B, T) with B, T > 0");
  const std::size_t batch = ids.shape(0), tokens = ids.shape(1);
  const std::size_t positions = model.wpe.weight.shape(0), width = model.wte.weight.shape(1);
  if (tokens > positions)
    throw Error(ErrorKind::bad_size, "interventions",
                fmt::format("{} tokens but only {} positions (n_positions): use at most {} tokens",
                            tokens, positions, positions))
        .driven_by({"T"});
  const std::size_t layers = model.layers.size();
  const std::size_t heads = layers > 0 ? model.layers[0].attention.heads.size() : 1;
  check_interventions(interventions, layers, heads, batch, tokens, width);
  const std::size_t head_size = width / heads;

  InterpRun run;
  Tensor3 x = forward(model.wte, ids);                                // (B,T) -> (B,T,D)
  const Tensor3 position = forward(model.wpe, position_ids(tokens));  // (1,T,D)
  for (std::size_t b = 0; b < batch; ++b)
    xt::view(x, b) += xt::view(position, 0);
  const Tensor3 mask = causal_mask(batch, tokens);  // (B,T,T)

  for (std::size_t l = 0; l < layers; ++l) {
    const EncoderLayer& block = model.layers[l];
    apply_residual(x, interventions, l);
    if (cache) run.residual.push_back(x);
    const Tensor3 normed = forward(block.layer_norm_1, x).output;  // (B,T,D)
    Tensor3 z({batch, tokens, heads * head_size});                 // (B,T,H·hs)
    Tensor4 weights;
    if (cache) weights = Tensor4({batch, heads, tokens, tokens});
    for (std::size_t h = 0; h < heads; ++h) {
      const AttentionSteps one = forward(block.attention.heads[h], normed, &mask);  // (B,T,hs)
      xt::view(z, xt::all(), xt::all(), xt::range(h * head_size, (h + 1) * head_size)) = one.output;
      if (cache) xt::view(weights, xt::all(), h) = one.weights;  // (B,T,T)
    }
    apply_heads(z, interventions, l, head_size);
    const Tensor3 attention_out = forward(block.attention.output_linear, z);  // (B,T,H·hs) -> D
    Tensor3 sum = x + attention_out;
    const Tensor3 mlp_out =
        forward(block.feed_forward, forward(block.layer_norm_2, sum).output).output;  // (B,T,D)
    x = sum + mlp_out;
    if (cache) {
      run.heads.push_back(std::move(z));
      run.attention.push_back(std::move(weights));
      run.attention_out.push_back(attention_out);
      run.mlp_out.push_back(mlp_out);
    }
  }
  apply_residual(x, interventions, layers);
  if (cache) run.residual.push_back(x);
  const LayerNormSteps final_norm = forward(model.ln_f, x);
  if (cache) {
    run.final_scale = Tensor2({batch, tokens});
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t t = 0; t < tokens; ++t)
        run.final_scale(b, t) = 1.0f / std::sqrt(final_norm.variance(b, t, 0) + model.ln_f.eps);
  }
  if (logits == InterpLogits::all) {
    run.logits = linear(final_norm.output, unembedding(model), nullptr);  // (B,T,D) @ (V,D)ᵀ
  } else if (logits == InterpLogits::last) {
    const Tensor3 last = xt::view(final_norm.output, xt::all(), xt::range(tokens - 1, tokens),
                                  xt::all());                // (B,1,D)
    run.logits = linear(last, unembedding(model), nullptr);  // (B,1,V)
  }
  return run;
}

MemoryPlan plan_interventions(const Gpt2Config& config, std::size_t batch, std::size_t tokens,
                              bool cache, InterpLogits logits) {
  const EncoderConfig& c = config.sizes;
  const std::size_t d = c.hidden_size, layers = c.num_hidden_layers;
  MemoryPlan plan;
  plan.push_back({"the residual stream and its sums", {6, batch, tokens, d}, " B T D"});
  plan.push_back({"the causal mask", {batch, tokens, tokens}, "B T T"});
  plan.push_back({"one head's steps", {6, batch, tokens, tokens + d}, " B T T/D"});
  plan.push_back({"the feed-forward's steps", {3, batch, tokens, c.intermediate_size}, " B T F"});
  if (cache) {
    plan.push_back(
        {"the cached streams and outputs", {4 * layers + 1, batch, tokens, d}, "L B T D"});
    plan.push_back({"the cached attention weights",
                    {layers, batch, c.num_attention_heads, tokens, tokens},
                    "L B H T T"});
  }
  if (logits != InterpLogits::none)
    plan.push_back({"the logits",
                    {batch, logits == InterpLogits::all ? tokens : 1, c.vocab_size},
                    logits == InterpLogits::all ? "B T V" : "B 1 V"});
  return plan;
}

std::vector<float> logit_differences(const Tensor3& logits, std::int64_t answer,
                                     std::int64_t wrong) {
  const std::size_t vocab = logits.shape(2), last = logits.shape(1) - 1;
  for (std::int64_t id : {answer, wrong})
    if (id < 0 || static_cast<std::size_t>(id) >= vocab)
      refuse("logit_differences",
             fmt::format("token id {} is outside the vocabulary (0..{})", id, vocab - 1));
  std::vector<float> out;
  for (std::size_t b = 0; b < logits.shape(0); ++b)
    out.push_back(logits(b, last, static_cast<std::size_t>(answer)) -
                  logits(b, last, static_cast<std::size_t>(wrong)));
  return out;
}

Patching activation_patching(const Gpt2& model, const Ids& clean, const Ids& corrupt,
                             std::int64_t answer, std::int64_t wrong) {
  if (clean.dimension() != 2 || corrupt.dimension() != 2 || clean.shape(0) != 1 ||
      corrupt.shape(0) != 1 || clean.shape(1) != corrupt.shape(1))
    throw Error(ErrorKind::bad_size, "activation_patching",
                fmt::format("the clean ids are ({}) and the corrupt ({}): give (1, T) each, the "
                            "same T",
                            fmt::join(clean.shape(), ", "), fmt::join(corrupt.shape(), ", ")));
  const std::size_t tokens = clean.shape(1), layers = model.layers.size();
  const std::size_t heads = layers > 0 ? model.layers[0].attention.heads.size() : 1;
  const std::size_t head_size = model.wte.weight.shape(1) / heads;
  const InterpRun clean_run =
      forward_with_interventions(model, clean, {}, true, InterpLogits::last);
  const InterpRun corrupt_run =
      forward_with_interventions(model, corrupt, {}, false, InterpLogits::last);
  Patching p;
  p.clean = logit_differences(clean_run.logits, answer, wrong)[0];
  p.corrupt = logit_differences(corrupt_run.logits, answer, wrong)[0];
  const float gap = p.clean - p.corrupt;
  if (!(std::fabs(gap) > 1e-6f * std::max(1.0f, std::fabs(p.clean))))
    refuse("activation_patching",
           fmt::format("the clean and corrupt runs give the same logit difference ({:.4g}): "
                       "there is nothing to restore; choose a corrupt text that changes the answer",
                       p.clean));

  p.residual_difference = Tensor2({layers, tokens});
  p.heads_difference = Tensor2({layers, heads});
  for (std::size_t l = 0; l < layers; ++l) {
    Interventions by_position;  // row t: the clean stream entering block l, at position t
    for (std::size_t t = 0; t < tokens; ++t)
      by_position.residual.push_back(
          {l, t, t, Tensor1(xt::view(clean_run.residual[l], 0, t, xt::all()))});
    const Ids rows = xt::repeat(corrupt, tokens, 0);  // (T,T): the corrupt ids T times
    const std::vector<float> d = logit_differences(
        forward_with_interventions(model, rows, by_position, false, InterpLogits::last).logits,
        answer, wrong);
    for (std::size_t t = 0; t < tokens; ++t)
      p.residual_difference(l, t) = d[t];

    Interventions by_head;  // row h: head h's clean output at every position
    for (std::size_t h = 0; h < heads; ++h)
      by_head.heads.push_back({l, h, h, std::nullopt,
                               Tensor2(xt::view(clean_run.heads[l], 0, xt::all(),
                                                xt::range(h * head_size, (h + 1) * head_size)))});
    const Ids head_rows = xt::repeat(corrupt, heads, 0);  // (H,T)
    const std::vector<float> e = logit_differences(
        forward_with_interventions(model, head_rows, by_head, false, InterpLogits::last).logits,
        answer, wrong);
    for (std::size_t h = 0; h < heads; ++h)
      p.heads_difference(l, h) = e[h];
  }
  p.residual = (p.residual_difference - p.corrupt) / gap;
  p.heads = (p.heads_difference - p.corrupt) / gap;
  return p;
}

MemoryPlan plan_patching(const Gpt2Config& config, std::size_t tokens) {
  const std::size_t rows = std::max<std::size_t>(tokens, config.sizes.num_attention_heads);
  MemoryPlan plan = plan_interventions(config, 1, tokens, true, InterpLogits::last);
  append(plan, plan_interventions(config, rows, tokens, false, InterpLogits::last));
  return plan;
}

LogitAttribution direct_logit_attribution(const Gpt2& model, const InterpRun& run, std::size_t row,
                                          std::int64_t answer, std::int64_t wrong) {
  const std::size_t layers = model.layers.size();
  if (run.residual.size() != layers + 1 || run.final_scale.size() == 0)
    refuse("direct_logit_attribution", "the run has no cache: run it with cache = true");
  const std::size_t batch = run.final_scale.shape(0), tokens = run.final_scale.shape(1);
  const Tensor2& unembed = unembedding(model);  // (V,D)
  const std::size_t vocab = unembed.shape(0), width = unembed.shape(1);
  for (std::int64_t id : {answer, wrong})
    if (id < 0 || static_cast<std::size_t>(id) >= vocab)
      refuse("direct_logit_attribution",
             fmt::format("token id {} is outside the vocabulary (0..{})", id, vocab - 1));
  if (row >= batch)
    refuse("direct_logit_attribution", fmt::format("row {} of a batch of {}", row, batch));
  const std::size_t last = tokens - 1;

  // u = W_U[answer] - W_U[wrong]; g = s γ ⊙ u, centred: a part p adds (p - mean p)·g = p·(g - ḡ).
  Tensor1 g = Tensor1::from_shape({width});
  float beta = 0;
  for (std::size_t d = 0; d < width; ++d) {
    const float u =
        unembed(static_cast<std::size_t>(answer), d) - unembed(static_cast<std::size_t>(wrong), d);
    g(d) = run.final_scale(row, last) * model.ln_f.weight(d) * u;
    beta += model.ln_f.bias(d) * u;
  }
  const float g_mean = xt::mean(g)();
  const auto share = [&](const float* part) {
    double sum = 0;
    for (std::size_t d = 0; d < width; ++d)
      sum += double(part[d]) * (g(d) - g_mean);
    return static_cast<float>(sum);
  };

  LogitAttribution a;
  a.embeddings = share(&run.residual[0](row, last, 0));
  const std::size_t heads = layers > 0 ? model.layers[0].attention.heads.size() : 1;
  const std::size_t head_size = width / heads;
  a.heads = xt::zeros<float>({layers, heads});
  a.biases = beta;
  for (std::size_t l = 0; l < layers; ++l) {
    const Linear& c_proj = model.layers[l].attention.output_linear;  // (D, H·hs)
    std::vector<float> part(width);
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t d = 0; d < width; ++d) {  // z_h W_O[h]: c_proj's columns of head h
        float sum = 0;
        for (std::size_t i = 0; i < head_size; ++i)
          sum += c_proj.weight(d, h * head_size + i) * run.heads[l](row, last, h * head_size + i);
        part[d] = sum;
      }
      a.heads(l, h) = share(part.data());
    }
    if (c_proj.bias.size() > 0) a.biases += share(c_proj.bias.data());
    a.mlps.push_back(share(&run.mlp_out[l](row, last, 0)));
  }
  a.total = a.embeddings + xt::sum(a.heads)() + a.biases;
  for (float m : a.mlps)
    a.total += m;
  if (run.logits.size() > 0) a.difference = logit_differences(run.logits, answer, wrong)[row];
  return a;
}

}  // namespace attn

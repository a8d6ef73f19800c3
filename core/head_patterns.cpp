#include "head_patterns.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn {

namespace {

// One target (or none) per query, each query seeing every key or keys up to itself.
template <typename Target>
SequenceTargets one_target_each(std::size_t tokens, bool causal, Target target) {
  SequenceTargets out(tokens);
  for (std::size_t t = 0; t < tokens; ++t) {
    out[t].visible = causal ? t + 1 : tokens;
    const std::ptrdiff_t key = target(static_cast<std::ptrdiff_t>(t));
    if (key >= 0 && static_cast<std::size_t>(key) < out[t].visible)
      out[t].keys.push_back(static_cast<std::size_t>(key));
  }
  return out;
}

}  // namespace

SequenceTargets mirror_targets(std::size_t tokens, bool causal) {
  const auto last = static_cast<std::ptrdiff_t>(tokens) - 1;
  return one_target_each(tokens, causal, [last](std::ptrdiff_t t) { return last - t; });
}

SequenceTargets previous_targets(std::size_t tokens, bool causal) {
  return one_target_each(tokens, causal, [](std::ptrdiff_t t) { return t - 1; });
}

SequenceTargets first_targets(std::size_t tokens, bool causal) {
  return one_target_each(tokens, causal, [](std::ptrdiff_t) { return std::ptrdiff_t{0}; });
}

SequenceTargets diagonal_targets(std::size_t tokens, bool causal) {
  return one_target_each(tokens, causal, [](std::ptrdiff_t t) { return t; });
}

SequenceTargets same_token_targets(const std::vector<std::int64_t>& ids, bool causal) {
  SequenceTargets out(ids.size());
  for (std::size_t t = 0; t < ids.size(); ++t) {
    out[t].visible = causal ? t + 1 : ids.size();
    for (std::size_t j = 0; j < out[t].visible; ++j)
      if (ids[j] == ids[t]) out[t].keys.push_back(j);
  }
  return out;
}

SequenceTargets duplicate_targets(const std::vector<std::int64_t>& ids, bool causal) {
  SequenceTargets out(ids.size());
  for (std::size_t t = 0; t < ids.size(); ++t) {
    out[t].visible = causal ? t + 1 : ids.size();
    for (std::size_t j = 0; j < t; ++j)
      if (ids[j] == ids[t]) out[t].keys.push_back(j);
  }
  return out;
}

SequenceTargets induction_targets(const std::vector<std::int64_t>& ids, bool causal) {
  SequenceTargets out(ids.size());
  for (std::size_t t = 0; t < ids.size(); ++t) {
    out[t].visible = causal ? t + 1 : ids.size();
    for (std::size_t j = 0; j < t; ++j)
      if (ids[j] == ids[t]) out[t].keys.push_back(j + 1);
  }
  return out;
}

PatternScores::PatternScores(std::size_t heads) : sums_(heads) {}

Tensor3 row_entropies(const Tensor4& weights) {
  const std::size_t batch = weights.shape(0), heads = weights.shape(1), queries = weights.shape(2),
                    keys = weights.shape(3);
  Tensor3 out = Tensor3::from_shape({batch, heads, queries});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t t = 0; t < queries; ++t) {
        double entropy = 0.0;
        for (std::size_t j = 0; j < keys; ++j) {
          const double p = weights(b, h, t, j);
          if (p > 0.0) entropy -= p * std::log(p);
        }
        out(b, h, t) = static_cast<float>(entropy);
      }
  return out;
}

void PatternScores::add(const Tensor4& weights, const std::vector<SequenceTargets>& targets,
                        const Tensor3* entropies) {
  const std::size_t batch = weights.shape(0), heads = weights.shape(1), queries = weights.shape(2),
                    keys = weights.shape(3);
  if (heads != sums_.size() || targets.size() != batch) {
    throw Error(ErrorKind::bad_size, "pattern_scores",
                fmt::format("weights of {} sequences and {} heads against patterns of {} "
                            "sequences for {} heads: give one pattern per sequence",
                            batch, heads, targets.size(), sums_.size()));
  }
  for (std::size_t b = 0; b < batch; ++b) {
    if (targets[b].size() != queries) {
      throw Error(ErrorKind::bad_size, "pattern_scores",
                  fmt::format("a pattern over {} queries for weights of {}: give one entry per "
                              "query",
                              targets[b].size(), queries));
    }
    for (std::size_t t = 0; t < queries; ++t) {
      const QueryTargets& q = targets[b][t];
      if (q.keys.empty()) continue;
      if (q.visible == 0 || q.visible > keys) {
        throw Error(
            ErrorKind::bad_size, "pattern_scores",
            fmt::format("query {} sees {} keys of {}: give 1 to {}", t, q.visible, keys, keys));
      }
      for (std::size_t key : q.keys) {
        if (key >= q.visible) {
          throw Error(ErrorKind::bad_size, "pattern_scores",
                      fmt::format("query {} targets key {}, which it cannot see (keys 0 to {})", t,
                                  key, q.visible - 1));
        }
      }
      for (std::size_t h = 0; h < heads; ++h) {
        double on = 0.0, entropy = 0.0;
        for (std::size_t key : q.keys)
          on += weights(b, h, t, key);
        if (entropies) {
          entropy = (*entropies)(b, h, t);
        } else {
          for (std::size_t j = 0; j < q.visible; ++j) {
            const double p = weights(b, h, t, j);
            if (p > 0.0) entropy -= p * std::log(p);
          }
        }
        HeadPatternScore& s = sums_[h];
        s.on_target += on;
        s.uniform += static_cast<double>(q.keys.size()) / static_cast<double>(q.visible);
        s.entropy += entropy;
        s.max_entropy += std::log(static_cast<double>(q.visible));
        ++s.queries;
      }
    }
  }
}

bool claim_holds(HeadsClaim claim, const std::vector<HeadPatternScore>& heads) {
  if (heads.empty()) return false;
  double best = 0.0, twice_uniform = 0.0, entropy = 0.0, uniform_entropy = 0.0;
  for (const HeadPatternScore& h : heads) {
    if (h.queries == 0) return false;
    best = std::max(best, h.on_target);
    twice_uniform = std::max(twice_uniform, h.on_target / (2.0 * h.uniform));
    entropy += h.entropy;
    uniform_entropy += h.max_entropy;
  }
  switch (claim) {
    case HeadsClaim::pattern:
      return best > 0.5;
    case HeadsClaim::reads:
      return twice_uniform >= 1.0;
    case HeadsClaim::spread:
      return best <= 0.5 && entropy >= 0.75 * uniform_entropy;
    case HeadsClaim::none:
      return true;
  }
  return false;
}

HeadPatternScore PatternScores::head(std::size_t head) const {
  if (head >= sums_.size()) {
    throw Error(ErrorKind::bad_size, "pattern_scores",
                fmt::format("head {} of {}: give 0 to {}", head, sums_.size(), sums_.size() - 1));
  }
  HeadPatternScore mean = sums_[head];
  if (mean.queries == 0) return mean;
  const auto n = static_cast<double>(mean.queries);
  mean.on_target /= n;
  mean.uniform /= n;
  mean.entropy /= n;
  mean.max_entropy /= n;
  return mean;
}

}  // namespace attn

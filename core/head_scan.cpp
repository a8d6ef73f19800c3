#include "head_scan.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "attention_view.hpp"
#include "base/error.hpp"
#include "bert.hpp"
#include "encoder.hpp"
#include "gpt2.hpp"

namespace attn {

std::string pattern_head(std::string_view pattern) {
  const bool vowel =
      !pattern.empty() && std::string_view("aeiou").find(pattern[0]) != std::string_view::npos;
  return fmt::format("{} {} head", vowel ? "an" : "a", pattern);
}

std::vector<ScanPattern> standard_patterns(bool causal) {
  std::vector<ScanPattern> out = {
      {"previous", "the previous token",
       [](const std::vector<std::int64_t>& ids, bool c) {
         return previous_targets(ids.size(), c);
       }},
      {"first", "the first token",
       [](const std::vector<std::int64_t>& ids, bool c) { return first_targets(ids.size(), c); }},
      {"diagonal", "the token itself",
       [](const std::vector<std::int64_t>& ids, bool c) {
         return diagonal_targets(ids.size(), c);
       }},
  };
  if (!causal)
    out.push_back(
        {"mirror", "the mirrored token", [](const std::vector<std::int64_t>& ids, bool c) {
           return mirror_targets(ids.size(), c);
         }});
  out.push_back({"duplicate", "earlier copies of the token", duplicate_targets});
  out.push_back({"induction", "the token after an earlier copy", induction_targets});
  return out;
}

namespace {

void check_probe(std::size_t count, std::size_t tokens, const ProbeTokens& drawn,
                 std::size_t fixed) {
  if (count == 0 || tokens <= fixed)
    throw Error(ErrorKind::bad_size, "heads",
                fmt::format("{} sequences of {} tokens: give at least 1 sequence of more than {} "
                            "tokens",
                            count, tokens, fixed))
        .about("seq");
  if (drawn.high <= drawn.low)
    throw Error(ErrorKind::bad_size, "heads",
                fmt::format("no token to draw between ids {} and {}", drawn.low, drawn.high));
}

std::size_t fixed_tokens(const ProbeTokens& drawn) {
  return (drawn.first ? 1 : 0) + (drawn.last ? 1 : 0);
}

// `n` ids from [low, high), without repeats while the range allows (a partial Fisher-Yates walk
// over the range, kept sparse), then with them.
std::vector<std::int64_t> distinct_draws(Rng& rng, std::size_t n, const ProbeTokens& drawn) {
  const auto range = static_cast<std::uint64_t>(drawn.high - drawn.low);
  std::vector<std::int64_t> out;
  std::vector<std::uint64_t> used;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t pick = rng.next_u64() % range;
    if (used.size() < range) {
      while (std::find(used.begin(), used.end(), pick) != used.end())
        pick = (pick + 1) % range;
      used.push_back(pick);
    }
    out.push_back(drawn.low + static_cast<std::int64_t>(pick));
  }
  return out;
}

void put_row(Ids& ids, std::size_t row, const ProbeTokens& drawn,
             const std::vector<std::int64_t>& middle) {
  std::size_t t = 0;
  if (drawn.first) ids(row, t++) = *drawn.first;
  for (std::int64_t id : middle)
    ids(row, t++) = id;
  if (drawn.last) ids(row, t++) = *drawn.last;
}

}  // namespace

ProbeSet repeated_probe(Rng& rng, std::size_t count, std::size_t tokens, const ProbeTokens& drawn) {
  const std::size_t fixed = fixed_tokens(drawn);
  check_probe(count, tokens, drawn, fixed + 1);
  ProbeSet set{"repeated random tokens",
               Ids({count, tokens}),
               {"previous", "first", "diagonal", "mirror", "duplicate", "induction"}};
  const std::size_t drawn_tokens = tokens - fixed, half = drawn_tokens / 2, odd = drawn_tokens % 2;
  set.copies_from = (drawn.first ? 1 : 0) + odd + half;
  for (std::size_t s = 0; s < count; ++s) {
    std::vector<std::int64_t> middle = distinct_draws(rng, odd + half, drawn);
    for (std::size_t i = odd; i < odd + half; ++i)
      middle.push_back(middle[i]);
    put_row(set.ids, s, drawn, middle);
  }
  return set;
}

LayerWeights encoder_weights(const Encoder& encoder) {
  return [&encoder](const Ids& ids) {
    EncoderTape tape = forward_tape(encoder, ids);
    std::vector<Tensor4> out;
    for (EncoderLayerTape& layer : tape.layers)
      out.push_back(std::move(layer.attention.weights));
    return out;
  };
}

LayerWeights bert_weights(const Bert& model) {
  return [&model](const Ids& ids) {
    BertSteps steps = forward(model, BertInput{ids, {}, {}}, false);
    std::vector<Tensor4> out;
    for (EncoderLayerTape& layer : steps.layers)
      out.push_back(std::move(layer.attention.weights));
    return out;
  };
}

LayerWeights gpt2_weights(const Gpt2& model) {
  return [&model](const Ids& ids) {
    Gpt2Steps steps = forward(model, Gpt2Input{ids, {}}, false);
    std::vector<Tensor4> out;
    for (EncoderLayerTape& layer : steps.layers)
      out.push_back(std::move(layer.attention.weights));
    return out;
  };
}

HeadPatternScore HeadScan::score(std::size_t set, std::size_t pattern, std::size_t layer,
                                 std::size_t head) const {
  return scores.at((set * patterns.size() + pattern) * layers + layer).head(head);
}

std::optional<HeadScan::Best> HeadScan::best(std::size_t layer, std::size_t head) const {
  std::optional<Best> out;
  for (std::size_t p = 0; p < patterns.size(); ++p) {
    if (!deciding[p]) continue;
    const HeadPatternScore s = score(*deciding[p], p, layer, head);
    if (s.queries == 0) continue;
    Best b{p, *deciding[p], s};
    if (!out || b.lift() > out->lift()) out = b;
  }
  return out;
}

HeadScan scan_heads(const LayerWeights& weights, std::size_t layers, std::size_t heads, bool causal,
                    std::vector<ScanPattern> patterns, const std::vector<ProbeSet>& sets,
                    std::size_t batch) {
  HeadScan scan;
  scan.layers = layers;
  scan.heads = heads;
  scan.causal = causal;
  scan.patterns = std::move(patterns);
  scan.deciding.assign(scan.patterns.size(), std::nullopt);
  for (std::size_t s = 0; s < sets.size(); ++s) {
    scan.sets.push_back(sets[s].name);
    for (std::size_t p = 0; p < scan.patterns.size(); ++p)
      if (!scan.deciding[p] && std::find(sets[s].decides.begin(), sets[s].decides.end(),
                                         scan.patterns[p].name) != sets[s].decides.end())
        scan.deciding[p] = s;
  }
  scan.scores.assign(sets.size() * scan.patterns.size() * layers, PatternScores(heads));
  batch = std::max<std::size_t>(batch, 1);
  for (std::size_t s = 0; s < sets.size(); ++s) {
    const Ids& all = sets[s].ids;
    const std::size_t count = all.shape(0), tokens = all.shape(1);
    for (std::size_t first = 0; first < count; first += batch) {
      const std::size_t n = std::min(batch, count - first);
      Ids ids({n, tokens});
      std::vector<std::vector<std::int64_t>> rows(n, std::vector<std::int64_t>(tokens));
      for (std::size_t b = 0; b < n; ++b)
        for (std::size_t t = 0; t < tokens; ++t)
          rows[b][t] = ids(b, t) = all(first + b, t);
      const std::vector<Tensor4> maps = weights(ids);
      if (maps.size() != layers || (!maps.empty() && maps[0].shape(1) != heads))
        throw Error(ErrorKind::bad_size, "heads",
                    fmt::format("the model gave {} layers of {} heads where {} x {} were expected",
                                maps.size(), maps.empty() ? 0 : maps[0].shape(1), layers, heads));
      std::vector<Tensor3> entropies;
      for (const Tensor4& map : maps)
        entropies.push_back(row_entropies(map));
      for (std::size_t p = 0; p < scan.patterns.size(); ++p) {
        std::vector<SequenceTargets> targets;
        for (const std::vector<std::int64_t>& row : rows)
          targets.push_back(scan.patterns[p].targets(row, causal));
        for (std::size_t l = 0; l < layers; ++l)
          scan.scores[(s * scan.patterns.size() + p) * layers + l].add(maps[l], targets,
                                                                       &entropies[l]);
      }
    }
  }
  return scan;
}

void mark_heads(AttentionView& view) {
  view.head_marks.clear();
  if (view.rows != view.columns || view.rows.size() < 2 || view.layers == 0) return;
  const std::size_t tokens = view.rows.size();
  std::vector<std::string> distinct;
  Ids ids({1, tokens});
  for (std::size_t t = 0; t < tokens; ++t) {
    auto it = std::find(distinct.begin(), distinct.end(), view.rows[t]);
    if (it == distinct.end()) it = distinct.insert(distinct.end(), view.rows[t]);
    ids(0, t) = it - distinct.begin();
  }
  ProbeSet set{"the text", ids, {}};
  const std::vector<ScanPattern> patterns = standard_patterns(view.causal);
  for (const ScanPattern& p : patterns)
    set.decides.push_back(p.name);
  const Tensor4& weights = view.weights;
  const auto one_sequence = [&weights](const Ids&) {
    std::vector<Tensor4> out;
    for (std::size_t l = 0; l < weights.shape(0); ++l) {
      Tensor4 layer({1, weights.shape(1), weights.shape(2), weights.shape(3)});
      std::copy(weights.begin() + static_cast<std::ptrdiff_t>(l * layer.size()),
                weights.begin() + static_cast<std::ptrdiff_t>((l + 1) * layer.size()),
                layer.begin());
      out.push_back(std::move(layer));
    }
    return out;
  };
  const HeadScan scan =
      scan_heads(one_sequence, view.layers, view.heads, view.causal, patterns, {set}, 1);
  for (std::size_t l = 0; l < view.layers; ++l)
    for (std::size_t h = 0; h < view.heads; ++h) {
      const std::optional<HeadScan::Best> best = scan.best(l, h);
      view.head_marks.push_back(
          best && best->holds()
              ? fmt::format("{} {:.2f}", scan.patterns[best->pattern].name, best->score.on_target)
              : "");
    }
}

}  // namespace attn

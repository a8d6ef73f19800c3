#include "heads_lesson.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "base/count.hpp"

namespace attn::lessons {

namespace {

std::string head_name(std::size_t layer, std::size_t head) {
  return fmt::format("{}.{}", layer, head);
}

std::string claim_words(HeadsClaim claim) {
  switch (claim) {
    case HeadsClaim::pattern:
      return "that one puts more than half of each query's weight on the pattern's keys";
    case HeadsClaim::reads:
      return "that one puts at least twice uniform attention's weight on the pattern's keys";
    case HeadsClaim::spread:
      return "that none puts half its weight on the pattern's keys, the weight spread (entropy "
             "at least 0.75 of uniform's)";
    case HeadsClaim::none:
      return "nothing";
  }
  return "";
}

void show_probes(LessonRun& run, const HeadsLessonOptions& o) {
  run.section("probes");
  Table table{"The probe sets", {"set", "sequences x tokens", "decides", "its first sequence"}, {}};
  for (const ProbeSet& set : o.sets) {
    std::string first;
    const std::size_t tokens = set.ids.shape(1), shown = std::min<std::size_t>(tokens, 16);
    for (std::size_t t = 0; t < shown; ++t)
      first += (t ? " " : "") + o.token_text(set.ids(0, t));
    if (shown < tokens) first += " …";
    std::string decides;
    for (const ScanPattern& p : o.patterns)
      if (std::find(set.decides.begin(), set.decides.end(), p.name) != set.decides.end())
        decides += (decides.empty() ? "" : ", ") + p.name;
    table.rows.push_back({set.name, fmt::format("{} x {}", set.ids.shape(0), tokens),
                          decides.empty() ? "-" : decides, first});
  }
  run.table(std::move(table));
}

// The scores as arrays: (sets, patterns, layers, heads) of on-target weight and of uniform's.
void record_scores(LessonRun& run, const HeadScan& scan) {
  const Shape shape = {scan.sets.size(), scan.patterns.size(), scan.layers, scan.heads};
  std::vector<float> on(element_count(shape)), uniform(on.size());
  std::size_t i = 0;
  for (std::size_t s = 0; s < scan.sets.size(); ++s)
    for (std::size_t p = 0; p < scan.patterns.size(); ++p)
      for (std::size_t l = 0; l < scan.layers; ++l)
        for (std::size_t h = 0; h < scan.heads; ++h, ++i) {
          const HeadPatternScore score = scan.score(s, p, l, h);
          on[i] = static_cast<float>(score.on_target);
          uniform[i] = static_cast<float>(score.uniform);
        }
  run.step("scores", "each head's weight on each pattern's keys, per probe set (S,P,L,H)",
           make_float32(shape, on), false);
  run.step("uniform", "uniform attention's weight on the same keys (S,P,L,H)",
           make_float32(shape, uniform), false);
}

void show_best(LessonRun& run, const HeadScan& scan) {
  run.section("table");
  Table table{"Each head's best pattern: the largest weight above uniform attention's",
              {"head", "best pattern", "on", "weight on its keys", "uniform's", "x uniform", ""},
              {}};
  for (std::size_t l = 0; l < scan.layers; ++l)
    for (std::size_t h = 0; h < scan.heads; ++h) {
      const std::optional<HeadScan::Best> b = scan.best(l, h);
      if (!b) {
        table.rows.push_back({head_name(l, h), "-", "-", "-", "-", "-", ""});
        continue;
      }
      table.rows.push_back({head_name(l, h), scan.patterns[b->pattern].name, scan.sets[b->set],
                            fmt::format("{:.2f}", b->score.on_target),
                            fmt::format("{:.2f}", b->score.uniform),
                            fmt::format("{:.1f}", b->score.on_target / b->score.uniform),
                            b->holds() ? pattern_head(scan.patterns[b->pattern].name) : ""});
    }
  run.table(std::move(table));
}

void show_heatmaps(LessonRun& run, const HeadScan& scan) {
  run.section("heatmaps");
  Heatmaps maps{"Each pattern's weight on its keys, layers x heads (rows: layers, columns: heads)",
                {},
                WeightsScale::fixed};
  for (std::size_t p = 0; p < scan.patterns.size(); ++p) {
    if (!scan.deciding[p]) continue;
    std::vector<float> values(scan.layers * scan.heads);
    for (std::size_t l = 0; l < scan.layers; ++l)
      for (std::size_t h = 0; h < scan.heads; ++h)
        values[l * scan.heads + h] =
            static_cast<float>(scan.score(*scan.deciding[p], p, l, h).on_target);
    maps.maps.push_back({scan.patterns[p].name, make_float32({scan.layers, scan.heads}, values),
                         numbered_labels("L", scan.layers), numbered_labels("H", scan.heads)});
  }
  run.heatmaps(std::move(maps));
}

void show_pattern_heads(LessonRun& run, const HeadScan& scan) {
  run.section("pattern-heads");
  Table table{
      "The heads of each pattern (weight on its keys above 0.5), on the set that decides it",
      {"pattern", "its keys", "heads above 0.5", "the strongest", "uniform's"},
      {}};
  for (std::size_t p = 0; p < scan.patterns.size(); ++p) {
    if (!scan.deciding[p]) continue;
    const std::size_t s = *scan.deciding[p];
    std::vector<std::pair<double, std::string>> above;
    double strongest = -1.0, uniform = 0.0;
    std::string strongest_head;
    for (std::size_t l = 0; l < scan.layers; ++l)
      for (std::size_t h = 0; h < scan.heads; ++h) {
        const HeadPatternScore score = scan.score(s, p, l, h);
        if (score.queries == 0) continue;
        if (score.on_target > 0.5)
          above.emplace_back(score.on_target,
                             fmt::format("{} ({:.2f})", head_name(l, h), score.on_target));
        if (score.on_target > strongest) {
          strongest = score.on_target;
          uniform = score.uniform;
          strongest_head = fmt::format("{} ({:.2f})", head_name(l, h), score.on_target);
        }
      }
    std::sort(above.begin(), above.end(), [](const auto& a, const auto& b) { return a > b; });
    std::string list;
    for (std::size_t i = 0; i < above.size() && i < 6; ++i)
      list += (i ? ", " : "") + above[i].second;
    if (above.size() > 6) list += fmt::format(", … {} in all", above.size());
    table.rows.push_back({scan.patterns[p].name, scan.patterns[p].keys,
                          list.empty() ? "none" : list,
                          strongest_head.empty() ? "-" : strongest_head,
                          strongest_head.empty() ? "-" : fmt::format("{:.2f}", uniform)});
  }
  run.table(std::move(table));
}

void check_claims(LessonRun& run, const HeadScan& scan, const std::vector<PatternClaim>& claims) {
  if (claims.empty()) {
    run.section("no-claims");
    return;
  }
  run.section("claims");
  for (const PatternClaim& c : claims) {
    std::size_t p = 0;
    while (p < scan.patterns.size() && scan.patterns[p].name != c.pattern)
      ++p;
    if (p == scan.patterns.size() || !scan.deciding[p]) continue;
    const std::size_t s = *scan.deciding[p];
    std::vector<HeadPatternScore> heads;
    std::size_t best_layer = 0, best_head = 0;
    double best = -1.0;
    for (std::size_t l = 0; l < scan.layers; ++l) {
      if (c.layer && *c.layer != l) continue;
      for (std::size_t h = 0; h < scan.heads; ++h) {
        heads.push_back(scan.score(s, p, l, h));
        if (heads.back().on_target > best)
          best = heads.back().on_target, best_layer = l, best_head = h;
      }
    }
    if (heads.empty()) continue;
    const HeadPatternScore b = scan.score(s, p, best_layer, best_head);
    const bool holds = claim_holds(c.claim, heads);
    run.check(
        fmt::format("{}_heads{}", c.pattern, c.layer ? fmt::format("_layer_{}", *c.layer) : ""),
        holds,
        fmt::format("{} claims of {} {}: head {} puts {:.2f} of each query's weight on {} "
                    "({:.1f} times uniform's {:.2f}), on {}",
                    c.source, c.layer ? fmt::format("layer {}'s heads", *c.layer) : "the heads",
                    claim_words(c.claim), head_name(best_layer, best_head), b.on_target,
                    scan.patterns[p].keys, b.on_target / b.uniform, b.uniform, scan.sets[s]));
  }
}

void show_ablation(LessonRun& run, const HeadsLessonOptions& o) {
  if (o.ablated.empty()) return;
  run.section("ablation");
  Table table{
      fmt::format("Ablating {}", o.ablated), {"measure", "every head", "ablated", "change"}, {}};
  for (const AblationRow& row : o.ablation) {
    const double change = row.after - row.before;
    const bool worse = row.lower_is_better ? change > 0.0 : change < 0.0;
    table.rows.push_back(
        {row.measure, fmt::format("{:.4f}", row.before), fmt::format("{:.4f}", row.after),
         fmt::format("{:+.4f}{}", change, change == 0.0 ? "" : (worse ? " worse" : " better"))});
  }
  run.table(std::move(table));
}

}  // namespace

MemoryPlan plan_heads_lesson(std::size_t layers, std::size_t heads, std::size_t patterns,
                             std::size_t sets, std::size_t batch, std::size_t tokens,
                             std::size_t sequences) {
  MemoryPlan plan;
  plan.push_back({"the scores", {sets, patterns, layers, heads, 2}, "S P L H", 8});
  plan.push_back(
      {"one forward's attention maps", {layers, batch, heads, tokens, tokens}, "L B H T T"});
  plan.push_back({"the probe sets", {sequences, tokens}, "N T", 8});
  return plan;
}

LessonRun run_heads(const HeadsLessonOptions& o, HeadScan* out) {
  LessonRun run("heads");
  run.setting("model", o.model);
  run.setting("structure", o.structure);
  run.section("intro");
  show_probes(run, o);
  const HeadScan scan =
      scan_heads(o.weights, o.layers, o.heads, o.causal, o.patterns, o.sets, o.batch);
  record_scores(run, scan);
  show_best(run, scan);
  show_heatmaps(run, scan);
  show_pattern_heads(run, scan);
  check_claims(run, scan, o.claims);
  show_ablation(run, o);
  std::vector<std::string> sets, patterns;
  for (const std::string& s : scan.sets)
    sets.push_back(s);
  for (const ScanPattern& p : scan.patterns)
    patterns.push_back(p.name);
  run.parameters = o.parameters;
  run.listing("probe_sets", sets);
  run.listing("patterns", patterns);
  if (out) *out = scan;
  return run;
}

}  // namespace attn::lessons

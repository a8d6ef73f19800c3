#include "base/budget.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <unistd.h>

#include "base/error.hpp"

namespace attn {

namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

// The element count, saturating at the maximum instead of overflowing.
std::size_t saturating_count(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t s : shape) {
    if (s == 0) return 0;
    if (n > kMax / s) return kMax;
    n *= s;
  }
  return n;
}

std::optional<std::size_t> cgroup_limit() {
  std::ifstream in("/sys/fs/cgroup/memory.max");  // cgroup v2; "max" means none
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    return static_cast<std::size_t>(std::stoull(text));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

struct Limit {
  std::size_t bytes;
  std::string source;
  std::string problem;  // why ATTN_MAX_MEMORY is not a size, when it is not
};

Limit initial_limit() {
  if (const char* env = std::getenv("ATTN_MAX_MEMORY"); env != nullptr && env[0] != '\0') {
    try {
      return {parse_memory_size(env, "ATTN_MAX_MEMORY"), "ATTN_MAX_MEMORY", ""};
    } catch (const Error& e) {
      // A bad variable is named when a command checks its budget (see check_budget).
      return {0, std::string("ATTN_MAX_MEMORY=") + env, e.detail()};
    }
  }
  return {default_memory_limit(), "half this machine's memory", ""};
}

Limit& current() {
  static Limit limit = initial_limit();
  return limit;
}

}  // namespace

std::size_t default_memory_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  std::size_t total = pages > 0 && page_size > 0
                          ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size)
                          : std::size_t{2} << 30;
  if (const auto cgroup = cgroup_limit(); cgroup && *cgroup < total) total = *cgroup;
  return total / 2;
}

std::size_t memory_limit() {
  return current().bytes;
}
std::string memory_limit_source() {
  return current().source;
}

std::string memory_limit_origin() {
  const std::string& source = current().source;
  return source.starts_with("half") ? source + "; <max_memory> sets it" : "set by " + source;
}
void set_memory_limit(std::size_t bytes, std::string source) {
  current() = {bytes, std::move(source), ""};
}

std::size_t parse_memory_size(std::string_view text, std::string_view what) {
  const auto bad = [&] {
    return Error(ErrorKind::bad_value, what,
                 fmt::format("'{}' is not a memory size: give bytes with a unit, e.g. 512M or 2G",
                             printable(text)));
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) throw bad();
  double value = 0.0;
  try {
    std::size_t used = 0;
    value = std::stod(std::string(text.substr(0, i)), &used);
    if (used != i) throw bad();
  } catch (const std::exception&) {
    throw bad();
  }
  std::string unit(text.substr(i));
  for (char& c : unit)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1.0;
  if (!unit.empty() && unit != "B") {
    const std::string prefixes = "KMGT";
    const std::size_t power = prefixes.find(unit[0]);
    const std::string rest = unit.substr(1);
    if (power == std::string::npos || !(rest.empty() || rest == "B" || rest == "IB")) throw bad();
    scale = std::pow(1024.0, static_cast<double>(power + 1));
  }
  const double bytes = value * scale;
  if (!(bytes >= 1.0)) {
    throw Error(ErrorKind::bad_value, what,
                fmt::format("'{}' is no memory at all: give a positive size, e.g. 512M or 2G",
                            printable(text)));
  }
  if (bytes >= 1.8e19) return kMax;
  return static_cast<std::size_t>(bytes);
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 6)
    bytes /= 1024.0, ++unit;
  if (unit == 0) return fmt::format("{:.0f} bytes", bytes);
  // Three significant digits, never an exponent: 999.5 to 1023.9 of a unit print whole.
  if (bytes >= 999.5) return fmt::format("{:.0f} {}", bytes, units[unit]);
  return fmt::format("{:.3g} {}", bytes, units[unit]);
}

MemoryPlan held_as(Held held, MemoryPlan plan) {
  for (PlannedTensor& t : plan)
    t.held = held;
  return plan;
}

void append(MemoryPlan& plan, const MemoryPlan& more) {
  plan.insert(plan.end(), more.begin(), more.end());
}

MemoryPlan larger_of(MemoryPlan a, MemoryPlan b) {
  return planned_bytes(a) >= planned_bytes(b) ? a : b;
}

namespace {

OutputCost& output_cost() {
  static OutputCost cost;
  return cost;
}

std::size_t saturating_add(std::size_t a, std::size_t b) {
  return b > kMax - a ? kMax : a + b;
}

std::size_t saturating_multiply(std::size_t a, std::size_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kMax / b ? kMax : a * b;
}

std::size_t bytes_of(const PlannedTensor& t) {
  return saturating_add(saturating_multiply(saturating_count(t.shape), t.element_bytes),
                        saturating_multiply(t.objects, kObjectBytes));
}

struct Estimate {
  std::size_t bytes = 0;
  MemoryPlan parts;  // the phase that needs the most
};

Estimate estimate(const MemoryPlan& plan) {
  Estimate before, after, showing;
  for (const PlannedTensor& t : plan) {
    if (t.held != Held::shown) before.parts.push_back(t);
    if (t.held != Held::before_shown) after.parts.push_back(t);
    if (t.held != Held::computing && t.held != Held::before_shown) showing.parts.push_back(t);
  }
  if (output_cost() && !showing.parts.empty()) append(showing.parts, output_cost()(showing.parts));
  Estimate* largest = &before;
  for (Estimate* e : {&before, &after, &showing}) {
    for (const PlannedTensor& t : e->parts)
      e->bytes = saturating_add(e->bytes, bytes_of(t));
    if (e->bytes > largest->bytes) largest = e;
  }
  return std::move(*largest);
}

// The letters of a part's axes, the largest axis first, without axes of size 1.
std::vector<std::string> driving_sizes(const PlannedTensor& t) {
  std::vector<std::string> labels;
  std::size_t start = 0;
  while (start < t.axes.size()) {
    const std::size_t end = std::min(t.axes.find(' ', start), t.axes.size());
    labels.push_back(t.axes.substr(start, end - start));
    start = end + 1;
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < labels.size() && i < t.shape.size(); ++i)
    if (t.shape[i] > 1) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return t.shape[a] > t.shape[b]; });
  std::vector<std::string> sizes;
  for (std::size_t i : order) {
    std::size_t from = 0;
    while (from <= labels[i].size()) {
      const std::size_t to = std::min(labels[i].find('/', from), labels[i].size());
      const std::string letter = labels[i].substr(from, to - from);
      if (!letter.empty() && std::find(sizes.begin(), sizes.end(), letter) == sizes.end())
        sizes.push_back(letter);
      from = to + 1;
    }
  }
  return sizes;
}

void check_against(std::string_view command, const MemoryPlan& plan, std::size_t limit,
                   const std::string& source) {
  const Estimate e = estimate(plan);
  if (e.bytes <= limit || e.parts.empty()) return;
  const PlannedTensor* largest = &e.parts.front();
  for (const PlannedTensor& t : e.parts)
    if (bytes_of(t) > bytes_of(*largest)) largest = &t;
  const std::string need =
      e.bytes == kMax ? std::string("more than 2^64 bytes")
                      : fmt::format("about {}", format_bytes(static_cast<double>(e.bytes)));
  throw Error(
      ErrorKind::too_large, command,
      fmt::format(
          "these sizes need {} (the largest part is {} {}), more than the memory limit of {} ({}): "
          "use smaller sizes",
          need, largest->name, shape_string(largest->shape),
          format_bytes(static_cast<double>(limit)), source))
      .driven_by(driving_sizes(*largest));
}

}  // namespace

void set_output_cost(OutputCost cost) {
  output_cost() = std::move(cost);
}

std::size_t planned_bytes(const MemoryPlan& plan) {
  return plan.empty() ? 0 : estimate(plan).bytes;
}

namespace {
std::atomic<std::size_t> g_budget_checks{0};
}  // namespace

std::size_t budget_checks() {
  return g_budget_checks.load();
}

void check_budget(std::string_view command, const MemoryPlan& plan) {
  ++g_budget_checks;
  if (const Limit& limit = current(); limit.bytes == 0) {
    if (!limit.problem.empty())
      throw Error(ErrorKind::bad_value, "check_budget",
                  "ATTN_MAX_MEMORY: " + limit.problem + ", or unset it");
    throw Error(ErrorKind::bad_value, command,
                fmt::format("{} is not a memory size", printable(limit.source)));
  }
  check_against(command, plan, memory_limit(), memory_limit_origin());
}

void check_budget(std::string_view command, const MemoryPlan& plan, std::size_t limit) {
  ++g_budget_checks;
  check_against(command, plan, limit, "the limit given");
}

}  // namespace attn

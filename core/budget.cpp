#include "budget.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <unistd.h>

#include "error.hpp"

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
};

Limit initial_limit() {
  if (const char* env = std::getenv("ATTN_MAX_MEMORY"); env != nullptr && env[0] != '\0') {
    try {
      return {parse_memory_size(env, "ATTN_MAX_MEMORY"), "ATTN_MAX_MEMORY"};
    } catch (const Error&) {
      // A bad variable is named when a command checks its budget (see check_budget).
      return {0, std::string("ATTN_MAX_MEMORY=") + env};
    }
  }
  return {default_memory_limit(), "half this machine's memory"};
}

Limit& current() {
  static Limit limit = initial_limit();
  return limit;
}

}  // namespace

std::size_t default_memory_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  std::size_t total = pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size)
                                                 : std::size_t{2} << 30;
  if (const auto cgroup = cgroup_limit(); cgroup && *cgroup < total) total = *cgroup;
  return total / 2;
}

std::size_t memory_limit() { return current().bytes; }
std::string memory_limit_source() { return current().source; }

std::string memory_limit_origin() {
  const std::string& source = current().source;
  return source.starts_with("half") ? source + "; <max_memory> sets it" : "set by " + source;
}
void set_memory_limit(std::size_t bytes, std::string source) { current() = {bytes, std::move(source)}; }

std::size_t parse_memory_size(std::string_view text, std::string_view what) {
  const auto bad = [&] {
    return Error(what, fmt::format("'{}' is not a memory size: give bytes with a unit, e.g. 512M or 2G", text));
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
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
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
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
    throw Error(what, fmt::format("'{}' is no memory at all: give a positive size, e.g. 512M or 2G", text));
  }
  if (bytes >= 1.8e19) return kMax;
  return static_cast<std::size_t>(bytes);
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 6) bytes /= 1024.0, ++unit;
  if (unit == 0) return fmt::format("{:.0f} bytes", bytes);
  return fmt::format("{:.3g} {}", bytes, units[unit]);
}

namespace {

void check_against(std::string_view command, std::initializer_list<PlannedTensor> tensors, std::size_t limit,
                   const std::string& source) {
  std::size_t total = 0;
  const PlannedTensor* largest = nullptr;
  std::size_t largest_count = 0;
  for (const PlannedTensor& t : tensors) {
    const std::size_t n = saturating_count(t.shape);
    total = n > kMax - total ? kMax : total + n;
    if (largest == nullptr || n > largest_count) largest = &t, largest_count = n;
  }
  const std::size_t bytes = total > kMax / sizeof(float) ? kMax : total * sizeof(float);
  if (bytes <= limit) return;
  const std::string need = bytes == kMax ? std::string("more than 2^64 bytes")
                                         : fmt::format("about {}", format_bytes(static_cast<double>(bytes)));
  throw Error(ErrorKind::too_large, command, fmt::format("these sizes need {} (the largest tensor is {} {}), more than the memory "
                                   "limit of {} ({}): use smaller sizes",
                                   need, largest->name, shape_string(largest->shape),
                                   format_bytes(static_cast<double>(limit)), source));
}

}  // namespace

void check_budget(std::string_view command, std::initializer_list<PlannedTensor> tensors) {
  const std::string source = memory_limit_source();
  if (memory_limit() == 0) {
    throw Error(command, fmt::format("{} is not a memory size: set it like ATTN_MAX_MEMORY=2G, or unset it", source));
  }
  check_against(command, tensors, memory_limit(), memory_limit_origin());
}

void check_budget(std::string_view command, std::initializer_list<PlannedTensor> tensors, std::size_t limit) {
  check_against(command, tensors, limit, "the limit given");
}

}  // namespace attn

// The numbers an exported page (attn view --export FILE.html) carries: the JSON in its
// <script type="application/json" id="attn-data"> element.
#pragma once

#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace attn::testing {

inline nlohmann::json page_data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"attn-data\">";
  const std::size_t start = page.find(open);
  REQUIRE(start != std::string::npos);
  const std::size_t end = page.find("</script>", start);
  REQUIRE(end != std::string::npos);
  return nlohmann::json::parse(page.substr(start + open.size(), end - start - open.size()));
}

}  // namespace attn::testing

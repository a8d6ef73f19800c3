// attn heads --export: the scan as one self-contained HTML page (no script): each pattern's
// layers x heads grid of scores, coloured by the score, each cell's title giving uniform
// attention's share beside it, and the table of each head's best pattern.
#pragma once

#include <string>
#include <vector>

#include "head_scan.hpp"

namespace attn::render {

struct HeadsPage {
  std::string model, structure;
  std::vector<std::string> notes;  // paragraphs under the title (the probe sets, the claims)
};

std::string heads_html(const HeadScan& scan, const HeadsPage& page);

}  // namespace attn::render

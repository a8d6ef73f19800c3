// A curve in the terminal, such as a training run's loss: the values bucketed into columns (the
// mean of each), each column a bar of block characters (`#` in ASCII), on a log10 scale when the
// values span more than a factor of 100, with the scale's ends and the steps labelled.
#pragma once

#include <string>
#include <vector>

namespace attn::render {

struct CurveOptions {
  std::size_t width = 60;   // columns of bars
  std::size_t height = 10;  // rows
  bool ascii = false;       // '#' and '.' instead of block characters
  std::string title;        // a first line, when not empty
  std::string x_label = "step";
};

// Throws attn::Error for a width or height of 0. Non-finite values are left out; none at all
// gives one line saying so.
std::string render_curve(const std::vector<double>& values, const CurveOptions& options);

}  // namespace attn::render

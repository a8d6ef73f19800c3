// A training run's curves as a picture drawn with cairo (attn train --export FILE.svg|FILE.png):
// panels stacked over one step axis, each with its axes, ticks and labels; every step's value as
// a faint line and its running mean as a bold one, and results measured once at the end (the
// held-out accuracy) as labelled dashed lines.
#pragma once

#include <string>
#include <vector>

#include "image_file.hpp"

namespace attn::render {

// A result measured once, drawn across its panel at `value`.
struct CurveMark {
  std::string label;  // "held-out tokens right"
  double value = 0.0;
};

struct CurvePanel {
  std::string y_label;         // "loss (cross-entropy)"
  std::vector<double> values;  // one per step, the first at step 1; non-finite values are skipped
  bool percent = false;        // the axis runs from 0 to 100%
  std::vector<CurveMark> marks;
};

struct CurvePicture {
  std::string title;                  // the first line, bold
  std::vector<std::string> subtitle;  // lines under it
  std::string x_label = "step";
  std::vector<CurvePanel> panels;  // top to bottom, all over the same steps
};

// The picture's bytes. A panel whose values span more than a factor of 100 gets a log10 axis, as
// the terminal's curve does; one with no finite value says so in place of its curve. Throws
// attn::Error about "export" when there is no panel.
std::string curve_image(const CurvePicture& picture, ImageFormat format);

// Draws the picture to `path`, .svg or .png by its extension (any case), all or nothing: a
// temporary file beside `path`, then renamed. Throws attn::Error about "export" with one line.
void write_curve_image(const CurvePicture& picture, const std::string& path);

}  // namespace attn::render

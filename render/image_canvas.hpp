// Drawing pictures with cairo, for render's own picture files (view_image.cpp, plot_image.cpp):
// text in DejaVu Sans, filled cells in the heatmaps' colours, and the finished drawing as SVG or
// PNG bytes. Only render's .cpp files include this header: it brings cairo.h.
#pragma once

#include <cairo.h>

#include <functional>
#include <string>
#include <string_view>

#include "heatmap.hpp"
#include "image_file.hpp"

namespace attn::render::image {

// PNG pixels per unit of the drawing (SVG units are pixels) unless a picture says otherwise:
// twice, for sharp text on dense screens, and cells on whole pixels.
inline constexpr double kPngScale = 2.0;
// The largest drawing, in its units: a side, and the area (a PNG of it at twice the size holds
// 64 MiB of pixels). A larger one is refused.
inline constexpr double kLargestSide = 4000.0, kLargestArea = 4e6;

inline constexpr Rgb kBlack{0, 0, 0};
inline constexpr Rgb kText{34, 34, 34};
inline constexpr Rgb kMuted{100, 100, 100};
inline constexpr Rgb kWhite{255, 255, 255};
inline constexpr Rgb kMasked{225, 225, 225};

// A context on a 1x1 surface, for measuring text before the drawing's size is known.
class Measure {
 public:
  Measure();
  ~Measure();
  Measure(const Measure&) = delete;
  Measure& operator=(const Measure&) = delete;
  cairo_t* cr() const { return cr_; }

 private:
  cairo_surface_t* surface_;
  cairo_t* cr_;
};

// DejaVu Sans at `size` units, bold or regular, with unhinted metrics so that SVG and PNG agree.
void set_font(cairo_t* cr, double size, bool bold = false);
void set_color(cairo_t* cr, Rgb color);
// A label as it is drawn: control characters and bytes that are not UTF-8 as \xNN (cairo takes
// only valid UTF-8), cut with … to at most `width` units in the current font.
std::string fitted(cairo_t* cr, std::string_view text, double width = 1e9);
double text_width(cairo_t* cr, std::string_view text);

enum class Align { left, center, right };
// Text with its baseline at y, aligned to x; `angle` in radians turns it about (x, y).
void draw_text(cairo_t* cr, std::string_view text, double x, double y, Align align = Align::left,
               double angle = 0.0);
void fill_rect(cairo_t* cr, double x, double y, double w, double h, Rgb color);
// A horizontal colour bar from `color(0)` to `color(1)`, w by h, outlined.
void color_bar(cairo_t* cr, double x, double y, double w, double h, Rgb (*color)(double));

// The drawing as a file's bytes: `draw` paints on a white canvas of width x height units, a PNG
// with `png_scale` pixels a unit. Throws attn::Error(too_large) about `subject` past kLargestSide or kLargestArea,
// saying `fix` (a way out that works for this picture, e.g. "use the head view of one layer"),
// and Error(internal) when cairo fails.
std::string render(ImageFormat format, double width, double height,
                   const std::function<void(cairo_t*)>& draw, std::string_view subject,
                   double png_scale, std::string_view fix);

}  // namespace attn::render::image

#include "image_canvas.hpp"

#include <cairo-svg.h>

#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"
#include "file_mark.hpp"

namespace attn::render::image {

namespace {

cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

void check(cairo_status_t status, std::string_view what) {
  if (status == CAIRO_STATUS_SUCCESS) return;
  throw Error(ErrorKind::internal, "render_image",
              fmt::format("cairo could not {}: {}", what, cairo_status_to_string(status)));
}

// Draws on `surface`, then checks that cairo managed it.
void paint(cairo_surface_t* surface, double scale, double width, double height,
           const std::function<void(cairo_t*)>& draw) {
  cairo_t* cr = cairo_create(surface);
  cairo_scale(cr, scale, scale);
  fill_rect(cr, 0, 0, width, height, kWhite);
  try {
    draw(cr);
  } catch (...) {
    cairo_destroy(cr);
    throw;
  }
  const cairo_status_t status = cairo_status(cr);
  cairo_destroy(cr);
  check(status, "draw the picture");
}

}  // namespace

Measure::Measure()
    : surface_(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1)), cr_(cairo_create(surface_)) {}

Measure::~Measure() {
  cairo_destroy(cr_);
  cairo_surface_destroy(surface_);
}

void set_font(cairo_t* cr, double size, bool bold) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
  cairo_font_options_t* options = cairo_font_options_create();
  cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE);
  cairo_set_font_options(cr, options);
  cairo_font_options_destroy(options);
}

void set_color(cairo_t* cr, Rgb c) {
  cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0);
}

double text_width(cairo_t* cr, std::string_view text) {
  const std::string safe = printable(text, std::string::npos);
  cairo_text_extents_t extents;
  cairo_text_extents(cr, safe.c_str(), &extents);
  return extents.x_advance;
}

std::string fitted(cairo_t* cr, std::string_view text, double width) {
  std::string safe = printable(text, std::string::npos);
  if (text_width(cr, safe) <= width) return safe;
  // Drop whole UTF-8 characters from the end until the text and … fit.
  while (!safe.empty()) {
    while (!safe.empty() && (static_cast<unsigned char>(safe.back()) & 0xC0) == 0x80)
      safe.pop_back();
    if (!safe.empty()) safe.pop_back();
    if (text_width(cr, safe + "…") <= width) return safe + "…";
  }
  return "…";
}

void draw_text(cairo_t* cr, std::string_view text, double x, double y, Align align, double angle) {
  const std::string safe = printable(text, std::string::npos);
  const double w = text_width(cr, safe);
  const double shift = align == Align::left ? 0.0 : align == Align::center ? -w / 2 : -w;
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_rotate(cr, angle);
  cairo_move_to(cr, shift, 0.0);
  cairo_show_text(cr, safe.c_str());
  cairo_restore(cr);
}

void fill_rect(cairo_t* cr, double x, double y, double w, double h, Rgb color) {
  set_color(cr, color);
  cairo_rectangle(cr, x, y, w, h);
  cairo_fill(cr);
}

void color_bar(cairo_t* cr, double x, double y, double w, double h, Rgb (*color)(double)) {
  cairo_pattern_t* gradient = cairo_pattern_create_linear(x, 0.0, x + w, 0.0);
  for (int k = 0; k <= 16; ++k) {
    const Rgb c = color(k / 16.0);
    cairo_pattern_add_color_stop_rgb(gradient, k / 16.0, c.r / 255.0, c.g / 255.0, c.b / 255.0);
  }
  cairo_rectangle(cr, x, y, w, h);
  cairo_set_source(cr, gradient);
  cairo_fill(cr);
  cairo_pattern_destroy(gradient);
  set_color(cr, kMuted);
  cairo_set_line_width(cr, 0.5);
  cairo_rectangle(cr, x, y, w, h);
  cairo_stroke(cr);
}

std::string render(ImageFormat format, double width, double height,
                   const std::function<void(cairo_t*)>& draw, std::string_view subject,
                   double png_scale, std::string_view fix) {
  width = std::ceil(width);
  height = std::ceil(height);
  if (width > kLargestSide || height > kLargestSide || width * height > kLargestArea)
    throw Error(
        ErrorKind::too_large, subject,
        fmt::format("the picture would be {:.0f} x {:.0f} pixels, larger than attn draws ({:.0f} "
                    "on a side, {:.0f} million in all): {}",
                    width, height, kLargestSide, kLargestArea / 1e6, fix))
        .about(std::string(subject));
  std::string bytes;
  if (format == ImageFormat::svg) {
    cairo_surface_t* surface = cairo_svg_surface_create_for_stream(append, &bytes, width, height);
    cairo_svg_surface_set_document_unit(surface, CAIRO_SVG_UNIT_PX);
    try {
      paint(surface, 1.0, width, height, draw);
    } catch (...) {
      cairo_surface_destroy(surface);
      throw;
    }
    cairo_surface_finish(surface);
    const cairo_status_t status = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    check(status, "write the SVG");
    return marked_svg(std::move(bytes));
  }
  cairo_surface_t* surface =
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(std::ceil(width * png_scale)),
                                 static_cast<int>(std::ceil(height * png_scale)));
  try {
    paint(surface, png_scale, width, height, draw);
  } catch (...) {
    cairo_surface_destroy(surface);
    throw;
  }
  const cairo_status_t status = cairo_surface_write_to_png_stream(surface, append, &bytes);
  cairo_surface_destroy(surface);
  check(status, "write the PNG");
  return marked_png(std::move(bytes));
}

}  // namespace attn::render::image

// Reading back the pictures attn draws (attn view --export, attn train --export): a PNG's pixels
// through cairo, and an SVG checked without an XML library: its tags balance, and cairo's filled
// rectangles (the heatmaps' cells) and glyphs (its text) are counted and located. The tests that
// include this link cairo (tests/CMakeLists.txt: test files named *image*).
#pragma once

#include <cairo.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace attn::testing {

struct Pixel {
  int r = 0, g = 0, b = 0;
};

struct PngImage {
  int width = 0, height = 0;
  std::vector<Pixel> pixels;  // row-major, height x width
  bool ok = false;            // cairo read it as a PNG
  Pixel at(int x, int y) const { return pixels[static_cast<std::size_t>(y) * width + x]; }
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline PngImage decode_png(const std::string& bytes) {
  struct Reader {
    const std::string* bytes;
    std::size_t at = 0;
  } reader{&bytes};
  const auto read = [](void* closure, unsigned char* data, unsigned int length) {
    auto* r = static_cast<Reader*>(closure);
    if (r->at + length > r->bytes->size()) return CAIRO_STATUS_READ_ERROR;
    for (unsigned int i = 0; i < length; ++i)
      data[i] = static_cast<unsigned char>((*r->bytes)[r->at + i]);
    r->at += length;
    return CAIRO_STATUS_SUCCESS;
  };
  cairo_surface_t* surface = cairo_image_surface_create_from_png_stream(read, &reader);
  PngImage image;
  if (cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(surface);
    image.ok = true;
    image.width = cairo_image_surface_get_width(surface);
    image.height = cairo_image_surface_get_height(surface);
    const int stride = cairo_image_surface_get_stride(surface);
    const unsigned char* data = cairo_image_surface_get_data(surface);
    for (int y = 0; y < image.height; ++y)
      for (int x = 0; x < image.width; ++x) {
        // cairo's 32-bit pixels are native-endian 0xAARRGGBB; an opaque PNG is not premultiplied.
        std::uint32_t v = 0;
        const unsigned char* p = data + y * stride + 4 * x;
        std::copy(p, p + 4, reinterpret_cast<unsigned char*>(&v));
        image.pixels.push_back({static_cast<int>((v >> 16) & 0xff),
                                static_cast<int>((v >> 8) & 0xff), static_cast<int>(v & 0xff)});
      }
  }
  cairo_surface_destroy(surface);
  return image;
}

inline bool is_white(Pixel p) {
  return p.r == 255 && p.g == 255 && p.b == 255;
}

// The largest difference of one channel.
inline int distance(Pixel a, Pixel b) {
  return std::max({std::abs(a.r - b.r), std::abs(a.g - b.g), std::abs(a.b - b.b)});
}

// WCAG relative luminance, 0 (black) to 1 (white).
inline double luminance(Pixel p) {
  const auto linear = [](int v) {
    const double s = v / 255.0;
    return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * linear(p.r) + 0.7152 * linear(p.g) + 0.0722 * linear(p.b);
}

// Whether the tags of an XML document balance: every start tag is closed in order, self-closing
// tags, declarations, comments and CDATA are skipped, and attribute values may hold '>'. Returns
// "" or what is wrong. Not a validating parser: enough to know cairo's SVG is whole.
inline std::string xml_problem(const std::string& text) {
  std::vector<std::string> open;
  std::size_t i = 0;
  std::size_t elements = 0;
  while ((i = text.find('<', i)) != std::string::npos) {
    if (text.compare(i, 4, "<!--") == 0) {
      const std::size_t end = text.find("-->", i);
      if (end == std::string::npos) return "an unclosed comment";
      i = end + 3;
      continue;
    }
    if (text.compare(i, 9, "<![CDATA[") == 0) {
      const std::size_t end = text.find("]]>", i);
      if (end == std::string::npos) return "an unclosed CDATA section";
      i = end + 3;
      continue;
    }
    // The tag's end: the first '>' outside quotes.
    std::size_t j = i + 1;
    char quote = 0;
    for (; j < text.size(); ++j) {
      const char c = text[j];
      if (quote != 0) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '>') {
        break;
      } else if (c == '<') {
        return "a '<' inside a tag at byte " + std::to_string(j);
      }
    }
    if (j >= text.size()) return "a tag that never ends at byte " + std::to_string(i);
    const std::string tag = text.substr(i + 1, j - i - 1);
    i = j + 1;
    if (tag.empty()) return "an empty tag";
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1, tag.find_first_of(" \t\r\n", 1) - 1);
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
      open.pop_back();
      continue;
    }
    ++elements;
    if (tag.back() == '/') continue;
    open.push_back(tag.substr(0, tag.find_first_of(" \t\r\n/")));
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (elements == 0) return "no elements";
  return "";
}

inline std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t i = text.find(what); i != std::string::npos; i = text.find(what, i + 1))
    ++n;
  return n;
}

// The <svg> element's width and height (cairo writes "123px" or "123pt").
inline std::pair<double, double> svg_size(const std::string& svg) {
  static const std::regex size(R"(<svg[^>]*?width="([0-9.]+)p[xt]"[^>]*?height="([0-9.]+)p[xt]")");
  std::smatch m;
  if (!std::regex_search(svg, m, size)) return {0.0, 0.0};
  return {std::stod(m[1].str()), std::stod(m[2].str())};
}

// A filled axis-aligned rectangle of cairo's SVG: a path "M x0 y0 L x1 y0 L x1 y1 L x0 y1 Z" with
// a solid fill, its colour in percent.
struct SvgRect {
  double x = 0, y = 0, w = 0, h = 0;
  Pixel fill;
};

inline std::vector<SvgRect> svg_rects(const std::string& svg) {
  static const std::regex path(
      R"re(<path style="[^"]*?fill:rgb\(([0-9.]+)%,([0-9.]+)%,([0-9.]+)%\)[^"]*" d="M ([-0-9.]+) ([-0-9.]+) L ([-0-9.]+) ([-0-9.]+) L ([-0-9.]+) ([-0-9.]+) L ([-0-9.]+) ([-0-9.]+) Z)re");
  std::vector<SvgRect> rects;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), path); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    double v[8];
    for (int k = 0; k < 8; ++k)
      v[k] = std::stod(m[4 + k].str());
    // (x0,y0) (x1,y0) (x1,y1) (x0,y1)
    if (v[1] != v[3] || v[2] != v[4] || v[5] != v[7] || v[0] != v[6]) continue;
    const auto channel = [&](int k) {
      return static_cast<int>(std::lround(std::stod(m[k].str()) * 2.55));
    };
    rects.push_back({std::min(v[0], v[2]),
                     std::min(v[1], v[5]),
                     std::fabs(v[2] - v[0]),
                     std::fabs(v[5] - v[1]),
                     {channel(1), channel(2), channel(3)}});
  }
  return rects;
}

}  // namespace attn::testing

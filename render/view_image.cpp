// The views as pictures (.svg, .png) are not built yet: exporting one is refused, saying so.
#include "view_image.hpp"

#include <fmt/format.h>

#include "error.hpp"

namespace attn::render {

void write_view_image(const AttentionView&, const ExportRequest&, const std::string& path) {
  throw Error(ErrorKind::bad_value, "export",
              fmt::format("'{}': pictures (.svg, .png) are not built into this attn: export "
                          "view.html instead",
                          printable(path)))
      .about("export");
}

}  // namespace attn::render

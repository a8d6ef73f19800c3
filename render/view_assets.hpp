// The exported page's stylesheet and script (view_export.cpp), compiled in at configure time from
// render/assets/view.css and render/assets/view.js by render/CMakeLists.txt.
#pragma once

#include <string_view>

namespace attn::render {

std::string_view view_style();
std::string_view view_script();

}  // namespace attn::render

// attn view --export FILE.svg or FILE.png: bertviz's views drawn as one picture.
#pragma once

#include <string>

#include "attention_view.hpp"
#include "view_export.hpp"

namespace attn::render {

// Writes the view `request` names as a picture, the format chosen by the extension of `path`
// (.svg or .png), all or nothing.
void write_view_image(const AttentionView& view, const ExportRequest& request,
                      const std::string& path);

}  // namespace attn::render

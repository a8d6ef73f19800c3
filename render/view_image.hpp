// attn view --export FILE.svg|FILE.png: bertviz's head, model and neuron views as pictures drawn
// with cairo, on a white page in the terminal's colour maps (viridis for weights; blue, white and
// red for the signed numbers of the neuron view), with the tokens, the model and the part named.
#pragma once

#include <string>

#include "attention_view.hpp"
#include "export_request.hpp"
#include "image_file.hpp"

namespace attn::render {

// Draws the view with cairo to `path`: SVG when it ends in .svg, PNG when .png (case-insensitive).
// Writes all or nothing: to a temporary file beside `path`, then renames; throws attn::Error
// (.about("export")) with one line on failure.
void write_view_image(const AttentionView& view, const ExportRequest& request,
                      const std::string& path);

// The picture's bytes, for callers that put it elsewhere (a page). Throws attn::Error about
// "export" for a request outside the view (a layer, head or token it does not have).
std::string view_image(const AttentionView& view, const ExportRequest& request, ImageFormat format);

}  // namespace attn::render

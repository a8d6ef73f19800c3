// attn view --export FILE: bertviz's views written to a file instead of the terminal: one
// self-contained interactive HTML page (no network; its data embedded as JSON), or a picture
// (.svg, .png; view_image.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attention_view.hpp"
#include "export_request.hpp"

namespace attn::render {

// An exported page scrolls, so it holds more tokens than the terminal's grids: up to
// kPageMaxTokens, and at most kPageMaxWeights weights (L x H x T x S) in all.
inline constexpr std::size_t kPageMaxTokens = 512;
inline constexpr std::size_t kPageMaxWeights = std::size_t{1} << 22;
// The most tokens a page of a model with `layers` x `heads` attention maps holds.
std::size_t page_max_tokens(std::size_t layers, std::size_t heads);

// Refuses, before anything is computed, a path whose extension is not .html, .svg or .png
// (case-insensitive), that names a folder or something else than a regular file, or whose folder
// does not exist or is not writable: Error(bad_value or bad_file) about "export", one line saying
// what to do.
void check_export_path(const std::string& path);

// Writes the view to `path` all or nothing: a temporary file in the same folder renamed into
// place, so that a failure (or SIGINT, SIGTERM, SIGHUP) leaves whatever was there before.
// .html is view_html's page; .svg and .png are write_view_image's pictures.
void export_view(const AttentionView& view, const ExportRequest& request, const std::string& path);

// One self-contained page: inline CSS and JavaScript, the view's data as JSON, no link to
// anything outside. Throws Error(bad_size) for a layer, head or token out of range.
std::string view_html(const AttentionView& view, const ExportRequest& request);

}  // namespace attn::render

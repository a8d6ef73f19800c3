// Pictures as files (attn view --export, attn train --export): which format a name asks for, the
// checks made before anything is computed, and writing a file all or nothing. Drawing them is
// cairo's, inside render's .cpp files (image_canvas.hpp); this header knows no cairo.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::render {

enum class ImageFormat { svg, png };

// .svg or .png by the extension, in any case; none for another.
std::optional<ImageFormat> image_format(std::string_view path);

// The extension in lower case with its dot (".png"), or "" for none.
std::string extension_of(std::string_view path);

// Refuses, before anything is computed, an output file that cannot be written: an extension not
// in `extensions` (lower case, with the dot), a folder, something that exists and is not a
// regular file, a folder to write it in that is missing, not a folder or read-only. `example` is a
// file name to suggest ("view.png"). Errors are attn::Error(bad_file) about `subject`, the
// option's name in snake case ("export").
void check_output_file(const std::string& path, const std::vector<std::string>& extensions,
                       std::string_view example, std::string_view subject);

// Writes `bytes` to `path` all or nothing: to a temporary file beside it (".NAME.attn-XXXXXX"),
// then renamed over it, with SIGINT, SIGTERM and SIGHUP held back meanwhile so that an interrupt
// leaves no temporary file. Errors are attn::Error(write_failed) about `subject`.
void write_file_whole(const std::string& path, std::string_view bytes, std::string_view subject);

}  // namespace attn::render

// attn marks every file it writes, so that a later run can tell its own files from the user's and
// never replaces one it did not write: the metadata entry "written_by": "attn" in a .safetensors
// header (a checkpoint's "attn_model" entry counts too), the archive comment "written by attn" in
// a .npz, a tEXt chunk Software=attn in a .png, the comment <!-- written by attn --> near the top
// of an .svg, .html or JUnit .xml, "extra_data": {"written_by": "attn"} in a Gradescope
// results.json, and the closing "Score:" and "Student code ran confined" lines of a text report.
// A save folder is attn's when its manifest.json is (render/save.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "io/file_io.hpp"

namespace attn::render {

// `bytes` (a .png or an .svg as cairo writes them) with attn's mark.
std::string marked_png(std::string bytes);
std::string marked_svg(std::string bytes);
// A .npz (numpy.savez's layout) with "written by attn" as its archive comment.
std::vector<unsigned char> marked_npz(std::vector<unsigned char> bytes);

// Whether the file at `path` carries attn's mark (by its contents, whatever its name). False
// for anything that cannot be read.
bool attn_wrote(const std::string& path);

// Refuses, before anything is computed, to replace what is at `path` unless it is a regular file
// attn wrote: a symbolic link, or a file without attn's mark, is an attn::Error(bad_file) about
// `subject` (the option in snake case) naming the path and the fix. Nothing at `path`: nothing
// to refuse.
void refuse_foreign_file(const std::string& path, std::string_view subject);

}  // namespace attn::render

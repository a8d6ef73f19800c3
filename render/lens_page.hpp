// attn lens --export FILE.html: the logit lens as one self-contained page in the style of attn
// view's (render/assets/view.css): nostalgebraist's table of rows x positions, each cell the top
// token on its probability's colour (viridis, 0 to 1), * where it is the text's next token, and
// every cell's top K with their probabilities on hover. No script, no link out of the page.
#pragma once

#include <string>

#include "19-lens/lens_lesson.hpp"

namespace attn::render {

std::string lens_html(const lessons::LensPicture& picture);

}  // namespace attn::render

// How H heads split a model width D: each head gets D/H of the numbers. Every multi-head form but
// seed 004's wide one needs H to divide D; this is the one place that checks it.
#pragma once

#include <cstddef>
#include <string_view>

namespace attn {

// Whether H heads split D evenly (both at least 1).
bool heads_divide(std::size_t d_model, std::size_t heads);
// D/H. Throws attn::Error(bad_size) from `function`, about "heads" and driven by D and H, when
// heads_divide is false: "d_model=10 is not divisible by heads=4: <advice>".
std::size_t head_size(std::size_t d_model, std::size_t heads, std::string_view function,
                      std::string_view advice);

}  // namespace attn

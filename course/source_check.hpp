// What a student's exercise may hold before it is compiled, and what its assembly may hold before
// it is assembled. Both checks answer from the text alone, never from the files it names, so that
// a refusal says nothing about the grading machine.
#pragma once

#include <string>

namespace attn::course {

// The first construct of a C++ source that could name, probe or read a file other than the
// exercise's header, attn's public headers and the system's headers: an #include of anything
// but a plain "name" or <name> (no leading '/', no ".."), #include_next, #import, #embed,
// __has_include, a #pragma but once, diagnostic ones and loop hints, _Pragma, token pasting
// (which could build them), raw string literals, universal character names and control
// characters outside literals. "line N: what" or "" when there is none; the text is the
// student's, N counts its lines.
std::string source_problem(const std::string& source);

// The first line of a compiler's x86-64 assembly (GCC's or clang's) that is not what either
// writes for ordinary C++: inline assembly (#APP), a directive outside the list of data, symbol,
// section and unwind directives (.incbin, .include, .macro and anything unknown), a ';' (the
// assembler's statement separator) or a control character, or a line that is neither a label,
// a directive nor an instruction. The description names the directive, never the line's
// operands; "" when there is none.
std::string assembly_problem(const std::string& assembly);

}  // namespace attn::course

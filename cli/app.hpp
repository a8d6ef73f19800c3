// The whole attn command line as a function: main() calls it, and so does the command-line fuzz
// target. Returns the exit code (0 ok, 1 a check failed, 2 bad usage or input).
#pragma once

namespace attn::cli {

int run(int argc, const char* const* argv);

}  // namespace attn::cli

// The main of every probe: `PROGRAM "<test name>"` runs that test's body, whose STUDENT calls
// send their values on file descriptor 3, then sends the end record. Whatever the body throws
// was sent already; the check side decides what it means.
#include <cstdio>
#include <string>

#include "probe.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s \"<test name>\"\n", argv[0]);
    return 64;
  }
  const auto& tests = attn::grading::probe::registry();
  const auto found = tests.find(argv[1]);
  if (found == tests.end()) {
    std::fprintf(stderr, "no test named '%s'\n", argv[1]);
    return 65;
  }
  try {
    found->second();
  } catch (...) {
  }
  attn::grading::probe::send_end();
  std::fflush(nullptr);
  _exit(0);
}

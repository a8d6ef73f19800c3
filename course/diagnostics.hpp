// A compiler's messages cut to what a student needs: the first errors, each with its source line
// and caret, placed in the student's file (an error inside a template the exercise called is shown
// at the call), without the candidate notes, the include chains and the template backtraces that
// make one missing `;` print seventy lines. GCC's and clang's formats both.
#pragma once

#include <string>

namespace attn::course {

struct TrimmedMessages {
  std::string text;      // what is shown, ending with the line saying what was cut
  int errors = 0;        // errors in the whole log
  int errors_shown = 0;  // of them
  int lines_cut = 0;     // lines of the log not shown
};

// `log`: the compiler's messages, the grading folder's paths already left out; `file`: the
// student's file as the messages name it ("softmax_exercise.cpp"). A log with no error line (a
// crashed compiler) comes back whole.
TrimmedMessages trim_compiler_messages(const std::string& log, const std::string& file,
                                       int max_errors = 3);

}  // namespace attn::course

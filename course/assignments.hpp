// Assignment trees: the course's exercises on disk. A tree holds lessons/NN-name/ folders; an
// exercise is `<stem>.cpp` (what the student edits), `<stem>.hpp`, `<stem>_test.cpp` (the graded
// tests) and hints.md, with stem "<name>_exercise" (softmax_exercise). attn's own course
// (share/attn/grader/course, see toolchain.hpp) is the instructor's tree, with solutions between
// `// BEGIN SOLUTION` and `// END SOLUTION`; `attn assignments release` writes a student tree
// with those replaced by stubs and the hidden tests left out (share/attn/course is one), and a
// grader bundle with no solutions at all.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attn::course {

struct Exercise {
  int number = 0;                // 3
  std::string lesson;            // "softmax", the lesson's command name
  std::string stem;              // "softmax_exercise"
  std::filesystem::path folder;  // <tree>/lessons/03-softmax

  std::filesystem::path source() const { return folder / (stem + ".cpp"); }
  std::filesystem::path header() const { return folder / (stem + ".hpp"); }
  std::filesystem::path tests() const { return folder / (stem + "_test.cpp"); }
  std::filesystem::path hints() const { return folder / "hints.md"; }
  std::string label() const;  // "03 softmax"
};

struct TestCaseInfo {
  std::string name;
  std::vector<std::string> tags;  // as written, without brackets: "softmax", "points=2", ".hidden"
  double points = 0.0;
  bool hidden = false;
  int line = 0;
  std::filesystem::path data;  // a data case's file (data_cases.hpp); empty for a compiled test
};

// The course this attn carries: the instructor's (share/attn/grader/course: solutions, hidden
// tests) when it has the grader's part, else the student's (share/attn/course). Its tests and
// hints are the ones graded and shown, whatever a student's tree holds.
std::filesystem::path course_tree();
// Whether `dir` holds at least one exercise under lessons/.
bool is_assignment_tree(const std::filesystem::path& dir);
// --dir when given (attn::Error when it is not a tree); else the nearest tree at or above the
// working directory; else attn::Error: attn never grades or records progress in its own course.
std::filesystem::path find_tree(const std::string& dir);
// The tree's exercises in course order; attn::Error when there are none.
std::vector<Exercise> find_exercises(const std::filesystem::path& tree);
// By lesson name ("softmax"), number ("3", "03") or folder ("03-softmax"); attn::Error listing
// the lessons otherwise, about `what` (the option or argument that gave the name).
const Exercise& exercise_named(const std::vector<Exercise>& exercises, const std::string& name,
                               const std::string& what = "lesson");

// The exercise of lesson folder `folder` by its name (lessons/03-softmax: 3, softmax,
// softmax_exercise), whether or not it has tests; nullopt when the name is not NN-name.
std::optional<Exercise> exercise_at(const std::filesystem::path& folder);
// Whether `folder` holds an exercise's tests: <stem>_test.cpp, or data cases (cases/).
bool has_tests(const std::filesystem::path& folder, const std::string& stem);
// The tests of the lesson folder `folder`: its test file's TEST_CASEs (when it has one), then its
// data cases; attn::Error as parse_test_cases and read_data_cases say.
std::vector<TestCaseInfo> lesson_tests(const std::filesystem::path& folder,
                                       const std::string& stem);

// Every TEST_CASE of a graded test file, in file order; attn::Error naming file:line when a test
// has no [points=N], a name Catch2 cannot select, or a [.hidden] tag outside the hidden block.
std::vector<TestCaseInfo> parse_test_cases(const std::filesystem::path& tests);

// The student's version of an exercise source: each solution block replaced by
// `throw std::logic_error("not implemented: <function>");`, and the value of each prediction line
// (`const double name = value;  // prediction`) by std::nan(""). attn::Error for unbalanced
// markers.
std::string strip_solutions(const std::string& text, const std::string& file);
// A test file without the block between `// BEGIN HIDDEN TESTS` and `// END HIDDEN TESTS`.
std::string strip_hidden_tests(const std::string& text, const std::string& file);

struct ReleaseSummary {
  int exercises = 0;
  int stubs = 0;  // solution blocks replaced
  int visible_tests = 0;
  int hidden_tests = 0;  // kept, or removed when !keep_hidden
  double visible_points = 0.0;
  double hidden_points = 0.0;
};
// Writes the student tree of `tree` to `out` (which must not exist, or be an empty folder), all
// or nothing; its README.md is `guide` (default: the student guide this attn carries). `only`:
// the stems of the exercises it holds (default: every one). The tree holds compile_commands.json
// for editors, at `out`'s path.
ReleaseSummary release_tree(const std::filesystem::path& tree, const std::filesystem::path& out,
                            bool keep_hidden, const std::filesystem::path& guide = {},
                            const std::vector<std::string>& only = {});
// Writes a grader bundle to `out` (new or empty), all or nothing: this attn's executable and its
// share/attn, the course with stubs for solutions and the hidden tests kept in grader/course, and
// Gradescope's setup.sh and run_autograder at the top; with `only`, those exercises alone, their
// probes, checks, inputs and expected values (an assignment's bundle). attn::Error when this attn
// has no grader's part (a student's install).
ReleaseSummary release_grader(const std::filesystem::path& tree, const std::filesystem::path& out,
                              const std::vector<std::string>& only = {});

// Writes `files` (paths relative to `out`) as the new folder `out`, all or nothing: `out` must not
// exist or be an empty folder, inside an existing folder (attn::Error about `option` otherwise).
void write_new_folder(const std::filesystem::path& out,
                      const std::vector<std::pair<std::filesystem::path, std::string>>& files,
                      const char* option);

// The first exercise not done (lesson_done) in course order; nullptr when every one is.
const Exercise* next_exercise(const std::filesystem::path& tree,
                              const std::vector<Exercise>& exercises);
// The exercise a command without a lesson is about: the one whose folder holds the working
// directory (a student who cd'd into lessons/03-softmax means softmax), else next_exercise.
const Exercise* current_exercise(const std::filesystem::path& tree,
                                 const std::vector<Exercise>& exercises);

// The stub a student starts from: attn's course's source of `exercise`, solutions replaced.
std::string stub_source(const Exercise& exercise);

// Puts the stub back in place of the student's source (a new file renamed over it), keeping the
// student's version as <tree>/.attn/reset/<stem>-<N>.cpp; returns that path relative to the tree,
// or "" when there was no source to keep. attn::Error when the source is a link or not a file.
std::filesystem::path reset_exercise(const std::filesystem::path& tree, const Exercise& exercise);

// compile_commands.json for the tree at `tree` (absolute): each exercise source compiled as attn
// grades it, with attn's public headers, so that an editor's clangd or `g++ -fsyntax-only` finds
// them.
std::string compile_commands(const std::filesystem::path& tree,
                             const std::vector<Exercise>& exercises);
// Writes the tree's compile_commands.json when it is missing, or attn's and stale (the tree was
// moved or cloned); a file of the student's own is left alone. Never throws.
void refresh_compile_commands(const std::filesystem::path& tree,
                              const std::vector<Exercise>& exercises);

// <tree>/.attn/progress.json: the last result of each lesson and the hints seen.
struct LessonProgress {
  bool passed = false;
  double score = 0.0;
  double max_score = 0.0;
  std::string fingerprint;  // of the exercise source when it was graded
};
struct Progress {
  std::map<std::string, LessonProgress> lessons;
  std::map<std::string, int> hints_seen;
};
Progress load_progress(const std::filesystem::path& tree);
void save_progress(const std::filesystem::path& tree, const Progress& progress);
// A hash of the file's bytes ("" when it cannot be read).
std::string fingerprint(const std::filesystem::path& file);
// Passed at its last grading, and the source unchanged since.
bool lesson_done(const Progress& progress, const Exercise& exercise);

// The first line of text of the exercise's lesson.md, without its '#'s, printable and at most
// about 70 characters; "" when there is none (no file, a link, not a file, over 1 MiB).
std::string exercise_title(const Exercise& exercise);

// The staged hints of the exercise's hints.md: the text under each "## N" heading.
std::vector<std::string> read_hints(const Exercise& exercise);
// "Progress: [#####>----] 3/9 exercises done" and the next exercise to do.
std::string exercise_progress_text(const std::filesystem::path& tree,
                                   const std::vector<Exercise>& exercises);

// The bytes of the regular file open on `fd` (closed here), at most `limit` of them; nullopt for
// a bad descriptor, anything but a regular file, or a larger file.
std::optional<std::string> read_regular_file(int fd, std::size_t limit);

}  // namespace attn::course

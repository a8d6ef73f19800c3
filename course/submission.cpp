#include "submission.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "base/error.hpp"
#include "grader.hpp"
#include "report.hpp"

namespace attn::course {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxSource = std::size_t{1} << 20;  // as the grader reads a source
constexpr std::size_t kMaxEntries = 100000;               // of the submission, walked
constexpr std::size_t kMaxListed = 10;                    // other candidates named in a note

// A file at an expected path: its bytes, or why it cannot be graded ("" when there is no entry).
struct Candidate {
  std::optional<std::string> text;
  std::string refused_reason;
};

// The file `folders/name` under the folder open on `top`, reached through no link: opened with
// O_NOFOLLOW at every step, read only when it is a regular file of at most 1 MiB (a FIFO does
// not block: O_NONBLOCK). `where` receives the path of the entry found there, or of a folder on
// the way that is a link; it stays empty when there is none.
Candidate read_candidate(int top, const std::vector<std::string>& folders, const std::string& name,
                         std::string& where) {
  Candidate found;
  int dir = dup(top);
  std::string path;
  struct stat st {};
  st.st_mode = 0;
  for (const std::string& folder : folders) {
    path += folder + "/";
    if (fstatat(dir, folder.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
      if (S_ISLNK(st.st_mode)) {
        where = path.substr(0, path.size() - 1);
        found.refused_reason = "a link";
      }
      close(dir);
      return found;
    }
    const int next = openat(dir, folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(dir);
    if (next < 0) return found;
    dir = next;
  }
  where = path + name;
  if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    close(dir);
    where.clear();
    return found;
  }
  if (S_ISLNK(st.st_mode)) {
    found.refused_reason = "a link";
  } else if (!S_ISREG(st.st_mode)) {
    found.refused_reason = "not a regular file";
  } else if (static_cast<std::size_t>(st.st_size) > kMaxSource) {
    found.refused_reason = "larger than 1 MiB";
  } else {
    found.text = read_regular_file(
        openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), kMaxSource);
    if (!found.text) found.refused_reason = "not a regular file";
  }
  close(dir);
  return found;
}

// Every entry of the submission whose name is one of `names`, by name, as paths relative to it;
// the walk follows no link and stops after kMaxEntries entries.
std::map<std::string, std::vector<std::string>> entries_named(
    const fs::path& dir, const std::vector<std::string>& names) {
  std::map<std::string, std::vector<std::string>> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  std::size_t seen = 0;
  for (; !ec && it != fs::recursive_directory_iterator() && seen < kMaxEntries;
       it.increment(ec), ++seen) {
    const std::string name = it->path().filename().string();
    if (std::find(names.begin(), names.end(), name) != names.end())
      found[name].push_back(it->path().lexically_relative(dir).string());
  }
  for (auto& [name, paths] : found)
    std::sort(paths.begin(), paths.end());
  return found;
}

// "a/x.cpp, b/x.cpp and 3 more".
std::string listed(const std::vector<std::string>& paths, const std::string& each) {
  std::string text;
  for (std::size_t i = 0; i < paths.size() && i < kMaxListed; ++i)
    text += (i > 0 ? ", " : "") + escape_controls(paths[i]) + each;
  if (paths.size() > kMaxListed) text += fmt::format(" and {} more", paths.size() - kMaxListed);
  return text;
}

}  // namespace

std::string SubmittedExercise::note() const {
  const std::string name = exercise.stem + ".cpp";
  const std::string expected = "lessons/" + exercise.folder.filename().string() + "/" + name;
  if (!graded.empty()) {
    if (others.empty()) return "graded " + escape_controls(graded);
    return fmt::format("found {} files named {}: {} (graded), {}", others.size() + 1, name,
                       escape_controls(graded), listed(others, " (not graded)"));
  }
  std::string text;
  if (!refused.empty()) {
    text = fmt::format("{} is {}, not graded: submit the file itself", escape_controls(refused),
                       refused_reason);
    if (!others.empty()) text += "; " + listed(others, "") + " also found, not graded";
  } else if (!others.empty()) {
    text =
        fmt::format("{} is not at {} or the top level: {} {} found but not graded; move it there",
                    name, expected, listed(others, ""), others.size() == 1 ? "was" : "were");
  } else {
    text = fmt::format("no {} was submitted", name);
  }
  return text + " (its tests ran on the released stub)";
}

Submission::Submission(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (!fs::exists(status)) {
    throw Error(ErrorKind::bad_value, "grade",
                fmt::format("'{}' does not exist: give the folder of the student's submission, "
                            "e.g. /autograder/submission",
                            printable(dir.string())))
        .about("submission");
  }
  if (!fs::is_directory(status)) {
    throw Error(ErrorKind::bad_value, "grade",
                fmt::format("'{}' is not a folder: give the folder of the student's submission, "
                            "e.g. /autograder/submission",
                            printable(dir.string())))
        .about("submission");
  }
  const int top = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0) {
    throw Error(ErrorKind::bad_file, "grade",
                fmt::format("cannot open the submission '{}': {}", printable(dir.string()),
                            std::strerror(errno)))
        .about("submission");
  }
  // The student tree, in a grading folder of this user's alone (removed by the guard too).
  try {
    folder_ = make_work_folder();
  } catch (...) {
    close(top);
    throw;
  }
  tree_ = folder_ / "course";
  try {
    release_tree(course_tree(), tree_, false);
    const std::vector<Exercise> all = find_exercises(tree_);
    std::vector<std::string> names;
    for (const Exercise& exercise : all)
      names.push_back(exercise.stem + ".cpp");
    const auto entries = entries_named(dir, names);
    for (const Exercise& exercise : all) {
      SubmittedExercise submitted;
      submitted.exercise = exercise;
      const std::string name = exercise.stem + ".cpp";
      // lessons/NN-name/<stem>.cpp first, then the top level.
      std::string graded_at, refused_at;
      std::string refused_reason;
      for (const std::vector<std::string>& folders :
           {std::vector<std::string>{"lessons", exercise.folder.filename().string()},
            std::vector<std::string>{}}) {
        std::string where;
        const Candidate candidate = read_candidate(top, folders, name, where);
        if (candidate.text) {
          std::ofstream out(exercise.source(), std::ios::binary | std::ios::trunc);
          out << *candidate.text;
          if (!out.flush()) {
            throw Error(ErrorKind::write_failed, "grade",
                        fmt::format("cannot write {} into the submission's tree", name));
          }
          graded_at = where;
          break;
        }
        if (!where.empty() && refused_at.empty()) {
          refused_at = where;
          refused_reason = candidate.refused_reason;
        }
      }
      submitted.graded = graded_at;
      if (graded_at.empty()) {
        submitted.refused = refused_at;
        submitted.refused_reason = refused_reason;
      }
      if (const auto at = entries.find(name); at != entries.end()) {
        for (const std::string& path : at->second) {
          if (path != submitted.graded && path != submitted.refused)
            submitted.others.push_back(path);
        }
      }
      exercises_.push_back(submitted);
    }
  } catch (...) {
    close(top);
    remove_work_folder(folder_);
    throw;
  }
  close(top);
}

Submission::~Submission() {
  remove_work_folder(folder_);
}

std::string Submission::note(const Exercise& exercise) const {
  for (const SubmittedExercise& submitted : exercises_) {
    if (submitted.exercise.stem == exercise.stem) return submitted.note();
  }
  return "";
}

}  // namespace attn::course

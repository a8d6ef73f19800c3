#include "mine_option.hpp"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "assignments.hpp"
#include "base/error.hpp"
#include "mine.hpp"

namespace attn::cli {

namespace fs = std::filesystem;

void add_mine_option(CLI::App& sub, bool& mine) {
  sub.add_flag("--mine", mine,
               "run your own exercise (in the assignment tree around you) on this lesson's "
               "tensors, and show what it gives beside attn's steps");
}

void add_mine_steps(lessons::LessonRun& run, bool mine) {
  if (!mine) return;
  fs::path tree;
  try {
    tree = course::find_tree("");
  } catch (const Error&) {
    throw Error(ErrorKind::bad_value, run.lesson(),
                "it runs your exercise from your assignment tree: run the lesson inside it "
                "(cd into the folder `attn assignments release --out DIR` wrote)")
        .about("mine");
  }
  std::vector<std::pair<std::string, Array>> steps;
  for (const lessons::Step* step : run.steps())
    steps.emplace_back(step->name, step->value);
  const course::MineRun mine_run = course::run_mine(tree, run.lesson(), steps);
  run.prose(
      fmt::format("## Yours\n\nYour `{}`, run on this lesson's own tensors above, confined "
                  "as `attn check` runs it:",
                  mine_run.source));
  if (!mine_run.problem.empty()) {
    const std::string first = mine_run.problem.substr(0, mine_run.problem.find('\n'));
    run.check(
        fmt::format("{} compiles", mine_run.source), false,
        fmt::format("{} (`attn check {}` shows the compiler's messages)", first, run.lesson()));
    return;
  }
  for (const course::MineStep& step : mine_run.steps) {
    if (step.yours) run.step("yours_" + step.step, step.title, *step.yours);
    run.check(fmt::format("your {} is attn's", step.step), step.same, step.detail);
  }
}

}  // namespace attn::cli

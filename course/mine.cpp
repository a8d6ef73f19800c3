#include "mine.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "assignments.hpp"
#include "base/error.hpp"
#include "data_cases.hpp"
#include "grader.hpp"
#include "report.hpp"

namespace attn::course {

namespace fs = std::filesystem;

std::vector<MineCall> mine_calls(const std::string& lesson) {
  if (lesson == "dot-product") {
    return {
        {"dot_product_attention", {"input"}, {{0, "raw_weights"}, {1, "weights"}, {2, "output"}}}};
  }
  if (lesson == "softmax") return {{"softmax", {"masked|tempered|input"}, {{-1, "output"}}}};
  if (lesson == "positional-encoding")
    return {{"add_positions", {"input", "pe"}, {{-1, "output"}}}};
  if (lesson == "backward")
    return {{"softmax_backward", {"weights", "d_weights"}, {{-1, "d_softmax"}}}};
  if (lesson == "attention") {
    return {{"scaled_dot_product_attention",
             {"queries", "keys", "values", "mask"},
             {{3, "scores"}, {4, "scaled_scores"}, {5, "weights"}, {6, "output"}}}};
  }
  return {};
}

namespace {

// The step of that name ("a|b": the first of them the run has); nullptr when there is none.
const Array* find_step(const std::vector<std::pair<std::string, Array>>& steps,
                       const std::string& names, std::string* found = nullptr) {
  std::size_t start = 0;
  while (start <= names.size()) {
    const std::size_t bar = std::min(names.find('|', start), names.size());
    const std::string name = names.substr(start, bar - start);
    for (const auto& [step, value] : steps) {
      if (step == name) {
        if (found != nullptr) *found = name;
        return &value;
      }
    }
    start = bar + 1;
  }
  return nullptr;
}

}  // namespace

MineRun run_mine(const fs::path& tree, const std::string& lesson,
                 const std::vector<std::pair<std::string, Array>>& steps) {
  const std::vector<Exercise> exercises = find_exercises(tree);
  const Exercise& exercise = exercise_named(exercises, lesson, "mine");
  MineRun run;
  run.source = fs::relative(exercise.source(), tree).string();
  const std::vector<MineCall> calls = mine_calls(lesson);
  std::vector<DataCase> cases;
  std::vector<std::string> shown;  // "softmax(masked)"
  for (const MineCall& call : calls) {
    DataCase c;
    c.name = call.call;
    c.call = call.call;
    c.arity = call.arguments.size();
    std::vector<const Array*> values;
    std::vector<std::string> names;
    for (const std::string& wanted : call.arguments) {
      std::string name = "nullptr";
      values.push_back(find_step(steps, wanted, &name));
      names.push_back(name);
    }
    c.arguments = encode_arguments(values);
    const std::string arguments = fmt::format("{}", fmt::join(names, ", "));
    cases.push_back(c);
    shown.push_back(fmt::format("{}({})", call.call, arguments));
  }
  GradeOptions options;
  const CallsOutcome outcome = run_student_calls(exercise, cases, options);
  if (!outcome.built) {
    run.problem = escape_controls(outcome.build_log);
    return run;
  }
  for (std::size_t i = 0; i < calls.size(); ++i) {
    for (const auto& [field, step] : calls[i].results) {
      MineStep mine;
      mine.step = step;
      mine.title = fmt::format("{} from your {}", step, shown[i]);
      const Array* attns = find_step(steps, step);
      const CallResult& result = outcome.calls[i];
      if (!result.returned) {
        mine.detail = escape_controls(result.problem);  // the student's text: never raw
      } else if (attns == nullptr) {
        mine.detail = "attn's run has no such step to compare with";
      } else {
        mine.yours = value_array(result.value, field);
        const std::string difference =
            compare_value(result.value, field, encode_array(*attns), kMineAtol, kMineRtol);
        mine.same = difference.empty();
        mine.detail = mine.same ? fmt::format(
                                      "the same as attn's {} within atol {:g} + rtol {:g} "
                                      "x |attn's|",
                                      step, kMineAtol, kMineRtol)
                                : fmt::format("{} differs from attn's: {}", step, difference);
      }
      run.steps.push_back(std::move(mine));
    }
  }
  return run;
}

}  // namespace attn::course

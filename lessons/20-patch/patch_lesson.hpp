#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/budget.hpp"
#include "gpt2.hpp"
#include "lesson.hpp"

namespace attn::lessons {

struct PatchLessonOptions {
  const Gpt2* model = nullptr;
  std::string name;                                // how the settings name the model
  std::string clean_text, corrupt_text;            // as given: a text, or "ids 1,2,3"
  std::vector<std::int64_t> clean, corrupt;        // the same number of tokens (T >= 1)
  std::function<std::string(std::int64_t)> token;  // a token as the tables show it ("Ġthe")
  std::optional<std::int64_t> answer, wrong;  // none: the clean and the corrupt run's top token
};

// What run_patch holds beside the model, for check_budget.
MemoryPlan plan_patch_lesson(const Gpt2Config& config, std::size_t tokens);

// The lesson: the clean and corrupt logit differences logit(answer) - logit(wrong) at the last
// position; activation patching of each block's residual stream per position and of each head's
// output (core/interp.hpp's activation_patching), as the fraction of the difference restored;
// direct logit attribution of the clean run, whose parts sum to its logit difference. Throws
// attn::Error about "answer" or "wrong" when the two tokens are one, or when neither option is
// given and both runs predict the same token; about "corrupt" when the two texts give the same
// logit difference.
LessonRun run_patch(const PatchLessonOptions& options);

}  // namespace attn::lessons

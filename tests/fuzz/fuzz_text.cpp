// The text options' parsers below the command line: a task's text to ids (what --text becomes on
// a checkpoint), an encoder-decoder's source, --ablate's head list and the --lengths size list.
// The first byte picks the parser and the task (and a vocabulary size); the rest is the text.
// Every id is in the task's vocabulary, and every refusal is an attn::Error whose message is
// valid UTF-8 without a control character (a character is named whole or escaped, never cut).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ablate.hpp"
#include "base/error.hpp"
#include "base/utf8.hpp"
#include "errors.hpp"
#include "options.hpp"
#include "train/seq2seq.hpp"
#include "train/tasks.hpp"

namespace {

constexpr attn::Task kTasks[] = {attn::Task::reverse,   attn::Task::sort,
                                 attn::Task::histogram, attn::Task::previous_token,
                                 attn::Task::masked,    attn::Task::previous_minus_mirror};
constexpr attn::Seq2SeqTask kSeq2SeqTasks[] = {attn::Seq2SeqTask::reverse, attn::Seq2SeqTask::sort,
                                               attn::Seq2SeqTask::number_words};

// A message as attn prints it: strict UTF-8, and no C0, DEL or C1 control character.
void check_message(const attn::Error& e) {
  const std::string message = attn::cli::error_message(e, nullptr);
  for (const std::string* text : {&e.detail(), &message}) {
    if (attn::utf8_error(*text) != std::string::npos) __builtin_trap();
    for (std::size_t i = 0; i < text->size(); ++i) {
      const auto byte = static_cast<unsigned char>((*text)[i]);
      const bool c1 =
          byte == 0xc2 && i + 1 < text->size() && static_cast<unsigned char>((*text)[i + 1]) < 0xa0;
      if (byte < 0x20 || byte == 0x7f || c1) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t pick = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (pick % 4) {
      case 0: {
        const attn::Task task = kTasks[(pick / 4) % std::size(kTasks)];
        const attn::TaskSizes sizes{std::size_t{2} + (pick / 24u) % 25u, 8};
        const std::size_t vocabulary = attn::task_vocabulary(task, sizes);
        for (const std::int64_t id : attn::parse_task_text(task, text, sizes))
          if (id < 0 || static_cast<std::size_t>(id) >= vocabulary) __builtin_trap();
        break;
      }
      case 1: {
        const attn::Seq2SeqTask task = kSeq2SeqTasks[(pick / 4) % std::size(kSeq2SeqTasks)];
        const std::vector<std::int64_t> ids = attn::parse_source(task, text);
        const std::size_t vocabulary = attn::source_tokens(task).size();
        if (ids.empty() || ids.size() > attn::max_source_length(task)) __builtin_trap();
        for (const std::int64_t id : ids)
          if (id < 1 || static_cast<std::size_t>(id) >= vocabulary) __builtin_trap();
        (void)attn::seq2seq_answer(task, ids);
        break;
      }
      case 2: {
        const std::vector<attn::HeadRef> heads = attn::cli::parse_head_list(text, "fuzz");
        const auto items = static_cast<std::size_t>(std::count(text.begin(), text.end(), ',')) + 1;
        if (!text.empty() && heads.size() != items) __builtin_trap();
        break;
      }
      default: {
        const std::vector<std::size_t> sizes =
            attn::cli::parse_size_list(text, "lengths", "--lengths");
        const auto items = static_cast<std::size_t>(std::count(text.begin(), text.end(), ',')) + 1;
        if (sizes.size() != items) __builtin_trap();
        for (const std::size_t s : sizes)
          if (s == 0) __builtin_trap();
        break;
      }
    }
  } catch (const attn::Error& e) {
    check_message(e);
  }
  return 0;
}

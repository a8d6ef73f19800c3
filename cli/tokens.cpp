// attn tokens: lesson 00.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "00-tokens/tokens_lesson.hpp"
#include "common.hpp"
#include "error.hpp"
#include "weights.hpp"

namespace attn::cli {

namespace {

struct TokensCliOptions {
  lessons::TokensLessonOptions lesson;
  std::string vocab;
  std::string weights;
  OutputOptions output;
};

// render_json's document with the top-level "tokens" and "ids" after "settings".
std::string tokens_json(const lessons::TokensRun& r, const OutputOptions& options) {
  const auto doc = nlohmann::ordered_json::parse(render_json(r.run, options));
  nlohmann::ordered_json out;
  for (const auto& [key, value] : doc.items()) {
    out[key] = value;
    if (key == "settings") {
      out["tokens"] = r.tokens;
      out["ids"] = r.ids;
    }
  }
  return out.dump(2) + "\n";
}

int run_tokens(TokensCliOptions& o) {
  if (!o.vocab.empty()) {
    try {
      o.lesson.vocab = read_vocabulary(o.vocab);
    } catch (const Error& e) {
      // read_vocabulary names its own functions: the user gave --vocab.
      throw Error(e.kind(), "--vocab", e.detail()).about("vocab");
    }
    o.lesson.vocab_name = o.vocab;
  }
  if (!o.weights.empty()) {
    o.lesson.weights = load_weights_file(o.weights);
    o.lesson.weights_name = o.weights;
  }
  const lessons::TokensRun r = lessons::run_tokens(o.lesson);
  if (o.output.format != Format::json) return emit(r.run, o.output);
  // JSON carries "tokens" and "ids" too, which render_json does not know: emit does the saving
  // (--save, --save-weights) with its printing sent to /dev/null, then the document goes out.
  const std::string document = tokens_json(r, o.output);
  if (!o.output.save_dir.empty() || !o.output.save_weights.empty()) {
    std::fflush(stdout);
    const int kept = ::dup(STDOUT_FILENO);
    const int null = ::open("/dev/null", O_WRONLY);
    const bool aside = kept >= 0 && null >= 0 && ::dup2(null, STDOUT_FILENO) >= 0;
    const int error = errno;
    if (null >= 0) ::close(null);
    if (!aside) {
      if (kept >= 0) ::close(kept);
      throw Error("stdout", fmt::format("cannot set the output aside while saving: {}",
                                        std::strerror(error)));
    }
    auto restore = [&] {
      std::fflush(stdout);
      ::dup2(kept, STDOUT_FILENO);
      ::close(kept);
    };
    try {
      emit(r.run, o.output);
    } catch (...) {
      restore();
      throw;
    }
    restore();
  }
  if (std::fwrite(document.data(), 1, document.size(), stdout) != document.size() ||
      std::fflush(stdout) != 0) {
    throw Error("stdout", fmt::format("cannot write the result: {}: free space or redirect the "
                                      "output elsewhere",
                                      std::strerror(errno)));
  }
  return r.run.all_checks_passed() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void setup_tokens(CLI::App& app) {
  auto o = std::make_shared<TokensCliOptions>();
  CLI::App* sub = app.add_subcommand("tokens", std::string(lessons::lesson_info("tokens").summary));
  sub->add_option("--text", o->lesson.text,
                  "the sentence to tokenize (default \"time flies like an arrow\")")
      ->option_text("TEXT");
  sub->add_option(
         "--vocab", o->vocab,
         "a Hugging Face vocab.txt, one token per line (default: data/vocab/lesson-vocab.txt)")
      ->check(not_empty_validator("--vocab", "vocab.txt"))
      ->option_text("FILE");
  sub->add_flag("--add-special-tokens", o->lesson.add_special_tokens,
                "put [CLS] first and [SEP] last");
  auto* width = sub->add_option("--d-model", o->lesson.d_model, "D, numbers per token (default 6)")
                    ->check(size_validator())
                    ->option_text("D");
  sub->add_flag("--scale-by-sqrt-d", o->lesson.scale_by_sqrt_d,
                "multiply the vectors by sqrt(D), as seed 001's InputEmbedding");
  sub->add_option("--seed", o->lesson.seed, "random seed for the table (default 0)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::uint64_t value = 0;
            const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec != std::errc() || ptr != text.data() + text.size())
              return fmt::format("'{}' is not a seed: give a whole number from 0 to 2^64-1", text);
            return {};
          },
          "N"))
      ->option_text("N");
  add_output_options(*sub, o->output);
  add_weights_options(*sub, o->weights, o->output);
  sub->get_option("--weights")->excludes(width);
  sub->callback([o] { exit_code() = run_tokens(*o); });
}

}  // namespace attn::cli

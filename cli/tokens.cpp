// attn tokens: lesson 00.
#include <memory>

#include "00-tokens/gpt2_tokens_lesson.hpp"
#include "00-tokens/tokens_lesson.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "pretrained.hpp"
#include "state_dict.hpp"

namespace attn::cli {

namespace {

struct TokensCliOptions {
  lessons::TokensLessonOptions lesson;
  std::string vocab;
  std::string weights, pretrained;
  render::OutputOptions output;
  const CLI::Option* width_option = nullptr;
};

// --pretrained: the folder's tokenizer and its word table, as transformers' tokenizer(text) reads
// a sentence ([CLS] ... [SEP]).
void run_pretrained(TokensCliOptions& o, const CLI::App& app, Context& context) {
  refuse_beside_pretrained(app, {"--vocab", "--weights", "--d-model", "--seed"}, "tokens");
  PretrainedFolder folder = open_folder(o.pretrained);
  if (is_gpt2(folder)) {
    // GPT-2: its byte-level BPE step by step; the model's weights are not read.
    const PretrainedGpt2 gpt2 = open_gpt2(std::move(folder));
    check_utf8(o.lesson.text, "text", "tokens");
    check_budget("tokens", MemoryPlan{});  // no weights are read; the tokenizer is read already
    context.exit_code = publish(
        lessons::run_gpt2_tokens(o.pretrained, gpt2.tokenizer, o.lesson.text), o.output, context);
    return;
  }
  const PretrainedBert bert = open_bert(std::move(folder));
  check_budget("tokens", plan_bert_reading(bert));
  lessons::TokensLessonOptions& l = o.lesson;
  {
    // Only the word table is kept: the model is gone before the lesson plans its own memory.
    const Bert model = read_bert(bert);
    const Tensor2& table = model.embeddings.token_embeddings.weight;
    l.weights = StateDict{};
    copy_parameter_out(*l.weights, "weight", table.data(), {table.shape(0), table.shape(1)});
  }
  l.vocab = bert.tokenizer.vocab;
  l.vocab_name = o.pretrained + "/vocab.txt";
  l.tokenizer = bert.tokenizer.options;
  l.add_special_tokens = true;
  l.weights_name = o.pretrained + ", embeddings.word_embeddings";
  context.exit_code = publish(lessons::run_tokens(l), o.output, context);
}

void run(TokensCliOptions& o, const CLI::App& app, Context& context) {
  if (!o.pretrained.empty()) return run_pretrained(o, app, context);
  if (!o.weights.empty() && o.width_option->count() > 0) {
    throw Error(
        ErrorKind::bad_value, "tokens",
        "--d-model and --weights exclude each other: the table in --weights sets D, so drop --d-model")
        .about("d_model");
  }
  if (!o.vocab.empty()) {
    try {
      o.lesson.vocab = read_vocabulary(o.vocab);
    } catch (const Error& e) {
      throw Error(e.kind(), e.function(), e.detail()).about("vocab");
    }
    o.lesson.vocab_name = o.vocab;
  }
  load_weights_option(o.lesson, o.weights, context);
  context.exit_code = publish(lessons::run_tokens(o.lesson), o.output, context);
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<TokensCliOptions>();
  CLI::App* sub = add_lesson_command(app, "tokens");
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
  o->width_option =
      sub->add_option("--d-model", o->lesson.d_model, "D, numbers per token (default 6)")
          ->check(size_validator())
          ->option_text("D");
  sub->add_flag("--scale-by-sqrt-d", o->lesson.scale_by_sqrt_d,
                "multiply the vectors by sqrt(D), as seed 001's InputEmbedding");
  sub->add_option("--seed", o->lesson.seed, "random seed for the table (default 0)")
      ->check(seed_validator())
      ->option_text("N");
  add_output_options(*sub, o->output);
  add_weights_options(*sub, o->weights, o->output);
  add_pretrained_option(*sub, o->pretrained)
      ->check(not_empty_validator("--pretrained", "bert-base-uncased"));
  door_callback(*sub, [o, sub, &context] { run(*o, *sub, context); });
}

const Registration kRegistration{"tokens", setup};

}  // namespace

}  // namespace attn::cli

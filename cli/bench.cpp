// attn bench: times the packed encoder (one layer at BERT-base size, or --model encoder / bert: the
// whole book's encoder or BERT from ids, with its peak memory; --train: training steps) beside each GEMM library's
// sgemm bound (core/fast/bench.hpp), and prints the report (render/bench_report.hpp). A program,
// not a test: nothing here asserts a time.
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/error.hpp"
#include "bench_report.hpp"
#include "command.hpp"
#include "door.hpp"
#include "fast/bench.hpp"
#include "gpt2.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {

struct BenchOptions {
  std::size_t seq = 128;
  std::size_t threads = 0;  // 0: all cores
  std::string config;       // empty: BERT-base's numbers
  std::size_t repeat = 20;
  std::size_t warmup = 3;
  std::string format = "text";
  std::string norm = "pre";
  bool train = false;
  std::size_t batch = 0;  // --train: the BERT-base layer's batch; --model encoder: B (0: 1)
  std::string model = "layer";
  std::string gemm = "auto";
  std::size_t new_tokens = 32;
};

// The request the options describe, with BERT-base's numbers or --config's (--seq checked
// against its positions), and the pool and the GEMM library set up for it.
BenchRequest request_of(const BenchOptions& o, std::string& config_name) {
  BenchRequest r;
  config_name = "BERT-base";
  if (o.model == "gpt2" || o.model == "heads") {
    r.config = default_gpt2_config().sizes;
    config_name = "gpt2";
  }
  if (!o.config.empty()) {
    r.config = resolve_config(o.config);
    config_name = o.config;
  }
  if (o.seq > r.config.max_position_embeddings)
    throw Error(ErrorKind::bad_size, "bench",
                fmt::format("--seq {} is past {}'s max_position_embeddings {}: use at most {}",
                            o.seq, config_name, r.config.max_position_embeddings,
                            r.config.max_position_embeddings));
  r.tokens = o.seq;
  r.batch = o.batch == 0 ? 1 : o.batch;
  r.bert = o.model == "bert";
  r.gpt2 = o.model == "gpt2";
  r.new_tokens = o.new_tokens;
  if (r.gpt2 && o.seq + o.new_tokens > r.config.max_position_embeddings)
    throw Error(ErrorKind::bad_size, "bench",
                fmt::format("--seq {} and --new-tokens {} pass {}'s {} positions: lower either",
                            o.seq, o.new_tokens, config_name, r.config.max_position_embeddings));
  r.norm = o.norm == "post" || r.bert ? NormPlacement::post : NormPlacement::pre;
  r.repeat = o.repeat;
  r.warmup = o.warmup;
  const unsigned cores = std::thread::hardware_concurrency();
  r.threads = static_cast<int>(o.threads != 0 ? o.threads : cores == 0 ? 1 : cores);
  return r;
}

// Checks the memory plan (its sizes named by `sizes`), then sets the pool and the GEMM library.
void prepare(const BenchOptions& o, const BenchRequest& r, const MemoryPlan& plan,
             std::vector<std::string> sizes) {
  try {
    check_budget("bench", plan);
  } catch (Error& e) {
    e.driven_by(std::move(sizes));
    throw;
  }
  set_threads(r.threads);
  if (o.gemm != "auto") set_gemm_choice(parse_gemm_choice(o.gemm, "--gemm"));
}

int run_bench(const BenchOptions& o) {
  std::string config_name;
  const BenchRequest r = request_of(o, config_name);
  const render::BenchFormat format =
      o.format == "json" ? render::BenchFormat::json : render::BenchFormat::text;
  std::string report;
  if (o.train) {
    keep_freed_memory();
    prepare(o, r, {}, {});
    report = render::train_report(bench_train(r), r, format);
  } else if (o.model == "heads") {
    keep_freed_memory();  // as attn heads runs
    prepare(o, r, plan_heads_bench(r), {"B", "T"});
    report = render::heads_report(bench_heads(r), r, config_name, format);
  } else if (o.model == "gpt2") {
    prepare(o, r, plan_generate_bench(r), {"T"});
    report = render::generate_report(bench_generate(r), r, config_name, format);
  } else if (o.model == "encoder" || o.model == "bert") {
    prepare(o, r, plan_model_bench(r), {"B", "T"});
    report = render::model_report(bench_model(r), r, config_name, format);
  } else {
    prepare(o, r, plan_layer_bench(r), {"T"});  // the only size this command takes
    report = render::layer_report(bench_layer(r), r, config_name, format);
  }
  std::fputs(report.c_str(), stdout);
  return kExitOk;
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "time the fast path at BERT-base size (one layer, or --model encoder or bert) against the "
      "GEMM libraries' bound");
  sub->add_option("--seq", o->seq,
                  "T, tokens (default 128; at most the config's max_position_embeddings)")
      ->check(size_validator())
      ->option_text("T");
  sub->add_option("--threads", o->threads, "threads of the one pool, 1 to 64 (default: all cores)")
      ->check(size_validator(64))
      ->option_text("N");
  sub->add_option("--config", o->config,
                  "a Hugging Face config.json (default: BERT-base's numbers)")
      ->check(not_empty_validator("--config", "bert-base"))
      ->option_text("FILE");
  add_memory_option(*sub);
  sub->add_option("--repeat", o->repeat,
                  "timed runs; the median is reported (default 20; 5 with --model encoder or "
                  "bert)")
      ->check(size_validator(1'000'000))
      ->option_text("N");
  sub->add_option("--warmup", o->warmup,
                  "untimed runs first (default 3; 1 with --model encoder or bert)")
      ->check(whole_number_validator(0, 1'000'000))
      ->option_text("N");
  sub->add_option("--format", o->format, "text (default) or json: one JSON document on stdout")
      ->check(choice_validator("a format", {"text", "json"}))
      ->option_text("text|json");
  sub->add_option("--norm", o->norm, "pre (default, the book) or post (the paper, BERT)")
      ->check(choice_validator("a placement", {"pre", "post"}))
      ->option_text("pre|post");
  sub->add_flag(
         "--train", o->train,
         "time training steps instead: attn train's default model, a BERT-base layer and a GPT "
         "at nanoGPT's CPU configuration")
      ->default_str("");
  sub->add_option(
         "--batch", o->batch,
         "B: with --model encoder or bert, sequences per forward; with --train, the BERT-base "
         "layer's batch (default 1)")
      ->check(size_validator(4096))
      ->option_text("B");
  sub->add_option("--model", o->model,
                  "layer (default): one encoder layer; encoder: the whole encoder from ids "
                  "(BERT-base: 12 layers), with its peak memory; bert: the same as BertModel, "
                  "post-LN with token types (a sentence pair: 0 for the first half, 1 for the "
                  "second); gpt2: GPT-2 small generating, --seq prompt tokens then --new-tokens "
                  "one at a time, against the memory bandwidth's bound; heads: attn heads' scan "
                  "of GPT-2 small on --batch sequences (default 20) of --seq repeated random "
                  "tokens, against the forward passes it needs")
      ->check(choice_validator("a model", {"layer", "encoder", "bert", "gpt2", "heads"}))
      ->option_text("layer|encoder|bert|gpt2|heads");
  sub->add_option(
         "--new-tokens", o->new_tokens,
         "with --model gpt2: tokens generated after the prompt per run, the first by the prompt's "
         "pass (default 32, at least 2)")
      ->check(size_validator(100'000))
      ->option_text("N");
  sub->add_option("--gemm", o->gemm,
                  "the large products' library: auto (default: the wider kernel's library, at "
                  "equal widths the faster on a probe kept in ATTN_GEMM_CACHE's file), measure "
                  "(the probe, timed again now), openblas or onednn")
      ->check(choice_validator("a GEMM library", {"auto", "measure", "openblas", "onednn"}))
      ->option_text("auto|measure|openblas|onednn");
  door_callback(*sub, [o, sub, &context] {
    const bool model =
        o->model == "encoder" || o->model == "bert" || o->model == "gpt2" || o->model == "heads";
    if (o->model == "heads" && sub->count("--norm") > 0)
      throw Error(ErrorKind::bad_value, "bench",
                  "--model heads scans GPT-2, which is pre-LN: drop --norm")
          .about("norm");
    if (o->model != "gpt2" && sub->count("--new-tokens") > 0)
      throw Error(ErrorKind::bad_value, "bench", "--new-tokens is for --model gpt2: add it")
          .about("new_tokens");
    if (o->model == "gpt2" && o->new_tokens < 2)
      throw Error(ErrorKind::bad_value, "bench",
                  "--new-tokens 1 times no step: the first new token comes from the prompt's "
                  "pass; give 2 or more")
          .about("new_tokens");
    if (o->model == "gpt2" && sub->count("--seq") == 0) o->seq = 8;
    if (o->model == "gpt2" && sub->count("--norm") > 0)
      throw Error(ErrorKind::bad_value, "bench", "--model gpt2 is pre-LN, as GPT-2 is: drop --norm")
          .about("norm");
    if (!o->train && (!model || o->model == "gpt2") && sub->count("--batch") > 0)
      throw Error(ErrorKind::bad_value, "bench",
                  "--batch sets the batch of --model encoder, --model bert, --model heads or "
                  "--train: add one of them")
          .about("batch");
    if (o->model == "heads" && sub->count("--batch") == 0) o->batch = 20;
    if (o->model == "bert" && sub->count("--norm") > 0)
      throw Error(ErrorKind::bad_value, "bench", "--model bert is post-LN, as BERT is: drop --norm")
          .about("norm");
    if (o->train && (sub->count("--config") > 0 || sub->count("--norm") > 0))
      throw Error(ErrorKind::bad_value, "bench",
                  "--train times its own three models: drop --config and --norm")
          .about(sub->count("--config") > 0 ? "config" : "norm");
    if (o->train && sub->count("--model") > 0)
      throw Error(ErrorKind::bad_value, "bench", "--train times its own three models: drop --model")
          .about("model");
    if (model && sub->count("--repeat") == 0) o->repeat = 5;  // a whole model is slow to repeat
    if (model && sub->count("--warmup") == 0) o->warmup = 1;
    if (o->model == "heads" && sub->count("--repeat") == 0) o->repeat = 3;
    context.exit_code = run_bench(*o);
  });
}

const Registration kRegistration{"bench", setup};

}  // namespace

}  // namespace attn::cli

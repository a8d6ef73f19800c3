// attn bench: times the fast path of one encoder layer (core/encoder_fast.hpp) at BERT-base size,
// batch 1, and in the same run OpenBLAS's sgemm alone on exactly the layer's GEMM calls: their
// summed medians are the "sgemm bound", the time the layer would take if everything but its
// GEMMs were free. A program, not a test: nothing here asserts a time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "budget.hpp"
#include "command.hpp"
#include "config.hpp"
#include "encoder.hpp"
#include "encoder_fast.hpp"
#include "error.hpp"
#include "lesson_io.hpp"
#include "matmul.hpp"
#include "options.hpp"
#include "random.hpp"
#include "training.hpp"

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
  std::size_t batch = 0;  // --train: the BERT-base layer's batch (0: 1)
};

constexpr std::size_t kReferenceRuns = 3;

std::size_t all_cores() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
double time_ms(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

// One GEMM shape of the layer with buffers of its own (same shapes, strides and per-head offsets).
struct TimedGemm {
  GemmCall call;
  std::size_t a_step = 0, b_step = 0, c_step = 0;  // added per repeated call (per head)
  std::vector<float> a, b, c;
  std::vector<double> ms;

  void run() {
    const GemmCall& g = call;
    for (std::size_t i = 0; i < g.count; ++i) {
      sgemm(g.transpose_a, g.transpose_b, g.m, g.n, g.k, g.alpha, a.data() + i * a_step, g.lda,
            b.data() + i * b_step, g.ldb, g.beta, c.data() + i * c_step, g.ldc);
    }
  }
};

TimedGemm make_timed(const GemmCall& g, std::size_t head_size, Rng& rng) {
  TimedGemm t;
  t.call = g;
  // Per head: Q Kᵀ reads hs-wide column blocks of the fused buffer; P V reads one and writes one.
  if (g.count > 1) {
    const bool scores = std::string_view(g.name) == "scores";
    t.a_step = scores ? head_size : 0;
    t.b_step = head_size;
    t.c_step = scores ? 0 : head_size;
  }
  auto fill = [&](std::vector<float>& v, std::size_t rows, std::size_t cols, std::size_t ld,
                  std::size_t step) {
    v.resize((rows - 1) * ld + cols + (g.count - 1) * step);
    for (float& x : v)
      x = 0.1f * static_cast<float>(rng.normal());
  };
  fill(t.a, g.transpose_a ? g.k : g.m, g.transpose_a ? g.m : g.k, g.lda, t.a_step);
  fill(t.b, g.transpose_b ? g.n : g.k, g.transpose_b ? g.k : g.n, g.ldb, t.b_step);
  fill(t.c, g.m, g.n, g.ldc, t.c_step);
  return t;
}

std::string shape_text(const GemmCall& g) {
  return fmt::format("({},{}) x ({},{}){}", g.m, g.k, g.k, g.n,
                     g.count > 1 ? fmt::format(" x {}", g.count) : "");
}

int run_bench(const BenchOptions& o) {
  EncoderConfig config;  // BERT-base's numbers
  std::string config_name = "BERT-base";
  if (!o.config.empty()) {
    config = resolve_config(o.config);
    config_name = o.config;
  }
  if (o.seq > config.max_position_embeddings) {
    throw Error(
        "bench",
        fmt::format("--seq {} is past {}'s max_position_embeddings {}: use at most {}", o.seq,
                    config_name, config.max_position_embeddings, config.max_position_embeddings));
  }
  const std::size_t t = o.seq, d = config.hidden_size, f = config.intermediate_size,
                    h = config.num_attention_heads;
  const std::size_t weights = 4 * d * d + 2 * d * f;
  try {
    check_budget("bench", {{"the layer's weights, plain and packed", {2, weights}},
                           {"the sgemm bound's buffers", {2, t * (3 * d + t + 2 * d + f)}},
                           {"the reference's intermediates", {t, 16 * d + 2 * f + 3 * h * t}}});
  } catch (Error& e) {
    e.driven_by({"T"});  // the only size this command takes
    throw;
  }
  const std::size_t threads = o.threads == 0 ? all_cores() : o.threads;
  set_blas_threads(static_cast<int>(threads));
  const NormPlacement placement = o.norm == "post" ? NormPlacement::post : NormPlacement::pre;

  Rng rng(0);
  const EncoderLayer layer = init_encoder_layer(rng, config, placement);
  const Tensor3 x = randn(rng, 1, t, d);
  const PackedEncoderLayer packed = pack(layer);
  Workspace workspace = make_workspace(packed, t);
  std::vector<float> out(t * d);
  auto fast = [&] { forward_fast(packed, x.data(), t, workspace, out.data()); };

  // The readable reference, a few times (its first run also warms the weights into cache).
  std::vector<double> reference_ms;
  Tensor3 reference;
  for (std::size_t i = 0; i < kReferenceRuns; ++i) {
    reference_ms.push_back(time_ms([&] { reference = forward(layer, x).output; }));
  }
  fast();
  double max_diff = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::abs(out[i] - reference.data()[i])));
  }

  std::vector<TimedGemm> gemms;
  double flops = 0.0;
  for (const GemmCall& g : gemm_calls(packed, t)) {
    gemms.push_back(make_timed(g, packed.head_size, rng));
    flops += g.flops();
  }
  for (std::size_t i = 0; i < o.warmup; ++i) {
    fast();
    for (TimedGemm& g : gemms)
      g.run();
  }
  // Rounds interleave the layer and the GEMMs, so that a slow patch of the machine hits both.
  std::vector<double> layer_ms;
  for (std::size_t i = 0; i < o.repeat; ++i) {
    layer_ms.push_back(time_ms(fast));
    for (TimedGemm& g : gemms)
      g.ms.push_back(time_ms([&] { g.run(); }));
  }

  const double ms = median(layer_ms), ref_ms = median(reference_ms);
  double bound = 0.0;
  for (const TimedGemm& g : gemms)
    bound += median(g.ms);
  const double gflops = flops / (ms * 1e6);
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  const std::string kernels(kernels_name(workspace.kernels));

  if (o.format == "json") {
    nlohmann::ordered_json doc;
    doc["ms_median"] = ms;
    doc["gflops"] = gflops;
    doc["sgemm_bound_ms"] = bound;
    doc["fraction_of_bound"] = bound / ms;
    doc["seq"] = t;
    doc["threads"] = threads;
    doc["d_model"] = d;
    doc["heads"] = h;
    doc["d_ff"] = f;
    doc["runs"] = o.repeat;
    doc["warmup"] = o.warmup;
    doc["norm"] = o.norm;
    doc["gelu"] = config.hidden_act;
    doc["ms_min"] = *std::min_element(layer_ms.begin(), layer_ms.end());
    doc["ms_max"] = *std::max_element(layer_ms.begin(), layer_ms.end());
    doc["gemm_flops"] = flops;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const TimedGemm& g : gemms) {
      const double gm = median(g.ms);
      list.push_back({{"name", g.call.name},
                      {"m", g.call.m},
                      {"n", g.call.n},
                      {"k", g.call.k},
                      {"count", g.call.count},
                      {"ms_median", gm},
                      {"gflops", g.call.flops() / (gm * 1e6)}});
    }
    doc["gemms"] = list;
    doc["reference_ms"] = ref_ms;
    doc["reference_runs"] = kReferenceRuns;
    doc["speedup"] = ref_ms / ms;
    doc["max_abs_diff"] = max_diff;
    doc["kernels"] = kernels;
    doc["openblas_coretype"] =
        coretype != nullptr ? nlohmann::ordered_json(coretype) : nlohmann::ordered_json();
    std::fputs((doc.dump(2) + "\n").c_str(), stdout);
    return kExitOk;
  }

  std::string text;
  text += fmt::format("attn bench: the book's TransformerEncoderLayer, {}-LN, batch 1, seq {}\n",
                      o.norm, t);
  text += fmt::format("  sizes D={} H={} F={}, hidden_act {} ({})\n", d, h, f, config.hidden_act,
                      config_name);
  text += fmt::format(
      "  threads {} (OpenBLAS's pool, the only one), OPENBLAS_CORETYPE {}, elementwise kernels "
      "{}\n",
      threads, coretype != nullptr ? coretype : "unset", kernels);
  text +=
      fmt::format("  {} timed runs after {} warm-up; times are medians\n\n", o.repeat, o.warmup);
  text += fmt::format("  {:<36} {:>9.3f} ms  {:>7.1f} GFLOP/s  (min {:.3f}, max {:.3f})\n",
                      "forward_fast (the layer)", ms, gflops,
                      *std::min_element(layer_ms.begin(), layer_ms.end()),
                      *std::max_element(layer_ms.begin(), layer_ms.end()));
  text += fmt::format("  {:<36} {:>9.3f} ms  {:>7.1f} GFLOP/s  (its GEMMs alone, summed)\n",
                      "sgemm bound", bound, flops / (bound * 1e6));
  for (const TimedGemm& g : gemms) {
    const double gm = median(g.ms);
    text += fmt::format("    {:<8} {:<25} {:>9.3f} ms  {:>7.1f} GFLOP/s\n", g.call.name,
                        shape_text(g.call), gm, g.call.flops() / (gm * 1e6));
  }
  text += fmt::format("  {:<36} {:>9.3f}     (the bound / the layer's time; 1: only GEMMs)\n",
                      "fraction_of_bound", bound / ms);
  text += fmt::format("  {:<36} {:>9.3f} ms  (median of {} runs)\n", "reference forward (readable)",
                      ref_ms, kReferenceRuns);
  text += fmt::format("  {:<36} {:>9.1f} x\n", "speed-up over the reference", ref_ms / ms);
  text += fmt::format("  {:<36} {:>9.3g}\n", "max |fast - reference|", max_diff);
  text += fmt::format("\nGEMM flops counted as 2 m n k: {:.3f} GFLOP per layer.\n", flops / 1e9);
  std::fputs(text.c_str(), stdout);
  return kExitOk;
}

// --train: training steps (core/training.hpp's Trainer: a batch, forward, the loss, backward and
// AdamW's update) of two models: attn train's default and one BERT-base-size layer.
struct TimedTraining {
  std::string name;
  TrainConfig config;
  std::vector<double> ms;
};

TrainConfig bert_layer_training(std::size_t seq, std::size_t batch) {
  TrainConfig c;  // reverse on 8 letters: the task only feeds the model its tokens and labels
  c.layers = 1;
  c.d_model = 768;
  c.heads = 12;
  c.d_ff = 3072;
  c.sizes.tokens = seq;
  c.batch = batch;
  return c;
}

int run_bench_train(const BenchOptions& o) {
  keep_freed_memory();
  const std::size_t threads = o.threads == 0 ? all_cores() : o.threads;
  set_blas_threads(static_cast<int>(threads));
  std::vector<TimedTraining> runs = {
      {"attn train's default", TrainConfig{}, {}},
      {"a BERT-base layer", bert_layer_training(o.seq, o.batch == 0 ? 1 : o.batch), {}}};
  for (TimedTraining& r : runs) {
    r.config.steps = o.warmup + o.repeat;  // the schedule's length; it only sets the lr
    Trainer trainer(r.config);
    for (std::size_t i = 0; i < o.warmup; ++i)
      trainer.step();
    for (std::size_t i = 0; i < o.repeat; ++i)
      r.ms.push_back(time_ms([&] { trainer.step(); }));
  }
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  if (o.format == "json") {
    nlohmann::ordered_json doc;
    doc["threads"] = threads;
    doc["runs"] = o.repeat;
    doc["warmup"] = o.warmup;
    doc["openblas_coretype"] =
        coretype != nullptr ? nlohmann::ordered_json(coretype) : nlohmann::ordered_json();
    nlohmann::ordered_json models = nlohmann::ordered_json::array();
    for (const TimedTraining& r : runs) {
      const TrainConfig& c = r.config;
      const double ms = median(r.ms);
      models.push_back({{"name", r.name},
                        {"layers", c.layers},
                        {"d_model", c.d_model},
                        {"heads", c.heads},
                        {"d_ff", c.d_ff},
                        {"batch", c.batch},
                        {"tokens", c.sizes.tokens},
                        {"vocab", c.sizes.vocab},
                        {"ms_median", ms},
                        {"ms_min", *std::min_element(r.ms.begin(), r.ms.end())},
                        {"ms_max", *std::max_element(r.ms.begin(), r.ms.end())},
                        {"steps_per_second", 1000.0 / ms}});
    }
    doc["models"] = models;
    std::fputs((doc.dump(2) + "\n").c_str(), stdout);
    return kExitOk;
  }
  std::string text = fmt::format(
      "attn bench --train: training steps (a batch, forward, cross-entropy, backward, AdamW)\n"
      "  threads {}, OPENBLAS_CORETYPE {}; {} timed steps after {} warm-up; times are medians\n\n",
      threads, coretype != nullptr ? coretype : "unset", o.repeat, o.warmup);
  for (const TimedTraining& r : runs) {
    const TrainConfig& c = r.config;
    const double ms = median(r.ms);
    text += fmt::format("  {:<22} L={} D={} H={} F={}, batch {} of {} tokens\n", r.name, c.layers,
                        c.d_model, c.heads, c.d_ff, c.batch, c.sizes.tokens);
    text += fmt::format("  {:<22} {:>9.3f} ms/step  {:>8.1f} steps/s  (min {:.3f}, max {:.3f})\n",
                        "", ms, 1000.0 / ms, *std::min_element(r.ms.begin(), r.ms.end()),
                        *std::max_element(r.ms.begin(), r.ms.end()));
  }
  text += "\nPyTorch on the same models: bench/train_torch.py (docs/benchmark.md, \"Training\").\n";
  std::fputs(text.c_str(), stdout);
  return kExitOk;
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "time one encoder layer's fast path at BERT-base size against OpenBLAS's sgemm bound");
  sub->add_option("--seq", o->seq,
                  "T, tokens (default 128; at most the config's max_position_embeddings)")
      ->check(size_validator())
      ->option_text("T");
  sub->add_option("--threads", o->threads,
                  "OpenBLAS threads, 1 to 64; its pool is the only one (default: all cores)")
      ->check(size_validator(64))
      ->option_text("N");
  sub->add_option("--config", o->config,
                  "a Hugging Face config.json (default: BERT-base's numbers)")
      ->option_text("FILE");
  add_memory_option(*sub);
  sub->add_option("--repeat", o->repeat, "timed runs; the median is reported (default 20)")
      ->check(size_validator(1'000'000))
      ->option_text("N");
  sub->add_option("--warmup", o->warmup, "untimed runs first (default 3)")
      ->check(whole_number_validator(0, 1'000'000))
      ->option_text("N");
  sub->add_option("--format", o->format, "text (default) or json: one JSON document on stdout")
      ->check(choice_validator("a format", {"text", "json"}))
      ->option_text("text|json");
  sub->add_option("--norm", o->norm, "pre (default, the book) or post (the paper, BERT)")
      ->check(choice_validator("a placement", {"pre", "post"}))
      ->option_text("pre|post");
  sub->add_flag("--train", o->train,
                "time training steps instead: attn train's default model and a BERT-base layer")
      ->default_str("");
  sub->add_option("--batch", o->batch, "with --train: the BERT-base layer's batch (default 1)")
      ->check(size_validator(4096))
      ->option_text("B");
  sub->callback([o, sub, &context] {
    if (!o->train && sub->count("--batch") > 0)
      throw Error("bench", "--batch sets the BERT-base layer's batch of --train: add --train")
          .about("batch");
    if (o->train && (sub->count("--config") > 0 || sub->count("--norm") > 0))
      throw Error("bench", "--train times its own two models: drop --config and --norm")
          .about(sub->count("--config") > 0 ? "config" : "norm");
    context.exit_code = o->train ? run_bench_train(*o) : run_bench(*o);
  });
}

const Registration kRegistration{"bench", setup};

}  // namespace

}  // namespace attn::cli

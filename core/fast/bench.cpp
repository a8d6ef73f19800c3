#include "fast/bench.hpp"
#include "train/gpt_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <string_view>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/random.hpp"
#include "encoder.hpp"
#include "fast/gpt2_fast.hpp"
#include "head_scan.hpp"
#include "kernels/matvec.hpp"
#include "kernels/parallel.hpp"

namespace attn {

namespace {

constexpr std::size_t kReferenceRuns = 3;
constexpr std::size_t kBenchTokenTypes = 2;  // BERT-base's type_vocab_size

std::size_t index_of(GemmLibrary library) {
  return static_cast<std::size_t>(library);
}

template <class F>
double time_ms(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

// One GEMM shape with buffers of its own (same shapes, strides and per-head offsets).
struct GemmBuffers {
  TimedGemm timed;
  std::size_t a_step = 0, b_step = 0, c_step = 0;  // added per repeated call (per head)
  std::vector<float> a, b, c;

  void run(GemmLibrary library) {
    const GemmCall& g = timed.call;
    for (std::size_t i = 0; i < g.count; ++i) {
      sgemm_on(library, g.transpose_a, g.transpose_b, g.m, g.n, g.k, g.alpha, a.data() + i * a_step,
               g.lda, b.data() + i * b_step, g.ldb, g.beta, c.data() + i * c_step, g.ldc);
    }
  }
};

GemmBuffers make_buffers(const GemmCall& g, std::size_t head_size, Rng& rng) {
  GemmBuffers t;
  t.timed.call = g;
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

Bounds bounds_of(const std::vector<GemmBuffers>& gemms) {
  Bounds b;
  for (GemmLibrary library : bench_libraries()) {
    for (const GemmBuffers& g : gemms)
      b.ms[index_of(library)] += median(g.timed.ms[index_of(library)]);
    if (b.ms[index_of(library)] < b.ms[index_of(b.fastest)]) b.fastest = library;
  }
  return b;
}

// Times `timed` (may be empty) `repeat` times after `warmup`, each round followed by the calls on
// the library that runs the large products, so that a slow patch of the machine hits both; then
// every other library alone with the pool lent to it, so that two pools never run side by side.
// Returns the times of `timed`.
std::vector<double> time_rounds(const std::function<void()>& timed, std::vector<GemmBuffers>& gemms,
                                std::size_t warmup, std::size_t repeat) {
  const GemmLibrary active = gemm_selection().large;
  auto round = [&](GemmLibrary library, std::vector<double>* times) {
    if (times != nullptr && timed) times->push_back(time_ms(timed));
    for (GemmBuffers& g : gemms) {
      const double ms = time_ms([&] { g.run(library); });
      if (times != nullptr) g.timed.ms[index_of(library)].push_back(ms);
    }
  };
  std::vector<double> timed_ms;
  for (std::size_t i = 0; i < warmup; ++i) {
    if (timed) timed();
    round(active, nullptr);
  }
  for (std::size_t i = 0; i < repeat; ++i)
    round(active, &timed_ms);
  for (GemmLibrary library : bench_libraries()) {
    if (library == active) continue;
    lend_pool(library);
    for (std::size_t i = 0; i < warmup; ++i)
      round(library, nullptr);
    std::vector<double> unused;
    for (std::size_t i = 0; i < repeat; ++i)
      round(library, &unused);
    return_pool();
  }
  return timed_ms;
}

std::vector<TimedGemm> timed_of(const std::vector<GemmBuffers>& gemms) {
  std::vector<TimedGemm> out;
  for (const GemmBuffers& g : gemms)
    out.push_back(g.timed);
  return out;
}

// Resident memory, from the kernel: a field of /proc/self/status in bytes (0 when unreadable).
std::size_t status_bytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stoull(line.substr(prefix.size())) * 1024;
  }
  return 0;
}

// Resets the peak resident memory (VmHWM) to the current, where /proc/self/clear_refs allows.
bool reset_peak_memory() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

std::size_t layer_weights(const EncoderConfig& c) {
  const std::size_t d = c.hidden_size, f = c.intermediate_size;
  return 4 * d * d + 2 * d * f + 9 * d + f;
}

}  // namespace

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  if (n == 0) return 0.0;
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<GemmLibrary> bench_libraries() {
  std::vector<GemmLibrary> out = {GemmLibrary::openblas};
  if (gemm_library_available(GemmLibrary::onednn)) out.push_back(GemmLibrary::onednn);
  return out;
}

MemoryPlan plan_layer_bench(const BenchRequest& r) {
  const std::size_t t = r.tokens, d = r.config.hidden_size, f = r.config.intermediate_size,
                    h = r.config.num_attention_heads;
  const std::size_t weights = 4 * d * d + 2 * d * f;
  return {{"the layer's weights, plain and packed", {2, weights}},
          {"the sgemm bound's buffers", {2, t * (3 * d + t + 2 * d + f)}},
          {"the reference's intermediates", {t, 16 * d + 2 * f + 3 * h * t}}};
}

LayerBench bench_layer(const BenchRequest& r) {
  const std::size_t t = r.tokens, d = r.config.hidden_size;
  Rng rng(0);
  const EncoderLayer layer = init_encoder_layer(rng, r.config, r.norm);
  const Tensor3 x = randn(rng, 1, t, d);
  const PackedEncoderLayer packed = pack(layer);
  Workspace workspace = make_workspace(packed, t);
  std::vector<float> out(t * d);
  auto fast = [&] { forward_fast(packed, x.data(), t, workspace, out.data()); };

  LayerBench b;
  b.kernels = workspace.kernels;
  // The readable reference, a few times (its first run also warms the weights into cache).
  Tensor3 reference;
  for (std::size_t i = 0; i < kReferenceRuns; ++i)
    b.reference_ms.push_back(time_ms([&] { reference = forward(layer, x).output; }));
  fast();
  for (std::size_t i = 0; i < out.size(); ++i)
    b.max_abs_diff =
        std::max(b.max_abs_diff, static_cast<double>(std::abs(out[i] - reference.data()[i])));

  std::vector<GemmBuffers> gemms;
  for (const GemmCall& g : gemm_calls(packed, t)) {
    gemms.push_back(make_buffers(g, packed.head_size, rng));
    b.flops += g.flops();
  }
  b.layer_ms = time_rounds(fast, gemms, r.warmup, r.repeat);
  b.bounds = bounds_of(gemms);
  b.gemms = timed_of(gemms);
  return b;
}

MemoryPlan plan_model_bench(const BenchRequest& r) {
  const EncoderConfig& c = r.config;
  const std::size_t rows = r.batch * r.tokens, d = c.hidden_size, f = c.intermediate_size;
  const std::size_t types = r.bert ? kBenchTokenTypes : 0;
  return {{"the model's weights", {c.num_hidden_layers, layer_weights(c)}, "L D/F"},
          {"the embeddings' tables", {c.vocab_size + c.max_position_embeddings + types, d}},
          {"one layer being packed", {2, layer_weights(c)}, "D/F"},
          {"one layer's activations", {rows, 7 * d + f}, "B T D/F"},
          {"the attention scores, one buffer per thread",
           {static_cast<std::size_t>(r.threads), r.tokens, r.tokens},
           "N T T"},
          {r.bert ? "the ids and token types" : "the ids",
           {r.bert ? 2u : 1u, r.batch, r.tokens},
           " B T",
           8}};
}

ModelBench bench_model(const BenchRequest& r) {
  const EncoderConfig& c = r.config;
  const std::size_t rows = r.batch * r.tokens;
  gemm_selection();  // chosen before the model is built and timed
  ModelBench b;
  b.baseline_bytes = status_bytes("VmRSS");
  Rng rng(0);
  const PackedEncoder encoder = r.bert ? init_packed_bert(rng, BertConfig{c, kBenchTokenTypes, 0})
                                       : init_packed_encoder(rng, c, r.norm);
  std::vector<std::int64_t> ids(rows), types;
  for (std::int64_t& id : ids)
    id = static_cast<std::int64_t>(rng.next_u64() % c.vocab_size);
  if (r.bert) {
    types.resize(rows);
    for (std::size_t i = 0; i < rows; ++i)
      types[i] = i % r.tokens < r.tokens / 2 ? 0 : 1;
  }
  b.peak_reset = reset_peak_memory();
  EncoderWorkspace workspace = make_workspace(encoder, r.batch, r.tokens);
  std::vector<float> out(rows * c.hidden_size);
  auto fast = [&] {
    forward_fast(encoder, ids.data(), r.batch, r.tokens, workspace, out.data(),
                 types.empty() ? nullptr : types.data());
  };
  for (std::size_t i = 0; i < r.warmup; ++i)
    fast();
  for (std::size_t i = 0; i < r.repeat; ++i)
    b.model_ms.push_back(time_ms(fast));
  b.peak_bytes = status_bytes("VmHWM");
  b.kernels = workspace.layer.kernels;

  // The bound: one layer's GEMM calls on each library, times the layers.
  std::vector<GemmBuffers> gemms;
  double layer_flops = 0.0;
  if (!encoder.layers.empty()) {
    const PackedEncoderLayer& first = encoder.layers.front();
    for (const GemmCall& g : gemm_calls(first, r.tokens, r.batch)) {
      gemms.push_back(make_buffers(g, first.head_size, rng));
      layer_flops += g.flops();
    }
  }
  time_rounds({}, gemms, 1, std::max<std::size_t>(1, std::min<std::size_t>(r.repeat, 5)));
  b.bounds = bounds_of(gemms);
  for (double& ms : b.bounds.ms)
    ms *= static_cast<double>(c.num_hidden_layers);
  b.flops = layer_flops * static_cast<double>(c.num_hidden_layers);
  b.weights_bytes = packed_bytes(encoder);
  b.activations_bytes = workspace_bytes(workspace.layer) +
                        sizeof(float) * (workspace.stream.size() + out.size()) +
                        sizeof(std::int64_t) * (ids.size() + types.size());
  const std::size_t used = b.peak_bytes > b.baseline_bytes ? b.peak_bytes - b.baseline_bytes : 0;
  b.memory_ratio =
      static_cast<double>(used) / static_cast<double>(b.weights_bytes + b.activations_bytes);
  return b;
}

double GenerateBench::tokens_per_second() const {
  return token_ms.empty() ? 0.0 : 1000.0 / median(token_ms);
}

double GenerateBench::bound_tokens_per_second() const {
  return bytes_per_token == 0 ? 0.0 : bandwidth_bytes_per_s / static_cast<double>(bytes_per_token);
}

namespace {

Gpt2Config gpt2_of(const EncoderConfig& sizes) {
  Gpt2Config c = default_gpt2_config();
  c.sizes = sizes;
  c.eos_token_id = c.bos_token_id = static_cast<std::int64_t>(sizes.vocab_size) - 1;
  return c;
}

// Bytes per second of reading kBandwidthBytes once, in order, on the pool's threads (each sums its
// contiguous share, as each reads its block of a matrix's rows in matvec_on_pool), the best of
// `runs`: the machine's rate, measured apart from the generator's own kernel.
double read_bandwidth(std::size_t runs) {
  const std::size_t n = kBandwidthBytes / sizeof(float);
  std::vector<float> buffer(n, 1.0f);
  [[maybe_unused]] const int threads = std::max(1, pool_threads());
  double best = 0.0;
  for (std::size_t i = 0; i < runs; ++i) {
    float total = 0.0f;
    const double ms = time_ms([&] {
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads) reduction(+ : total)
      {
        const auto parts = static_cast<std::size_t>(omp_get_num_threads());
        const auto part = static_cast<std::size_t>(omp_get_thread_num());
        const std::size_t first = n / parts * part;
        const std::size_t last = part + 1 == parts ? n : first + n / parts;
        total += stream_sum(buffer.data() + first, last - first);
      }
#else
      total = stream_sum(buffer.data(), n);
#endif
    });
    // Ones, in sums below 2^24 each: exact, so a read that skipped a part shows.
    if (total != static_cast<float>(n))
      throw Error(ErrorKind::internal, "bench_generate",
                  fmt::format("the bandwidth's buffer summed to {}, not {}", total, n));
    best = std::max(best, static_cast<double>(kBandwidthBytes) / (ms / 1000.0));
  }
  return best;
}

}  // namespace

MemoryPlan plan_generate_bench(const BenchRequest& r) {
  const EncoderConfig& c = r.config;
  const std::size_t blocks =
      4 * c.hidden_size * c.hidden_size + 2 * c.hidden_size * c.intermediate_size;
  return {
      {"the weights",
       {c.num_hidden_layers * blocks + (c.vocab_size + c.max_position_embeddings) * c.hidden_size},
       "L D F V P"},
      {"the key/value cache",
       {2, c.num_hidden_layers, r.tokens + r.new_tokens, c.hidden_size},
       " L T D"},
      {"the prompt's pass", {r.tokens, 8 * c.hidden_size + c.intermediate_size}, "T D/F"},
      {"the bandwidth's buffer", {kBandwidthBytes / sizeof(float)}, "bytes"}};
}

GenerateBench bench_generate(const BenchRequest& r) {
  GenerateBench b;
  b.baseline_bytes = status_bytes("VmRSS");
  b.bandwidth_bytes_per_s = read_bandwidth(5);
  Rng rng(29);
  const Gpt2Config config = gpt2_of(r.config);
  const PackedGpt2 model = init_packed_gpt2(rng, config);
  std::vector<std::int64_t> prompt(r.tokens);
  for (std::int64_t& id : prompt)
    id = static_cast<std::int64_t>(rng.next_u64() % r.config.vocab_size);
  b.peak_reset = reset_peak_memory();
  gemm_selection();  // chosen before the first prompt, so that no run pays for it
  for (std::size_t run = 0; run < r.warmup + r.repeat; ++run) {
    Gpt2Generator generator(model, r.tokens + r.new_tokens);
    const std::vector<float>* logits = nullptr;
    const double prefill = time_ms([&] { logits = &generator.prefill(prompt); });
    std::vector<double> steps;
    for (std::size_t n = 1; n < r.new_tokens; ++n) {
      const auto next = std::max_element(logits->begin(), logits->end()) - logits->begin();
      steps.push_back(time_ms([&] { logits = &generator.step(next); }));
    }
    if (run < r.warmup) continue;
    b.prefill_ms.push_back(prefill);
    b.token_ms.insert(b.token_ms.end(), steps.begin(), steps.end());
    b.cache_bytes = cache_bytes(generator.cache());
    b.workspace_bytes = generator.workspace_bytes();
  }
  b.peak_bytes = status_bytes("VmHWM");
  b.weights_bytes = packed_bytes(model);
  b.bytes_per_token = b.weights_bytes - (model.wpe.bytes.size() - model.d_model * sizeof(float));
  b.kernels = best_fast_kernels();
  return b;
}

MemoryPlan plan_heads_bench(const BenchRequest& r) {
  MemoryPlan plan = plan_generate_bench(r);
  plan.front().name = "the weights, packed";
  MemoryPlan readable = plan_gpt2(gpt2_of(r.config), kScanBatch, r.tokens, false);
  plan.insert(plan.end(), readable.begin(), readable.end());
  plan.push_back(plan.front());
  plan.back().name = "the weights, readable";
  return plan;
}

HeadsBench bench_heads(const BenchRequest& r) {
  const Gpt2Config config = gpt2_of(r.config);
  Rng weights(29), packed_weights(29);
  const Gpt2 model = init_gpt2(weights, config);
  const PackedGpt2 packed = init_packed_gpt2(packed_weights, config);
  Rng rng(0);
  const auto vocab = static_cast<std::int64_t>(config.sizes.vocab_size);
  const ProbeSet set =
      repeated_probe(rng, r.batch, r.tokens, {0, vocab - 1, vocab - 1, std::nullopt});
  const std::size_t layers = config.sizes.num_hidden_layers,
                    heads = config.sizes.num_attention_heads;
  HeadsBench b{{}, {}, {}, r.batch, layers, heads, standard_patterns(true).size()};
  const LayerWeights forward_weights = gpt2_weights(model);
  gemm_selection();  // chosen before the first run, so that no run pays for it
  for (std::size_t run = 0; run < r.warmup + r.repeat; ++run) {
    const double scan = time_ms([&] {
      scan_heads(forward_weights, layers, heads, true, standard_patterns(true), {set}, kScanBatch);
    });
    const double forward = time_ms([&] {
      for (std::size_t first = 0; first < r.batch; first += kScanBatch) {
        const std::size_t n = std::min(kScanBatch, r.batch - first);
        Ids ids({n, r.tokens});
        std::copy(set.ids.begin() + first * r.tokens, set.ids.begin() + (first + n) * r.tokens,
                  ids.begin());
        forward_weights(ids);
      }
    });
    const double fastest = time_ms([&] {
      for (std::size_t s = 0; s < r.batch; ++s) {
        Gpt2Generator generator(packed, r.tokens);
        generator.prefill(std::vector<std::int64_t>(set.ids.begin() + s * r.tokens,
                                                    set.ids.begin() + (s + 1) * r.tokens));
      }
    });
    if (run < r.warmup) continue;
    b.scan_ms.push_back(scan);
    b.forward_ms.push_back(forward);
    b.packed_ms.push_back(fastest);
  }
  return b;
}

TrainBench bench_train(const BenchRequest& r) {
  gemm_selection();  // chosen before the first step, so that no step pays for it
  TrainConfig bert;  // reverse on 8 letters: the task only feeds the model its tokens and labels
  bert.layers = 1;
  bert.d_model = 768;
  bert.heads = 12;
  bert.d_ff = 3072;
  bert.sizes.tokens = r.tokens;
  bert.batch = r.batch;
  TrainConfig gpt;  // shown as nanoGPT's CPU configuration; trained by GptTraining below
  gpt.layers = 4;
  gpt.d_model = 128;
  gpt.heads = 4;
  gpt.d_ff = 512;
  gpt.batch = 12;
  gpt.sizes.tokens = 64;
  TrainBench b{{{"attn train's default", TrainConfig{}, {}},
                {"a BERT-base layer", bert, {}},
                {"nanoGPT's CPU GPT", gpt, {}}}};
  for (TrainBench::Run& run : b.runs) {
    if (run.name == "nanoGPT's CPU GPT") {
      GptTrainConfig c;  // its defaults are nanoGPT's CPU configuration
      c.steps = r.warmup + r.repeat;
      // Random text over the shipped corpus's 80 characters: the time does not depend on it.
      Rng rng(0);
      std::vector<std::int32_t> ids(200'000);
      for (std::int32_t& id : ids)
        id = static_cast<std::int32_t>(rng.next_u64() % 80);
      GptTraining training(c, split_corpus(std::move(ids), c.block), 80);
      // The step's products: per block the four projections (x Wᵀ), each again in backward as
      // dW = dYᵀ X and dX = dY W; the LM head (x wteᵀ) and its two.
      const std::size_t n = c.batch * c.block, d = c.d_model, f = c.d_ff, v = 80;
      std::vector<GemmBuffers> gemms;
      Rng fill(1);
      auto add = [&](const char* name, std::size_t out, std::size_t in, std::size_t count) {
        gemms.push_back(
            make_buffers({name, false, true, n, out, in, in, in, out, 1.0f, 0.0f, count}, 0, fill));
        gemms.push_back(
            make_buffers({name, true, false, out, in, n, out, in, in, 1.0f, 1.0f, count}, 0, fill));
        gemms.push_back(make_buffers(
            {name, false, false, n, in, out, out, in, in, 1.0f, 0.0f, count}, 0, fill));
      };
      add("qkv", 3 * d, d, c.layers);
      add("output", d, d, c.layers);
      add("ff_1", f, d, c.layers);
      add("ff_2", d, f, c.layers);
      add("lm_head", v, d, 1);
      run.ms = time_rounds([&] { training.step(); }, gemms, r.warmup, r.repeat);
      run.bounds = bounds_of(gemms);
      for (const GemmBuffers& g : gemms)
        run.gemm_flops += g.timed.call.flops();
      continue;
    }
    run.config.steps = r.warmup + r.repeat;  // the schedule's length; it only sets the lr
    Trainer trainer(run.config);
    for (std::size_t i = 0; i < r.warmup; ++i)
      trainer.step();
    for (std::size_t i = 0; i < r.repeat; ++i)
      run.ms.push_back(time_ms([&] { trainer.step(); }));
  }
  return b;
}

}  // namespace attn

// attn bench: times the fast path of one encoder layer (core/encoder_fast.hpp) at BERT-base size,
// and in the same run each GEMM library alone (OpenBLAS, oneDNN) on exactly the layer's GEMM
// calls: their summed medians are a library's "sgemm bound", the time the layer would take on it
// if everything but its GEMMs were free; the fastest library's is the bound. `--model encoder`
// times the whole 12-layer encoder from ids, with its peak memory; `--train` training steps.
// A program, not a test: nothing here asserts a time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/budget.hpp"
#include "base/error.hpp"
#include "base/random.hpp"
#include "command.hpp"
#include "encoder.hpp"
#include "fast/encoder_fast.hpp"
#include "io/config.hpp"
#include "kernels/gemm.hpp"
#include "lesson_io.hpp"
#include "matmul.hpp"
#include "options.hpp"
#include "train/trainer.hpp"

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
  std::vector<double> ms[2];  // per library: OpenBLAS, oneDNN

  void run(GemmLibrary library) {
    const GemmCall& g = call;
    for (std::size_t i = 0; i < g.count; ++i) {
      sgemm_on(library, g.transpose_a, g.transpose_b, g.m, g.n, g.k, g.alpha, a.data() + i * a_step,
               g.lda, b.data() + i * b_step, g.ldb, g.beta, c.data() + i * c_step, g.ldc);
    }
  }
};

// The libraries this build has, OpenBLAS first.
std::vector<GemmLibrary> libraries() {
  std::vector<GemmLibrary> out = {GemmLibrary::openblas};
  if (gemm_library_available(GemmLibrary::onednn)) out.push_back(GemmLibrary::onednn);
  return out;
}

std::size_t index_of(GemmLibrary library) {
  return library == GemmLibrary::onednn ? 1 : 0;
}

// Each library's bound: the summed medians of the calls on it.
struct Bounds {
  double ms[2] = {0.0, 0.0};
  GemmLibrary fastest = GemmLibrary::openblas;
  double fastest_ms() const { return ms[index_of(fastest)]; }
};
Bounds bounds_of(const std::vector<TimedGemm>& gemms) {
  Bounds b;
  for (GemmLibrary library : libraries()) {
    for (const TimedGemm& g : gemms)
      b.ms[index_of(library)] += median(g.ms[index_of(library)]);
    if (b.ms[index_of(library)] < b.ms[index_of(b.fastest)]) b.fastest = library;
  }
  return b;
}

// Times `timed` (the layer; may be empty) `repeat` times after `warmup`, each round followed by
// the calls on the library that runs the large products, so that a slow patch of the machine hits
// both; then every other library alone with the pool lent to it, so that two pools never run side
// by side. Returns the times of `timed`.
std::vector<double> time_rounds(const std::function<void()>& timed, std::vector<TimedGemm>& gemms,
                                std::size_t warmup, std::size_t repeat) {
  const GemmLibrary active = gemm_selection().large;
  auto round = [&](GemmLibrary library, std::vector<double>* times) {
    if (times != nullptr && timed) times->push_back(time_ms(timed));
    for (TimedGemm& g : gemms) {
      const double ms = time_ms([&] { g.run(library); });
      if (times != nullptr) g.ms[index_of(library)].push_back(ms);
    }
  };
  std::vector<double> timed_ms;
  for (std::size_t i = 0; i < warmup; ++i) {
    if (timed) timed();
    round(active, nullptr);
  }
  for (std::size_t i = 0; i < repeat; ++i)
    round(active, &timed_ms);
  for (GemmLibrary library : libraries()) {
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

// "oneDNN for products of 32768 multiply-adds and more ... (why)": how the GEMMs run.
std::string gemm_text(const GemmSelection& s) {
  std::string text = fmt::format("{} for products of {} multiply-adds and more, OpenBLAS below",
                                 library_name(s.large), kSmallProduct);
  if (s.probe_m != 0) {
    text += fmt::format(
        " ({} on a {}x{}x{} probe, one thread: OpenBLAS {:.3f} ms, oneDNN "
        "{:.3f} ms)",
        s.source, s.probe_m, s.probe_k, s.probe_n, s.openblas_ms, s.onednn_ms);
  } else if (s.source == "the kernels' widths") {
    text += fmt::format(" (by the kernels' widths: OpenBLAS's {}, oneDNN's {})", s.openblas_kernel,
                        s.onednn_isa);
  } else {
    text += fmt::format(" ({})", s.source);
  }
  return text;
}

nlohmann::ordered_json gemm_json(const GemmSelection& s) {
  nlohmann::ordered_json j;
  j["large_products"] = library_name(s.large);
  j["small_product_limit"] = kSmallProduct;
  j["chosen_by"] = s.source;
  j["probe_openblas_ms"] = s.openblas_ms;
  j["probe_onednn_ms"] = s.onednn_ms;
  j["openblas_kernel"] = s.openblas_kernel;
  j["onednn_isa"] = s.onednn_isa;
  return j;
}

// The keys of a timed forward: its times, its GEMM flops and each library's bound.
void put_times(nlohmann::ordered_json& doc, const std::vector<double>& times, double flops,
               const Bounds& bounds) {
  const double ms = median(times);
  doc["ms_median"] = ms;
  doc["ms_min"] = *std::min_element(times.begin(), times.end());
  doc["ms_max"] = *std::max_element(times.begin(), times.end());
  doc["gflops"] = flops / (ms * 1e6);
  doc["gemm_flops"] = flops;
  doc["sgemm_bound_ms"] = bounds.fastest_ms();
  doc["fraction_of_bound"] = bounds.fastest_ms() / ms;
  doc["bound_library"] = library_name(bounds.fastest);
  for (GemmLibrary library : libraries()) {
    doc[library == GemmLibrary::onednn ? "onednn_bound_ms" : "openblas_bound_ms"] =
        bounds.ms[index_of(library)];
  }
}

// The machine's keys: the elementwise kernels (when given), the GEMMs, OPENBLAS_CORETYPE.
void put_machine(nlohmann::ordered_json& doc, std::string_view kernels) {
  if (!kernels.empty()) doc["kernels"] = kernels;
  doc["gemm"] = gemm_json(gemm_selection());
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  doc["openblas_coretype"] =
      coretype != nullptr ? nlohmann::ordered_json(coretype) : nlohmann::ordered_json();
}

void apply_gemm_option(const BenchOptions& o) {
  if (o.gemm != "auto") set_gemm_choice(parse_gemm_choice(o.gemm, "--gemm"));
}

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

std::size_t threads_for_budget(const BenchOptions& o) {
  return o.threads == 0 ? all_cores() : o.threads;
}

// BERT-base's numbers, or --config's; --seq checked against its positions.
std::pair<EncoderConfig, std::string> bench_config(const BenchOptions& o) {
  EncoderConfig config;
  std::string name = "BERT-base";
  if (!o.config.empty()) {
    config = resolve_config(o.config);
    name = o.config;
  }
  if (o.seq > config.max_position_embeddings) {
    throw Error(
        "bench",
        fmt::format("--seq {} is past {}'s max_position_embeddings {}: use at most {}", o.seq, name,
                    config.max_position_embeddings, config.max_position_embeddings));
  }
  return {config, name};
}

// The lines every text report starts with: the pool, the GEMMs and OpenBLAS's kernel.
std::string machine_lines(std::size_t threads, std::string_view kernels) {
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::string text =
      fmt::format("  threads {} (one pool){}\n", threads,
                  kernels.empty() ? "" : fmt::format(", elementwise kernels {}", kernels));
  text += fmt::format("  GEMMs: {}\n", gemm_text(gemm_selection()));
  text += fmt::format("  OpenBLAS's kernel {} (OPENBLAS_CORETYPE {})\n", openblas_kernel(),
                      coretype != nullptr ? coretype : "unset");
  return text;
}

int run_bench(const BenchOptions& o) {
  const auto [config, config_name] = bench_config(o);
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
  set_threads(static_cast<int>(threads));
  apply_gemm_option(o);
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
  const std::vector<GemmLibrary> libs = libraries();
  const std::vector<double> layer_ms = time_rounds(fast, gemms, o.warmup, o.repeat);

  const double ms = median(layer_ms), ref_ms = median(reference_ms);
  const Bounds bounds = bounds_of(gemms);
  const double bound = bounds.fastest_ms();
  const double gflops = flops / (ms * 1e6);
  const std::string kernels(kernels_name(workspace.kernels));

  if (o.format == "json") {
    nlohmann::ordered_json doc;
    put_times(doc, layer_ms, flops, bounds);
    doc["seq"] = t;
    doc["threads"] = threads;
    doc["d_model"] = d;
    doc["heads"] = h;
    doc["d_ff"] = f;
    doc["runs"] = o.repeat;
    doc["warmup"] = o.warmup;
    doc["norm"] = o.norm;
    doc["gelu"] = config.hidden_act;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const TimedGemm& g : gemms) {
      const double gm = median(g.ms[index_of(bounds.fastest)]);
      nlohmann::ordered_json item = {{"name", g.call.name},
                                     {"m", g.call.m},
                                     {"n", g.call.n},
                                     {"k", g.call.k},
                                     {"count", g.call.count},
                                     {"ms_median", gm},
                                     {"gflops", g.call.flops() / (gm * 1e6)}};
      for (GemmLibrary library : libs) {
        item[library == GemmLibrary::onednn ? "onednn_ms" : "openblas_ms"] =
            median(g.ms[index_of(library)]);
      }
      list.push_back(item);
    }
    doc["gemms"] = list;
    doc["reference_ms"] = ref_ms;
    doc["reference_runs"] = kReferenceRuns;
    doc["speedup"] = ref_ms / ms;
    doc["max_abs_diff"] = max_diff;
    put_machine(doc, kernels);
    std::fputs((doc.dump(2) + "\n").c_str(), stdout);
    return kExitOk;
  }

  std::string text;
  text += fmt::format("attn bench: the book's TransformerEncoderLayer, {}-LN, batch 1, seq {}\n",
                      o.norm, t);
  text += fmt::format("  sizes D={} H={} F={}, hidden_act {} ({})\n", d, h, f, config.hidden_act,
                      config_name);
  text += machine_lines(threads, kernels);
  text +=
      fmt::format("  {} timed runs after {} warm-up; times are medians\n\n", o.repeat, o.warmup);
  text += fmt::format("  {:<36} {:>9.3f} ms  {:>7.1f} GFLOP/s  (min {:.3f}, max {:.3f})\n",
                      "forward_fast (the layer)", ms, gflops,
                      *std::min_element(layer_ms.begin(), layer_ms.end()),
                      *std::max_element(layer_ms.begin(), layer_ms.end()));
  for (GemmLibrary library : libs) {
    const double b = bounds.ms[index_of(library)];
    text += fmt::format("  {:<36} {:>9.3f} ms  {:>7.1f} GFLOP/s  (its GEMMs alone, summed){}\n",
                        fmt::format("sgemm bound, {}", library_name(library)), b, flops / (b * 1e6),
                        library == bounds.fastest ? ": the bound" : "");
  }
  std::string header = fmt::format("    {:<8} {:<25}", "", "");
  for (GemmLibrary library : libs)
    header += fmt::format(" {:>20}", library_name(library));
  text += header + "\n";
  for (const TimedGemm& g : gemms) {
    std::string line = fmt::format("    {:<8} {:<25}", g.call.name, shape_text(g.call));
    for (GemmLibrary library : libs) {
      const double gm = median(g.ms[index_of(library)]);
      line += fmt::format(" {:>7.3f} ms {:>5.0f} GF", gm, g.call.flops() / (gm * 1e6));
    }
    text += line + "\n";
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

// --model encoder: the whole encoder from ids. Memory is read from the kernel: resident bytes
// before the model is built, and the peak resident bytes while it runs (VmHWM, reset after
// building when /proc/self/clear_refs allows, so that the plain layer held while packing does not
// count).
std::size_t status_bytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stoull(line.substr(prefix.size())) * 1024;
  }
  return 0;
}

bool reset_peak_memory() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

double mib(std::size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

int run_bench_model(const BenchOptions& o) {
  const auto [config, config_name] = bench_config(o);
  const std::size_t batch = o.batch == 0 ? 1 : o.batch, t = o.seq, rows = batch * t;
  const std::size_t d = config.hidden_size, f = config.intermediate_size,
                    h = config.num_attention_heads, layers = config.num_hidden_layers;
  const std::size_t layer_weights = 4 * d * d + 2 * d * f + 9 * d + f;
  try {
    check_budget(
        "bench",
        {{"the model's weights", {layers, layer_weights}, "L D/F"},
         {"the embeddings' tables", {config.vocab_size + config.max_position_embeddings, d}},
         {"one layer being packed", {2, layer_weights}, "D/F"},
         {"one layer's activations", {rows, 7 * d + f}, "B T D/F"},
         {"the attention scores, one buffer per thread", {threads_for_budget(o), t, t}, "N T T"},
         {"the ids", {batch, t}, "B T", 8}});
  } catch (Error& e) {
    e.driven_by({"B", "T"});
    throw;
  }
  const std::size_t threads = o.threads == 0 ? all_cores() : o.threads;
  set_threads(static_cast<int>(threads));
  apply_gemm_option(o);
  gemm_selection();  // chosen before the model is built and timed
  const NormPlacement placement = o.norm == "post" ? NormPlacement::post : NormPlacement::pre;

  const std::size_t baseline = status_bytes("VmRSS");
  Rng rng(0);
  const PackedEncoder encoder = init_packed_encoder(rng, config, placement);
  std::vector<std::int64_t> ids(rows);
  for (std::int64_t& id : ids)
    id = static_cast<std::int64_t>(rng.next_u64() % config.vocab_size);
  const bool peak_reset = reset_peak_memory();
  EncoderWorkspace workspace = make_workspace(encoder, batch, t);
  std::vector<float> out(rows * d);
  auto fast = [&] { forward_fast(encoder, ids.data(), batch, t, workspace, out.data()); };

  const std::size_t repeat = o.repeat, warmup = o.warmup;
  for (std::size_t i = 0; i < warmup; ++i)
    fast();
  std::vector<double> model_ms;
  for (std::size_t i = 0; i < repeat; ++i)
    model_ms.push_back(time_ms(fast));
  const std::size_t peak = status_bytes("VmHWM");

  // The bound: one layer's GEMM calls on each library, times the layers.
  std::vector<TimedGemm> gemms;
  double layer_flops = 0.0;
  const PackedEncoderLayer* first = encoder.layers.empty() ? nullptr : &encoder.layers.front();
  if (first != nullptr) {
    for (const GemmCall& g : gemm_calls(*first, t, batch)) {
      gemms.push_back(make_timed(g, first->head_size, rng));
      layer_flops += g.flops();
    }
  }
  const std::vector<GemmLibrary> libs = libraries();
  time_rounds({}, gemms, 1, std::max<std::size_t>(1, std::min<std::size_t>(repeat, 5)));
  Bounds bounds = bounds_of(gemms);
  for (double& b : bounds.ms)
    b *= static_cast<double>(layers);

  const double ms = median(model_ms), flops = layer_flops * static_cast<double>(layers);
  const std::size_t weights = packed_bytes(encoder);
  const std::size_t activations = workspace_bytes(workspace.layer) +
                                  sizeof(float) * (workspace.stream.size() + out.size()) +
                                  sizeof(std::int64_t) * ids.size();
  const std::size_t used = peak > baseline ? peak - baseline : 0;
  const double memory_ratio =
      static_cast<double>(used) / static_cast<double>(weights + activations);
  const std::string kernels(kernels_name(workspace.layer.kernels));

  if (o.format == "json") {
    nlohmann::ordered_json doc;
    doc["model"] = "encoder";
    doc["config"] = config_name;
    doc["layers"] = layers;
    doc["batch"] = batch;
    doc["seq"] = t;
    doc["d_model"] = d;
    doc["heads"] = h;
    doc["d_ff"] = f;
    doc["vocab"] = config.vocab_size;
    doc["norm"] = o.norm;
    doc["threads"] = threads;
    doc["runs"] = repeat;
    doc["warmup"] = warmup;
    put_times(doc, model_ms, flops, bounds);
    doc["peak_rss_bytes"] = peak;
    doc["baseline_rss_bytes"] = baseline;
    doc["peak_reset_after_building"] = peak_reset;
    doc["weights_bytes"] = weights;
    doc["activations_bytes"] = activations;
    doc["memory_ratio"] = memory_ratio;
    put_machine(doc, kernels);
    std::fputs((doc.dump(2) + "\n").c_str(), stdout);
    return kExitOk;
  }
  std::string text = fmt::format(
      "attn bench --model encoder: the book's TransformerEncoder from ids, {}-LN, {} layers\n",
      o.norm, layers);
  text += fmt::format("  sizes D={} H={} F={} V={}, hidden_act {} ({}); batch {}, seq {}\n", d, h,
                      f, config.vocab_size, config.hidden_act, config_name, batch, t);
  text += machine_lines(threads, kernels);
  text += fmt::format("  {} timed runs after {} warm-up; times are medians\n\n", repeat, warmup);
  text += fmt::format("  {:<34} {:>10.3f} ms  {:>7.1f} GFLOP/s  (min {:.3f}, max {:.3f})\n",
                      "forward (embeddings + layers)", ms, flops / (ms * 1e6),
                      *std::min_element(model_ms.begin(), model_ms.end()),
                      *std::max_element(model_ms.begin(), model_ms.end()));
  for (GemmLibrary library : libs) {
    const double b = bounds.ms[index_of(library)];
    text += fmt::format("  {:<34} {:>10.3f} ms  {:>7.1f} GFLOP/s{}\n",
                        fmt::format("sgemm bound, {}", library_name(library)), b, flops / (b * 1e6),
                        library == bounds.fastest ? "  (the bound)" : "");
  }
  text += fmt::format("  {:<34} {:>10.3f}     (the bound / the model's time)\n",
                      "fraction_of_bound", bounds.fastest_ms() / ms);
  text += fmt::format("  {:<34} {:>10.1f} MiB (resident, above the {:.1f} MiB before the model)\n",
                      "peak memory", mib(used), mib(baseline));
  text += fmt::format("  {:<34} {:>10.1f} MiB weights + {:.1f} MiB one layer's activations\n",
                      "what it must hold", mib(weights), mib(activations));
  text += fmt::format("  {:<34} {:>10.3f}     (peak / what it must hold)\n", "memory_ratio",
                      memory_ratio);
  text += fmt::format("\nGEMM flops counted as 2 m n k: {:.3f} GFLOP per forward.\n", flops / 1e9);
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
  set_threads(static_cast<int>(threads));
  apply_gemm_option(o);
  gemm_selection();  // chosen before the first step, so that no step pays for it
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
  if (o.format == "json") {
    nlohmann::ordered_json doc;
    doc["threads"] = threads;
    doc["runs"] = o.repeat;
    doc["warmup"] = o.warmup;
    put_machine(doc, "");
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
      "{}  {} timed steps after {} warm-up; times are medians\n\n",
      machine_lines(threads, ""), o.repeat, o.warmup);
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
      "time the fast path at BERT-base size (one layer, or --model encoder) against the GEMM "
      "libraries' bound");
  sub->add_option("--seq", o->seq,
                  "T, tokens (default 128; at most the config's max_position_embeddings)")
      ->check(size_validator())
      ->option_text("T");
  sub->add_option("--threads", o->threads, "threads of the one pool, 1 to 64 (default: all cores)")
      ->check(size_validator(64))
      ->option_text("N");
  sub->add_option("--config", o->config,
                  "a Hugging Face config.json (default: BERT-base's numbers)")
      ->option_text("FILE");
  add_memory_option(*sub);
  sub->add_option("--repeat", o->repeat,
                  "timed runs; the median is reported (default 20; 5 with --model encoder)")
      ->check(size_validator(1'000'000))
      ->option_text("N");
  sub->add_option("--warmup", o->warmup, "untimed runs first (default 3; 1 with --model encoder)")
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
  sub->add_option("--batch", o->batch,
                  "B: with --model encoder, sequences per forward; with --train, the BERT-base "
                  "layer's batch (default 1)")
      ->check(size_validator(4096))
      ->option_text("B");
  sub->add_option("--model", o->model,
                  "layer (default): one encoder layer; encoder: the whole encoder from ids "
                  "(BERT-base: 12 layers), with its peak memory")
      ->check(choice_validator("a model", {"layer", "encoder"}))
      ->option_text("layer|encoder");
  sub->add_option("--gemm", o->gemm,
                  "the large products' library: auto (default: oneDNN where its vectors are wider "
                  "than OpenBLAS's kernel's), measure (the faster on a probe), openblas or onednn")
      ->check(choice_validator("a GEMM library", {"auto", "measure", "openblas", "onednn"}))
      ->option_text("auto|measure|openblas|onednn");
  sub->callback([o, sub, &context] {
    const bool model = o->model == "encoder";
    if (!o->train && !model && sub->count("--batch") > 0)
      throw Error("bench",
                  "--batch sets the batch of --model encoder or of --train: add one of them")
          .about("batch");
    if (o->train && (sub->count("--config") > 0 || sub->count("--norm") > 0))
      throw Error("bench", "--train times its own two models: drop --config and --norm")
          .about(sub->count("--config") > 0 ? "config" : "norm");
    if (o->train && sub->count("--model") > 0)
      throw Error("bench", "--train times its own two models: drop --model").about("model");
    if (model && sub->count("--repeat") == 0) o->repeat = 5;  // a whole model is slow to repeat
    if (model && sub->count("--warmup") == 0) o->warmup = 1;
    context.exit_code = o->train ? run_bench_train(*o)
                        : model  ? run_bench_model(*o)
                                 : run_bench(*o);
  });
}

const Registration kRegistration{"bench", setup};

}  // namespace

}  // namespace attn::cli

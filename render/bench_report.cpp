#include "bench_report.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace attn::render {

namespace {

std::size_t index_of(GemmLibrary library) {
  return static_cast<std::size_t>(library);
}

double min_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}
double max_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

double mib(std::size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

std::string norm_word(NormPlacement norm) {
  return norm == NormPlacement::pre ? "pre" : "post";
}

// "oneDNN for products of 32768 multiply-adds and more ... (why)": how the GEMMs run.
std::string gemm_text(const GemmSelection& s) {
  std::string text = fmt::format("{} for products of {} multiply-adds and more, OpenBLAS below",
                                 library_name(s.large), kSmallProduct);
  if (!s.probe.empty()) {
    text += fmt::format(" ({})\n  probe: {} on {} thread{}: OpenBLAS {:.3f} ms, oneDNN {:.3f} ms{}",
                        s.source, s.probe, s.threads, s.threads == 1 ? "" : "s", s.openblas_ms,
                        s.onednn_ms, s.cache.empty() ? "" : "; kept in " + s.cache);
  } else if (s.source == "the kernels' widths") {
    text += fmt::format(" (by the kernels' widths: OpenBLAS's {}, oneDNN's {})", s.openblas_kernel,
                        s.onednn_isa);
  } else {
    text += fmt::format(" ({})", s.source);
  }
  return text;
}

nlohmann::ordered_json gemm_json(const GemmSelection& s) {
  return nlohmann::ordered_json::object({{"large_products", library_name(s.large)},
                                         {"small_product_limit", kSmallProduct},
                                         {"chosen_by", s.source},
                                         {"probe_openblas_ms", s.openblas_ms},
                                         {"probe_onednn_ms", s.onednn_ms},
                                         {"probe_threads", s.threads},
                                         {"probe_cache", s.cache},
                                         {"openblas_kernel", s.openblas_kernel},
                                         {"onednn_isa", s.onednn_isa}});
}

// The keys of a timed forward: its times, its GEMM flops and each library's bound.
void put_times(nlohmann::ordered_json& doc, const std::vector<double>& times, double flops,
               const Bounds& bounds) {
  const double ms = median(times);
  doc["ms_median"] = ms;
  doc["ms_min"] = min_of(times);
  doc["ms_max"] = max_of(times);
  doc["gflops"] = flops / (ms * 1e6);
  doc["gemm_flops"] = flops;
  doc["sgemm_bound_ms"] = bounds.fastest_ms();
  doc["fraction_of_bound"] = bounds.fastest_ms() / ms;
  doc["bound_library"] = library_name(bounds.fastest);
  for (GemmLibrary library : bench_libraries()) {
    doc[library == GemmLibrary::onednn ? "onednn_bound_ms" : "openblas_bound_ms"] =
        bounds.ms[index_of(library)];
  }
}

// The sizes and the run's keys: the layer's D, H and F, the norm, the threads and the runs.
void put_run(nlohmann::ordered_json& doc, const BenchRequest& r) {
  doc["d_model"] = r.config.hidden_size;
  doc["heads"] = r.config.num_attention_heads;
  doc["d_ff"] = r.config.intermediate_size;
  doc["norm"] = norm_word(r.norm);
  doc["threads"] = r.threads;
  doc["runs"] = r.repeat;
  doc["warmup"] = r.warmup;
}

// The machine's keys: the elementwise kernels (when given), the GEMMs, OPENBLAS_CORETYPE.
void put_machine(nlohmann::ordered_json& doc, std::string_view kernels) {
  if (!kernels.empty()) doc["kernels"] = kernels;
  doc["gemm"] = gemm_json(gemm_selection());
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  doc["openblas_coretype"] =
      coretype != nullptr ? nlohmann::ordered_json(coretype) : nlohmann::ordered_json();
}

// The lines every text report starts with: the pool, the GEMMs and OpenBLAS's kernel.
std::string machine_lines(int threads, std::string_view kernels) {
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::string text =
      fmt::format("  threads {} (one pool){}\n", threads,
                  kernels.empty() ? "" : fmt::format(", elementwise kernels {}", kernels));
  text += fmt::format("  GEMMs: {}\n", gemm_text(gemm_selection()));
  text += fmt::format("  OpenBLAS's kernel {} (OPENBLAS_CORETYPE {})\n", openblas_kernel(),
                      coretype != nullptr ? coretype : "unset");
  return text;
}

std::string shape_text(const GemmCall& g) {
  return fmt::format("({},{}) x ({},{}){}", g.m, g.k, g.k, g.n,
                     g.count > 1 ? fmt::format(" x {}", g.count) : "");
}

// A timed forward's line: its median, GFLOP/s, and the spread of its runs.
std::string timed_line(std::string_view label, const std::vector<double>& times, double flops) {
  const double ms = median(times);
  return fmt::format("  {:<36} {:>9.3f} ms  {:>7.1f} GFLOP/s  (min {:.3f}, max {:.3f})\n", label,
                     ms, flops / (ms * 1e6), min_of(times), max_of(times));
}

// One line per library: its sgemm bound, and which is the bound.
std::string bound_lines(const Bounds& bounds, double flops) {
  std::string text;
  for (GemmLibrary library : bench_libraries()) {
    const double ms = bounds.ms[index_of(library)];
    text += fmt::format("  {:<36} {:>9.3f} ms  {:>7.1f} GFLOP/s  (its GEMMs alone, summed){}\n",
                        fmt::format("sgemm bound, {}", library_name(library)), ms,
                        flops / (ms * 1e6), library == bounds.fastest ? ": the bound" : "");
  }
  return text;
}

// The lines under a report's title: the pool, the GEMMs, OpenBLAS's kernel and the runs.
std::string setup_lines(const BenchRequest& r, std::string_view kernels) {
  return machine_lines(r.threads, kernels) +
         fmt::format("  {} timed runs after {} warm-up; times are medians\n\n", r.repeat, r.warmup);
}

std::string json_document(const nlohmann::ordered_json& doc) {
  return doc.dump(2) + "\n";
}

}  // namespace

std::string layer_report(const LayerBench& b, const BenchRequest& r, std::string_view config_name,
                         BenchFormat format) {
  const EncoderConfig& c = r.config;
  const double ms = median(b.layer_ms), ref_ms = median(b.reference_ms);
  const double bound = b.bounds.fastest_ms();
  const std::string kernels(kernels_name(b.kernels));
  if (format == BenchFormat::json) {
    nlohmann::ordered_json doc;
    put_times(doc, b.layer_ms, b.flops, b.bounds);
    doc["seq"] = r.tokens;
    put_run(doc, r);
    doc["gelu"] = c.hidden_act;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const TimedGemm& g : b.gemms) {
      const double gm = median(g.ms[index_of(b.bounds.fastest)]);
      nlohmann::ordered_json item = {{"name", g.call.name},
                                     {"m", g.call.m},
                                     {"n", g.call.n},
                                     {"k", g.call.k},
                                     {"count", g.call.count},
                                     {"ms_median", gm},
                                     {"gflops", g.call.flops() / (gm * 1e6)}};
      for (GemmLibrary library : bench_libraries()) {
        item[library == GemmLibrary::onednn ? "onednn_ms" : "openblas_ms"] =
            median(g.ms[index_of(library)]);
      }
      list.push_back(item);
    }
    doc["gemms"] = list;
    doc["reference_ms"] = ref_ms;
    doc["reference_runs"] = b.reference_ms.size();
    doc["speedup"] = ref_ms / ms;
    doc["max_abs_diff"] = b.max_abs_diff;
    put_machine(doc, kernels);
    return json_document(doc);
  }

  std::string text;
  text += fmt::format("attn bench: the book's TransformerEncoderLayer, {}-LN, batch 1, seq {}\n",
                      norm_word(r.norm), r.tokens);
  text += fmt::format("  sizes D={} H={} F={}, hidden_act {} ({})\n", c.hidden_size,
                      c.num_attention_heads, c.intermediate_size, c.hidden_act, config_name);
  text += setup_lines(r, kernels);
  text += timed_line("forward_fast (the layer)", b.layer_ms, b.flops);
  text += bound_lines(b.bounds, b.flops);
  std::string header = fmt::format("    {:<8} {:<25}", "", "");
  for (GemmLibrary library : bench_libraries())
    header += fmt::format(" {:>20}", library_name(library));
  text += header + "\n";
  for (const TimedGemm& g : b.gemms) {
    std::string line = fmt::format("    {:<8} {:<25}", g.call.name, shape_text(g.call));
    for (GemmLibrary library : bench_libraries()) {
      const double gm = median(g.ms[index_of(library)]);
      line += fmt::format(" {:>7.3f} ms {:>5.0f} GF", gm, g.call.flops() / (gm * 1e6));
    }
    text += line + "\n";
  }
  text += fmt::format("  {:<36} {:>9.3f}     (the bound / the layer's time; 1: only GEMMs)\n",
                      "fraction_of_bound", bound / ms);
  text += fmt::format("  {:<36} {:>9.3f} ms  (median of {} runs)\n", "reference forward (readable)",
                      ref_ms, b.reference_ms.size());
  text += fmt::format("  {:<36} {:>9.1f} x\n", "speed-up over the reference", ref_ms / ms);
  text += fmt::format("  {:<36} {:>9.3g}\n", "max |fast - reference|", b.max_abs_diff);
  text += fmt::format("\nGEMM flops counted as 2 m n k: {:.3f} GFLOP per layer.\n", b.flops / 1e9);
  return text;
}

std::string model_report(const ModelBench& b, const BenchRequest& r, std::string_view config_name,
                         BenchFormat format) {
  const EncoderConfig& c = r.config;
  const double ms = median(b.model_ms);
  const std::size_t used = b.peak_bytes > b.baseline_bytes ? b.peak_bytes - b.baseline_bytes : 0;
  const std::string kernels(kernels_name(b.kernels));
  if (format == BenchFormat::json) {
    nlohmann::ordered_json doc;
    doc["model"] = r.bert ? "bert" : "encoder";
    doc["config"] = config_name;
    doc["layers"] = c.num_hidden_layers;
    doc["batch"] = r.batch;
    doc["seq"] = r.tokens;
    doc["vocab"] = c.vocab_size;
    if (r.bert) doc["token_types"] = "0 for the first half of each sequence, 1 for the second";
    put_run(doc, r);
    put_times(doc, b.model_ms, b.flops, b.bounds);
    doc["peak_rss_bytes"] = b.peak_bytes;
    doc["baseline_rss_bytes"] = b.baseline_bytes;
    doc["peak_reset_after_building"] = b.peak_reset;
    doc["weights_bytes"] = b.weights_bytes;
    doc["activations_bytes"] = b.activations_bytes;
    doc["memory_ratio"] = b.memory_ratio;
    put_machine(doc, kernels);
    return json_document(doc);
  }
  std::string text =
      r.bert ? fmt::format(
                   "attn bench --model bert: BertModel from ids and token types (0 for the "
                   "first half of each sequence, 1 for the second), without its pooler, "
                   "post-LN at eps {:g}, {} layers\n",
                   c.layer_norm_eps, c.num_hidden_layers)
             : fmt::format(
                   "attn bench --model encoder: the book's TransformerEncoder from ids, "
                   "{}-LN, {} layers\n",
                   norm_word(r.norm), c.num_hidden_layers);
  text += fmt::format("  sizes D={} H={} F={} V={}, hidden_act {} ({}); batch {}, seq {}\n",
                      c.hidden_size, c.num_attention_heads, c.intermediate_size, c.vocab_size,
                      c.hidden_act, config_name, r.batch, r.tokens);
  text += setup_lines(r, kernels);
  text += timed_line("forward (embeddings + layers)", b.model_ms, b.flops);
  text += bound_lines(b.bounds, b.flops);
  text += fmt::format("  {:<36} {:>9.3f}     (the bound / the model's time)\n", "fraction_of_bound",
                      b.bounds.fastest_ms() / ms);
  text += fmt::format("  {:<36} {:>9.1f} MiB (resident, above the {:.1f} MiB before the model)\n",
                      "peak memory", mib(used), mib(b.baseline_bytes));
  text += fmt::format("  {:<36} {:>9.1f} MiB weights + {:.1f} MiB one layer's activations\n",
                      "what it must hold", mib(b.weights_bytes), mib(b.activations_bytes));
  text += fmt::format("  {:<36} {:>9.3f}     (peak / what it must hold)\n", "memory_ratio",
                      b.memory_ratio);
  text +=
      fmt::format("\nGEMM flops counted as 2 m n k: {:.3f} GFLOP per forward.\n", b.flops / 1e9);
  return text;
}

std::string generate_report(const GenerateBench& b, const BenchRequest& r,
                            std::string_view config_name, BenchFormat format) {
  const EncoderConfig& c = r.config;
  const std::string kernels(kernels_name(b.kernels));
  const std::size_t used = b.peak_bytes > b.baseline_bytes ? b.peak_bytes - b.baseline_bytes : 0;
  const std::size_t held = b.weights_bytes + b.cache_bytes + b.workspace_bytes;
  const double tps = b.tokens_per_second(), bound = b.bound_tokens_per_second();
  if (format == BenchFormat::json) {
    nlohmann::ordered_json doc;
    doc["model"] = "gpt2";
    doc["config"] = config_name;
    doc["layers"] = c.num_hidden_layers;
    doc["vocab"] = c.vocab_size;
    doc["prompt_tokens"] = r.tokens;
    doc["new_tokens"] = r.new_tokens;
    put_run(doc, r);
    doc["prefill_ms"] = median(b.prefill_ms);
    doc["token_ms"] = median(b.token_ms);
    doc["tokens_per_second"] = tps;
    doc["bandwidth_gb_per_s"] = b.bandwidth_bytes_per_s / 1e9;
    doc["bytes_per_token"] = b.bytes_per_token;
    doc["bound_tokens_per_second"] = bound;
    doc["fraction_of_bound"] = bound > 0 ? tps / bound : 0.0;
    doc["weights_bytes"] = b.weights_bytes;
    doc["cache_bytes"] = b.cache_bytes;
    doc["peak_rss_bytes"] = b.peak_bytes;
    doc["baseline_rss_bytes"] = b.baseline_bytes;
    doc["memory_ratio"] = static_cast<double>(used) / static_cast<double>(held);
    put_machine(doc, kernels);
    return json_document(doc);
  }
  std::string text = fmt::format(
      "attn bench --model gpt2: GPT-2 generating at random weights, a prompt of {} tokens at "
      "once, then {} tokens one at a time against the key/value cache\n",
      r.tokens, r.new_tokens);
  text += fmt::format("  sizes L={} D={} H={} F={} V={} P={} ({})\n", c.num_hidden_layers,
                      c.hidden_size, c.num_attention_heads, c.intermediate_size, c.vocab_size,
                      c.max_position_embeddings, config_name);
  text += setup_lines(r, kernels);
  text += fmt::format("  {:<36} {:>9.3f} ms  (the prompt's pass, min {:.3f})\n",
                      "time to the first token", median(b.prefill_ms), min_of(b.prefill_ms));
  text += fmt::format("  {:<36} {:>9.3f} ms  (min {:.3f}, max {:.3f})\n", "a new token",
                      median(b.token_ms), min_of(b.token_ms), max_of(b.token_ms));
  text += fmt::format("  {:<36} {:>9.2f}\n", "tokens per second", tps);
  text += fmt::format("  {:<36} {:>9.2f} GB/s (a {} MiB buffer read once, best of 5)\n",
                      "memory bandwidth", b.bandwidth_bytes_per_s / 1e9, kBandwidthBytes >> 20);
  text += fmt::format("  {:<36} {:>9.2f}     (bandwidth / {:.1f} MiB read per token)\n",
                      "bound, tokens per second", bound, mib(b.bytes_per_token));
  text += fmt::format("  {:<36} {:>9.3f}     (tokens per second / the bound)\n",
                      "fraction_of_bound", bound > 0 ? tps / bound : 0.0);
  text += fmt::format("  {:<36} {:>9.1f} MiB (resident, above the {:.1f} MiB before)\n",
                      "peak memory", mib(used), mib(b.baseline_bytes));
  text += fmt::format("  {:<36} {:>9.1f} MiB weights + {:.1f} MiB cache + {:.1f} MiB buffers\n",
                      "what it must hold", mib(b.weights_bytes), mib(b.cache_bytes),
                      mib(b.workspace_bytes));
  text += fmt::format("  {:<36} {:>9.3f}     (peak / what it must hold)\n", "memory_ratio",
                      static_cast<double>(used) / static_cast<double>(held));
  return text;
}

std::string heads_report(const HeadsBench& b, const BenchRequest& r, std::string_view config_name,
                         BenchFormat format) {
  const EncoderConfig& c = r.config;
  const double scan = median(b.scan_ms), forward = median(b.forward_ms),
               packed = median(b.packed_ms);
  if (format == BenchFormat::json) {
    nlohmann::ordered_json doc;
    doc["model"] = "heads";
    doc["config"] = config_name;
    doc["layers"] = b.layers;
    doc["heads"] = b.heads;
    doc["patterns"] = b.patterns;
    doc["sequences"] = b.sequences;
    doc["tokens"] = r.tokens;
    put_run(doc, r);
    doc["scan_ms"] = scan;
    doc["forward_ms"] = forward;
    doc["packed_forward_ms"] = packed;
    doc["scan_over_forward"] = scan / forward;
    doc["scan_over_packed_forward"] = scan / packed;
    put_machine(doc, std::string(kernels_name(best_fast_kernels())));
    return json_document(doc);
  }
  std::string text = fmt::format(
      "attn bench --model heads: attn heads' scan of a GPT-2 at random weights, {} sequences of "
      "{} repeated random tokens, {} patterns on {} x {} heads\n",
      b.sequences, r.tokens, b.patterns, b.layers, b.heads);
  text += fmt::format("  sizes L={} D={} H={} F={} V={} P={} ({})\n", c.num_hidden_layers,
                      c.hidden_size, c.num_attention_heads, c.intermediate_size, c.vocab_size,
                      c.max_position_embeddings, config_name);
  text += setup_lines(r, std::string(kernels_name(best_fast_kernels())));
  text +=
      fmt::format("  {:<36} {:>9.1f} ms  (min {:.1f}, max {:.1f})\n",
                  "the scan (forward passes, scoring)", scan, min_of(b.scan_ms), max_of(b.scan_ms));
  text += fmt::format("  {:<36} {:>9.1f} ms  (min {:.1f}; the readable forward, weights kept)\n",
                      "its forward passes alone", forward, min_of(b.forward_ms));
  text += fmt::format("  {:<36} {:>9.1f} ms  (min {:.1f}; the packed prefill, no weights kept)\n",
                      "attn's fastest forward", packed, min_of(b.packed_ms));
  text += fmt::format("  {:<36} {:>9.3f}     (the scan / its forward passes)\n",
                      "scan_over_forward", scan / forward);
  text += fmt::format("  {:<36} {:>9.3f}     (the scan / attn's fastest forward)\n",
                      "scan_over_packed_forward", scan / packed);
  return text;
}

std::string train_report(const TrainBench& b, const BenchRequest& r, BenchFormat format) {
  if (format == BenchFormat::json) {
    nlohmann::ordered_json doc;
    doc["threads"] = r.threads;
    doc["runs"] = r.repeat;
    doc["warmup"] = r.warmup;
    put_machine(doc, "");
    nlohmann::ordered_json models = nlohmann::ordered_json::array();
    for (const TrainBench::Run& run : b.runs) {
      const TrainConfig& c = run.config;
      const double ms = median(run.ms);
      models.push_back({{"name", run.name},
                        {"layers", c.layers},
                        {"d_model", c.d_model},
                        {"heads", c.heads},
                        {"d_ff", c.d_ff},
                        {"batch", c.batch},
                        {"tokens", c.sizes.tokens},
                        {"vocab", c.sizes.vocab},
                        {"ms_median", ms},
                        {"ms_min", min_of(run.ms)},
                        {"ms_max", max_of(run.ms)},
                        {"steps_per_second", 1000.0 / ms}});
      if (run.bounds) {
        nlohmann::ordered_json bound;
        for (GemmLibrary library : bench_libraries())
          bound[std::string(library_name(library))] =
              run.bounds->ms[static_cast<std::size_t>(library)];
        models.back()["gemm_ms"] = bound;
        models.back()["gemm_bound_steps_per_second"] = 1000.0 / run.bounds->fastest_ms();
        models.back()["gemm_gflops"] = run.gemm_flops / 1e9;
      }
    }
    doc["models"] = models;
    return json_document(doc);
  }
  std::string text = fmt::format(
      "attn bench --train: training steps (a batch, forward, cross-entropy, backward, AdamW)\n"
      "{}  {} timed steps after {} warm-up; times are medians\n\n",
      machine_lines(r.threads, ""), r.repeat, r.warmup);
  for (const TrainBench::Run& run : b.runs) {
    const TrainConfig& c = run.config;
    const double ms = median(run.ms);
    text += fmt::format("  {:<22} L={} D={} H={} F={}, batch {} of {} tokens\n", run.name, c.layers,
                        c.d_model, c.heads, c.d_ff, c.batch, c.sizes.tokens);
    text += fmt::format("  {:<22} {:>9.3f} ms/step  {:>8.1f} steps/s  (min {:.3f}, max {:.3f})\n",
                        "", ms, 1000.0 / ms, min_of(run.ms), max_of(run.ms));
    if (run.bounds) {
      std::string each;
      for (GemmLibrary library : bench_libraries())
        each += fmt::format("{}{} {:.3f} ms", each.empty() ? "" : ", ", library_name(library),
                            run.bounds->ms[static_cast<std::size_t>(library)]);
      text += fmt::format(
          "  {:<22} the step's {:.2f} GFLOP of matrix products alone: {}; no step beats {:.1f} "
          "steps/s\n",
          "", run.gemm_flops / 1e9, each, 1000.0 / run.bounds->fastest_ms());
    }
  }
  text += "\nPyTorch on the same models: bench/train_torch.py (docs/benchmark.md, \"Training\").\n";
  return text;
}

}  // namespace attn::render

// The measurements of `attn bench`: the packed encoder (one layer, or the whole encoder or BERT
// from ids) and training steps, each timed beside the "sgemm bound" of every GEMM library this build has:
// the summed medians of exactly the products the forward makes, on buffers of the same shapes,
// strides and per-head offsets, timed alone. The fastest library's is the bound. Peak memory is
// the kernel's own count (/proc/self/status). Nothing here prints, and nothing asserts a time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "base/budget.hpp"
#include "fast/encoder_fast.hpp"
#include "io/config.hpp"
#include "kernels/gemm.hpp"
#include "train/trainer.hpp"

namespace attn {

struct BenchRequest {
  EncoderConfig config;  // BERT-base's numbers unless a config.json gives others
  std::size_t tokens = 128;
  std::size_t batch = 1;  // the encoder's sequences; the BERT-base layer's batch when training
  NormPlacement norm = NormPlacement::pre;
  // The whole model from ids is BERT (BertModel without its pooler: token types, post-LN, every
  // LayerNorm at config.layer_norm_eps), the ids a sentence pair: token type 0 for the first half
  // of each sequence, 1 for the second. Otherwise the book's encoder at `norm`.
  bool bert = false;
  // GPT-2 generation (bench_generate): `tokens` is the prompt, then `new_tokens` one at a time.
  bool gpt2 = false;
  std::size_t new_tokens = 32;
  std::size_t repeat = 20, warmup = 3;
  int threads = 1;
};

double median(std::vector<double> times);

// One GEMM shape of a forward, and its times on each library (indexed by GemmLibrary).
struct TimedGemm {
  GemmCall call;
  std::vector<double> ms[2];
};
// This build's libraries, OpenBLAS first.
std::vector<GemmLibrary> bench_libraries();

// Each library's bound (the summed medians of its calls), and the fastest.
struct Bounds {
  double ms[2] = {0.0, 0.0};
  GemmLibrary fastest = GemmLibrary::openblas;
  double fastest_ms() const { return ms[static_cast<std::size_t>(fastest)]; }
};

// One encoder layer: the packed layer's runs, interleaved with the large products' library's
// calls so that a slow patch of the machine hits both, then every other library's calls alone with
// the pool lent to it; and the readable forward() a few times, with the largest difference.
struct LayerBench {
  std::vector<double> layer_ms;
  std::vector<TimedGemm> gemms;
  Bounds bounds;
  double flops = 0.0;  // the GEMMs', 2 m n k each
  std::vector<double> reference_ms;
  double max_abs_diff = 0.0;
  FastKernels kernels = FastKernels::scalar;
};
// What bench_layer holds, driven by T (the only size it takes).
MemoryPlan plan_layer_bench(const BenchRequest& request);
LayerBench bench_layer(const BenchRequest& request);

// The whole encoder (or BERT) from ids: its runs, one layer's bound times the layers, and the
// resident memory above what the process held before the model was built.
struct ModelBench {
  std::vector<double> model_ms;
  Bounds bounds;
  double flops = 0.0;
  std::size_t peak_bytes = 0, baseline_bytes = 0;
  bool peak_reset = false;  // whether the peak was reset after building (/proc/self/clear_refs)
  std::size_t weights_bytes = 0, activations_bytes = 0;
  double memory_ratio = 0.0;  // (peak - baseline) / (weights + one layer's activations)
  FastKernels kernels = FastKernels::scalar;
};
// What bench_model holds, driven by B and T.
MemoryPlan plan_model_bench(const BenchRequest& request);
ModelBench bench_model(const BenchRequest& request);

// GPT-2 generating (core/fast/gpt2_fast.hpp) at random weights: the prompt of T tokens at once
// (the time to the first token), then each new token against the cache, `repeat` times over; the
// machine's memory bandwidth in the same run (kBandwidthBytes, far beyond the caches, summed once in
// order on the pool's threads, apart from the generator's kernel), and from it the bound of generating, each
// token reading the weights once (the tables but wpe: one row of it); the resident peak against
// the weights plus the cache.
inline constexpr std::size_t kBandwidthBytes = std::size_t{256} << 20;
struct GenerateBench {
  std::vector<double> prefill_ms;  // per run
  std::vector<double> token_ms;    // every new token but the first of every run
  double bandwidth_bytes_per_s = 0.0;
  std::size_t bytes_per_token = 0;  // what one token reads: the weights but wpe's other rows
  std::size_t weights_bytes = 0, cache_bytes = 0, workspace_bytes = 0;
  std::size_t peak_bytes = 0, baseline_bytes = 0;
  bool peak_reset = false;
  FastKernels kernels = FastKernels::scalar;
  double tokens_per_second() const;  // 1000 / the median token's ms
  double bound_tokens_per_second() const;
};
MemoryPlan plan_generate_bench(const BenchRequest& request);
GenerateBench bench_generate(const BenchRequest& request);

// `attn heads` on a GPT-2 of the request's sizes, random weights (bench --model heads): the scan
// of `request.batch` sequences of T repeated random tokens (head_scan.hpp: the forward passes and
// the scoring of every pattern), beside the forward passes it needs alone (the readable forward,
// attention weights kept, in the scan's batches) and attn's fastest forward of the same tokens
// (the packed model's prefill, one sequence at a time, as generation runs it).
struct HeadsBench {
  std::vector<double> scan_ms, forward_ms, packed_ms;  // per run
  std::size_t sequences = 0, layers = 0, heads = 0, patterns = 0;
};
MemoryPlan plan_heads_bench(const BenchRequest& request);
HeadsBench bench_heads(const BenchRequest& request);

// Training steps (a batch, forward, the loss, backward and AdamW's update) of three models: attn
// train's default and one BERT-base-size layer of `request.batch` sequences of T tokens (Trainer),
// and a GPT at nanoGPT's CPU configuration, 4 x 128 wide, 12 windows of 64 tokens of a vocabulary
// of 80 (train/gpt_run.hpp).
struct TrainBench {
  struct Run {
    std::string name;
    TrainConfig config;
    std::vector<double> ms;
    // The GPT's: the matrix products of one step (forward and backward) timed alone on each
    // library, interleaved with the steps: no step can be faster than the fastest's sum.
    std::optional<Bounds> bounds;
    double gemm_flops = 0.0;  // theirs, 2 m n k each
  };
  std::vector<Run> runs;
};
TrainBench bench_train(const BenchRequest& request);

}  // namespace attn

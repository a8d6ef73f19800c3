// attn's own parallel loops (the attention heads, LayerNorm's rows, GELU's parts) on the one pool
// of kernels/gemm.hpp. Only files compiled with -fopenmp (a build with oneDNN, whose pool is
// OpenMP's) run them on several threads; elsewhere ATTN_PARALLEL_FOR is a plain loop.
#pragma once

#include <cstddef>

#include "kernels/gemm.hpp"

#if defined(_OPENMP)
#include <omp.h>
// The loop that follows runs on the pool's `threads` threads (a variable of that name in scope),
// or on this thread alone when there is one.
#define ATTN_PARALLEL_FOR \
  _Pragma("omp parallel for num_threads(threads) if (threads > 1) schedule(static)")
#else
#define ATTN_PARALLEL_FOR
#endif

namespace attn {

// Below this many elements a pass stays on one thread.
inline constexpr std::size_t kParallelElements = std::size_t{1} << 16;

// The threads a loop of `elements` elements runs on: the pool's (own_loop_threads) when it is
// large enough, else 1.
inline int loop_threads(std::size_t elements) {
  return elements >= kParallelElements ? own_loop_threads() : 1;
}

// The index of the calling thread in the pool's parallel loop (0 outside one).
inline int thread_index() {
#if defined(_OPENMP)
  return omp_get_thread_num();
#else
  return 0;
#endif
}

}  // namespace attn

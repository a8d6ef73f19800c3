// The position-wise feed-forward block, the three ways the notebooks write it. Legend: B batch,
// T tokens, D model width, F feed-forward width (intermediate_size).
//
//   book       seed 003 (the book) FeedForward(config): linear_1 = Linear(D, F),
//              linear_2 = Linear(F, D), gelu = GELU(), dropout; forward linear_1 -> gelu ->
//              linear_2 -> dropout.
//   relu       seed 001 FeedForwardNeuralNetwork(d_model, dff, dropout): layer1 = Linear(D, F),
//              layer2 = Linear(F, D), dropout, relu; forward layer1 -> relu -> dropout -> layer2.
//   gelu-last  seed 000 FeedForward(config): net = Sequential(Linear(D, F), Linear(F, D), GELU(),
//              Dropout): the GELU after the second Linear, a bug (the two Linears collapse).
//
// Dropout is the identity at inference, so no variant applies it here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/budget.hpp"
#include "base/random.hpp"
#include "base/tensor.hpp"
#include "kernels/rows.hpp"
#include "linear.hpp"
#include "module.hpp"
#include "trace.hpp"

namespace attn {

enum class FeedForwardVariant { book, relu, gelu_last };
std::string_view variant_name(FeedForwardVariant variant);  // "book", "relu", "gelu-last"
// The variant called `name`, or nullopt.
std::optional<FeedForwardVariant> feed_forward_variant(std::string_view name);

// GELU (GeluApproximation, kernels/torch_order.hpp):
//   nn.GELU(approximate='none')  x Φ(x) = 0.5 x (1 + erf(x / √2))
//   approximate='tanh'           0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))
// The formulas in double precision, rounded once: the reference gelu() is held to.
float gelu_reference(float x, GeluApproximation approximate);
// GELU as torch 1.13 computes it on an x86-64 CPU with AVX2, bit for bit (kernels/rows.hpp:
// oneDNN's erf form on tensors of 2 or more elements, libm's on one; the tanh form with SLEEF's
// tanh, the last n % 16 elements with libm's).
Tensor3 gelu(const Tensor3& x, GeluApproximation approximate);
// max(x, 0) as torch.relu: NaN stays NaN.
Tensor3 relu(const Tensor3& x);
// dY ⊙ GELU'(x). The erf form: Φ(x) + x φ(x) in float as oneDNN computes it
// (gelu_erf_slope_onednn, 8 lanes at a time on AVX2 with the same bits), torch's own path.
// The tanh form, in double and rounded once: 0.5 (1 + tanh u) + 0.5 x (1 - tanh² u) √(2/π)
// (1 + 3·0.044715 x²) with u its inner argument.
Tensor3 gelu_backward(const Tensor3& x, const Tensor3& d_output, GeluApproximation approximate);
// dY where x > 0, else 0 (torch's threshold_backward: the gradient at x = 0 is 0).
Tensor3 relu_backward(const Tensor3& x, const Tensor3& d_output);

struct FeedForwardSteps {
  Tensor3 hidden;     // (B,T,F) the first Linear
  Tensor3 activated;  // (B,T,F) GELU or ReLU of hidden; gelu-last: hidden itself (nothing between)
  Tensor3 projected;  // (B,T,D) the second Linear
  Tensor3 output;     // (B,T,D) book, relu: projected; gelu-last: GELU(projected)
  // Train mode: each element's dropout scale, 0 or 1/(1-p), where the variant's nn.Dropout sits
  // (book, gelu-last: on the output; relu: on the activation, seed 001's layer1 -> relu -> dropout
  // -> layer2). Empty in eval mode, where dropout is the identity.
  Tensor3 dropout_scale;
};

// Every variant's weights in one struct: the two Linears under the variant's names.
struct FeedForward {
  FeedForwardVariant variant = FeedForwardVariant::book;
  GeluApproximation approximate = GeluApproximation::none;  // the GELU's (book, gelu-last)
  Linear linear_1;       // Linear(D, F): book linear_1, seed 001 layer1, seed 000 net.0
  Linear linear_2;       // Linear(F, D): book linear_2, seed 001 layer2, seed 000 net.1
  float dropout = 0.0f;  // p of its nn.Dropout, used in train mode only
};

// PyTorch's default initialisation, in registration order (the first Linear, then the second).
FeedForward init_feed_forward(Rng& rng, FeedForwardVariant variant, std::size_t d_model,
                              std::size_t d_ff,
                              GeluApproximation approximate = GeluApproximation::none);
// The notebook's module, children in registration order (seed 003 registers linear_1, linear_2,
// gelu, dropout). Throws attn::Error for a size of 0.
Module describe_feed_forward(FeedForwardVariant variant, std::size_t d_model, std::size_t d_ff,
                             std::string name = "");
void visit_parameters(FeedForward& layer, const ParameterVisitor& visit);
// x (B,T,D) -> the steps, in eval mode (dropout is the identity); throws attn::Error when x's
// width is not the layer's D.
FeedForwardSteps forward(const FeedForward& layer, const Tensor3& x);
// Train mode: dropout with p = layer.dropout, its mask drawn from `dropout` (core/dropout.hpp), or
// given as the scales (B,T,D), (B,T,F) for relu.
FeedForwardSteps forward(const FeedForward& layer, const Tensor3& x, Rng& dropout);
FeedForwardSteps forward(const FeedForward& layer, const Tensor3& x, const Tensor3& dropout_scale);
// The backward of forward(layer, x) from its steps (through the dropout mask they keep, in train
// mode): returns dX and adds both Linears' gradients into `grad`.
Tensor3 backward(const FeedForward& layer, const Tensor3& x, const FeedForwardSteps& steps,
                 const Tensor3& d_output, FeedForward& grad);
// FeedForwardSteps' tensors on x (B,T,D), for a memory budget (core/base/budget.hpp).
MemoryPlan plan_feed_forward(std::size_t batch, std::size_t tokens, std::size_t d_model,
                             std::size_t d_ff);

// torchinfo's rows for the variant on an input of `shape` (B,T,D), in forward-call order.
std::vector<LayerInfo> trace_feed_forward(FeedForwardVariant variant, std::size_t d_model,
                                          std::size_t d_ff, const Shape& shape);
// Adds the rows of one call of `block` (a describe_feed_forward tree) to `trace`.
void trace_feed_forward(Trace& trace, const Module& block, const Shape& shape);

// Two Linears in a row are one: second(first(x)) = x Wᵀ + b with W = W2 W1 (out2, in1) and
// b = W2 b1 + b2, summed in double and rounded once.
Linear compose_linears(const Linear& first, const Linear& second);

}  // namespace attn

// Lesson 06's model for `attn summary` and `attn backward --model`: seed 001's PositionalEncoding,
// or the book's learned table.
#include "06-positional-encoding/positional_encoding_models.hpp"

#include "06-positional-encoding/positional_encoding_lesson.hpp"
#include "embedding.hpp"
#include "models.hpp"
#include "positional_encoding.hpp"

namespace attn::lessons {

namespace {

// A module with no parameters (seed 001's PositionalEncoding).
struct NoParameters {};
void visit_parameters(NoParameters&, const ParameterVisitor&) {}

}  // namespace

ModelDescription positional_encoding_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t positions = or_default(r.max_positions, kDefaultMaxPositions);
  const std::string kind = r.kind.empty() ? PositionalEncodingLessonOptions{}.kind : r.kind;
  if (r.seq > positions) {
    throw Error(
        ErrorKind::bad_size, "describe",
        fmt::format(
            "T = {} is more than the {} positions of the table: give <max_positions> {} or more",
            r.seq, positions, r.seq))
        .about("max_positions")
        .driven_by({"T", "P"});
  }
  if (kind == "sinusoidal") {
    const Shape x = hidden_states(r, width);
    return {describe_sinusoidal_encoding(), trace_sinusoidal_encoding(x), {{x, kFloat32}}};
  }
  if (kind != "learned") {
    throw Error(ErrorKind::bad_value, "describe",
                fmt::format("'{}' is not a kind of encoding: use sinusoidal or learned", kind))
        .about("kind");
  }
  const Shape ids = {1, r.seq};  // position_ids = torch.arange(T).unsqueeze(0)
  return {describe_position_embedding(positions, width),
          trace_position_embedding(positions, width, ids),
          {{ids, kInt64}}};
}

LessonRun positional_encoding_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, LessonOptions{}.d_model);
  const std::size_t positions = or_default(r.max_positions, kDefaultMaxPositions);
  const std::string kind = r.kind.empty() ? PositionalEncodingLessonOptions{}.kind : r.kind;
  Rng rng(g.seed);
  if (kind == "learned") {  // the book's nn.Embedding(P, D) on position_ids = arange(T)[None]
    if (g.input)
      throw Error(ErrorKind::bad_value, "backward",
                  "the learned table reads the positions 0..T-1 itself: drop --input "
                  "and give --seq T")
          .about("input");
    if (r.seq > positions)
      throw Error(ErrorKind::bad_size, "backward",
                  fmt::format("T = {} is more than the {} positions of the table: give "
                              "--max-positions {} or more",
                              r.seq, positions, r.seq))
          .about("seq");
    Ids ids({1, r.seq});
    for (std::size_t t = 0; t < r.seq; ++t)
      ids(0, t) = static_cast<std::int64_t>(t);
    Embedding layer = init_embedding(rng, positions, width);
    return table_gradients("positional-encoding", describe_position_embedding(positions, width),
                           std::move(layer), ids, g, rng);
  }
  if (kind != "sinusoidal")
    throw Error(ErrorKind::bad_value, "describe",
                fmt::format("'{}' is not a kind of encoding: use sinusoidal or learned", kind))
        .about("kind");
  // Seed 001's x + pe[:, :T]: no parameters, and dL/dx = G.
  const Tensor3 x = float_input(r, g, rng, width);
  if (x.shape(1) > positions)
    throw Error(ErrorKind::bad_size, "backward",
                fmt::format("T = {} is more than the table's {} positions: give --max-positions {} "
                            "or more",
                            x.shape(1), positions, x.shape(1)))
        .about("max_positions");
  const SinusoidalTable table = sinusoidal_table(positions, width);
  Tensor3 y = x;
  for (std::size_t b = 0; b < x.shape(0); ++b)
    for (std::size_t t = 0; t < x.shape(1); ++t)
      for (std::size_t d = 0; d < width; ++d)
        y(b, t, d) += table.pe(t, d);
  const Tensor3 dy = gradient_of(y, g, rng);
  NoParameters none;
  return gradient_run("positional-encoding", g, to_array(x), y, dy, &dy, none);
}

}  // namespace attn::lessons

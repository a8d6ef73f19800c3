// Lesson 00's model for `attn summary` and `attn backward --model`: nn.Embedding(V, D) on ids
// (B, T).
#include "00-tokens/tokens_models.hpp"

#include "00-tokens/tokens_lesson.hpp"
#include "embedding.hpp"
#include "io/shipped.hpp"
#include "models.hpp"

namespace attn::lessons {

ModelDescription embedding_model(const ModelRequest& r) {
  const std::size_t width = or_default(r.d_model, TokensLessonOptions{}.d_model);
  const std::size_t rows = or_default(r.vocab_size, lesson_vocabulary().size());
  const Shape ids = {r.batch, r.seq};
  return {describe_embedding(rows, width), trace_embedding(rows, width, ids), {{ids, kInt64}}};
}

LessonRun embedding_gradients(const ModelRequest& r, const GradientRequest& g) {
  const std::size_t width = or_default(r.d_model, TokensLessonOptions{}.d_model);
  const std::size_t rows = or_default(r.vocab_size, lesson_vocabulary().size());
  Rng rng(g.seed);
  Embedding layer = init_embedding(rng, rows, width);
  const Ids ids = id_input(r, g, rng, rows);
  return table_gradients("embedding", describe_embedding(rows, width), std::move(layer), ids, g,
                         rng);
}

}  // namespace attn::lessons

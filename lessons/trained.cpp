#include "trained.hpp"

namespace attn::lessons {

TrainedAttention trained_attention(const TokenClassifier& model, const TrainConfig& config,
                                   const Ids& ids, std::size_t layer,
                                   const std::string& checkpoint) {
  TrainedAttention a;
  a.x = attention_input(model, ids, layer);
  a.attention = model.encoder.layers[layer].attention;
  const TaskInfo& info = task_info(std::get<Task>(config.task));
  a.source = {checkpoint, std::string(info.name), std::string(info.pattern), layer, {}};
  for (std::int64_t id : ids)
    a.source.tokens.push_back(token_text(id));
  return a;
}

}  // namespace attn::lessons

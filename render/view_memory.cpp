// Legend: L layers, H heads, T tokens, hs head size, D model width.
#include "view_memory.hpp"

#include <algorithm>

#include "module_size.hpp"

namespace attn::render {

namespace {
// An exported page writes each number as JSON text (about 10 characters), held as the JSON
// document and the page; a picture's canvas holds about as much per weight drawn.
constexpr std::size_t kExportBytesPerNumber = 24;
}  // namespace

MemoryPlan plan_view(std::size_t layers, std::size_t heads, std::size_t queries, std::size_t keys,
                     std::size_t head_size, const std::string& export_path) {
  MemoryPlan plan = {
      {"the view's weights", {layers, heads, queries, keys}, "L H T T", 4, Held::kept},
      {"the view's queries and keys",
       {layers, heads, queries + keys, head_size},
       "L H T hs",
       4,
       Held::kept}};
  if (!export_path.empty())
    plan.push_back({"the exported page or picture",
                    {layers, heads, queries, keys + 2 * head_size},
                    "L H T T/hs",
                    kExportBytesPerNumber,
                    Held::kept});
  return plan;
}

MemoryPlan plan_encoder_view(const EncoderConfig& config, std::size_t tokens,
                             std::size_t weights_file_bytes, const std::string& export_path) {
  const std::size_t layers = config.num_hidden_layers, heads = config.num_attention_heads;
  const ModuleSize model = encoder_size(config, true);  // refuses more than 2^63-1 parameters
  const ModuleSize layer = encoder_layer_size(config, std::to_string(layers - 1));
  MemoryPlan plan = {planned_tree("the module tree", layer, layers + 1, "L "),
                     planned_weights("the weights", model, 1, " L/D/F/V", Held::kept)};
  if (weights_file_bytes > 0)
    plan.push_back({"the weights read from the file", {weights_file_bytes}, ""});
  append(plan, plan_embeddings(config, 1, tokens));
  for (std::size_t i = 0; i < layers; ++i)
    append(plan, plan_encoder_layer_tape(config, 1, tokens));
  append(plan, plan_multi_head_temporaries(MultiHeadVariant::book, 1, tokens, config.hidden_size,
                                           heads, false));
  append(plan, plan_view(layers, heads, tokens, tokens,
                         config.hidden_size / std::max<std::size_t>(heads, 1), export_path));
  return plan;
}

}  // namespace attn::render

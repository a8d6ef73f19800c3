// attn bench's reports: the measurements of core/fast/bench.hpp as text for a terminal, or as
// one JSON document. Times are medians, with the minimum and the maximum beside them.
#pragma once

#include <string>
#include <string_view>

#include "fast/bench.hpp"

namespace attn::render {

enum class BenchFormat { text, json };

// One encoder layer: its time, each library's bound and the products one by one, the readable
// reference. `config_name` says where the sizes come from ("BERT-base", a config file).
std::string layer_report(const LayerBench& bench, const BenchRequest& request,
                         std::string_view config_name, BenchFormat format);
// The whole encoder (or BERT) from ids: its time, the bounds, the peak memory against what it must
// hold.
std::string model_report(const ModelBench& bench, const BenchRequest& request,
                         std::string_view config_name, BenchFormat format);
// GPT-2 generating: the time to the first token, tokens per second against the bandwidth's bound.
std::string generate_report(const GenerateBench& bench, const BenchRequest& request,
                            std::string_view config_name, BenchFormat format);
// attn heads' scan of a GPT-2: its time beside the forward passes it needs and attn's fastest
// forward of the same tokens, and their ratios.
std::string heads_report(const HeadsBench& bench, const BenchRequest& request,
                         std::string_view config_name, BenchFormat format);
// Training steps of attn train's default model and a BERT-base layer.
std::string train_report(const TrainBench& bench, const BenchRequest& request, BenchFormat format);

}  // namespace attn::render

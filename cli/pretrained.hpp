// --pretrained DIR|NAME: a Hugging Face model folder (core/io/pretrained.hpp) on the commands that
// run a real model. A folder is opened and its text tokenized before anything large is read, so
// that a command checks its memory plan (the weights in float32 and its own run) first.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/budget.hpp"
#include "bert.hpp"
#include "fast/gpt2_fast.hpp"
#include "gpt2.hpp"
#include "io/bpe.hpp"
#include "io/pretrained.hpp"
#include "lesson_io.hpp"

namespace attn::cli {

// Adds --pretrained to `sub`, an input folder (never written).
CLI::Option* add_pretrained_option(CLI::App& sub, std::string& path);

// The folder opened and checked, no tensor read: its model_type says which model reads it.
// Errors are about "pretrained".
PretrainedFolder open_folder(const std::string& name);
bool is_gpt2(const PretrainedFolder& folder);

// A BERT folder, opened: its config and tokenizer read, its tensors not yet.
struct PretrainedBert {
  PretrainedFolder folder;
  BertConfig config;
  PretrainedTokenizer tokenizer;
};
// Errors are about "pretrained". Without `tokenizer`, the tokenizer's files are not read.
PretrainedBert open_bert(const std::string& name, bool tokenizer = true);
PretrainedBert open_bert(PretrainedFolder folder, bool tokenizer = true);

// A GPT-2 folder, opened: its config and tokenizer read (vocab.json and merges.txt, or
// tokenizer.json), its tensors not yet.
struct PretrainedGpt2 {
  PretrainedFolder folder;
  Gpt2Config config;
  Gpt2Heads heads = Gpt2Heads::lm_head;
  BpeTokenizer tokenizer;
};
PretrainedGpt2 open_gpt2(PretrainedFolder folder, bool tokenizer = true);

// The tokens a command runs GPT-2 on: --text by the folder's tokenizer (no token added), or
// --ids as they are. The tokens are the vocabulary's strings (" flies" is "Ġflies").
struct Gpt2Text {
  Gpt2Input input;  // (1,T)
  std::vector<std::string> tokens;
};
// Errors are about "text" or "ids"; more tokens than the model's positions are refused.
Gpt2Text gpt2_text(const PretrainedGpt2& gpt2, const std::string& text, const std::string& ids);
// A token's string as the tables show it: the vocabulary's entry, escaped when not printable.
std::string gpt2_token(const PretrainedGpt2& gpt2, std::int64_t id);

// Reading the weights: the float32 tensors load_gpt2 keeps (the mask buffers skipped), and the
// largest of them transposed once more while the model takes it.
MemoryPlan plan_gpt2_reading(const PretrainedGpt2& gpt2);
// Reads the tensors and builds the model (after check_budget); errors are about "pretrained".
Gpt2 read_gpt2(const PretrainedGpt2& gpt2);
// The same, packed for generation straight from the tensors (no readable model).
PackedGpt2 read_packed_gpt2(const PretrainedGpt2& gpt2);

// The tokens a command runs BERT on: --text ([CLS] A [SEP]), with --pair ([CLS] A [SEP] B [SEP],
// token types 0 then 1), or --ids as they are.
struct BertText {
  BertInput input;  // (1,T)
  std::vector<std::string> tokens;
  std::size_t pair_split = 0;  // B's first token; 0 for one sentence
};
// Errors are about "text", "pair" or "ids"; more tokens than the model's positions are refused.
BertText bert_text(const PretrainedBert& bert, const std::string& text, const std::string& pair,
                   const std::string& ids);

// Reading the weights: the float32 tensors, held until the model takes them.
MemoryPlan plan_bert_reading(const PretrainedBert& bert);
// Reads the tensors and builds the model (after check_budget); errors are about "pretrained".
Bert read_bert(const PretrainedBert& bert);

// --pretrained on the lessons of one layer: layer --layer (the book's post-LN layer: a head per
// slice of query, key and value) and what it reads, hidden_states[layer], for --text (--pair).
struct PretrainedLayer {
  Tensor3 x;            // (1,T,D) what the attention reads: GPT-2's is ln_1 of the block's input
  EncoderLayer layer;   // encoder.layer.N (BERT), h.N (GPT-2)
  bool causal = false;  // GPT-2: query t reads keys 0..t only
  std::vector<std::string> tokens;
  std::string source;  // "DIR, layer N"
};
// Nothing without --pretrained. With it, `replaced` (options such as "--d-model") and
// --checkpoint are refused; errors name the option they are about.
std::optional<PretrainedLayer> pretrained_layer(const CLI::App& app,
                                                const CheckpointCliOptions& options,
                                                const std::vector<std::string>& replaced,
                                                std::string_view command);

// Refuses each option of `options` (names like "--config") given beside --pretrained, whose
// folder replaces it.
void refuse_beside_pretrained(const CLI::App& app, const std::vector<std::string>& options,
                              std::string_view command);

}  // namespace attn::cli

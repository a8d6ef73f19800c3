// A Hugging Face model folder, as `huggingface-cli download` or save_pretrained leaves it:
// config.json; model.safetensors, or model.safetensors.index.json and the shards it lists; the
// tokenizer's files (BERT: vocab.txt and tokenizer_config.json). A bare name that is not a path
// is looked up in the Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else
// ~/.cache/huggingface/hub: models--NAME/snapshots/<revision>/, the revision refs/main names);
// nothing is ever fetched.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/config.hpp"
#include "io/tokenizer.hpp"
#include "io/weights.hpp"

namespace attn {

struct PretrainedFolder {
  std::string path;                        // the folder read
  std::string shown;                       // how messages name it: the argument as given
  std::string config_text;                 // config.json's text
  std::string model_type;                  // config.json's "model_type": "bert", "gpt2"
  std::vector<std::string> architectures;  // config.json's "architectures", may be empty
  std::vector<std::string> weight_files;   // model.safetensors, or each shard once, in index order
  std::uint64_t file_bytes = 0;            // the weight files' sizes, summed
  std::uint64_t float32_bytes = 0;         // every tensor in float32 (F16 and BF16 double)
  Metadata metadata;  // a single model.safetensors' __metadata__ (attn's records); none if sharded
};

// Finds the folder (a path always wins over a cache name) and checks it without reading the
// tensors: config.json is a JSON object with a model_type, the weights are there (a
// pytorch_model.bin alone is refused with the command that converts it), the safetensors
// headers and the index are sound. Throws attn::Error(bad_file) naming the folder, the file and
// the fix.
PretrainedFolder open_pretrained(const std::string& dir_or_name);

// config.json of a BertModel: BertConfig's fields.
struct BertConfig {
  EncoderConfig sizes;  // hidden_size ... layer_norm_eps, hidden_act
  std::size_t type_vocab_size = 2;
  std::int64_t pad_token_id = 0;
};
// Throws attn::Error(bad_file) naming config.json, the field and the fix; a model_type other than
// "bert" (GPT-2's: gpt2.hpp's gpt2_config), or a position_embedding_type other than "absolute", is refused.
BertConfig bert_config(const PretrainedFolder& folder);

// Every tensor of the folder's weights, F16 and BF16 converted to float32, keyed as the files key
// them (no prefix removed, no name changed). Reads a tensor at a time, never a whole file at
// once; a file that changed or shrank since open_pretrained is refused, not read past its end.
StateDict read_pretrained_weights(const PretrainedFolder& folder);
// The same, holding only the tensors `keep` says yes to: the others are read past, never kept
// (GPT-2's mask buffers).
StateDict read_pretrained_weights(const PretrainedFolder& folder,
                                  bool (*keep)(std::string_view key));

// BERT's tokenizer from the folder: vocab.txt (else the WordPiece vocabulary in tokenizer.json)
// and tokenizer_config.json's do_lower_case and strip_accents (BertTokenizer's defaults when the
// file is not there).
struct PretrainedTokenizer {
  Vocabulary vocab;
  TokenizerOptions options;
};
PretrainedTokenizer bert_tokenizer(const PretrainedFolder& folder);

}  // namespace attn

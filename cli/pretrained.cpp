#include "pretrained.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"
#include "lesson_io.hpp"

namespace attn::cli {

namespace {
template <class F>
auto about(std::string_view subject, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e.kind(), e.function(), e.detail())
        .about(std::string(subject))
        .driven_by(e.sizes());
  }
}
}  // namespace

CLI::Option* add_pretrained_option(CLI::App& sub, std::string& path) {
  return sub
      .add_option("--pretrained", path,
                  "a Hugging Face BERT or GPT-2 folder (config.json, model.safetensors, the "
                  "tokenizer's files), or a model's name in the Hugging Face cache; attn never "
                  "downloads one")
      ->type_name("DIR");
}

PretrainedFolder open_folder(const std::string& name) {
  return about("pretrained", [&] {
    PretrainedFolder folder = open_pretrained(name);
    if (folder.model_type != "bert" && folder.model_type != "gpt2")
      throw Error(ErrorKind::bad_file, "open_pretrained",
                  fmt::format("'{}/config.json': model_type '{}' is not one attn reads: give a "
                              "BERT (\"bert\") or GPT-2 (\"gpt2\") folder, such as "
                              "bert-base-uncased or gpt2",
                              printable(folder.shown), printable(folder.model_type)));
    return folder;
  });
}

bool is_gpt2(const PretrainedFolder& folder) {
  return folder.model_type == "gpt2";
}

PretrainedBert open_bert(const std::string& name, bool tokenizer) {
  return open_bert(open_folder(name), tokenizer);
}

PretrainedBert open_bert(PretrainedFolder folder, bool tokenizer) {
  return about("pretrained", [&] {
    PretrainedBert bert;
    bert.folder = std::move(folder);
    bert.config = bert_config(bert.folder);
    if (tokenizer) bert.tokenizer = bert_tokenizer(bert.folder);
    return bert;
  });
}

PretrainedGpt2 open_gpt2(PretrainedFolder folder, bool tokenizer) {
  return about("pretrained", [&] {
    PretrainedGpt2 gpt2;
    gpt2.folder = std::move(folder);
    gpt2.config = gpt2_config(gpt2.folder);
    gpt2.heads = gpt2_heads(gpt2.folder);
    if (tokenizer) {
      gpt2.tokenizer = read_bpe(gpt2.folder.path);
      if (gpt2.tokenizer.size() > gpt2.config.sizes.vocab_size)
        throw Error(ErrorKind::bad_file, "open_gpt2",
                    fmt::format("'{}': the tokenizer has {} tokens, more than the model's "
                                "vocab_size {}: the folder's vocab.json and config.json do not "
                                "belong together",
                                printable(gpt2.folder.shown), gpt2.tokenizer.size(),
                                gpt2.config.sizes.vocab_size));
    }
    return gpt2;
  });
}

std::string gpt2_token(const PretrainedGpt2& gpt2, std::int64_t id) {
  const auto i = static_cast<std::size_t>(id);
  return i < gpt2.tokenizer.size() ? printable(gpt2.tokenizer.tokens[i], 40) : std::to_string(id);
}

Gpt2Text gpt2_text(const PretrainedGpt2& gpt2, const std::string& text, const std::string& ids) {
  Gpt2Text out;
  std::vector<std::int64_t> id_list;
  if (!ids.empty()) {
    if (!text.empty())
      throw Error(ErrorKind::bad_value, "gpt2_text", "give the tokens once: --ids or --text")
          .about("ids");
    id_list = parse_ids(ids, gpt2.config.sizes.vocab_size);
  } else {
    const std::string t = text.empty() ? "time flies like an arrow" : text;
    check_utf8(t, "text", "gpt2_text");
    id_list = about("text", [&] { return encode(gpt2.tokenizer, t); });
    if (id_list.empty())
      throw Error(ErrorKind::bad_value, "gpt2_text",
                  "the text has no token: give one with a word in it, e.g. --text \"time flies\"")
          .about("text");
  }
  const std::size_t positions = gpt2.config.sizes.max_position_embeddings;
  if (id_list.size() > positions) {
    const std::string source = !ids.empty() ? "ids" : "text";
    throw Error(ErrorKind::bad_size, "gpt2_text",
                fmt::format("{} tokens, more than the model's {} positions (n_positions): give a "
                            "shorter --{}",
                            id_list.size(), positions, source))
        .about(source);
  }
  out.input.ids = Ids::from_shape({1, id_list.size()});
  std::copy(id_list.begin(), id_list.end(), out.input.ids.begin());
  for (std::int64_t id : id_list)
    out.tokens.push_back(gpt2_token(gpt2, id));
  return out;
}

MemoryPlan plan_gpt2_reading(const PretrainedGpt2& gpt2) {
  // load_gpt2 transposes each Conv1D weight into the model and drops the file's: the largest
  // (c_fc's or c_proj's (D, F), or c_attn's (D, 3D) with its three slices) is held twice.
  const EncoderConfig& c = gpt2.config.sizes;
  const std::size_t rows = std::max(
      {c.vocab_size, c.max_position_embeddings, c.intermediate_size, 2 * 3 * c.hidden_size});
  return {{"the folder's tensors in float32",
           {gpt2.folder.float32_bytes / 4},
           "D/F/V",
           4,
           Held::kept,
           16 * c.num_hidden_layers + 16},
          {"the largest tensor, while the model takes it", {rows, c.hidden_size}, "V D"}};
}

Gpt2 read_gpt2(const PretrainedGpt2& gpt2) {
  return about("pretrained", [&] {
    return load_gpt2(gpt2.config, read_pretrained_weights(gpt2.folder, gpt2_reads),
                     gpt2.folder.shown);
  });
}

BertText bert_text(const PretrainedBert& bert, const std::string& text, const std::string& pair,
                   const std::string& ids) {
  const Vocabulary& vocab = bert.tokenizer.vocab;
  BertText out;
  std::vector<std::int64_t> id_list, types;
  if (!ids.empty()) {
    if (!text.empty() || !pair.empty())
      throw Error(ErrorKind::bad_value, "bert_text",
                  "give the tokens once: --ids, or --text (and --pair)")
          .about("ids");
    id_list = parse_ids(ids, bert.config.sizes.vocab_size);
    types.assign(id_list.size(), 0);
    for (std::int64_t id : id_list)
      out.tokens.push_back(static_cast<std::size_t>(id) < vocab.size()
                               ? vocab.tokens[static_cast<std::size_t>(id)]
                               : std::to_string(id));
  } else {
    const std::string a = text.empty() ? "time flies like an arrow" : text;
    check_utf8(a, "text", "bert_text");
    check_utf8(pair, "pair", "bert_text");
    const Encoding ea =
        about("text", [&] { return encode(a, vocab, true, bert.tokenizer.options); });
    out.tokens = ea.tokens;
    id_list = ea.ids;
    types.assign(id_list.size(), 0);
    if (!pair.empty()) {
      const Encoding eb =
          about("pair", [&] { return encode(pair, vocab, false, bert.tokenizer.options); });
      out.pair_split = out.tokens.size();
      for (std::size_t i = 0; i < eb.tokens.size(); ++i) {
        out.tokens.push_back(eb.tokens[i]);
        id_list.push_back(eb.ids[i]);
      }
      out.tokens.emplace_back(kSeparatorToken);
      id_list.push_back(*vocab.find(kSeparatorToken));
      types.resize(id_list.size(), 1);
    }
  }
  for (std::int64_t id : id_list) {
    if (id < 0 || static_cast<std::size_t>(id) >= bert.config.sizes.vocab_size)
      throw Error(ErrorKind::bad_file, "bert_text",
                  fmt::format("the tokenizer gives id {}, outside the model's vocabulary of {} "
                              "(config.json's vocab_size): the folder's vocab.txt and config.json "
                              "do not belong together",
                              id, bert.config.sizes.vocab_size))
          .about("pretrained");
  }
  const std::size_t positions = bert.config.sizes.max_position_embeddings;
  if (id_list.size() > positions) {
    const std::string source = !ids.empty() ? "ids" : !pair.empty() ? "pair" : "text";
    throw Error(ErrorKind::bad_size, "bert_text",
                fmt::format("{} tokens, more than the model's {} positions "
                            "(max_position_embeddings): give a shorter --{}",
                            id_list.size(), positions, source))
        .about(source);
  }
  const std::size_t tokens = id_list.size();
  out.input.ids = Ids::from_shape({1, tokens});
  out.input.token_types = Ids::from_shape({1, tokens});
  std::copy(id_list.begin(), id_list.end(), out.input.ids.begin());
  std::copy(types.begin(), types.end(), out.input.token_types.begin());
  return out;
}

MemoryPlan plan_bert_reading(const PretrainedBert& bert) {
  // load_bert copies each tensor into the model and drops the file's: the largest is held twice.
  const EncoderConfig& c = bert.config.sizes;
  const std::size_t rows = std::max({c.vocab_size, c.max_position_embeddings, c.intermediate_size});
  return {{"the folder's tensors in float32",
           {bert.folder.float32_bytes / 4},
           "D/F/V",
           4,
           Held::kept,
           16 * c.num_hidden_layers + 16},
          {"the largest tensor, while the model takes it", {rows, c.hidden_size}, "V D"}};
}

Bert read_bert(const PretrainedBert& bert) {
  return about("pretrained", [&] {
    return load_bert(bert.config, read_pretrained_weights(bert.folder), bert.folder.shown);
  });
}

PackedGpt2 read_packed_gpt2(const PretrainedGpt2& gpt2) {
  return about("pretrained", [&] {
    return pack(gpt2.config,
                check_gpt2_weights(gpt2.config, read_pretrained_weights(gpt2.folder, gpt2_reads),
                                   gpt2.folder.shown));
  });
}

std::optional<PretrainedLayer> pretrained_layer(const CLI::App& app, const CheckpointCliOptions& o,
                                                const std::vector<std::string>& replaced,
                                                std::string_view command) {
  if (o.pretrained.empty()) return {};
  std::vector<std::string> refused = replaced;
  refused.insert(refused.end(), {"--checkpoint", "--ablate"});
  refuse_beside_pretrained(app, refused, command);
  PretrainedFolder folder = open_folder(o.pretrained);
  if (is_gpt2(folder)) {
    if (!o.pair.empty())
      throw Error(ErrorKind::bad_value, std::string(command),
                  "--pair is BERT's second sentence; GPT-2 reads one text: drop --pair")
          .about("pair");
    const PretrainedGpt2 gpt2 = open_gpt2(std::move(folder));
    const std::size_t layers = gpt2.config.sizes.num_hidden_layers;
    if (o.layer >= layers)
      throw Error(ErrorKind::bad_value, std::string(command),
                  fmt::format("layer {} does not exist: the model has {} blocks, 0 to {}", o.layer,
                              layers, layers - 1))
          .about("layer");
    const Gpt2Text text = gpt2_text(gpt2, o.text, "");
    MemoryPlan plan = plan_gpt2_reading(gpt2);
    append(plan, plan_gpt2(gpt2.config, 1, text.tokens.size(), false));
    check_budget(command, plan);
    const Gpt2 model = read_gpt2(gpt2);
    Gpt2Steps steps = forward(model, text.input, false);
    // A pre-LN block's attention reads ln_1 of the block's input.
    return PretrainedLayer{std::move(steps.layers.at(o.layer).norm_1.output),
                           model.layers.at(o.layer), true, text.tokens,
                           fmt::format("{}, block {}", o.pretrained, o.layer)};
  }
  const PretrainedBert bert = open_bert(std::move(folder));
  const std::size_t layers = bert.config.sizes.num_hidden_layers;
  if (o.layer >= layers)
    throw Error(ErrorKind::bad_value, std::string(command),
                fmt::format("layer {} does not exist: the model has {} layers, 0 to {}", o.layer,
                            layers, layers - 1))
        .about("layer");
  const BertText text = bert_text(bert, o.text, o.pair, "");
  MemoryPlan plan = plan_bert_reading(bert);
  append(plan, plan_bert(bert.config, BertHeads::none, 1, text.tokens.size(), false));
  check_budget(command, plan);
  const Bert model = read_bert(bert);
  BertSteps steps = forward(model, text.input, false);
  return PretrainedLayer{std::move(steps.layers.at(o.layer).input), model.layers.at(o.layer), false,
                         text.tokens, fmt::format("{}, layer {}", o.pretrained, o.layer)};
}

void refuse_beside_pretrained(const CLI::App& app, const std::vector<std::string>& options,
                              std::string_view command) {
  for (const std::string& name : options) {
    const CLI::Option* option = app.get_option_no_throw(name);
    if (option == nullptr || option->count() == 0) continue;
    throw Error(
        ErrorKind::bad_value, std::string(command),
        fmt::format("--pretrained brings its own model, sizes and tokenizer: drop {}", name))
        .about(name.substr(2));
  }
}

}  // namespace attn::cli

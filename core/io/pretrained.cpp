// Hugging Face model folders: where a name lives in the hub's cache (huggingface_hub's
// constants.py and file_download.py: HF_HUB_CACHE, models--OWNER--NAME/refs/main and
// snapshots/<commit>/), config.json, the safetensors weights, single or sharded
// (model.safetensors.index.json's weight_map), and BERT's tokenizer files.
#include "io/pretrained.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/budget.hpp"
#include "base/error.hpp"
#include "io/file_io.hpp"

namespace attn {

namespace fs = std::filesystem;

namespace {

using nlohmann::json;

constexpr std::string_view kSafetensors = "model.safetensors";
constexpr std::string_view kIndex = "model.safetensors.index.json";
constexpr std::string_view kPickle = "pytorch_model.bin";

[[noreturn]] void fail(std::string_view function, std::string message) {
  throw Error(ErrorKind::bad_file, function, message).about("pretrained");
}

// How messages name a file of the folder: "DIR/config.json" with DIR as the user gave it.
std::string shown_file(const PretrainedFolder& folder, std::string_view file) {
  return printable(fmt::format("{}/{}", folder.shown, file));
}

std::string join(const fs::path& dir, std::string_view file) {
  return (dir / std::string(file)).string();
}

bool is_regular(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// os.path.expanduser of a leading "~".
std::string expand_home(std::string path) {
  if (path == "~" || path.starts_with("~/")) path = env("HOME") + path.substr(1);
  return path;
}

// huggingface_hub's HF_HUB_CACHE: the variable, else the legacy HUGGINGFACE_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::string hub_cache() {
  for (const char* variable : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"}) {
    if (const std::string value = env(variable); !value.empty()) return expand_home(value);
  }
  if (const std::string home = env("HF_HOME"); !home.empty()) return expand_home(home) + "/hub";
  const std::string xdg = env("XDG_CACHE_HOME");
  return expand_home(xdg.empty() ? "~/.cache" : xdg) + "/huggingface/hub";
}

// A repository id as the hub spells them: NAME or OWNER/NAME of letters, digits, '-', '_', '.'.
bool is_repo_id(std::string_view text) {
  if (text.empty() || text.size() > 96 || text.front() == '.' || text.front() == '-' ||
      text.find("..") != std::string_view::npos || text.find("--") != std::string_view::npos) {
    return false;
  }
  std::size_t slashes = 0;
  for (const char c : text) {
    if (c == '/') {
      ++slashes;
    } else if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return slashes <= 1 && !text.ends_with('/') && text.find("/.") == std::string_view::npos;
}

std::string download_advice(std::string_view name) {
  return fmt::format(
      "attn never downloads: fetch it once with `huggingface-cli download {0} --local-dir "
      "{1}` (or python3 -c \"from huggingface_hub import snapshot_download; "
      "snapshot_download('{0}')\") and pass the folder",
      printable(name), printable(name.substr(name.rfind('/') + 1)));
}

// snapshots/<commit> of a cached repository: the commit refs/main names, else the one snapshot.
std::string cached_snapshot(const std::string& name, std::string* cache) {
  *cache = hub_cache();
  std::string folder = "models--" + name;  // OWNER/NAME: models--OWNER--NAME
  if (const auto slash = folder.find('/'); slash != std::string::npos)
    folder.replace(slash, 1, "--");
  const fs::path repo = fs::path(*cache) / folder;
  std::error_code ec;
  std::string commit;
  if (is_regular(join(repo, "refs/main"))) {
    const std::vector<unsigned char> ref = read_file(
        join(repo, "refs/main"), "the commit a cache's refs/main holds",
        SizeCap{4096, "a refs/main may have (4 KiB)", "is the Hugging Face cache damaged?"});
    commit.assign(ref.begin(), ref.end());
    while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back())))
      commit.pop_back();
  } else {
    std::vector<std::string> snapshots;
    for (fs::directory_iterator it(repo / "snapshots", ec), end; !ec && it != end;
         it.increment(ec)) {
      snapshots.push_back(it->path().filename().string());
    }
    if (snapshots.size() == 1) commit = snapshots.front();
  }
  if (commit.empty() || commit.find('/') != std::string::npos || commit == "." || commit == "..")
    return {};
  const fs::path snapshot = repo / "snapshots" / commit;
  return fs::is_directory(snapshot, ec) ? snapshot.string() : std::string();
}

// The folder a --pretrained argument names: a path that exists always wins; else a repository
// id in the cache.
std::pair<std::string, std::string> locate(const std::string& dir_or_name) {
  constexpr std::string_view kFunction = "open_pretrained";
  const std::string shown = printable(dir_or_name);
  if (dir_or_name.empty()) {
    fail(kFunction,
         "the model folder is empty: give a folder with config.json and "
         "model.safetensors, or a model name in the Hugging Face cache");
  }
  struct stat st {};
  if (::stat(dir_or_name.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      fail(kFunction, fmt::format("'{}' is a file, not a folder: give the folder that holds its "
                                  "config.json and model.safetensors",
                                  shown));
    }
    return {dir_or_name, dir_or_name};
  }
  if (!is_repo_id(dir_or_name) || dir_or_name.starts_with("./")) {
    fail(kFunction, fmt::format("'{}' does not exist: give a folder with config.json and "
                                "model.safetensors (relative paths start at the current "
                                "directory), or a model name such as bert-base-uncased",
                                shown));
  }
  std::string cache;
  const std::string snapshot = cached_snapshot(dir_or_name, &cache);
  if (snapshot.empty()) {
    fail(kFunction,
         fmt::format("'{}' is neither a folder here nor a model in the Hugging Face cache ({}); {}",
                     shown, printable(cache), download_advice(dir_or_name)));
  }
  return {snapshot, dir_or_name};
}

std::string pickle_advice(const fs::path& dir) {
  const std::string bin = printable(join(dir, kPickle));
  const std::string out = printable(join(dir, kSafetensors));
  return fmt::format(
      "it is a pickle, which can run code, and attn will not load it; convert it once with "
      "python3 -c \"import torch; from safetensors.torch import save_file; sd = torch.load('{}', "
      "map_location='cpu', weights_only=True); save_file({{k: v.clone().contiguous() for k, v in "
      "sd.items()}}, '{}', metadata={{'format': 'pt'}})\"",
      bin, out);
}

// One safetensors file's header, read from the file: its first 8 bytes, then the JSON text.
SafetensorsHeader read_header(InputFile& file, const std::string& shown) {
  unsigned char start[8] = {};
  const std::size_t got = file.read(start, sizeof start);
  const std::uint64_t length =
      safetensors_header_length(std::span<const unsigned char>(start, got), file.size(), shown);
  std::string text(length, '\0');
  if (file.read(reinterpret_cast<unsigned char*>(text.data()), length) != length) {
    fail("open_pretrained",
         fmt::format("'{}': the file ended inside its header: it is changing or truncated; copy it "
                     "again",
                     shown));
  }
  return parse_safetensors_header(text, file.size(), shown);
}

// model.safetensors.index.json: {"metadata": {...}, "weight_map": {tensor: shard file}}. The
// shards in the order the index first names them, with each shard's tensors.
std::vector<std::pair<std::string, std::set<std::string>>> read_index(const std::string& path,
                                                                      const std::string& shown) {
  const SizeCap cap{std::uint64_t{16} << 20, "an index may have (16 MiB)",
                    "is it the right file? bert-large's index has a few KiB"};
  const std::vector<unsigned char> bytes = read_file(path, "a model.safetensors.index.json", cap);
  nlohmann::ordered_json index;
  try {
    index = nlohmann::ordered_json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    fail("open_pretrained",
         fmt::format("'{}' is not JSON ({}): save the model again with save_pretrained", shown,
                     json_error_reason(e)));
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    fail(
        "open_pretrained",
        fmt::format("'{}' has no \"weight_map\" object (tensor name -> shard file): save the model "
                    "again with save_pretrained",
                    shown));
  }
  std::vector<std::pair<std::string, std::set<std::string>>> shards;
  for (const auto& [key, value] : index["weight_map"].items()) {
    const std::string file = value.is_string() ? value.get<std::string>() : std::string();
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == ".." ||
        !file.ends_with(".safetensors")) {
      fail("open_pretrained",
           fmt::format("'{}': tensor '{}' maps to {}, not a .safetensors file of the folder: save "
                       "the model again with save_pretrained",
                       shown, printable(key), printable(value.dump(), 80)));
    }
    auto shard =
        std::find_if(shards.begin(), shards.end(), [&](const auto& s) { return s.first == file; });
    if (shard == shards.end()) shard = shards.insert(shards.end(), {file, {}});
    shard->second.insert(key);
  }
  if (shards.empty()) {
    fail("open_pretrained", fmt::format("'{}' lists no tensor in its weight_map: save the model "
                                        "again with save_pretrained",
                                        shown));
  }
  return shards;
}

// The shards' headers against the index: no tensor in two shards, every tensor the index lists
// in its shard, and no shard holding a tensor the index does not give it.
void check_shards(const std::vector<SafetensorsHeader>& headers,
                  const std::vector<std::pair<std::string, std::set<std::string>>>& shards,
                  const std::vector<std::string>& shown, const std::string& index_shown) {
  std::map<std::string, std::size_t> owner;
  for (std::size_t s = 0; s < headers.size(); ++s) {
    for (const SafetensorsTensor& t : headers[s].tensors) {
      if (const auto [it, fresh] = owner.emplace(t.key, s); !fresh) {
        fail("open_pretrained",
             fmt::format("tensor '{}' is in two shards, {} and {}: download the folder again, or "
                         "save the model again with save_pretrained",
                         printable(t.key), printable(shards[it->second].first),
                         printable(shards[s].first)));
      }
    }
  }
  for (std::size_t s = 0; s < headers.size(); ++s) {
    const std::set<std::string>& listed = shards[s].second;
    for (const SafetensorsTensor& t : headers[s].tensors) {
      if (listed.count(t.key) == 0) {
        fail("open_pretrained",
             fmt::format("'{}' holds tensor '{}', which '{}' does not give to it: the index and "
                         "the shards are from different saves; download the folder again",
                         shown[s], printable(t.key), index_shown));
      }
    }
    for (const std::string& key : listed) {
      if (owner.count(key) == 0 || owner.at(key) != s) {
        fail("open_pretrained",
             fmt::format("'{}' puts tensor '{}' in '{}', which does not have it: the index and "
                         "the shards are from different saves; download the folder again",
                         index_shown, printable(key), shown[s]));
      }
    }
  }
}

void add_sizes(PretrainedFolder& folder, const InputFile& file, const SafetensorsHeader& header) {
  folder.file_bytes += file.size();
  for (const SafetensorsTensor& t : header.tensors)
    folder.float32_bytes += safetensors_read_bytes(t);
}

void find_weights(PretrainedFolder& folder) {
  const std::string single = join(folder.path, kSafetensors);
  const std::string index = join(folder.path, kIndex);
  if (is_regular(single)) {
    InputFile file(single, "a model.safetensors file");
    SafetensorsHeader header = read_header(file, shown_file(folder, kSafetensors));
    add_sizes(folder, file, header);
    folder.metadata = std::move(header.metadata);
    folder.weight_files.push_back(single);
    return;
  }
  if (is_regular(index)) {
    const std::string index_shown = shown_file(folder, kIndex);
    const auto shards = read_index(index, index_shown);
    std::vector<SafetensorsHeader> headers;
    std::vector<std::string> shown;
    for (const auto& [shard, listed] : shards) {
      const std::string path = join(folder.path, shard);
      shown.push_back(shown_file(folder, shard));
      if (!is_regular(path)) {
        fail("open_pretrained",
             fmt::format("'{}' is missing ('{}' lists it): download the folder again, every shard "
                         "with its index",
                         shown.back(), index_shown));
      }
      InputFile file(path, "a shard of the model's safetensors");
      headers.push_back(read_header(file, shown.back()));
      add_sizes(folder, file, headers.back());
      folder.weight_files.push_back(path);
    }
    check_shards(headers, shards, shown, index_shown);
    return;
  }
  const std::string where = printable(folder.shown);
  if (is_regular(join(folder.path, kPickle))) {
    fail("open_pretrained", fmt::format("'{}' has pytorch_model.bin but no model.safetensors: {}",
                                        where, pickle_advice(folder.path)));
  }
  for (const std::string_view other : {"tf_model.h5", "flax_model.msgpack"}) {
    if (is_regular(join(folder.path, other))) {
      fail("open_pretrained",
           fmt::format("'{}' has only {} (TensorFlow or Flax weights) and no model.safetensors: "
                       "attn reads safetensors; load it in transformers (from_tf=True or "
                       "from_flax=True) and save_pretrained it with safe_serialization=True",
                       where, other));
    }
  }
  fail("open_pretrained",
       fmt::format("'{}' has no model.safetensors and no model.safetensors.index.json: give the "
                   "folder huggingface-cli download or save_pretrained wrote, weights included",
                   where));
}

std::string string_field(const json& doc, const char* key, const std::string& shown,
                         std::string_view example) {
  if (!doc.contains(key)) {
    fail("open_pretrained",
         fmt::format("'{}' has no \"{}\": a Hugging Face config.json names its model type, such as "
                     "\"model_type\": \"{}\"",
                     shown, key, example));
  }
  if (!doc[key].is_string()) {
    fail("open_pretrained", fmt::format("'{}': \"{}\" is {}, expected a string such as \"{}\"",
                                        shown, key, printable(doc[key].dump(), 60), example));
  }
  return doc[key].get<std::string>();
}

json folder_config(const PretrainedFolder& folder) {
  return parse_config_object(folder.config_text, shown_file(folder, "config.json"));
}

// A JSON file of the folder that may be missing (tokenizer_config.json, tokenizer.json).
std::optional<json> optional_json(const PretrainedFolder& folder, std::string_view file) {
  const std::string path = join(folder.path, file);
  if (!is_regular(path)) return std::nullopt;
  const std::string shown = shown_file(folder, file);
  const SizeCap cap{std::uint64_t{64} << 20, "a tokenizer file may have (64 MiB)",
                    "is it the right file? bert-base-uncased's tokenizer.json has 466 KiB"};
  const std::vector<unsigned char> bytes = read_file(path, "a tokenizer's JSON file", cap);
  try {
    return json::parse(bytes.begin(), bytes.end());
  } catch (const json::exception& e) {
    fail("bert_tokenizer",
         fmt::format("'{}' is not JSON ({}): download the tokenizer's files again", shown,
                     json_error_reason(e)));
  }
}

// tokenizer.json's WordPiece vocabulary ({"model": {"type": "WordPiece", "vocab": {token: id}}})
// as the text of a vocab.txt.
std::string wordpiece_vocabulary(const json& doc, const std::string& shown) {
  const auto refuse = [&](std::string_view why) {
    fail("bert_tokenizer", fmt::format("'{}' {}; give the folder BERT's vocab.txt", shown, why));
  };
  if (!doc.is_object() || !doc.contains("model") || !doc["model"].is_object())
    refuse("has no model");
  const json& model = doc["model"];
  if (!model.contains("type") || model["type"] != "WordPiece")
    refuse("is not a WordPiece tokenizer (model.type is not \"WordPiece\")");
  if (!model.contains("vocab") || !model["vocab"].is_object()) refuse("has no model.vocab object");
  std::vector<std::string> tokens(model["vocab"].size());
  std::vector<bool> taken(tokens.size());
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= static_cast<std::int64_t>(tokens.size()) ||
        taken[id.get<std::size_t>()] || token.find_first_of("\r\n") != std::string::npos) {
      refuse(fmt::format("gives the token '{}' the id {}, not one of 0 to {} unused before",
                         printable(token), printable(id.dump(), 30), tokens.size() - 1));
    }
    taken[id.get<std::size_t>()] = true;
    tokens[id.get<std::size_t>()] = token;
  }
  std::string text;
  for (const std::string& token : tokens)
    text += token + "\n";
  return text;
}

std::optional<bool> bool_option(const json& doc, const char* key, const std::string& shown) {
  if (!doc.contains(key) || doc[key].is_null()) return std::nullopt;
  if (!doc[key].is_boolean()) {
    fail("bert_tokenizer", fmt::format("'{}': \"{}\" is {}, expected true, false or null", shown,
                                       key, printable(doc[key].dump(), 60)));
  }
  return doc[key].get<bool>();
}

}  // namespace

PretrainedFolder open_pretrained(const std::string& dir_or_name) {
  PretrainedFolder folder;
  std::tie(folder.path, folder.shown) = locate(dir_or_name);
  const std::string config = join(folder.path, "config.json");
  const std::string config_shown = shown_file(folder, "config.json");
  if (!is_regular(config)) {
    fail("open_pretrained",
         fmt::format("'{}' has no config.json: give the whole folder huggingface-cli download or "
                     "save_pretrained wrote (config.json, model.safetensors, vocab.txt)",
                     printable(folder.shown)));
  }
  folder.config_text = read_config_text(config);
  const json doc = folder_config(folder);
  folder.model_type = string_field(doc, "model_type", config_shown, "bert");
  if (doc.contains("architectures")) {
    const json& list = doc["architectures"];
    const bool strings =
        list.is_array() &&
        std::all_of(list.begin(), list.end(), [](const json& v) { return v.is_string(); });
    if (!strings) {
      fail("open_pretrained",
           fmt::format("'{}': \"architectures\" is {}, expected a list of class names such as "
                       "[\"BertForMaskedLM\"]",
                       config_shown, printable(list.dump(), 60)));
    }
    for (const json& name : list)
      folder.architectures.push_back(name.get<std::string>());
  }
  find_weights(folder);
  return folder;
}

BertConfig bert_config(const PretrainedFolder& folder) {
  const std::string shown = shown_file(folder, "config.json");
  const json doc = folder_config(folder);
  if (folder.model_type != "bert") {
    fail("bert_config",
         fmt::format("'{}': model_type '{}' is not BERT (\"bert\"): give a BERT checkpoint "
                     "such as bert-base-uncased",
                     shown, printable(folder.model_type)));
  }
  if (doc.contains("position_embedding_type") &&
      doc["position_embedding_type"] != json("absolute")) {
    fail("bert_config",
         fmt::format("'{}': position_embedding_type is {}; attn's BERT has learned absolute "
                     "positions only (\"absolute\"): give a checkpoint with absolute positions",
                     shown, printable(doc["position_embedding_type"].dump(), 60)));
  }
  BertConfig config;
  config.sizes = encoder_config(doc, shown);
  config.type_vocab_size = config_size(doc, "type_vocab_size", config.type_vocab_size, shown);
  if (doc.contains("pad_token_id") && !doc["pad_token_id"].is_null()) {
    const json& pad = doc["pad_token_id"];
    if (!pad.is_number_integer() || pad.get<std::int64_t>() < 0 ||
        pad.get<std::uint64_t>() >= config.sizes.vocab_size) {
      fail("bert_config",
           fmt::format("'{}': \"pad_token_id\" is {}, expected an id from 0 to {} "
                       "(vocab_size - 1)",
                       shown, printable(pad.dump(), 60), config.sizes.vocab_size - 1));
    }
    config.pad_token_id = pad.get<std::int64_t>();
  }
  return config;
}

StateDict read_pretrained_weights(const PretrainedFolder& folder) {
  return read_pretrained_weights(folder, [](std::string_view) { return true; });
}

StateDict read_pretrained_weights(const PretrainedFolder& folder,
                                  bool (*keep)(std::string_view key)) {
  if (const SizeCap cap = memory_cap("use a smaller model, or raise the limit");
      folder.float32_bytes > cap.bytes) {
    throw Error(
        ErrorKind::too_large, "read_pretrained_weights",
        fmt::format("'{}': its weights take {} as float32, more than {}: {}",
                    printable(folder.shown),
                    format_bytes(static_cast<double>(folder.float32_bytes)), cap.limit, cap.fix))
        .about("pretrained");
  }
  std::vector<std::unique_ptr<InputFile>> files;
  std::uint64_t total = 0;
  for (const std::string& path : folder.weight_files) {
    files.push_back(std::make_unique<InputFile>(path, "a model.safetensors file"));
    total += files.back()->size();
  }
  const auto changed = [&](const std::string& path) {
    return Error(ErrorKind::bad_file, "read_pretrained_weights",
                 fmt::format("'{}' changed while attn read it (its size is not what it was when "
                             "the folder was opened): wait for the download or copy to finish, "
                             "then run again",
                             printable(path)))
        .about("pretrained");
  };
  if (total != folder.file_bytes) throw changed(folder.weight_files.front());
  StateDict out;
  for (const auto& file : files) {
    const std::string shown = printable(file->path());
    const SafetensorsHeader header = read_header(*file, shown);
    for (const SafetensorsTensor& t : header.tensors) {
      // The tensors tile the data in this order, so each read starts where the last one ended.
      // A buffer of its own for each tensor, which the array keeps: no tensor is held twice.
      std::vector<unsigned char> stored(t.end - t.begin);
      if (file->read(stored.data(), stored.size()) != stored.size()) throw changed(file->path());
      if (!keep(t.key)) continue;
      Array array = safetensors_array(t, std::move(stored), shown);
      if (!out.emplace(t.key, std::move(array)).second) {
        fail("read_pretrained_weights",
             fmt::format("tensor '{}' is in two weight files: download the folder again",
                         printable(t.key)));
      }
    }
    unsigned char extra = 0;
    if (file->read(&extra, 1) != 0) throw changed(file->path());
  }
  return out;
}

PretrainedTokenizer bert_tokenizer(const PretrainedFolder& folder) {
  PretrainedTokenizer tokenizer;
  const std::string vocab = join(folder.path, "vocab.txt");
  if (is_regular(vocab)) {
    tokenizer.vocab = read_vocabulary(vocab);
  } else if (const std::optional<json> doc = optional_json(folder, "tokenizer.json")) {
    const std::string shown = shown_file(folder, "tokenizer.json");
    tokenizer.vocab = parse_vocabulary(wordpiece_vocabulary(*doc, shown), shown);
  } else {
    fail("bert_tokenizer",
         fmt::format("'{}' has no vocab.txt and no tokenizer.json: download the tokenizer's files "
                     "with the model (huggingface-cli download takes them all)",
                     printable(folder.shown)));
  }
  if (const std::optional<json> doc = optional_json(folder, "tokenizer_config.json")) {
    const std::string shown = shown_file(folder, "tokenizer_config.json");
    if (!doc->is_object()) {
      fail("bert_tokenizer", fmt::format("'{}' holds JSON {}, not an object: download it again",
                                         shown, doc->type_name()));
    }
    tokenizer.options.lower_case = bool_option(*doc, "do_lower_case", shown).value_or(true);
    tokenizer.options.strip_accents = bool_option(*doc, "strip_accents", shown);
  }
  return tokenizer;
}

}  // namespace attn

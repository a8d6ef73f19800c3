// core/io/pretrained.cpp on Hugging Face folders the tests write: one model.safetensors or
// shards with their index, F16 and BF16 tensors (their float32 bits as numpy's astype(float32)
// and torch's .float() give them), a fake hub cache with symlinked snapshot files, and every bad
// folder, each refused with a message that names the file and the fix.
#include "io/pretrained.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "io/config.hpp"
#include "io/file_io.hpp"
#include "io/tokenizer.hpp"
#include "io/weights.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::Array;
using attn::StateDict;

namespace {

void write(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  REQUIRE(out.good());
}

void write(const fs::path& path, const std::vector<unsigned char>& bytes) {
  write(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// The attn::Error of f(): its message; fails the test when f returns.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const attn::Error& e) {
    CHECK(e.kind() == attn::ErrorKind::bad_file);
    return e.what();
  }
  FAIL("no attn::Error");
  return "";
}

// A safetensors file of hand-made tensors: {key, dtype code, shape, little-endian bytes}.
struct RawTensor {
  std::string key, dtype;
  std::vector<std::size_t> shape;
  std::vector<unsigned char> bytes;
};

std::vector<unsigned char> raw_safetensors(const std::vector<RawTensor>& tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::size_t offset = 0;
  for (const RawTensor& t : tensors) {
    header += fmt::format(",\"{}\":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                          t.key, t.dtype, fmt::join(t.shape, ","), offset, offset + t.bytes.size());
    offset += t.bytes.size();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (std::size_t i = 0; i < 8; ++i)
    out[i] = static_cast<char>(header.size() >> (8 * i));
  out += header;
  for (const RawTensor& t : tensors)
    out.append(t.bytes.begin(), t.bytes.end());
  return std::vector<unsigned char>(out.begin(), out.end());
}

std::vector<unsigned char> le16(const std::vector<std::uint16_t>& values) {
  std::vector<unsigned char> out;
  for (const std::uint16_t v : values) {
    out.push_back(static_cast<unsigned char>(v & 0xff));
    out.push_back(static_cast<unsigned char>(v >> 8));
  }
  return out;
}

std::vector<std::uint32_t> float_bits(const Array& array) {
  REQUIRE(array.dtype == attn::Dtype::float32);
  std::vector<std::uint32_t> bits(array.bytes.size() / 4);
  std::memcpy(bits.data(), array.bytes.data(), array.bytes.size());
  return bits;
}

constexpr std::string_view kConfig =
    R"({"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 6,
        "num_attention_heads": 3, "intermediate_size": 10, "num_hidden_layers": 1,
        "vocab_size": 12, "max_position_embeddings": 16, "type_vocab_size": 3,
        "pad_token_id": 0, "layer_norm_eps": 1e-12, "hidden_act": "gelu",
        "position_embedding_type": "absolute"})";

constexpr std::string_view kVocab =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ntime\nflies\nlike\nan\narrow\nCafé\n##s\n";

// A small state dict, F32 and the int64 buffer old checkpoints carry.
StateDict small_weights() {
  StateDict dict;
  dict["bert.embeddings.word_embeddings.weight"] =
      attn::make_float32({2, 3}, {0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -4.5f});
  dict["bert.embeddings.position_ids"] = attn::make_int64({1, 4}, {0, 1, 2, 3});
  dict["cls.predictions.bias"] = attn::make_float32({2}, {1.0f, -1.0f});
  return dict;
}

// A whole folder: config.json, model.safetensors, vocab.txt.
void write_folder(const fs::path& dir) {
  write(dir / "config.json", kConfig);
  write(dir / "model.safetensors", attn::serialize_safetensors(small_weights()));
  write(dir / "vocab.txt", kVocab);
}

// The same tensors in two shards and their index.
void write_sharded(const fs::path& dir) {
  write(dir / "config.json", kConfig);
  StateDict first, second;
  const StateDict all = small_weights();
  first["bert.embeddings.word_embeddings.weight"] =
      all.at("bert.embeddings.word_embeddings.weight");
  first["bert.embeddings.position_ids"] = all.at("bert.embeddings.position_ids");
  second["cls.predictions.bias"] = all.at("cls.predictions.bias");
  write(dir / "model-00001-of-00002.safetensors", attn::serialize_safetensors(first));
  write(dir / "model-00002-of-00002.safetensors", attn::serialize_safetensors(second));
  write(dir / "model.safetensors.index.json",
        R"({"metadata": {"total_size": 64}, "weight_map": {
             "cls.predictions.bias": "model-00002-of-00002.safetensors",
             "bert.embeddings.word_embeddings.weight": "model-00001-of-00002.safetensors",
             "bert.embeddings.position_ids": "model-00001-of-00002.safetensors"}})");
}

void check_small(const StateDict& dict) {
  REQUIRE(dict.size() == 3);
  CHECK(attn::to_float_vector(dict.at("bert.embeddings.word_embeddings.weight")) ==
        std::vector<float>{0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -4.5f});
  const Array& ids = dict.at("bert.embeddings.position_ids");
  CHECK(ids.dtype == attn::Dtype::int64);
  CHECK(ids.shape == attn::Shape{1, 4});
  CHECK(ids.integer(3) == 3);
  CHECK(attn::to_float_vector(dict.at("cls.predictions.bias")) == std::vector<float>{1.0f, -1.0f});
}

// Sets an environment variable for the test's scope, restoring it after.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string variable, const std::optional<std::string>& value)
      : name(std::move(variable)) {
    if (const char* was = std::getenv(name.c_str())) old = was;
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  ~ScopedEnv() {
    if (old) {
      ::setenv(name.c_str(), old->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
};

// huggingface_hub's layout: blobs/<hash> hold the files, snapshots/<commit>/ links to them,
// refs/main names the commit.
fs::path write_cache(const fs::path& hub, const std::string& folder) {
  const fs::path repo = hub / folder;
  const std::string commit = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567";
  const fs::path snapshot = repo / "snapshots" / commit;
  fs::create_directories(snapshot);
  fs::create_directories(repo / "blobs");
  write(repo / "refs" / "main", commit);
  const fs::path source = hub / "source";
  write_folder(source);
  for (const char* file : {"config.json", "model.safetensors", "vocab.txt"}) {
    const fs::path blob = repo / "blobs" / fmt::format("blob-{}", file);
    fs::copy_file(source / file, blob);
    fs::create_symlink(fs::path("../../blobs") / blob.filename(), snapshot / file);
  }
  fs::remove_all(source);
  return snapshot;
}

}  // namespace

TEST_CASE("a folder: config.json, model.safetensors and the tokenizer", "[pretrained]") {
  attn::testing::ScratchDir scratch("pretrained-folder");
  const fs::path dir = scratch.path / "bert-tiny";
  write_folder(dir);
  const attn::PretrainedFolder folder = attn::open_pretrained(dir.string());
  CHECK(folder.path == dir.string());
  CHECK(folder.shown == dir.string());
  CHECK(folder.model_type == "bert");
  CHECK(folder.architectures == std::vector<std::string>{"BertForMaskedLM"});
  REQUIRE(folder.weight_files == std::vector<std::string>{(dir / "model.safetensors").string()});
  CHECK(folder.file_bytes == fs::file_size(dir / "model.safetensors"));
  CHECK(folder.float32_bytes == 6 * 4 + 4 * 8 + 2 * 4);
  check_small(attn::read_pretrained_weights(folder));

  const attn::BertConfig config = attn::bert_config(folder);
  CHECK(config.sizes.hidden_size == 6);
  CHECK(config.sizes.num_attention_heads == 3);
  CHECK(config.sizes.vocab_size == 12);
  CHECK(config.type_vocab_size == 3);
  CHECK(config.pad_token_id == 0);

  SECTION("vocab.txt without tokenizer_config.json: BertTokenizer's defaults") {
    const attn::PretrainedTokenizer tokenizer = attn::bert_tokenizer(folder);
    CHECK(tokenizer.vocab.size() == 12);
    CHECK(tokenizer.options.lower_case);
    CHECK_FALSE(tokenizer.options.strip_accents.has_value());
  }
  SECTION("a cased tokenizer keeps case and accents") {
    write(dir / "tokenizer_config.json", R"({"do_lower_case": false, "strip_accents": null})");
    const attn::PretrainedTokenizer tokenizer = attn::bert_tokenizer(folder);
    CHECK_FALSE(tokenizer.options.lower_case);
    const attn::Encoding cased =
        attn::encode("Café flies", tokenizer.vocab, true, tokenizer.options);
    CHECK(cased.tokens == std::vector<std::string>{"[CLS]", "Café", "flies", "[SEP]"});
    const attn::Encoding lowered = attn::encode("Café flies", tokenizer.vocab, true);
    CHECK(lowered.tokens == std::vector<std::string>{"[CLS]", "[UNK]", "flies", "[SEP]"});
  }
  SECTION("tokenizer.json's WordPiece vocabulary when there is no vocab.txt") {
    fs::remove(dir / "vocab.txt");
    write(dir / "tokenizer.json",
          R"({"version": "1.0", "model": {"type": "WordPiece", "unk_token": "[UNK]",
              "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "time": 4}}})");
    write(dir / "tokenizer_config.json", R"({"do_lower_case": true, "strip_accents": false})");
    const attn::PretrainedTokenizer tokenizer = attn::bert_tokenizer(folder);
    CHECK(tokenizer.vocab.tokens ==
          std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "time"});
    CHECK(tokenizer.options.strip_accents == std::optional<bool>(false));
  }
  SECTION("tokenizer files that do not fit") {
    write(dir / "tokenizer_config.json", R"({"do_lower_case": "yes"})");
    CHECK_THAT(error_of([&] { attn::bert_tokenizer(folder); }),
               Catch::Contains("tokenizer_config.json': \"do_lower_case\" is \"yes\", expected "
                               "true, false or null"));
    fs::remove(dir / "tokenizer_config.json");
    fs::remove(dir / "vocab.txt");
    CHECK_THAT(error_of([&] { attn::bert_tokenizer(folder); }),
               Catch::Contains("has no vocab.txt and no tokenizer.json: download the tokenizer"));
    write(dir / "tokenizer.json", R"({"model": {"type": "BPE", "vocab": {}}})");
    CHECK_THAT(error_of([&] { attn::bert_tokenizer(folder); }),
               Catch::Contains("tokenizer.json' is not a WordPiece tokenizer") &&
                   Catch::Contains("give the folder BERT's vocab.txt"));
  }
}

TEST_CASE("F16 and BF16 tensors become float32 bit for bit as numpy and torch convert them",
          "[pretrained]") {
  // numpy: np.array(h, np.uint16).view(np.float16).astype(np.float32).view(np.uint32); torch's
  // .float() gives the same bits. Normal, largest, subnormal, signed zero, infinities, a NaN.
  const std::vector<std::uint16_t> half = {0x3c00, 0xc100, 0x7bff, 0x0001, 0x03ff, 0x0200,
                                           0x8001, 0x7c00, 0xfc00, 0x7e01, 0x8000, 0x3555};
  const std::vector<std::uint32_t> half_as_float = {0x3f800000, 0xc0200000, 0x477fe000, 0x33800000,
                                                    0x387fc000, 0x38000000, 0xb3800000, 0x7f800000,
                                                    0xff800000, 0x7fc02000, 0x80000000, 0x3eaaa000};
  // bfloat16 is a float32's upper half: 1, -5, the smallest subnormal, infinities, NaN, -0, 3.14.
  const std::vector<std::uint16_t> brain = {0x3f80, 0xc0a0, 0x0001, 0x7f80,
                                            0xff80, 0x7fc1, 0x8000, 0x4049};
  const std::vector<std::uint32_t> brain_as_float = {0x3f800000, 0xc0a00000, 0x00010000,
                                                     0x7f800000, 0xff800000, 0x7fc10000,
                                                     0x80000000, 0x40490000};
  const std::vector<unsigned char> file =
      raw_safetensors({{"half", "F16", {3, 4}, le16(half)}, {"brain", "BF16", {8}, le16(brain)}});

  SECTION("read from a folder") {
    attn::testing::ScratchDir scratch("pretrained-half");
    write(scratch.path / "config.json", kConfig);
    write(scratch.path / "model.safetensors", file);
    const attn::PretrainedFolder folder = attn::open_pretrained(scratch.path.string());
    CHECK(folder.file_bytes == file.size());
    CHECK(folder.float32_bytes == (12 + 8) * 4);
    const StateDict dict = attn::read_pretrained_weights(folder);
    CHECK(dict.at("half").shape == attn::Shape{3, 4});
    CHECK(float_bits(dict.at("half")) == half_as_float);
    CHECK(float_bits(dict.at("brain")) == brain_as_float);
  }
  SECTION("parse_safetensors (--weights) converts them too") {
    const StateDict dict = attn::parse_safetensors(file, "half.safetensors");
    CHECK(float_bits(dict.at("half")) == half_as_float);
    CHECK(float_bits(dict.at("brain")) == brain_as_float);
  }
  SECTION("other dtypes are refused naming the key and the dtype") {
    attn::testing::ScratchDir scratch("pretrained-u8");
    write(scratch.path / "config.json", kConfig);
    write(scratch.path / "model.safetensors", raw_safetensors({{"mask", "U8", {2}, {1, 0}}}));
    const attn::PretrainedFolder folder = attn::open_pretrained(scratch.path.string());
    CHECK_THAT(error_of([&] { attn::read_pretrained_weights(folder); }),
               Catch::Contains("tensor 'mask' has dtype U8") &&
                   Catch::Contains("convert with `.float()`"));
  }
}

TEST_CASE("a sharded folder: the index and each shard once", "[pretrained]") {
  attn::testing::ScratchDir scratch("pretrained-shards");
  const fs::path dir = scratch.path;
  write_sharded(dir);
  const attn::PretrainedFolder folder = attn::open_pretrained(dir.string());
  // The index's order: the first tensor it lists is in the second shard.
  CHECK(folder.weight_files ==
        std::vector<std::string>{(dir / "model-00002-of-00002.safetensors").string(),
                                 (dir / "model-00001-of-00002.safetensors").string()});
  CHECK(folder.file_bytes == fs::file_size(dir / "model-00001-of-00002.safetensors") +
                                 fs::file_size(dir / "model-00002-of-00002.safetensors"));
  check_small(attn::read_pretrained_weights(folder));
}

TEST_CASE("a name in the Hugging Face cache: HF_HUB_CACHE, else HF_HOME/hub", "[pretrained]") {
  attn::testing::ScratchDir scratch("pretrained-cache");
  const fs::path home = scratch.path / "hf-home";
  const fs::path snapshot = write_cache(home / "hub", "models--google--bert_uncased_L-2_H-128_A-2");
  write_cache(home / "hub", "models--bert-base-uncased");
  // Run from the scratch folder, so that no folder of the checkout shadows a name.
  struct ScopedCwd {
    fs::path was = fs::current_path();
    explicit ScopedCwd(const fs::path& to) { fs::current_path(to); }
    ~ScopedCwd() { fs::current_path(was); }
  } cwd(scratch.path);

  SECTION("HF_HOME") {
    ScopedEnv hub_cache("HF_HUB_CACHE", std::nullopt);
    ScopedEnv legacy("HUGGINGFACE_HUB_CACHE", std::nullopt);
    ScopedEnv hf_home("HF_HOME", home.string());
    const attn::PretrainedFolder folder =
        attn::open_pretrained("google/bert_uncased_L-2_H-128_A-2");
    CHECK(folder.path == snapshot.string());
    CHECK(folder.shown == "google/bert_uncased_L-2_H-128_A-2");
    check_small(attn::read_pretrained_weights(folder));
    CHECK(attn::bert_tokenizer(folder).vocab.size() == 12);
    CHECK(attn::open_pretrained("bert-base-uncased").model_type == "bert");

    SECTION("a folder of that name here wins over the cache") {
      write_folder(scratch.path / "bert-base-uncased");
      CHECK(attn::open_pretrained("bert-base-uncased").path == "bert-base-uncased");
    }
    SECTION("a name not in the cache says how to download it") {
      const std::string message = error_of([] { attn::open_pretrained("bert-large-cased"); });
      CHECK_THAT(message, Catch::Contains("'bert-large-cased' is neither a folder here nor a "
                                          "model in the Hugging Face cache (" +
                                          (home / "hub").string() + ")"));
      CHECK_THAT(message, Catch::Contains("attn never downloads") &&
                              Catch::Contains("huggingface-cli download bert-large-cased "
                                              "--local-dir bert-large-cased"));
    }
  }
  SECTION("HF_HUB_CACHE wins over HF_HOME") {
    ScopedEnv hf_home("HF_HOME", (scratch.path / "elsewhere").string());
    ScopedEnv hub_cache("HF_HUB_CACHE", (home / "hub").string());
    CHECK(attn::open_pretrained("bert-base-uncased").path ==
          (home / "hub" / "models--bert-base-uncased" / "snapshots" /
           "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567")
              .string());
  }
}

TEST_CASE("every bad folder gets one line naming the file and the fix", "[pretrained]") {
  attn::testing::ScratchDir scratch("pretrained-bad");
  const fs::path dir = scratch.path / "model";
  write_folder(dir);
  const auto open_error = [&] { return error_of([&] { attn::open_pretrained(dir.string()); }); };
  const std::string config = (dir / "config.json").string();

  SECTION("no config.json") {
    fs::remove(dir / "config.json");
    CHECK_THAT(open_error(), Catch::Contains("'" + dir.string() +
                                             "' has no config.json: give "
                                             "the whole folder"));
  }
  SECTION("config.json is not JSON") {
    write(dir / "config.json", "{\"model_type\": ");
    CHECK_THAT(open_error(), Catch::Contains("'" + config + "' is not JSON") &&
                                 Catch::Contains("a Hugging Face config.json is one JSON object"));
  }
  SECTION("config.json is not an object") {
    write(dir / "config.json", "[1, 2]");
    CHECK_THAT(open_error(), Catch::Contains("'" + config + "' holds JSON array, not an object"));
  }
  SECTION("config.json has no model_type") {
    write(dir / "config.json", R"({"hidden_size": 6})");
    CHECK_THAT(open_error(), Catch::Contains("'" + config + "' has no \"model_type\"") &&
                                 Catch::Contains("\"model_type\": \"bert\""));
  }
  SECTION("a field of the wrong type") {
    write(dir / "config.json", R"({"model_type": "bert", "hidden_size": "768"})");
    const attn::PretrainedFolder folder = attn::open_pretrained(dir.string());
    CHECK_THAT(error_of([&] { attn::bert_config(folder); }),
               Catch::Contains("'" + config +
                               "': \"hidden_size\" is \"768\", expected a whole "
                               "number"));
    write(dir / "config.json", R"({"model_type": "bert", "type_vocab_size": 0})");
    CHECK_THAT(error_of([&] { attn::bert_config(attn::open_pretrained(dir.string())); }),
               Catch::Contains("\"type_vocab_size\" is 0, expected a size from 1"));
    write(dir / "config.json", R"({"model_type": "bert", "pad_token_id": 1.5})");
    CHECK_THAT(error_of([&] { attn::bert_config(attn::open_pretrained(dir.string())); }),
               Catch::Contains("\"pad_token_id\" is 1.5, expected an id from 0 to 30521"));
    write(dir / "config.json", R"({"model_type": 7})");
    CHECK_THAT(open_error(), Catch::Contains("\"model_type\" is 7, expected a string"));
  }
  SECTION("GPT-2 and relative positions are not BERT") {
    write(dir / "config.json", R"({"model_type": "gpt2", "n_embd": 768})");
    CHECK_THAT(error_of([&] { attn::bert_config(attn::open_pretrained(dir.string())); }),
               Catch::Contains("model_type 'gpt2' is not BERT (\"bert\")"));
    write(dir / "config.json",
          R"({"model_type": "bert", "position_embedding_type": "relative_key"})");
    CHECK_THAT(error_of([&] { attn::bert_config(attn::open_pretrained(dir.string())); }),
               Catch::Contains("position_embedding_type is \"relative_key\"") &&
                   Catch::Contains("give a checkpoint with absolute positions"));
  }
  SECTION("no weights") {
    fs::remove(dir / "model.safetensors");
    CHECK_THAT(open_error(), Catch::Contains("has no model.safetensors and no "
                                             "model.safetensors.index.json"));
  }
  SECTION("only pytorch_model.bin") {
    fs::remove(dir / "model.safetensors");
    write(dir / "pytorch_model.bin", std::string("\x80\x02}q\x00.", 6));
    const std::string message = open_error();
    CHECK_THAT(message, Catch::Contains("has pytorch_model.bin but no model.safetensors") &&
                            Catch::Contains("a pickle") && Catch::Contains("will not load it"));
    CHECK_THAT(message, Catch::Contains("torch.load('" + (dir / "pytorch_model.bin").string()) &&
                            Catch::Contains("save_file(") &&
                            Catch::Contains((dir / "model.safetensors").string()));
  }
  SECTION("only TensorFlow weights") {
    fs::remove(dir / "model.safetensors");
    write(dir / "tf_model.h5", "HDF");
    CHECK_THAT(open_error(), Catch::Contains("has only tf_model.h5") &&
                                 Catch::Contains("safe_serialization=True"));
  }
  SECTION("a truncated model.safetensors") {
    const std::vector<unsigned char> bytes = attn::serialize_safetensors(small_weights());
    write(dir / "model.safetensors", std::vector<unsigned char>(bytes.begin(), bytes.end() - 3));
    CHECK_THAT(open_error(), Catch::Contains((dir / "model.safetensors").string()) &&
                                 Catch::Contains("it is truncated") &&
                                 Catch::Contains("save it again"));
  }
  SECTION("a header that lies about sizes") {
    write(dir / "model.safetensors",
          raw_safetensors({{"w", "F32", {3}, std::vector<unsigned char>(8)}}));
    CHECK_THAT(open_error(), Catch::Contains("tensor 'w' is (3,) of F32, which takes 12 bytes, "
                                             "but its data_offsets [0, 8] hold 8"));
  }
  SECTION("a folder that is a file") {
    CHECK_THAT(error_of([&] { attn::open_pretrained(config); }),
               Catch::Contains("'" + config + "' is a file, not a folder: give the folder"));
  }
  SECTION("a path that does not exist") {
    CHECK_THAT(error_of([&] { attn::open_pretrained((scratch.path / "nothing").string()); }),
               Catch::Contains("nothing' does not exist: give a folder with config.json"));
  }
  SECTION("a file that shrinks after the folder was opened") {
    const attn::PretrainedFolder folder = attn::open_pretrained(dir.string());
    const std::vector<unsigned char> bytes = attn::serialize_safetensors(small_weights());
    write(dir / "model.safetensors", std::vector<unsigned char>(bytes.begin(), bytes.end() - 8));
    CHECK_THAT(error_of([&] { attn::read_pretrained_weights(folder); }),
               Catch::Contains("changed while attn read it") &&
                   Catch::Contains("wait for the download or copy to finish"));
  }
}

TEST_CASE("every bad set of shards gets one line naming the file and the fix", "[pretrained]") {
  attn::testing::ScratchDir scratch("pretrained-bad-shards");
  const fs::path dir = scratch.path;
  write_sharded(dir);
  const auto open_error = [&] { return error_of([&] { attn::open_pretrained(dir.string()); }); };
  const std::string index = (dir / "model.safetensors.index.json").string();
  const std::string first = (dir / "model-00001-of-00002.safetensors").string();

  SECTION("a shard missing") {
    fs::remove(first);
    CHECK_THAT(open_error(), Catch::Contains("'" + first + "' is missing ('" + index +
                                             "' lists it): download the folder again"));
  }
  SECTION("a tensor in two shards") {
    StateDict both;
    both["cls.predictions.bias"] = attn::make_float32({2}, {1.0f, -1.0f});
    both["bert.embeddings.position_ids"] = attn::make_int64({1, 4}, {0, 1, 2, 3});
    write(dir / "model-00002-of-00002.safetensors", attn::serialize_safetensors(both));
    CHECK_THAT(open_error(), Catch::Contains("tensor 'bert.embeddings.position_ids' is in two "
                                             "shards, model-00002-of-00002.safetensors and "
                                             "model-00001-of-00002.safetensors"));
  }
  SECTION("the index names a tensor its shard lacks") {
    StateDict less;
    less["bert.embeddings.position_ids"] = attn::make_int64({1, 4}, {0, 1, 2, 3});
    write(first, attn::serialize_safetensors(less));
    CHECK_THAT(open_error(), Catch::Contains("'" + index +
                                             "' puts tensor 'bert.embeddings.word_embeddings."
                                             "weight' in '" +
                                             first + "', which does not have it"));
  }
  SECTION("a shard holds a tensor the index does not list") {
    StateDict more = small_weights();
    more.erase("cls.predictions.bias");
    more["extra"] = attn::make_float32({1}, {0.0f});
    write(first, attn::serialize_safetensors(more));
    CHECK_THAT(open_error(), Catch::Contains("'" + first + "' holds tensor 'extra', which '" +
                                             index + "' does not give to it"));
  }
  SECTION("a truncated shard") {
    const std::vector<unsigned char> bytes = attn::read_file(first, "test");
    write(first, std::vector<unsigned char>(bytes.begin(), bytes.end() - 4));
    CHECK_THAT(open_error(), Catch::Contains(first) && Catch::Contains("it is truncated"));
  }
  SECTION("an index without a weight_map, or naming a file outside the folder") {
    write(index, R"({"metadata": {}})");
    CHECK_THAT(open_error(), Catch::Contains("'" + index + "' has no \"weight_map\" object"));
    write(index, R"({"weight_map": {"w": "../model.safetensors"}})");
    CHECK_THAT(open_error(), Catch::Contains("tensor 'w' maps to \"../model.safetensors\", not a "
                                             ".safetensors file of the folder"));
  }
}

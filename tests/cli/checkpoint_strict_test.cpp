// --checkpoint read as strictly as --weights: hostile checkpoints, each made here from the shipped
// reverse (or transformer-reverse) by changing one thing, are refused with one line that names
// --checkpoint and what is wrong; NaN weights are announced; a bare name is always a shipped
// checkpoint, and the header says which was read.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "io/weights.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;

namespace {

struct Checkpoint {
  attn::StateDict weights;
  attn::Metadata metadata;
};

Checkpoint shipped(const std::string& name) {
  Checkpoint c;
  c.weights = attn::read_weights(
      (fs::path(ATTN_SOURCE_DIR) / "data" / "checkpoints" / (name + ".safetensors")).string(),
      &c.metadata);
  c.metadata.erase("format");  // serialize_safetensors writes it again
  return c;
}

void write(const fs::path& path, const Checkpoint& c) {
  const std::vector<unsigned char> bytes = attn::serialize_safetensors(c.weights, c.metadata);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<long>(bytes.size()));
}

// The shipped checkpoint `from` with its attn_model changed by `change`.
Checkpoint with_model(const std::string& from, const std::function<void(nlohmann::json&)>& change) {
  Checkpoint c = shipped(from);
  nlohmann::json model = nlohmann::json::parse(c.metadata.at("attn_model"));
  change(model);
  c.metadata["attn_model"] = model.dump();
  return c;
}

Checkpoint with_model_text(const std::string& from, const std::string& text) {
  Checkpoint c = shipped(from);
  c.metadata["attn_model"] = text;
  return c;
}

struct Case {
  std::string file;
  Checkpoint checkpoint;
  std::vector<std::string> says;  // parts of the one line on stderr
  std::string command = "encoder";
};

void check_refused(const std::vector<std::string>& args, const std::vector<std::string>& says) {
  const auto run = run_attn(args);
  INFO("attn " << args.front() << " " << args[2] << "\nstderr: " << run.err);
  CHECK(run.exit_code == 2);
  CHECK(run.out.empty());
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  CHECK(run.err.find(": --checkpoint: ") != std::string::npos);
  CHECK(run.err.find("--weights") == std::string::npos);
  CHECK(run.err.find('\x1b') == std::string::npos);  // escapes are shown, not sent
  for (const std::string& part : says)
    CHECK(run.err.find(part) != std::string::npos);
}

}  // namespace

TEST_CASE("a checkpoint's tensors are exactly its model's, float32, named as the file names them",
          "[cli][checkpoint][bad-input]") {
  attn::testing::ScratchDir dir("checkpoint-tensors");
  std::vector<Case> cases;
  {
    Checkpoint c = shipped("reverse");
    c.weights["evil\x1b[2J"] = attn::make_float32({1}, {0.0f});
    cases.push_back({"extra.safetensors", c, {"unexpected evil\\x1b[2J"}});
  }
  {
    Checkpoint c = shipped("reverse");
    const attn::Array& a = c.weights.at("encoder.embeddings.token_embeddings.weight");
    const std::vector<float> values = attn::to_float_vector(a);
    attn::Array wide{attn::Dtype::float64, a.shape,
                     std::vector<unsigned char>(values.size() * sizeof(double))};
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double v = values[i];
      std::memcpy(wide.bytes.data() + i * sizeof(double), &v, sizeof(double));
    }
    c.weights["encoder.embeddings.token_embeddings.weight"] = wide;
    cases.push_back(
        {"f64.safetensors", c, {"encoder.embeddings.token_embeddings.weight has dtype float64"}});
  }
  cases.push_back(
      {"layers1.safetensors",
       with_model("reverse", [](nlohmann::json& m) { m["layers"] = 1; }),
       {"does not fit its own attn_model (layers 1, d_model 32, heads 2, d_ff 64): unexpected "
        "encoder.layers.1."}});
  cases.push_back({"layers3.safetensors",
                   with_model("reverse", [](nlohmann::json& m) { m["layers"] = 3; }),
                   {"missing encoder.layers.2."}});
  cases.push_back(
      {"tokens1e6.safetensors",
       with_model("reverse", [](nlohmann::json& m) { m["tokens"] = 1000000; }),
       {"encoder.embeddings.position_embeddings.weight is (8, 32) but the model needs (1000000, "
        "32)"}});
  cases.push_back({"layers1e9.safetensors",
                   with_model("reverse", [](nlohmann::json& m) { m["layers"] = 16000000; }),
                   {"16000000 layers of 2 heads need more tensors than the file's"}});
  {
    Checkpoint c = shipped("transformer-reverse");
    c.weights.erase("target_positional_encoding.pe");
    cases.push_back(
        {"no_pe.safetensors", c, {"missing target_positional_encoding.pe"}, "generate"});
  }
  {
    Checkpoint c = shipped("transformer-reverse");
    c.weights["decoder.extra"] = attn::make_float32({1}, {0.0f});
    cases.push_back({"seq2seq_extra.safetensors", c, {"unexpected decoder.extra"}, "generate"});
  }
  for (const Case& c : cases) {
    write(dir.path / c.file, c.checkpoint);
    check_refused({c.command, "--checkpoint", (dir.path / c.file).string()}, c.says);
  }
}

TEST_CASE(
    "a checkpoint's attn_model is the JSON attn train writes: each field, no other, each "
    "value one it may be",
    "[cli][checkpoint][bad-input]") {
  attn::testing::ScratchDir dir("checkpoint-metadata");
  const auto set = [](const char* field, nlohmann::json value) {
    return with_model("reverse", [=](nlohmann::json& m) { m[field] = value; });
  };
  const std::vector<Case> cases = {
      {"norm_evil.safetensors",
       set("norm", "sideways"),
       {"attn_model's \"norm\" is \"sideways\": it may be \"pre\" or \"post\""}},
      {"norm_number.safetensors",
       set("norm", 1),
       {"attn_model's \"norm\" is 1, not a string: it may be \"pre\" or \"post\""}},
      {"kind_evil.safetensors",
       set("kind", "gpt"),
       {"attn_model's \"kind\" is \"gpt\": it may be \"transformer\""}},
      {"task_evil.safetensors",
       set("task", "../../etc/passwd\x1b]0;x\x07"),
       {"attn_model's \"task\" is \"../../etc/passwd\\u001b]0;x\\u0007\": it may be reverse, sort"}},
      {"dmodel_neg.safetensors",
       set("d_model", -32),
       {"attn_model's \"d_model\" is -32: it may be a whole number from 1 to 16777216"}},
      {"dmodel_float.safetensors",
       set("d_model", 32.5),
       {"attn_model's \"d_model\" is 32.5: it may be a whole number"}},
      {"dmodel_big.safetensors",
       set("d_model", std::uint64_t{1} << 62),
       {"attn_model's \"d_model\" is 4611686018427387904: it may be a whole number"}},
      {"dmodel_text.safetensors", set("d_model", "32"), {"attn_model's \"d_model\" is \"32\""}},
      {"heads3.safetensors", set("heads", 3), {"attn_model's \"heads\""}},
      {"vocab27.safetensors", set("vocab", 27), {"attn_model's \"vocab\": 27 tokens"}},
      {"classes.safetensors", set("classes", 9), {"its \"classes\" 9 do not fit its task reverse"}},
      {"missing.safetensors",
       with_model("reverse", [](nlohmann::json& m) { m.erase("norm"); }),
       {"attn_model has no \"norm\": an encoder's attn_model holds task, vocab, tokens, classes, "
        "layers, d_model, heads, d_ff and norm"}},
      {"unknown.safetensors",
       set("colour\x1b[31m", "blue"),
       {"attn_model has a field \"colour\\x1b[31m\" that attn train does not write"}},
      {"notjson.safetensors",
       with_model_text("reverse", "not json"),
       {"its attn_model is not JSON (syntax error while parsing value - invalid literal at byte "
        "2)"}},
      {"trailing.safetensors",
       with_model_text("reverse", shipped("reverse").metadata.at("attn_model") + "garbage"),
       {"its attn_model is not JSON (syntax error while parsing value - invalid literal at byte "
        "109)"}},
      {"deep.safetensors",
       with_model_text("reverse", std::string(100000, '[') + std::string(100000, ']')),
       {"its attn_model is not JSON attn reads: it nests deeper than 64 levels (at byte 64)"}},
      {"array.safetensors",
       with_model_text("reverse", "[1, 2]"),
       {"its attn_model is a JSON array, not the object attn train writes"}},
      {"seq2seq_vocab.safetensors",
       with_model("transformer-reverse", [](nlohmann::json& m) { m["source_vocab"] = 10; }),
       {"its vocabularies and positions do not fit its task reverse"},
       "generate"},
      {"seq2seq_norm.safetensors",
       with_model("transformer-reverse", [](nlohmann::json& m) { m["norm"] = "sideways"; }),
       {"attn_model's \"norm\" is \"sideways\""},
       "generate"},
  };
  for (const Case& c : cases) {
    write(dir.path / c.file, c.checkpoint);
    check_refused({c.command, "--checkpoint", (dir.path / c.file).string()}, c.says);
  }
  // A field's metadata is refused before its tensors are read, and the message says how to make one.
  const auto run =
      run_attn({"encoder", "--checkpoint", (dir.path / "norm_evil.safetensors").string()});
  CHECK(run.err.find("make one with `attn train --save-checkpoint FILE.safetensors`") !=
        std::string::npos);
}

TEST_CASE("NaN and infinite weights in a checkpoint are announced on every command that reads it",
          "[cli][checkpoint]") {
  attn::testing::ScratchDir dir("checkpoint-nan");
  for (const std::string name : {"reverse", "transformer-reverse"}) {
    Checkpoint c = shipped(name);
    // The encoder's LayerNorms; the encoder-decoder's <pad> embedding, which greedy decoding
    // never reads, so that it still decodes.
    const std::string key = name == "reverse" ? "encoder.embeddings.layer_norm.weight"
                                              : "target_embedding.embedding.weight";
    attn::Array& array = c.weights.at(key);
    std::vector<float> values = attn::to_float_vector(array);
    std::fill(values.begin(), values.begin() + static_cast<long>(array.shape.back()),
              std::numeric_limits<float>::quiet_NaN());
    array = attn::make_float32(array.shape, values);
    write(dir.path / (name + "-nan.safetensors"), c);
  }
  const std::string encoder_file = (dir.path / "reverse-nan.safetensors").string();
  const std::string seq2seq_file = (dir.path / "transformer-reverse-nan.safetensors").string();
  const std::vector<std::vector<std::string>> commands = {
      {"encoder", "--checkpoint", encoder_file},
      {"attention", "--checkpoint", encoder_file},
      {"multi-head", "--checkpoint", encoder_file},
      {"view", "head", "--checkpoint", encoder_file, "--color", "never"},
      {"generate", "--checkpoint", seq2seq_file},
      {"cross-attention", "--checkpoint", seq2seq_file},
  };
  for (const auto& args : commands) {
    const auto run = run_attn(args);
    INFO("attn " << args[0] << "\nstderr: " << run.err);
    CHECK(run.exit_code != 2);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
    CHECK(run.err.find(": warning: --checkpoint '" +
                       (args[0] == "generate" || args[0] == "cross-attention" ? seq2seq_file
                                                                              : encoder_file) +
                       "' (") != std::string::npos);
    CHECK(run.err.find(" NaN (the first at [0") != std::string::npos);
  }
  // The shipped checkpoints are finite: no warning.
  const auto clean = run_attn({"encoder", "--checkpoint", "reverse"});
  CHECK(clean.exit_code == 0);
  CHECK(clean.err.empty());
}

TEST_CASE(
    "a bare --checkpoint name is always a shipped checkpoint, a path is a file, and the "
    "header says which was read",
    "[cli][checkpoint]") {
  attn::testing::ScratchDir dir("checkpoint-names");
  write(dir.path / "reverse", shipped("sort"));  // a local file named like a shipped checkpoint
  write(dir.path / "mine.safetensors", shipped("sort"));
  const fs::path before = fs::current_path();
  fs::current_path(dir.path);

  const auto first_line = [](const std::string& text) { return text.substr(0, text.find('\n')); };
  const auto bare = run_attn({"encoder", "--checkpoint", "reverse"});
  INFO(bare.err);
  CHECK(bare.exit_code == 0);
  CHECK(first_line(bare.out).find("checkpoint reverse (shipped)") != std::string::npos);
  CHECK(first_line(bare.out).find("config reverse") != std::string::npos);  // not sort

  const auto local = run_attn({"encoder", "--checkpoint", "./reverse"});
  CHECK(local.exit_code == 0);
  CHECK(first_line(local.out).find("checkpoint ./reverse)") != std::string::npos);
  const auto path = run_attn({"attention", "--checkpoint", "mine.safetensors"});
  CHECK(path.exit_code == 0);
  CHECK(first_line(path.out).find("checkpoint mine.safetensors,") != std::string::npos);

  const auto view = run_attn({"view", "head", "--checkpoint", "reverse", "--color", "never"});
  CHECK(first_line(view.out) == "checkpoint reverse (shipped, the book's encoder, task reverse)");
  const auto view_file =
      run_attn({"view", "head", "--checkpoint", "./reverse", "--color", "never"});
  CHECK(first_line(view_file.out) == "checkpoint ./reverse (the book's encoder, task sort)");
  const auto generate = run_attn({"generate"});
  CHECK(first_line(generate.out).find("(checkpoint transformer-reverse (shipped), task reverse") !=
        std::string::npos);

  check_refused(
      {"encoder", "--checkpoint", "mine"},
      {"'mine' is not a shipped checkpoint (a bare name is always one): give one of gpt-char, "
       "histogram, induction, previous-minus-mirror, previous-token, reverse, sort, "
       "transformer-reverse, or ./mine.safetensors for the file here"});
  check_refused(
      {"encoder", "--checkpoint", "yours"},
      {"'yours' is not a shipped checkpoint (a bare name is always one): give one of gpt-char, "
       "histogram, induction, previous-minus-mirror, previous-token, reverse, sort, "
       "transformer-reverse, or ./yours for the file here"});
  check_refused({"encoder", "--checkpoint", "reverse.safetensors"},
                {"'reverse.safetensors' does not exist: give a .safetensors from attn train, or a "
                 "shipped checkpoint by its bare name (reverse)"});
  check_refused({"encoder", "--checkpoint", "../checkpoints/reverse"},
                {"'../checkpoints/reverse' does not exist"});
  fs::current_path(before);
}

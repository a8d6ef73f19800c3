// --max-memory is a promise about the peak: runs accepted at a limit just above their estimate
// peak within that limit plus a fixed base, and runs refused for their sizes peak within the base.
// The estimate is the one a refusal prints ("these sizes need about 1.43 GiB"), read from a run at
// a limit of one byte. Memory is the child's ru_maxrss; nothing here asserts on time.
#include <cmath>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "bert.hpp"
#include "fixtures.hpp"
#include "gpt2.hpp"
#include "io/weights.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

using attn::testing::run_attn;

namespace {

constexpr double kMiB = 1 << 20;
// What attn takes before it plans anything, for any sizes: the executable and its libraries
// (OpenBLAS with its buffers, the C++ runtime), the lesson texts and the allocator's slack.
// `attn dot-product --quiet` peaks at about 10 MiB; 40 MiB leaves room for other machines'
// libraries.
constexpr double kBase = 40 * kMiB;

std::string command_line(const std::vector<std::string>& args) {
  std::string command = "attn";
  for (const std::string& a : args)
    command += " " + a;
  return command;
}

// The estimate a refusal prints, in bytes; 0 when the line has none. A checkpoint too large to
// read says its own size ("is 176 KiB", "would take up to 256 KiB to parse").
double printed_estimate(const std::string& err) {
  static const std::regex need("(?:need about|is|up to) ([0-9.]+) (bytes|KiB|MiB|GiB|TiB)");
  std::smatch m;
  if (!std::regex_search(err, m, need)) return 0.0;
  const std::string unit = m[2];
  const double scale = unit == "bytes" ? 1.0
                       : unit == "KiB" ? 1024.0
                       : unit == "MiB" ? kMiB
                       : unit == "GiB" ? 1024.0 * kMiB
                                       : 1024.0 * 1024.0 * kMiB;
  return std::stod(m[1]) * scale;
}

// A BertForMaskedLM folder in Hugging Face's layout whose word table (100,000 x 256, 98 MiB) is most
// of its 118 MiB: a plan that forgot a copy of it would be found out.
std::string bert_folder(const std::filesystem::path& dir) {
  attn::BertConfig config;
  config.sizes.hidden_size = 256;
  config.sizes.num_attention_heads = 4;
  config.sizes.intermediate_size = 1024;
  config.sizes.num_hidden_layers = 2;
  config.sizes.vocab_size = 100000;
  config.sizes.max_position_embeddings = 512;
  attn::Rng rng(28);
  const attn::Bert model = attn::init_bert(rng, config, attn::BertHeads::masked_lm);
  std::filesystem::create_directories(dir);
  attn::write_weights((dir / "model.safetensors").string(), attn::bert_state_dict(model),
                      {{"format", "pt"}});
  std::ofstream(dir / "config.json")
      << R"({"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 256,
             "num_attention_heads": 4, "intermediate_size": 1024, "num_hidden_layers": 2,
             "vocab_size": 100000, "max_position_embeddings": 512, "type_vocab_size": 2})";
  std::ofstream(dir / "vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ntime\nflies\nlike\nan\n"
                                      "arrow\n";
  return dir.string();
}

// A GPT2LMHeadModel folder of the same build (wte 100,000 x 256, 98 MiB, also its LM head), with
// the small fixture's tokenizer (297 tokens, all within the vocabulary).
std::string gpt2_folder(const std::filesystem::path& dir) {
  attn::Gpt2Config config = attn::default_gpt2_config();
  config.sizes.hidden_size = 256;
  config.sizes.num_attention_heads = 4;
  config.sizes.intermediate_size = 1024;
  config.sizes.num_hidden_layers = 2;
  config.sizes.vocab_size = 100000;
  config.sizes.max_position_embeddings = 512;
  attn::Rng rng(29);
  const attn::Gpt2 model = attn::init_gpt2(rng, config);
  std::filesystem::create_directories(dir);
  attn::write_weights((dir / "model.safetensors").string(), attn::gpt2_state_dict(model),
                      {{"format", "pt"}});
  std::ofstream(dir / "config.json")
      << R"({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 256,
             "n_head": 4, "n_layer": 2, "vocab_size": 100000, "n_positions": 512,
             "bos_token_id": 99999, "eos_token_id": 99999})";
  for (const char* file : {"vocab.json", "merges.txt"})
    std::filesystem::copy_file(attn::testing::fixture_path(std::string("gpt2/d21_lm/") + file),
                               dir / file);
  return dir.string();
}

}  // namespace

TEST_CASE("a run accepted at 1.01 times its estimate peaks within that limit", "[cli][memory]") {
  attn::testing::ScratchDir dir("memory-peak");
  const std::string saved = (dir.path / "saved").string();
  const std::string page = (dir.path / "view.html").string();
  const std::string bert = bert_folder(dir.path / "bert");
  const std::string gpt2 = gpt2_folder(dir.path / "gpt2");
  const std::vector<std::vector<std::string>> runs = {
      {"dot-product", "--seq", "2500", "--d-model", "8"},
      {"dot-product", "--seq", "700", "--d-model", "8", "--format", "json"},
      {"dot-product", "--seq", "1000", "--d-model", "8", "--full"},
      {"scaling", "--seq", "64", "--batch", "500"},
      {"softmax", "--seq", "600", "--mask", "causal", "--format", "json"},
      {"attention", "--seq", "2000"},
      {"attention", "--seq", "1500", "--save", saved},
      {"multi-head", "--seq", "1200", "--heads", "2"},
      {"multi-head", "--seq", "1000", "--heads", "4", "--d-model", "64", "--variant", "fused"},
      {"positional-encoding", "--max-positions", "500000", "--d-model", "16"},
      {"layer-norm", "--seq", "100000", "--d-model", "32"},
      {"feed-forward", "--seq", "10000", "--d-model", "64"},
      {"tokens", "--text", "hello", "--d-model", "30000"},
      {"tokens", "--text", "hello", "--d-model", "1500", "--format", "json"},
      {"encoder", "--layers", "20000"},
      {"encoder", "--no-embeddings", "--seq", "1500", "--max-positions", "1500", "--quiet"},
      {"train", "--steps", "40", "--batch", "1000", "--quiet"},
      {"train", "--model", "transformer", "--task", "number-words", "--d-model", "8", "--d-ff", "8",
       "--layers", "1", "--steps", "2", "--quiet"},
      {"generate", "--quiet"},
      {"view", "model", "--config", "bert-base", "--export", page},
      {"encoder", "--pretrained", bert, "--text", "time flies like an [MASK]", "--quiet"},
      {"view", "model", "--pretrained", bert, "--export", page},
      {"attention", "--pretrained", bert, "--layer", "1", "--head", "3"},
      {"backward", "--pretrained", bert, "--layer", "1", "--quiet"},
      {"tokens", "--pretrained", bert},
      {"generate", "--pretrained", gpt2, "--text", "The cat sat", "--max-new-tokens", "100"},
      {"generate", "--pretrained", gpt2, "--max-new-tokens", "3", "--save", saved, "--quiet"},
      {"view", "model", "--pretrained", gpt2, "--export", page},
      {"multi-head", "--pretrained", gpt2, "--layer", "1"},
      {"tokens", "--pretrained", gpt2},
      {"summary", "decoder", "--layers", "5000", "--format", "json"},
      {"summary", "transformer", "--layers", "3000"},
      {"decoder", "--seq", "600", "--source-seq", "600"},
      {"decoder", "--seq", "100", "--vocab", "100000", "--d-model", "64"},
      {"cross-attention", "--seq", "1000", "--source-seq", "1500"},
      {"cross-attention", "--seq", "300", "--source-seq", "400", "--batch", "4", "--heads", "4",
       "--d-model", "64", "--source-lengths", "400,100,300,20"},
  };
  for (const std::vector<std::string>& args : runs) {
    INFO(command_line(args));
    std::vector<std::string> probe = args;
    probe.insert(probe.end(), {"--max-memory", "1"});
    const auto refused = run_attn(probe);
    INFO("at a limit of 1 byte: " << refused.err);
    REQUIRE(refused.exit_code == 2);
    double estimate = printed_estimate(refused.err);
    REQUIRE(estimate > 0.0);
    // The printed estimate has three digits: one percent more is a limit just above it. A command
    // that checks in stages (a checkpoint's size as it is read, then the run's plan) prints the
    // next stage's larger need at that limit: the limit follows it, a few stages at most.
    attn::testing::RunResult result;
    for (int stage = 0; stage < 3; ++stage) {
      std::vector<std::string> accepted = args;
      accepted.insert(
          accepted.end(),
          {"--max-memory", std::to_string(static_cast<long>(std::ceil(estimate * 1.01)))});
      std::filesystem::remove_all(saved);
      std::filesystem::remove(page);
      result = run_attn(accepted);
      const double next = printed_estimate(result.err);
      if (result.exit_code != 2 || !(next > estimate)) break;
      estimate = next;
    }
    INFO("stderr: " << result.err);
    INFO("estimate " << estimate / kMiB << " MiB, peak " << result.max_rss_bytes / kMiB << " MiB");
    CHECK(result.exit_code == 0);
    CHECK(attn::testing::peak_within(result.max_rss_bytes, std::ceil(estimate * 1.01) + kBase));
  }
}

TEST_CASE("sizes past the limit are refused before anything is allocated",
          "[cli][memory][bad-input]") {
  attn::testing::ScratchDir dir("memory-refused");
  const std::string config = (dir.path / "layers.json").string();
  std::ofstream(config) << R"({"hidden_size": 6, "num_attention_heads": 2, "intermediate_size": 24,
                               "num_hidden_layers": 1000000000, "vocab_size": 533,
                               "max_position_embeddings": 64})";
  struct Refusal {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Refusal> refusals = {
      {{"encoder", "--layers", "1000000", "--quiet", "--max-memory", "100M"},
       "the weights (1000000, 510)"},
      {{"encoder", "--layers", "10000000", "--quiet", "--max-memory", "100M"},
       "the weights (10000000, 510)"},
      {{"encoder", "--config", config, "--quiet", "--max-memory", "100M"},
       "the weights (1000000000, 510)"},
      {{"encoder", "--heads", "1000000", "--d-model", "1000000", "--quiet"}, "the weights"},
      {{"dot-product", "--seq", "8000", "--d-model", "8", "--max-memory", "500M"},
       "W' (1, 8000, 8000)"},
      {{"summary", "multi-head", "--variant", "book", "--heads", "1000000000", "--d-model",
        "1000000000"},
       "the heads' module tree (1000000000, 4)"},
      {{"summary", "encoder", "--layers", "1000000000"},
       "the layers' module tree (1000000000, 19)"},
      // N1, N2, N3, N4 and C1 of the third probe.
      {{"cross-attention", "--seq", "4096", "--source-seq", "4096", "--d-model", "512", "--batch",
        "8", "--quiet", "--max-memory", "100M"},
       "the scores and weights (2, 8, 2, 4096, 4096)), more than the memory limit of 100 MiB (set "
       "by --max-memory): lower --seq, --batch or --source-seq"},
      {{"decoder", "--batch", "1000", "--seq", "200", "--d-model", "256", "--d-ff", "4096",
        "--quiet", "--max-memory", "1G"},
       "lower --seq, --batch, --d-model or --d-ff"},
      {{"train", "--model", "transformer", "--batch", "30000", "--steps", "1", "--quiet",
        "--max-memory", "500M"},
       "the decoder blocks' streams (2, 30000, 9, 20, 32)), more than the memory limit of 500 MiB "
       "(set by --max-memory): lower --batch"},
      {{"train", "--batch", "20000", "--steps", "1", "--quiet", "--max-memory", "1G"},
       "lower --batch"},
      {{"summary", "transformer", "--layers", "1000000000", "--max-memory", "100M"},
       "lower --layers"},
      {{"summary", "decoder", "--layers", "100000000", "--max-memory", "100M"}, "lower --layers"},
      {{"view", "head", "--config", "bert-base", "--max-memory", "100M"}, "the weights (1, "},
  };
  for (const Refusal& r : refusals) {
    INFO(command_line(r.args));
    // ATTN_MAX_MEMORY=1G unless --max-memory says otherwise.
    attn::testing::check_refused(run_attn(r.args), r.says, kBase);
  }
}

TEST_CASE("a summary stays within the memory limit, accepted or refused", "[cli][memory]") {
  // The module tree is built before the rows are counted: a refusal may come after it, still
  // within the limit.
  for (const char* layers : {"2000", "30000"}) {
    const std::vector<std::string> args = {"summary",  "encoder", "--layers",     layers,
                                           "--format", "json",    "--max-memory", "300M"};
    INFO(command_line(args));
    const auto result = run_attn(args);
    INFO("stderr: " << result.err);
    INFO("peak " << result.max_rss_bytes / kMiB << " MiB");
    CHECK((result.exit_code == 0 || result.err.find("the summary's rows") != std::string::npos));
    CHECK(attn::testing::peak_within(result.max_rss_bytes, 300 * kMiB + kBase));
  }
}

TEST_CASE("an ATTN_MAX_MEMORY that is not a size is named, also when a file is read first (M1)",
          "[cli][memory][bad-input]") {
  attn::testing::ScratchDir dir("memory-variable");
  const std::string saved = (dir.path / "saved").string();
  REQUIRE(run_attn({"dot-product", "--save", saved}).exit_code == 0);
  const std::string config = std::string(ATTN_SOURCE_DIR) + "/data/configs/tiny.json";
  for (const char* value : {"garbage", "0", "-5G", "1e30"}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"dot-product", "--input", saved + "/input.npy"},
          std::vector<std::string>{"encoder", "--config", config},
          std::vector<std::string>{"summary", "encoder"}}) {
      INFO("ATTN_MAX_MEMORY=" << value << " " << command_line(args));
      const auto result = run_attn(args, {std::string("ATTN_MAX_MEMORY=") + value});
      CHECK(result.exit_code == 2);
      const std::string problem = value == std::string("0")
                                      ? "is no memory at all: give a positive size"
                                      : "is not a memory size: give bytes with a unit";
      CHECK(result.err == "attn " + args.front() + ": ATTN_MAX_MEMORY: '" + value + "' " + problem +
                              ", e.g. 512M or 2G, or unset it\n");
    }
  }
}

TEST_CASE("a BERT folder too large for the limit is refused before its tensors are read",
          "[cli][memory][pretrained]") {
  attn::testing::ScratchDir dir("memory-bert");
  const std::string bert = bert_folder(dir.path / "bert");
  const std::string gpt2 = gpt2_folder(dir.path / "gpt2");
  for (const std::string& folder : {gpt2}) {
    for (const char* command : {"generate", "attention", "view"}) {
      INFO(command);
      std::vector<std::string> args = {command, "--pretrained", folder, "--max-memory", "100M"};
      if (std::string(command) == "view") args.insert(args.begin() + 1, "model");
      attn::testing::check_refused(
          run_attn(args), "use a smaller model with --pretrained, or raise --max-memory", kBase);
    }
  }
  for (const char* command : {"encoder", "tokens", "attention", "backward"}) {
    INFO(command);
    // The folder's tensors alone are 118 MiB: refused within the base, naming what to change.
    attn::testing::check_refused(run_attn({command, "--pretrained", bert, "--max-memory", "100M"}),
                                 "use a smaller model with --pretrained, or raise --max-memory",
                                 kBase);
  }
}

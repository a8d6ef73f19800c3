// attn bench from the command line: the JSON's keys and that its numbers are positive (a
// benchmark, so no timing is asserted), the text form, and bad input.
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "run_attn.hpp"

namespace fs = std::filesystem;
using attn::testing::run_attn;

TEST_CASE("attn bench --format json: the keys, positive numbers, the GEMM list", "[cli][bench]") {
  const auto result = run_attn({"bench", "--seq", "8", "--repeat", "2", "--format", "json"});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.empty());
  const auto doc = nlohmann::json::parse(result.out);
  for (const char* key : {"ms_median", "gflops", "sgemm_bound_ms", "fraction_of_bound",
                          "reference_ms", "speedup", "gemm_flops", "ms_min", "ms_max"}) {
    INFO(key);
    REQUIRE(doc.contains(key));
    CHECK(doc[key].get<double>() > 0.0);
  }
  CHECK(doc["seq"] == 8);
  CHECK(doc["threads"].get<int>() >= 1);
  CHECK(doc["d_model"] == 768);
  CHECK(doc["heads"] == 12);
  CHECK(doc["d_ff"] == 3072);
  CHECK(doc["runs"] == 2);
  CHECK(doc["norm"] == "pre");
  CHECK(doc["max_abs_diff"].get<double>() <= 1e-4);  // the fast path computes the reference's layer
  REQUIRE(doc["gemms"].size() == 6);
  CHECK(doc["gemms"][0]["name"] == "qkv");
  CHECK(doc["gemms"][0]["n"] == 3 * 768);
  CHECK(doc["gemms"][1]["count"] == 12);
  for (const auto& g : doc["gemms"])
    CHECK(g["ms_median"].get<double>() > 0.0);
}

TEST_CASE("attn bench --model encoder and bert --format json: time, bound, peak memory",
          "[cli][bench]") {
  // BERT-base's 12 layers at 8 tokens, batch 2: a whole model, kept short. BERT adds its two token
  // type rows of 768 to the encoder's weights.
  for (const auto& [model, norm, type_rows] :
       {std::tuple<std::string, std::string, int>{"encoder", "pre", 0}, {"bert", "post", 2}}) {
    DYNAMIC_SECTION("--model " << model) {
      const auto result =
          run_attn({"bench", "--model", model, "--seq", "8", "--batch", "2", "--repeat", "2",
                    "--warmup", "0", "--threads", "1", "--format", "json"});
      INFO("stderr: " << result.err);
      REQUIRE(result.exit_code == 0);
      const auto doc = nlohmann::json::parse(result.out);
      CHECK(doc["model"] == model);
      CHECK(doc["norm"] == norm);
      CHECK(doc["layers"] == 12);
      CHECK(doc["batch"] == 2);
      CHECK(doc["seq"] == 8);
      CHECK(doc["runs"] == 2);
      for (const char* key :
           {"ms_median", "gflops", "sgemm_bound_ms", "fraction_of_bound", "peak_rss_bytes",
            "weights_bytes", "activations_bytes", "memory_ratio"}) {
        INFO(key);
        CHECK(doc[key].get<double>() > 0.0);
      }
      // BERT-base's weights as packed: 12 layers of 7,087,872 and the tables (30522 + 512 + the
      // token types) x 768 + 2 x 768.
      CHECK(doc["weights_bytes"] == 4 * (12 * 7087872 + (30522 + 512 + type_rows) * 768 + 2 * 768));
      // The process holds at least the weights at its peak, above what it held before the model.
      CHECK(doc["peak_rss_bytes"].get<double>() - doc["baseline_rss_bytes"].get<double>() >=
            doc["weights_bytes"].get<double>());
      CHECK(doc["gemm"]["openblas_kernel"].get<std::string>().size() > 0);
    }
  }
}

TEST_CASE("attn bench --gemm openblas runs the large products on OpenBLAS", "[cli][bench]") {
  const auto result = run_attn({"bench", "--seq", "16", "--repeat", "2", "--warmup", "0",
                                "--threads", "1", "--gemm", "openblas", "--format", "json"});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  const auto doc = nlohmann::json::parse(result.out);
  CHECK(doc["gemm"]["large_products"] == "OpenBLAS");
  CHECK(doc["gemm"]["chosen_by"] == "forced");
  CHECK(doc["max_abs_diff"].get<double>() <= 1e-4);
  CHECK(doc["gemms"][0]["openblas_ms"].get<double>() > 0.0);
}

TEST_CASE("ATTN_GEMM with a wrong word: one line naming it, exit 2", "[cli][bench]") {
  const auto result =
      run_attn({"multi-head", "--seq", "40", "--d-model", "64", "--heads", "4"}, {"ATTN_GEMM=mkl"});
  INFO("stdout: " << result.out);
  CHECK(result.exit_code == 2);
  CHECK(attn::testing::line_count(result.err) == 1);
  CHECK(result.err.find("ATTN_GEMM is 'mkl': expected auto, measure, openblas or onednn") !=
        std::string::npos);
}

namespace {
// A config file of our own (data/configs/tiny.json may change size).
struct TinyConfig {
  fs::path dir = fs::temp_directory_path() / fmt::format("attn-test-bench-{}", ::getpid());
  std::string path = (dir / "tiny.json").string();
  TinyConfig() {
    fs::create_directories(dir);
    std::ofstream(path) << R"({"hidden_size": 12, "num_attention_heads": 3, "intermediate_size": 48,
                              "max_position_embeddings": 16, "hidden_act": "gelu_new"})";
  }
  ~TinyConfig() { fs::remove_all(dir); }
};
}  // namespace

TEST_CASE("attn bench: post-LN, one thread, a config file, text output", "[cli][bench]") {
  const TinyConfig config;
  const std::string& tiny = config.path;
  const auto result = run_attn({"bench", "--seq", "16", "--threads", "1", "--repeat", "3",
                                "--warmup", "0", "--norm", "post", "--config", tiny});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("post-LN") != std::string::npos);
  CHECK(result.out.find("D=12 H=3 F=48") != std::string::npos);
  CHECK(result.out.find("fraction_of_bound") != std::string::npos);
  CHECK(result.out.find("threads 1") != std::string::npos);
  CHECK(result.out.find("gelu_new") != std::string::npos);
}

TEST_CASE("attn bench --model heads at a tiny size: the scan beside the forward passes it needs",
          "[cli][bench][heads]") {
  const TinyConfig config;
  const auto result =
      run_attn({"bench", "--model", "heads", "--config", config.path, "--seq", "8", "--batch", "3",
                "--repeat", "2", "--warmup", "0", "--threads", "1", "--format", "json"});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  const auto doc = nlohmann::json::parse(result.out);
  CHECK(doc["model"] == "heads");
  CHECK(doc["sequences"] == 3);
  CHECK(doc["tokens"] == 8);
  CHECK(doc["patterns"] == 5);  // causal: no mirror
  CHECK(doc["runs"] == 2);
  for (const char* key : {"scan_ms", "forward_ms", "packed_forward_ms"}) {
    INFO(key);
    CHECK(doc[key].get<double>() > 0.0);
  }
  CHECK(doc["scan_over_forward"].get<double>() ==
        Approx(doc["scan_ms"].get<double>() / doc["forward_ms"].get<double>()));
}

TEST_CASE("attn bench --model gpt2 at a tiny size: the JSON's keys, the cache, the text form",
          "[cli][bench][gpt2]") {
  const TinyConfig config;
  const std::vector<std::string> args = {
      "bench", "--model",  "gpt2", "--config", config.path, "--seq",     "4", "--new-tokens",
      "3",     "--repeat", "2",    "--warmup", "0",         "--threads", "1"};
  SECTION("json") {
    std::vector<std::string> json = args;
    json.insert(json.end(), {"--format", "json"});
    const auto result = run_attn(json);
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    const auto doc = nlohmann::json::parse(result.out);
    CHECK(doc["model"] == "gpt2");
    CHECK(doc["prompt_tokens"] == 4);
    CHECK(doc["new_tokens"] == 3);
    CHECK(doc["runs"] == 2);
    CHECK(doc["threads"] == 1);
    for (const char* key :
         {"prefill_ms", "token_ms", "tokens_per_second", "bandwidth_gb_per_s",
          "bound_tokens_per_second", "fraction_of_bound", "peak_rss_bytes", "memory_ratio"}) {
      INFO(key);
      CHECK(doc[key].get<double>() > 0.0);
    }
    CHECK(doc["tokens_per_second"].get<double>() == Approx(1000.0 / doc["token_ms"].get<double>()));
    CHECK(doc["fraction_of_bound"].get<double>() ==
          Approx(doc["tokens_per_second"].get<double>() /
                 doc["bound_tokens_per_second"].get<double>()));
    // The config's 12 blocks of D 12, F 48 (weights, biases, two LayerNorms: 1884 floats each),
    // wte and wpe ((30522 + 16) x 12) and ln_f; one token reads all of it but 15 rows of wpe.
    CHECK(doc["weights_bytes"] == 4 * (12 * 1884 + (30522 + 16) * 12 + 2 * 12));
    CHECK(doc["bytes_per_token"] == doc["weights_bytes"].get<std::size_t>() - 4 * 15 * 12);
    // Keys and values of 12 blocks for the 4 + 3 tokens it was made for, D 12 each.
    CHECK(doc["cache_bytes"] == 4 * 2 * 12 * (4 + 3) * 12);
  }
  SECTION("text") {
    const auto result = run_attn(args);
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    for (const char* phrase :
         {"a prompt of 4 tokens at once, then 3 tokens", "D=12 H=3 F=48", "time to the first token",
          "tokens per second", "memory bandwidth", "fraction_of_bound", "memory_ratio"}) {
      INFO(phrase);
      CHECK(result.out.find(phrase) != std::string::npos);
    }
  }
}

TEST_CASE("attn bench --train --format json: each model's steps per second, the GPT's bound",
          "[cli][bench]") {
  const auto result = run_attn({"bench", "--train", "--seq", "16", "--repeat", "2", "--warmup", "1",
                                "--threads", "1", "--format", "json"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto doc = nlohmann::json::parse(result.out);
  CHECK(doc["threads"] == 1);
  CHECK(doc["runs"] == 2);
  REQUIRE(doc["models"].size() == 3);
  CHECK(doc["models"][0]["d_model"] == 32);
  CHECK(doc["models"][0]["batch"] == 32);
  CHECK(doc["models"][1]["d_model"] == 768);
  CHECK(doc["models"][1]["tokens"] == 16);
  // nanoGPT's CPU configuration, and the sum of its step's products timed alone.
  const auto& gpt = doc["models"][2];
  CHECK(gpt["name"] == "nanoGPT's CPU GPT");
  CHECK(gpt["d_model"] == 128);
  CHECK(gpt["tokens"] == 64);
  CHECK(gpt["batch"] == 12);
  CHECK(gpt["gemm_gflops"].get<double>() == Approx(3.67).epsilon(0.01));
  CHECK(gpt["gemm_bound_steps_per_second"].get<double>() > 0.0);
  for (const auto& m : doc["models"]) {
    CHECK(m["ms_median"].get<double>() > 0.0);
    CHECK(m["ms_min"].get<double>() <= m["ms_median"].get<double>());
    CHECK(m["steps_per_second"].get<double>() == Approx(1000.0 / m["ms_median"].get<double>()));
  }
}

TEST_CASE("bad input to bench: one line, exit 2", "[cli][bench][bad-input]") {
  const TinyConfig config;
  const std::string& tiny = config.path;
  const fs::path& dir = config.dir;
  const std::string broken = (dir / "broken.json").string();
  std::ofstream(broken) << "{\"hidden_size\": 10, \"num_attention_heads\": 3}";
  struct Case {
    std::vector<std::string> args;
    std::string phrase;
  };
  const std::vector<Case> cases = {
      {{"bench", "--seq", "0"}, "--seq"},
      {{"bench", "--threads", "0"}, "--threads"},
      {{"bench", "--seq", "513"}, "max_position_embeddings 512"},
      {{"bench", "--seq", "17", "--config", tiny}, "max_position_embeddings 16"},
      {{"bench", "--repeat", "0"}, "--repeat"},
      {{"bench", "--warmup", "x"}, "--warmup"},
      {{"bench", "--norm", "middle"}, "--norm"},
      {{"bench", "--format", "yaml"}, "--format"},
      {{"bench", "--batch", "2"},
       "--batch: --batch sets the batch of --model encoder, --model bert, --model heads or --train"},
      {{"bench", "--model", "bert", "--norm", "post"}, "--norm: --model bert is post-LN"},
      {{"bench", "--model", "decoder"}, "--model"},
      {{"bench", "--gemm", "mkl"}, "--gemm"},
      {{"bench", "--new-tokens", "4"}, "--new-tokens: --new-tokens is for --model gpt2"},
      {{"bench", "--model", "gpt2", "--new-tokens", "1"}, "--new-tokens 1 times no step"},
      {{"bench", "--model", "gpt2", "--norm", "pre"}, "--model gpt2 is pre-LN"},
      {{"bench", "--model", "heads", "--norm", "post"}, "--model heads scans GPT-2"},
      {{"bench", "--model", "gpt2", "--batch", "2"}, "--batch"},
      {{"bench", "--model", "gpt2", "--seq", "1000", "--new-tokens", "25"},
       "--seq 1000 and --new-tokens 25 pass gpt2's 1024 positions"},
      {{"bench", "--train", "--model", "encoder"}, "--model: --train times its own three models"},
      {{"bench", "--model", "encoder", "--seq", "513"}, "max_position_embeddings 512"},
      {{"bench", "--model", "encoder", "--batch", "4096", "--seq", "512", "--max-memory", "1G"},
       "lower --seq or --batch"},
      {{"bench", "--train", "--norm", "post"}, "--norm: --train times its own three models"},
      {{"bench", "--train", "--batch", "0"}, "--batch"},
      {{"bench", "--config", broken}, "not divisible"},
      {{"bench", "--config", (dir / "missing.json").string()}, "missing.json"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(fmt::format("{}", fmt::join(c.args, " "))) {
      const auto result = run_attn(c.args);
      INFO("stderr: " << result.err);
      CHECK(result.exit_code == 2);
      CHECK(attn::testing::line_count(result.err) == 1);
      CHECK(result.out.empty());
      CHECK(result.err.find(c.phrase) != std::string::npos);
    }
  }
}

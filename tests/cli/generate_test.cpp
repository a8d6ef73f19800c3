// The encoder-decoder from the command line: attn train --model transformer saves a checkpoint
// that PyTorch's state_dict keys describe, attn generate decodes the shipped one right, greedily
// and sampled (seeded), with and without the KV cache, and bad options are refused.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "14-generate/gpt2_sampling_lesson.hpp"
#include "golden.hpp"
#include "io/weights.hpp"
#include "run_attn.hpp"
#include "scratch.hpp"

using attn::testing::run_attn;
using attn::testing::ScratchDir;

namespace {
const nlohmann::json& step(const nlohmann::json& doc, const std::string& name) {
  for (const auto& s : doc["steps"])
    if (s["name"] == name) return s;
  FAIL("no step " << name);
  return doc;
}

std::vector<std::int64_t> tokens(const nlohmann::json& doc) {
  return step(doc, "tokens")["values"].get<std::vector<std::int64_t>>();
}
}  // namespace

TEST_CASE("attn generate decodes the shipped encoder-decoder: the reverse, with or without cache",
          "[cli][generate]") {
  for (const char* cache : {"", "--no-cache"}) {
    std::vector<std::string> args{"generate", "--text", "hgfedcba", "--format", "json"};
    if (*cache != '\0') args.push_back(cache);
    const auto run = run_attn(args);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    const auto doc = nlohmann::json::parse(run.out);
    CHECK(doc["lesson"] == "generate");
    CHECK(doc["settings"]["task"] == "reverse");
    // a b c ... h </s>: target ids 3..10 and 2.
    CHECK(tokens(doc) == std::vector<std::int64_t>{3, 4, 5, 6, 7, 8, 9, 10, 2});
    for (const auto& check : doc["checks"])
      CHECK(check["passed"] == true);
    const auto saved = step(doc, "multiply_adds")["values"].get<std::vector<double>>();
    CHECK(saved[0] < saved[1]);
  }
  // The heatmap's labels are the written tokens and the source's letters.
  const auto text = run_attn({"generate", "--text", "dcba", "--color", "never"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("d      c      b      a") != std::string::npos);
  CHECK(text.out.find("Greedy decoding gives the task's answer.") != std::string::npos);
}

TEST_CASE("sampling is seeded: the same seed the same tokens, and top-k 1 is greedy",
          "[cli][generate]") {
  const auto a = run_attn(
      {"generate", "--text", "cabbage", "--temperature", "3", "--seed", "5", "--format", "json"});
  const auto b = run_attn(
      {"generate", "--text", "cabbage", "--temperature", "3", "--seed", "5", "--format", "json"});
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == b.out);
  const auto one = run_attn({"generate", "--text", "cabbage", "--top-k", "1", "--format", "json"});
  REQUIRE(one.exit_code == 0);
  const auto doc = nlohmann::json::parse(one.out);
  for (const auto& row : step(doc, "probabilities")["values"]) {
    std::size_t nonzero = 0;
    for (const auto& p : row)
      nonzero += p.get<double>() > 0.0;
    CHECK(nonzero == 1);
  }
  CHECK(tokens(doc) == std::vector<std::int64_t>{7, 9, 3, 4, 4, 3, 5, 2});  // egabbac </s>
}

TEST_CASE("top-p is taken after top-k's renormalisation, as Hugging Face does", "[cli][generate]") {
  // Step 0 at temperature 5: top-k 2 leaves h 0.857 and g 0.143; 0.857 is at least 0.7, so top-p
  // keeps h alone (a threshold before renormalising would keep g too).
  const auto run = run_attn(
      {"generate", "--temperature", "5", "--top-k", "2", "--top-p", "0.7", "--format", "json"});
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  const auto first = step(doc, "probabilities")["values"][0].get<std::vector<double>>();
  CHECK(first[10] == 1.0);  // h
  CHECK(std::count_if(first.begin(), first.end(), [](double p) { return p > 0.0; }) == 1);
}

TEST_CASE("attn generate measures its model's certainty and its cache's memory",
          "[cli][generate]") {
  const auto run = run_attn({"generate", "--format", "json"});
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  // The top token's probability with <pad> and <s> masked, averaged over the steps, recomputed
  // from the printed log-probabilities.
  double top = 0.0;
  const auto& rows = step(doc, "log_probs")["values"];
  for (const auto& row : rows) {
    const auto lp = row.get<std::vector<double>>();
    double sum = 0.0, most = 0.0;
    for (std::size_t i = 2; i < lp.size(); ++i) {
      sum += std::exp(lp[i]);
      most = std::max(most, std::exp(lp[i]));
    }
    top += most / sum / static_cast<double>(rows.size());
  }
  CHECK(top > 0.99);
  bool certain = false, memory = false;
  for (const auto& check : doc["checks"]) {
    if (check["name"] == "this model is certain") {
      certain = true;
      CHECK(check["passed"] == true);
      CHECK(check["detail"].get<std::string>().find(fmt::format("holds {:.4f}", top)) !=
            std::string::npos);
    }
    if (check["name"].get<std::string>().starts_with("the cache holds 2")) {
      memory = true;
      CHECK(check["passed"] == true);
      // 2 layers, 9 tokens fed in (<s> and the 8 letters), D = 32.
      CHECK(check["detail"].get<std::string>().find("counted 1,152;") != std::string::npos);
    }
  }
  CHECK(certain);
  CHECK(memory);
  const auto text = run_attn({"generate", "--color", "never"});
  CHECK(
      text.out.find("BERT-base's size at 512 tokens: 2 · 12 · 512 · 768  9,437,184  37,748,736") !=
      std::string::npos);
  CHECK(text.out.find("with the cache          (1, 16)  (9, 16) cached  (1, 9)") !=
        std::string::npos);
}

TEST_CASE("lessons 12 and 14 label cross-attention's rows alike: the token read→the token written",
          "[cli][generate]") {
  const auto generated = run_attn({"generate", "--text", "abcdefgh", "--color", "never"});
  const auto cross = run_attn({"cross-attention", "--checkpoint", "transformer-reverse", "--layer",
                               "1", "--color", "never"});
  REQUIRE(generated.exit_code == 0);
  REQUIRE(cross.exit_code == 0);
  for (const char* label : {"<s>→h ", "h→g ", "b→a ", "a→</s> "}) {
    INFO(label);
    CHECK(generated.out.find(std::string("\n") + label) != std::string::npos);
    CHECK(cross.out.find(std::string("\n") + label) != std::string::npos);
  }
}

TEST_CASE("attn train --model transformer trains seed 001's model and saves PyTorch's keys",
          "[cli][generate][train]") {
  ScratchDir dir("train-transformer");
  const std::string checkpoint = (dir.path / "words.safetensors").string();
  const auto run = run_attn({"train", "--model", "transformer", "--task", "number-words", "--steps",
                             "40", "--format", "json", "--save-checkpoint", checkpoint});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto doc = nlohmann::json::parse(run.out);
  CHECK(doc["settings"]["model"] == "transformer");
  REQUIRE(doc["curves"][0]["values"].size() == 40);
  CHECK(doc["curves"][0]["values"][0].get<double>() == Approx(std::log(33.0)).margin(0.6));
  attn::Metadata metadata;
  const attn::StateDict weights = attn::read_weights(checkpoint, &metadata);
  CHECK(weights.count("decoder.layers.1.cross_attention.W_Q.weight") == 1);
  CHECK(weights.count("encoder.layers.0.residual_connection.1.norm.gamma") == 1);
  CHECK(weights.at("projection.linear.weight").shape == attn::Shape{33, 32});
  CHECK(weights.at("target_positional_encoding.pe").shape == attn::Shape{1, 7, 32});
  CHECK(nlohmann::json::parse(metadata.at("attn_model"))["kind"] == "transformer");
  // Its own checkpoint decodes (40 steps teach it little; it runs and stops), and is not certain:
  // the lesson says so instead of claiming it.
  const auto generated =
      run_attn({"generate", "--checkpoint", checkpoint, "--text", "305", "--format", "json"});
  INFO(generated.err);
  CHECK(generated.exit_code == 0);
  const auto decoded = nlohmann::json::parse(generated.out);
  for (const auto& check : decoded["checks"])
    CHECK(check["name"] != "this model is certain");
  const auto text = run_attn({"generate", "--checkpoint", checkpoint, "--text", "305"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("This model is not certain here") != std::string::npos);
}

TEST_CASE("attn generate refuses what it cannot decode, in one line",
          "[cli][generate][bad-input]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--checkpoint", "reverse"}, "which has no decoder"},
      {{"--temperature", "0"}, "--temperature"},
      {{"--temperature", "-1"}, "--temperature"},
      {{"--top-k", "0"}, "--top-k"},
      {{"--top-p", "0"}, "--top-p"},
      {{"--top-p", "1.5"}, "--top-p"},
      {{"--seed", "3"}, "greedy decoding draws nothing"},
      {{"--text", "xyz"}, "'x' is not a token of the reverse task"},
      {{"--text", "abcdefghab"}, "more than the reverse task's 8"},
      {{"--checkpoint", "no-such-checkpoint"},
       "is not a shipped checkpoint (a bare name is always one)"},
  };
  for (const auto& [args, expected] : cases) {
    std::vector<std::string> all{"generate"};
    all.insert(all.end(), args.begin(), args.end());
    const auto run = run_attn(all);
    INFO(all.back() << ": " << run.err);
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK(run.err.find(expected) != std::string::npos);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  }
  const auto encoder_on_pair = run_attn({"train", "--model", "transformer", "--task", "histogram"});
  CHECK(encoder_on_pair.exit_code == 2);
  CHECK(encoder_on_pair.err.find("use reverse, sort or number-words") != std::string::npos);
  const auto vocab = run_attn({"train", "--model", "transformer", "--vocab", "5"});
  CHECK(vocab.exit_code == 2);
  const auto attention = run_attn({"attention", "--checkpoint", "transformer-reverse"});
  CHECK(attention.exit_code == 2);
  CHECK(attention.err.find("attn generate --checkpoint") != std::string::npos);
}

TEST_CASE("attn summary describes seed 001's decoder block, decoder and Transformer",
          "[cli][summary][transformer]") {
  // Byte for byte against the real torchinfo's tables of the same modules, with the masks as
  // tensors (tests/golden/torchinfo/seed001/, made by data/torchinfo_seed001.py with the same
  // arguments).
  const std::string all =
      "input_size,output_size,num_params,params_percent,kernel_size,mult_"
      "adds,trainable";
  const std::vector<std::pair<std::string, std::vector<std::string>>> tables = {
      {"decoder-block", {"decoder-block"}},
      {"decoder-block_post_allcols_depth4",
       {"decoder-block", "--norm", "post", "--depth", "4", "--col-names", all}},
      {"decoder_verbose2_depth2", {"decoder", "--verbose", "2", "--depth", "2"}},
      {"transformer", {"transformer"}},
      {"transformer_post_allcols_depth6",
       {"transformer", "--norm", "post", "--depth", "6", "--col-names", all}},
      {"transformer_b3_t7_verbose2_depth1",
       {"transformer", "--batch", "3", "--seq", "7", "--verbose", "2", "--depth", "1"}},
  };
  for (const auto& [name, args] : tables) {
    std::vector<std::string> command = {"summary"};
    command.insert(command.end(), args.begin(), args.end());
    const auto run = run_attn(command);
    INFO("attn " << fmt::format("{}", fmt::join(command, " ")) << "\nstderr: " << run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(run.out == attn::testing::read_text(std::string(ATTN_GOLDEN_DIR) + "/torchinfo/seed001/" +
                                              name + ".txt"));
  }
  // sum(p.numel()) of the fixed seed's classes (data/torchinfo_seed001.py's sizes).
  const auto total = [](const std::vector<std::string>& args) {
    const auto run = run_attn(args);
    REQUIRE(run.exit_code == 0);
    const std::size_t at = run.out.find("Total params: ");
    REQUIRE(at != std::string::npos);
    return run.out.substr(at + 14, run.out.find('\n', at) - at - 14);
  };
  CHECK(total({"summary", "decoder-block"}) == "508");
  CHECK(total({"summary", "decoder"}) == "1,018");
  CHECK(total({"summary", "transformer"}) == "1,934");
  CHECK(total({"summary", "transformer", "--d-model", "512", "--heads", "8", "--d-ff", "2048",
               "--layers", "6", "--vocab-size", "10000", "--max-positions", "512"}) ==
        "59,440,976");  // buildingTranformers(10000, 10000, 512, 512)
}

namespace {
std::vector<double> flat(const nlohmann::json& doc, const std::string& name) {
  std::vector<double> out;
  for (const auto& v : step(doc, name)["values"])
    if (v.is_array())
      for (const auto& x : v)
        out.push_back(x.get<double>());
    else
      out.push_back(v.get<double>());
  return out;
}
}  // namespace

TEST_CASE("attn generate --checkpoint gpt-char measures sampling on the shipped character GPT",
          "[cli][generate][gpt-char]") {
  const std::vector<std::string> args{"generate", "--checkpoint", "gpt-char", "--format", "json"};
  const auto a = run_attn(args);
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  CHECK(run_attn(args).out == a.out);  // seeded: the same run twice, the same output
  const auto doc = nlohmann::json::parse(a.out);
  for (const auto& check : doc["checks"]) {
    INFO(check["name"] << ": " << check["detail"]);
    CHECK(check["passed"] == true);
  }
  CHECK(doc["checks"].size() >= 7);
  // temperature, most likely, entropy, tokens holding 90%: 0.5, 1 and 1.5.
  const std::vector<double> sweep = flat(doc, "temperature_sweep");
  REQUIRE(sweep.size() == 12);
  CHECK(sweep[1] > sweep[5]);
  CHECK(sweep[5] > sweep[9]);
  CHECK(sweep[2] < sweep[6]);
  CHECK(sweep[6] < sweep[10]);
  CHECK(sweep[3] <= sweep[7]);
  CHECK(sweep[7] <= sweep[11]);
  const std::vector<double> probabilities = flat(doc, "next_token_probabilities");
  REQUIRE(probabilities.size() == 80);
  double sum = 0.0;
  for (double p : probabilities)
    sum += p;
  CHECK(std::abs(sum - 1.0) < 1e-5);
  CHECK(std::abs(*std::max_element(probabilities.begin(), probabilities.end()) - sweep[5]) < 1e-6);
  const std::vector<double> kept = flat(doc, "filters_kept");
  CHECK(kept[0] == 5);
  CHECK(kept[3] >= 0.9);
  const std::vector<double> diversity = flat(doc, "sample_diversity");
  CHECK(diversity[0] == 5);
  CHECK(diversity[1] == 5);
  CHECK(diversity[2] < 0.5);
  // Greedy's repeated 8-byte windows against each seed's.
  const std::vector<double> repetition = flat(doc, "repetition");
  REQUIRE(repetition.size() == 12);
  for (std::size_t seed = 1; seed < 6; ++seed)
    CHECK(repetition[0] > repetition[2 * seed]);

  const auto text = run_attn({"generate", "--checkpoint", "gpt-char"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("Call me Ishmael. Some years ago") != std::string::npos);
  CHECK(text.out.find("What temperature does to it") != std::string::npos);
  CHECK(text.out.find("The greedy continuation") != std::string::npos);
  CHECK(text.out.find("\\x0a") == std::string::npos);  // a newline shows as ↵
  CHECK(text.out.find("↵") != std::string::npos);
}

TEST_CASE(
    "the sampling demonstration takes the run's own settings, and a long prompt skips the "
    "samples",
    "[cli][generate][gpt-char]") {
  const auto hot = run_attn({"generate", "--checkpoint", "gpt-char", "--temperature", "1.2",
                             "--top-p", "0.95", "--max-new-tokens", "5", "--color", "never"});
  INFO(hot.err);
  REQUIRE(hot.exit_code == 0);
  CHECK(hot.out.find("temperature 1.2, top-p 0.95 (↵ is a newline)") != std::string::npos);
  const auto full = run_attn({"generate", "--checkpoint", "gpt-char", "--text",
                              std::string(125, 'a'), "--max-new-tokens", "2", "--color", "never"});
  REQUIRE(full.exit_code == 0);
  CHECK(full.out.find("too few for continuations") != std::string::npos);
  CHECK(full.out.find("What temperature does to it") != std::string::npos);
}

TEST_CASE("golden stdout: attn generate --checkpoint gpt-char", "[cli][generate][golden]") {
  attn::testing::check_golden("generate_gpt-char", {"generate", "--checkpoint", "gpt-char"});
}

TEST_CASE("the sampling demonstration is refused without a GPT-2 folder",
          "[cli][generate][errors]") {
  const auto r = run_attn({"generate", "--show-sampling"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("--show-sampling is for a GPT-2 folder: add --pretrained DIR") !=
        std::string::npos);
}

TEST_CASE("the sampling demonstration's measures on texts worked by hand", "[generate][sampling]") {
  using namespace attn::lessons;
  // "abcdabcdab": windows of 4 are abcd bcda cdab dabc abcd bcda cdab; the last 3 seen before.
  CHECK(repeated_window_fraction("abcdabcdab", 4) == Approx(3.0 / 7.0));
  CHECK(repeated_window_fraction("abcdefgh", 4) == 0.0);
  CHECK(repeated_window_fraction("abc", 4) == 0.0);
  CHECK(longest_repeat("abcdabcdab") == 6);  // abcdab at 0 and 4
  CHECK(longest_repeat("abcdefg") == 0);
  CHECK(longest_repeat("aaaa") == 3);
  // {abcd, bcde} and {bcde, cdef}: 1 shared of 3.
  CHECK(shared_ngram_fraction({"abcde", "bcdef"}, 4) == Approx(1.0 / 3.0));
  CHECK(shared_ngram_fraction({"abcde"}, 4) == 0.0);
  CHECK(entropy({0.5f, 0.5f, 0.0f}) == Approx(std::log(2.0)));
  CHECK(tokens_holding({0.1f, 0.6f, 0.3f}, 0.9) == 2);
  CHECK(tokens_holding({0.1f, 0.6f, 0.3f}, 0.95) == 3);
  CHECK(one_line("a\nb\x01") == "a↵b\\x01");
}

TEST_CASE("a GPT-2 folder shows the sampling demonstration only when asked",
          "[cli][generate][gpt2]") {
  const std::string folder = attn::testing::fixture_path("gpt2/d21_lm");
  const std::vector<std::string> args{"generate", "--pretrained", folder, "--max-new-tokens",
                                      "3",        "--color",      "never"};
  const auto plain = run_attn(args);
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.out.find("What temperature does to it") == std::string::npos);
  std::vector<std::string> asked = args;
  asked.push_back("--show-sampling");
  const auto shown = run_attn(asked);
  INFO(shown.err);
  REQUIRE(shown.exit_code == 0);
  CHECK(shown.out.find("What temperature does to it") != std::string::npos);
  CHECK(shown.out.find("5 distinct of 5") != std::string::npos);
}

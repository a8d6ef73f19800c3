// format_summary against tables printed by the real torchinfo (tests/golden/torchinfo/README.md):
// the seed 004 modules and the book's BERT-base encoder layer in both formats, plus torchinfo's own
// test outputs. The LayerInfo lists are what torchinfo's hooks record: one row per module call in
// forward order, a ModuleList (never called) just before its first child.
#include "summary.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "fixtures.hpp"
#include "trace.hpp"

using attn::LayerInfo;
using attn::ParameterInfo;
using attn::Shape;
using attn::SummaryInput;
using attn::SummaryOptions;
using attn::TorchinfoFormat;

namespace {

// ---- building rows by hand

LayerInfo container(std::string class_name, std::string var_name, int depth, Shape in, Shape out) {
  LayerInfo layer;
  layer.class_name = std::move(class_name);
  layer.var_name = std::move(var_name);
  layer.depth = depth;
  layer.input_shape = std::move(in);
  layer.output_shape = std::move(out);
  layer.is_leaf = false;
  return layer;
}

// A container that is never called (ModuleList, Sequential used by index): shapes print "--".
LayerInfo never_called(std::string class_name, std::string var_name, int depth) {
  LayerInfo layer = container(std::move(class_name), std::move(var_name), depth, {}, {});
  layer.executed = false;
  return layer;
}

LayerInfo leaf(std::string class_name, std::string var_name, int depth, Shape in, Shape out,
               std::vector<ParameterInfo> parameters = {}) {
  LayerInfo layer =
      container(std::move(class_name), std::move(var_name), depth, std::move(in), std::move(out));
  layer.parameters = std::move(parameters);
  layer.is_leaf = true;
  return layer;
}

// nn.Linear(in, out, bias) called on `in_shape`: weight (out, in), bias (out).
LayerInfo linear(std::string var_name, int depth, Shape in_shape, std::size_t out_features,
                 bool bias = true) {
  Shape out_shape = in_shape;
  const std::size_t in_features = in_shape.back();
  out_shape.back() = out_features;
  std::vector<ParameterInfo> parameters = {{"weight", {out_features, in_features}}};
  if (bias) parameters.push_back({"bias", {out_features}});
  return leaf("Linear", std::move(var_name), depth, std::move(in_shape), std::move(out_shape),
              std::move(parameters));
}

// nn.LayerNorm(D): weight (D), bias (D).
LayerInfo layer_norm(std::string var_name, int depth, const Shape& shape) {
  return leaf("LayerNorm", std::move(var_name), depth, shape, shape,
              {{"weight", {shape.back()}}, {"bias", {shape.back()}}});
}

// nn.ConvNd(in, out, kernel): weight (out, in, *kernel), bias (out).
LayerInfo conv(std::string class_name, std::string var_name, int depth, Shape in, Shape out,
               Shape kernel) {
  Shape weight = {out[1], in[1]};
  weight.insert(weight.end(), kernel.begin(), kernel.end());
  return leaf(std::move(class_name), std::move(var_name), depth, std::move(in), out,
              {{"weight", weight}, {"bias", {out[1]}}});
}

// ---- the modules of the golden files

// Seed 004: SelfAttention(6) on (4, 5, 6); forward calls toqueries, tokeys, tovalues.
std::vector<LayerInfo> self_attention() {
  const Shape x = {4, 5, 6};
  return {container("SelfAttention", "SelfAttention", 0, x, x), linear("toqueries", 1, x, 6, false),
          linear("tokeys", 1, x, 6, false), linear("tovalues", 1, x, 6, false)};
}

// Seed 004, wide: MultiHeadAttention(6, heads=8) on (4, 5, 6).
std::vector<LayerInfo> multi_head_wide() {
  const Shape x = {4, 5, 6};
  return {container("MultiHeadAttention", "MultiHeadAttention", 0, x, x),
          linear("toqueries", 1, x, 48, false), linear("tokeys", 1, x, 48, false),
          linear("tovalues", 1, x, 48, false), linear("unifyheads", 1, {4, 5, 48}, 6)};
}

// The book's pre-LN TransformerEncoderLayer, BERT-base sizes, on (1, 5, 768). Each AttentionHead
// calls q, k, v: Linear(768, 64); FeedForward runs linear_1 -> gelu -> linear_2 -> dropout.
std::vector<LayerInfo> encoder_layer_bert_base() {
  const Shape x = {1, 5, 768};
  const Shape head = {1, 5, 64};
  const Shape hidden = {1, 5, 3072};
  std::vector<LayerInfo> rows = {
      container("TransformerEncoderLayer", "TransformerEncoderLayer", 0, x, x),
      layer_norm("layer_norm_1", 1, x), container("MultiHeadAttention", "attention", 1, x, x),
      never_called("ModuleList", "heads", 2)};
  for (int h = 0; h < 12; ++h) {
    rows.push_back(container("AttentionHead", std::to_string(h), 3, x, head));
    for (const char* name : {"q", "k", "v"})
      rows.push_back(linear(name, 4, x, 64));
  }
  rows.push_back(linear("output_linear", 2, x, 768));
  rows.push_back(layer_norm("layer_norm_2", 1, x));
  rows.push_back(container("FeedForward", "feed_forward", 1, x, x));
  rows.push_back(linear("linear_1", 2, x, 3072));
  rows.push_back(leaf("GELU", "gelu", 2, hidden, hidden));
  rows.push_back(linear("linear_2", 2, hidden, 768));
  rows.push_back(leaf("Dropout", "dropout", 2, x, x));
  return rows;
}

std::vector<SummaryInput> input(Shape shape) {
  return {SummaryInput{std::move(shape)}};
}

// torchinfo's fixtures.models.SingleInputNet on (B, 1, 28, 28).
std::vector<LayerInfo> single_input_net(std::size_t b) {
  return {container("SingleInputNet", "SingleInputNet", 0, {b, 1, 28, 28}, {b, 10}),
          conv("Conv2d", "conv1", 1, {b, 1, 28, 28}, {b, 10, 24, 24}, {5, 5}),
          conv("Conv2d", "conv2", 1, {b, 10, 12, 12}, {b, 20, 8, 8}, {5, 5}),
          leaf("Dropout2d", "conv2_drop", 1, {b, 20, 8, 8}, {b, 20, 8, 8}),
          linear("fc1", 1, {b, 320}, 50),
          linear("fc2", 1, {b, 50}, 10)};
}

// torchinfo's CNNModuleList(ConvLayerA or ConvLayerB) on (1, 1, 10): ml = ModuleList of five
// conv layers, each calling Conv1d(1, 1, 1), ReLU, MaxPool1d(1).
std::vector<LayerInfo> cnn_module_list(const std::string& conv_layer) {
  const Shape x = {1, 1, 10};
  std::vector<LayerInfo> rows = {container("CNNModuleList", "CNNModuleList", 0, x, x),
                                 never_called("ModuleList", "ml", 1)};
  for (int i = 0; i < 5; ++i) {
    rows.push_back(container(conv_layer, std::to_string(i), 2, x, x));
    rows.push_back(conv("Conv1d", "conv", 3, x, x, {1}));
    rows.push_back(leaf("ReLU", "relu", 3, x, x));
    rows.push_back(leaf("MaxPool1d", "pool", 3, x, x));
  }
  return rows;
}

// torchinfo's ReuseReLU on (4, 4, 64, 64): one ReLU module called four times.
std::vector<LayerInfo> reuse_relu() {
  auto norm = [](std::string var, Shape shape) {
    const std::size_t c = shape[1];
    return leaf("BatchNorm2d", std::move(var), 2, shape, shape, {{"weight", {c}}, {"bias", {c}}});
  };
  std::vector<LayerInfo> rows = {
      container("ReuseReLU", "ReuseReLU", 0, {4, 4, 64, 64}, {4, 8, 11, 11}),
      container("Sequential", "model", 1, {4, 4, 64, 64}, {4, 8, 11, 11}),
      leaf("ReflectionPad2d", "0", 2, {4, 4, 64, 64}, {4, 4, 70, 70})};
  const std::vector<Shape> shapes = {
      {4, 4, 70, 70}, {4, 1, 70, 70}, {4, 2, 36, 36}, {4, 4, 19, 19}, {4, 8, 11, 11}};
  int index = 1;
  for (std::size_t i = 0; i + 1 < shapes.size(); ++i) {
    rows.push_back(conv("Conv2d", std::to_string(index++), 2, shapes[i], shapes[i + 1], {1, 1}));
    rows.push_back(norm(std::to_string(index++), shapes[i + 1]));
    rows.push_back(leaf("ReLU", "3", 2, shapes[i + 1], shapes[i + 1]));
  }
  return rows;
}

// ---- golden files

std::string golden(const std::string& relative) {
  return attn::testing::read_text(
      (std::filesystem::path(ATTN_GOLDEN_DIR) / "torchinfo" / relative).string());
}

// The call a golden file's name encodes (tests/golden/torchinfo/README.md).
SummaryOptions options_for(std::string_view file_name, TorchinfoFormat format) {
  SummaryOptions options;
  options.format = format;
  if (file_name.find("__seedcols") != std::string_view::npos) {
    options.col_names = {"input_size", "output_size", "kernel_size", "num_params", "mult_adds"};
    options.col_width = 16;
  }
  if (file_name.find("_verbose2") != std::string_view::npos) options.verbose = 2;
  if (file_name.find("__depth3") != std::string_view::npos) options.depth = 3;
  return options;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Line by line, leaving out the two lines that depend on torch's tensor object overhead (72
// bytes on the newer torch that made torchinfo's own outputs, 56 on torch 1.13).
void check_except_input_size(const std::string& got, const std::string& expected) {
  const auto got_lines = lines_of(got);
  const auto expected_lines = lines_of(expected);
  REQUIRE(got_lines.size() == expected_lines.size());
  for (std::size_t i = 0; i < got_lines.size(); ++i) {
    if (starts_with(expected_lines[i], "Input size") ||
        starts_with(expected_lines[i], "Estimated Total Size"))
      continue;
    INFO("line " << i + 1);
    CHECK(got_lines[i] == expected_lines[i]);
  }
}

// Removes `count` code points from `line` starting at code point `first`.
std::string erase_code_points(const std::string& line, std::size_t first, std::size_t count) {
  std::string out;
  std::size_t point = 0;
  for (const char c : line) {
    const bool starts_point = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_point) ++point;
    const std::size_t index = point - 1;  // code point this byte belongs to
    if (index < first || index >= first + count) out += c;
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("format_summary equals torchinfo's tables for the seed 004 modules", "[summary]") {
  struct Case {
    std::string file;
    std::vector<LayerInfo> layers;
  };
  const std::vector<Case> cases = {
      {"01_seed004_selfattention_k6__defaultcols__depthdefault.txt", self_attention()},
      {"01_seed004_selfattention_k6__seedcols_verbose2__depthdefault.txt", self_attention()},
      {"02_seed004_mha_wide_k6_h8__seedcols_verbose1__depth3.txt", multi_head_wide()},
      {"02_seed004_mha_wide_k6_h8__seedcols_verbose2__depthdefault.txt", multi_head_wide()},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.file) {
      CHECK(attn::format_summary(c.layers, input({4, 5, 6}),
                                 options_for(c.file, TorchinfoFormat::current)) == golden(c.file));
    }
  }
}

TEST_CASE("format_summary equals torchinfo 0.1.0's tables (the seed's own layout)", "[summary]") {
  struct Case {
    std::string file;
    std::vector<LayerInfo> layers;
  };
  const std::vector<Case> cases = {
      {"01_seed004_selfattention_k6__seedcols_verbose2__depthdefault.txt", self_attention()},
      {"02_seed004_mha_wide_k6_h8__seedcols_verbose2__depthdefault.txt", multi_head_wide()},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.file) {
      CHECK(attn::format_summary(c.layers, input({4, 5, 6}),
                                 options_for(c.file, TorchinfoFormat::v0_1)) ==
            golden("v0.1.0/" + c.file));
    }
  }
}

TEST_CASE("format_summary equals torchinfo for the book's encoder layer at BERT-base size",
          "[summary]") {
  const auto layers = encoder_layer_bert_base();
  for (const std::string file :
       {"06_book_transformerencoderlayer_bertbase__defaultcols__depth3.txt",
        "06_book_transformerencoderlayer_bertbase__seedcols_verbose1__depth3.txt"}) {
    DYNAMIC_SECTION(file) {
      CHECK(attn::format_summary(layers, input({1, 5, 768}),
                                 options_for(file, TorchinfoFormat::current)) == golden(file));
    }
  }
}

TEST_CASE("format_summary equals torchinfo's own test outputs", "[summary]") {
  SECTION("single_input.out: convolutions, dropout, linears") {
    const std::string got = attn::format_summary(single_input_net(2), input({2, 1, 28, 28}), {});
    check_except_input_size(got, golden("upstream/single_input.out"));
    // The same call in torchinfo main 5c4164f on torch 1.13 (reference/ecosystem.md, section 3).
    CHECK_THAT(got, Catch::Contains("Input size (kB): 6.33\n"));
    CHECK_THAT(got, Catch::Contains("Estimated Total Size (kB): 207.29\n"));
  }
  SECTION("single_linear_layer.out: no input (no forward pass), then one") {
    LayerInfo not_run = linear("Linear", 0, {1, 2}, 5);
    not_run.executed = false;
    SummaryOptions params_only;
    params_only.col_names = {"num_params"};
    const std::string got =
        attn::format_summary({not_run}, {}, params_only) +
        attn::format_summary({linear("Linear", 0, {1, 2}, 5)}, input({1, 2}), {});
    check_except_input_size(got, golden("upstream/single_linear_layer.out"));
    CHECK_THAT(got, Catch::Contains("Input size: 64\n"));  // 2 floats + 56
  }
  SECTION("cnn_module_list.out: a ModuleList that never runs, leaves at the maximum depth") {
    const std::string got =
        attn::format_summary(cnn_module_list("ConvLayerA"), input({1, 1, 10}), {}) +
        attn::format_summary(cnn_module_list("ConvLayerB"), input({1, 1, 10}), {});
    check_except_input_size(got, golden("upstream/cnn_module_list.out"));
  }
  SECTION("too_many_relus.out: batch norms, a module called four times") {
    check_except_input_size(attn::format_summary(reuse_relu(), input({4, 4, 64, 64}), {}),
                            golden("upstream/too_many_relus.out"));
  }
  SECTION("single_input_all_cols.out: every column but Groups") {
    // format_summary has no Groups column: cut its cell (20 + 1 code points after the 40 + 1 of
    // the name and the 20 + 1 of Kernel Shape) out of each table line, and shorten the dividers
    // to 40 + 7 * 20.
    std::string expected;
    for (const std::string& line : lines_of(golden("upstream/single_input_all_cols.out"))) {
      const bool is_divider = line.find_first_not_of('=') == std::string::npos;
      const bool in_table = starts_with(line, "Layer") || starts_with(line, "SingleInputNet") ||
                            starts_with(line, "├─");
      expected += is_divider ? std::string(180, '=')
                  : in_table ? erase_code_points(line, 62, 21)
                             : line;
      expected += "\n";
    }
    SummaryOptions options;
    options.col_names = {"kernel_size",    "input_size", "output_size", "num_params",
                         "params_percent", "mult_adds",  "trainable"};
    options.col_width = 20;
    options.depth = 1;
    check_except_input_size(
        attn::format_summary(single_input_net(7), input({7, 1, 28, 28}), options), expected);
  }
}

// torchinfo 0.1.0's own test outputs, from its tests/output_test.py
// (tests/golden/torchinfo/README.md). Their size lines tell megabytes of 10^6 bytes from 1024^2
// (0.91 and 0.87 for single_input.out).
TEST_CASE("format_summary equals torchinfo 0.1.0's own test outputs", "[summary]") {
  SummaryOptions options;
  options.format = TorchinfoFormat::v0_1;
  SECTION("single_input.out: summary(SingleInputNet(), input_size=(16, 1, 28, 28), depth=1)") {
    options.depth = 1;
    CHECK(attn::format_summary(single_input_net(16), input({16, 1, 28, 28}), options) ==
          golden("upstream-v0.1.0/single_input.out"));
  }
  SECTION("single_input_all.out: five columns of 20 on (7, 1, 28, 28), depth=1") {
    options.depth = 1;
    options.col_names = {"kernel_size", "input_size", "output_size", "num_params", "mult_adds"};
    options.col_width = 20;
    CHECK(attn::format_summary(single_input_net(7), input({7, 1, 28, 28}), options) ==
          golden("upstream-v0.1.0/single_input_all.out"));
  }
  SECTION("lstm.out: LSTMNet on int64 ids (1, 100), verbose=2: an LSTM's inner weights") {
    // fixtures.models.LSTMNet: Embedding(20, 300), LSTM(300, 512, num_layers=2), Linear(512, 20).
    std::vector<ParameterInfo> lstm;
    for (const std::size_t layer : {0, 1}) {
      const std::string l = std::to_string(layer);
      lstm.push_back({"weight_ih_l" + l, {2048, layer == 0 ? std::size_t{300} : std::size_t{512}}});
      lstm.push_back({"weight_hh_l" + l, {2048, 512}});
      lstm.push_back({"bias_ih_l" + l, {2048}});
      lstm.push_back({"bias_hh_l" + l, {2048}});
    }
    const std::vector<LayerInfo> rows = {
        container("LSTMNet", "LSTMNet", 0, {1, 100}, {100, 20}),
        leaf("Embedding", "embedding", 1, {1, 100}, {1, 100, 300}, {{"weight", {20, 300}}}),
        leaf("LSTM", "encoder", 1, {1, 100, 300}, {1, 100, 512}, lstm),
        linear("decoder", 1, {1, 100, 512}, 20)};
    options.verbose = 2;
    options.col_names = {"kernel_size", "output_size", "num_params", "mult_adds"};
    options.col_width = 20;
    CHECK(attn::format_summary(rows, {SummaryInput{{1, 100}, 8}}, options) ==
          golden("upstream-v0.1.0/lstm.out"));
  }
}

TEST_CASE("format_summary: rows deeper than depth are hidden but still count", "[summary]") {
  SummaryOptions options;
  options.depth = 1;
  const std::string got =
      attn::format_summary(encoder_layer_bert_base(), input({1, 5, 768}), options);
  CHECK_THAT(got,
             Catch::Contains("├─MultiHeadAttention: 1-2                [1, 5, 768]               "
                             "2,362,368\n"));
  CHECK_THAT(got,
             Catch::Contains("├─FeedForward: 1-4                       [1, 5, 768]               "
                             "4,722,432\n"));
  CHECK_THAT(got, !Catch::Contains("ModuleList"));
  CHECK_THAT(got, Catch::Contains("Total params: 7,087,872\n"));

  options.depth = 0;
  const std::string top =
      attn::format_summary(encoder_layer_bert_base(), input({1, 5, 768}), options);
  CHECK_THAT(top,
             Catch::Contains("\nTransformerEncoderLayer                  [1, 5, 768]               "
                             "7,087,872\n====="));
}

TEST_CASE("format_summary pads by code points and widens the name column to a multiple of 5",
          "[summary]") {
  // len("AVeryLongModuleNameIndeed: 2-1") + 5 * 2 + 1 = 41, so the name column is 45 wide.
  std::vector<LayerInfo> layers = {container("Model", "Model", 0, {2, 3}, {2, 3}),
                                   container("Block", "block", 1, {2, 3}, {2, 3}),
                                   linear("long", 2, {2, 3}, 3)};
  layers[2].class_name = "AVeryLongModuleNameIndeed";
  const auto lines = lines_of(attn::format_summary(layers, input({2, 3}), {}));
  CHECK(lines[0] == std::string(45 + 2 * 25, '='));
  // 37 code points (but 45 bytes) of name, padded to 45 + 1.
  CHECK(lines[5] == "│    └─AVeryLongModuleNameIndeed: 2-1" + std::string(9, ' ') + "[2, 3]" +
                        std::string(20, ' ') + "12");
}

TEST_CASE("format_summary marks frozen layers and prints verbose rows for containers",
          "[summary]") {
  std::vector<LayerInfo> layers = {container("Net", "Net", 0, {1, 4}, {1, 2}),
                                   container("Sequential", "body", 1, {1, 4}, {1, 2}),
                                   linear("0", 2, {1, 4}, 2)};
  layers[2].parameters[0].trainable = false;  // weight frozen, bias trainable
  SummaryOptions options;
  options.col_names = {"kernel_size", "num_params", "trainable"};
  options.verbose = 2;
  const auto lines = lines_of(attn::format_summary(layers, input({1, 4}), options));
  const std::string pad25(25 + 1 - 2, ' ');  // after "--"
  CHECK(lines[4] ==
        "├─Sequential: 1-1" + std::string(24, ' ') + "--" + pad25 + "--" + pad25 + "Partial");
  // The container lists its children's parameters, dotted and not transposed.
  CHECK(lines[5] ==
        "│    └─0.weight" + std::string(26, ' ') + "[2, 4]" + std::string(20, ' ') + "├─8");
  CHECK(lines[6] == "│    └─0.bias" + std::string(28, ' ') + "[2]" + std::string(23, ' ') + "└─2");
  // The Linear's own weight row shows [in, out].
  CHECK(lines[7] == "│    └─Linear: 2-1" + std::string(23, ' ') + "--" + pad25 + "10" +
                        std::string(24, ' ') + "Partial");
  CHECK(lines[8] ==
        "│    │    └─weight" + std::string(23, ' ') + "[4, 2]" + std::string(20, ' ') + "├─8");
  const std::string all = attn::format_summary(layers, input({1, 4}), options);
  CHECK_THAT(all, Catch::Contains("Trainable params: 2\nNon-trainable params: 8\n"));

  layers[2].parameters[1].trainable = false;
  options.col_names = {"num_params", "trainable"};
  options.verbose = 1;
  CHECK_THAT(attn::format_summary(layers, input({1, 4}), options),
             Catch::Contains("│    └─Linear: 2-1" + std::string(23, ' ') + "(10)" +
                             std::string(22, ' ') + "False\n"));
}

TEST_CASE("format_summary with verbose=0 prints nothing", "[summary]") {
  SummaryOptions options;
  options.verbose = 0;
  CHECK(attn::format_summary(self_attention(), input({4, 5, 6}), options).empty());
}

TEST_CASE("format_summary rejects bad options with a message that says what is valid",
          "[summary][errors]") {
  const auto layers = self_attention();
  const auto x = input({4, 5, 6});
  SummaryOptions options;

  options.col_names = {"output_size", "flops"};
  CHECK_THROWS_AS(attn::format_summary(layers, x, options), attn::Error);
  CHECK_THROWS_WITH(attn::format_summary(layers, x, options),
                    Catch::Contains("[format_summary]") && Catch::Contains("\"flops\"") &&
                        Catch::Contains("kernel_size, input_size, output_size, num_params, "
                                        "params_percent, mult_adds, trainable"));

  options.format = TorchinfoFormat::v0_1;
  options.col_names = {"trainable"};
  CHECK_THROWS_WITH(attn::format_summary(layers, x, options),
                    Catch::Contains("\"trainable\"") && Catch::Contains("0.1.0") &&
                        Catch::Contains("kernel_size, input_size, output_size, num_params, "
                                        "mult_adds"));

  options = {};
  options.col_width = 0;
  CHECK_THROWS_WITH(attn::format_summary(layers, x, options), Catch::Contains("col_width=0"));
  options = {};
  options.depth = -1;
  CHECK_THROWS_WITH(attn::format_summary(layers, x, options), Catch::Contains("depth=-1"));
  for (const int verbose : {-1, 3}) {
    options = {};
    options.verbose = verbose;
    CHECK_THROWS_WITH(attn::format_summary(layers, x, options),
                      Catch::Contains("verbose=" + std::to_string(verbose)));
  }

  std::vector<LayerInfo> broken = layers;
  broken[2].depth = 3;  // a grandchild with no child before it
  CHECK_THROWS_WITH(attn::format_summary(broken, x, {}), Catch::Contains("layer 2 (Linear)"));
}

namespace {
// format_summary's refusal: the message of its Error, which must be of kind too_large.
std::string refusal(const std::vector<LayerInfo>& layers, const std::vector<SummaryInput>& inputs,
                    TorchinfoFormat format) {
  SummaryOptions options;
  options.format = format;
  try {
    attn::format_summary(layers, inputs, options);
  } catch (const attn::Error& e) {
    CHECK(e.kind() == attn::ErrorKind::too_large);
    return e.what();
  }
  return "(no error)";
}

constexpr std::size_t power_of_two(int n) {
  return std::size_t{1} << n;
}
}  // namespace

TEST_CASE("format_summary refuses a count or size past 2^63-1 instead of wrapping around",
          "[summary][errors]") {
  const auto current = TorchinfoFormat::current, v0_1 = TorchinfoFormat::v0_1;
  const Shape x = {1, 2};
  auto model = [](std::vector<LayerInfo> children, Shape in, Shape out) {
    children.insert(children.begin(), container("Big", "Big", 0, std::move(in), std::move(out)));
    return children;
  };

  // 2^64 parameters in one weight.
  const auto wide = model({linear("w", 1, {1, power_of_two(32)}, power_of_two(32), false)},
                          {1, power_of_two(32)}, {1, power_of_two(32)});
  for (const auto format : {current, v0_1})
    CHECK(refusal(wide, input({1, power_of_two(32)}), format) ==
          "[format_summary] Big has more than 2^63-1 parameters");

  // W1: 36 weights on 10^18 rows. 0.1.0 counts mult-adds on the batch only (10^9 x 36), but the
  // input is 4 x 6 x 10^18 bytes.
  const Shape huge = {1000000000, 1000000000, 6};
  const auto attention = model(
      {linear("toqueries", 1, huge, 6, false), linear("tokeys", 1, huge, 6, false)}, huge, huge);
  CHECK(refusal(attention, input(huge), current) ==
        "[format_summary] Big on (1000000000, 1000000000, 6) makes more than 2^63-1 mult-adds");
  CHECK(refusal(attention, input(huge), v0_1) ==
        "[format_summary] the input (1000000000, 1000000000, 6) is more than 2^63-1 bytes");

  // The input alone: 2^62 float32s.
  const auto dropout = model({leaf("Dropout", "d", 1, x, x)}, x, x);
  CHECK(refusal(dropout, input({power_of_two(61), 2}), current) ==
        "[format_summary] the input (2305843009213693952, 2) is more than 2^63-1 bytes");

  // An output of 2^62 numbers, kept twice (for the gradients).
  const Shape long_out = {1, power_of_two(61), 2};
  const auto norm = model(
      {leaf("LayerNorm", "n", 1, x, long_out, {{"weight", {2}}, {"bias", {2}}})}, x, long_out);
  for (const auto format : {current, v0_1})
    CHECK(refusal(norm, input(x), format) ==
          "[format_summary] Big's forward/backward pass on (1, 2) is more than 2^63-1 bytes");

  // 2^62 parameters fit; their 2^64 bytes do not.
  const Shape in31 = {1, power_of_two(31)};
  const auto square = model({linear("w", 1, in31, power_of_two(31), false)}, in31, in31);
  for (const auto format : {current, v0_1})
    CHECK(refusal(square, input(in31), format) ==
          "[format_summary] Big's parameters are more than 2^63-1 bytes");

  // Each size line fits (2^62 bytes of input, 2^62 of parameters), their sum does not.
  const Shape in30 = {1, power_of_two(30)};
  const auto half = model({linear("w", 1, in30, power_of_two(30), false)}, in30, in30);
  for (const auto format : {current, v0_1})
    CHECK(refusal(half, input({power_of_two(60)}), format) ==
          "[format_summary] Big's estimated total size on (1152921504606846976,) is more than "
          "2^63-1 bytes");
  // Without an input there are no size lines to refuse.
  SummaryOptions options;
  CHECK_THAT(attn::format_summary(half, {}, options),
             Catch::Contains("Total params: 1,152,921,504,606,846,976"));
}

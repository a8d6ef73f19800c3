// attn view head|model|neuron: bertviz's views of attention, in the terminal, on a shipped or
// trained checkpoint, the book's encoder with --weights, or its random initialisation.
#include "view.hpp"
#include "view_interactive.hpp"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "ablate.hpp"
#include "attention_view.hpp"
#include "base/budget.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "head_scan.hpp"
#include "image_file.hpp"
#include "io/shipped.hpp"
#include "io/tokenizer.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "pretrained.hpp"
#include "state_dict.hpp"
#include "train/tasks.hpp"
#include "view_export.hpp"
#include "view_memory.hpp"

namespace attn::cli {

namespace {

struct ViewCliOptions {
  std::string kind;  // head, model, neuron
  std::string checkpoint, config, weights, text, pair, ids_text,
      sentences = "all", part = "cross", norm = "pre", color = "auto", scale = "auto", heads,
      export_path, pretrained;
  std::uint64_t seed = 0;
  std::size_t layer = 0, head = 0, token = 0;
  bool interactive = false;
  AblateCliOptions ablate;  // its part is --part's
};

[[noreturn]] void refuse(std::string_view option, const std::string& message) {
  throw Error(ErrorKind::bad_value, "view", message).about(std::string(option));
}

// Refuses more tokens than the view's destination shows: the terminal and the pictures draw a
// grid of fixed cells (kModelViewMaxTokens in the model view, kHeadViewMaxTokens in the others),
// an exported page scrolls (page_max_tokens). Each way out it suggests is one that takes them.
void check_tokens(std::size_t tokens, std::size_t layers, std::size_t heads,
                  const ViewCliOptions& o, const CLI::App& app) {
  const std::string source = app.count("--ids") > 0 ? "--ids" : "--text";
  const std::string shorter = fmt::format("give a shorter {}", source);
  const std::string ext = render::extension_of(o.export_path);
  const std::size_t page = render::page_max_tokens(layers, heads);
  if (ext == ".html") {
    if (tokens > page)
      refuse(source.substr(2),
             fmt::format("{} tokens are more than an exported page of this model holds ({} at "
                         "most: {} layers x {} heads of T x T weights, {} weights in all): {}",
                         tokens, page, layers, heads, render::kPageMaxWeights, shorter));
    return;
  }
  const std::size_t grid =
      o.kind == "model" ? render::kModelViewMaxTokens : render::kHeadViewMaxTokens;
  if (tokens <= grid) return;
  std::vector<std::string> ways = {shorter};
  if (o.kind == "model" && ext.empty() && tokens <= render::kHeadViewMaxTokens)
    ways.push_back(
        fmt::format("use the head view of one layer ({} at most)", render::kHeadViewMaxTokens));
  if (tokens <= page) {
    const std::string html =
        ext.empty() ? "view.html"
                    : o.export_path.substr(0, o.export_path.size() - ext.size()) + ".html";
    ways.push_back(fmt::format("export a page that scrolls ({} tokens at most): --export {}", page,
                               printable(html)));
  }
  refuse(source.substr(2),
         fmt::format(
             "{} tokens are more than {} draws legibly ({} at most): {}", tokens,
             ext.empty() ? fmt::format("the {} view", o.kind)
                         : fmt::format("a picture of the {} view", o.kind),
             grid, ways.size() > 2 ? ways[0] + ", " + ways[1] + ", or " + ways[2] : or_list(ways)));
}

// The book's encoder (--config, default tiny) on --text (and --pair), random or --weights.
AttentionView book_view(const ViewCliOptions& o, const CLI::App& app, Context& context) {
  for (const char* name : {"--part"})
    if (app.count(name) > 0)
      refuse(std::string(name).substr(2),
             fmt::format("{} picks a part of an encoder-decoder: add --checkpoint {}, or drop {}",
                         name, kShippedSeq2Seq, name));
  refuse_ablate_without_model(app, "view", "add --checkpoint reverse (or another checkpoint)");
  EncoderConfig config = o.config.empty() ? tiny_config() : resolve_config(o.config);
  const NormPlacement placement = o.norm == "post" ? NormPlacement::post : NormPlacement::pre;
  const Vocabulary& vocab = uses_bert_vocabulary(config) ? bert_vocabulary() : lesson_vocabulary();
  const std::string a = o.text.empty() ? "time flies like an arrow" : o.text;
  std::vector<std::string> tokens;
  std::vector<std::int64_t> ids;
  std::size_t split = 0;
  if (!o.ids_text.empty()) {
    if (!o.text.empty() || !o.pair.empty())
      refuse("ids", "give the tokens once: --ids, or --text (and --pair)");
    ids = parse_ids(o.ids_text, config.vocab_size);
    for (std::int64_t id : ids)
      tokens.push_back(static_cast<std::size_t>(id) < vocab.tokens.size()
                           ? vocab.tokens[static_cast<std::size_t>(id)]
                           : std::to_string(id));
  } else if (o.pair.empty()) {
    const Encoding e = encode(a, vocab, false);
    tokens = e.tokens;
    ids = e.ids;
  } else {
    // [CLS] A [SEP] B [SEP], as BERT reads a pair (seed 003's head view).
    const Encoding ea = encode(a, vocab, true), eb = encode(o.pair, vocab, false);
    tokens = ea.tokens;
    ids = ea.ids;
    split = tokens.size();
    for (std::size_t i = 0; i < eb.tokens.size(); ++i) {
      tokens.push_back(eb.tokens[i]);
      ids.push_back(eb.ids[i]);
    }
    tokens.push_back("[SEP]");
    ids.push_back(vocab.ids.at("[SEP]"));
  }
  if (ids.empty())
    refuse("text", "the text has no tokens: give some words, e.g. --text \"time flies\"");
  if (ids.size() > config.max_position_embeddings)
    refuse("text", fmt::format("the text has {} tokens, more than the model's {} positions: give "
                               "a shorter --text",
                               ids.size(), config.max_position_embeddings));
  // Refused before a large model is made: the view could not show this many tokens.
  check_tokens(ids.size(), config.num_hidden_layers, config.num_attention_heads, o, app);
  std::error_code unknown_size;
  const std::uintmax_t weights_bytes =
      o.weights.empty() ? 0 : std::filesystem::file_size(o.weights, unknown_size);
  check_budget("view", render::plan_encoder_view(config, ids.size(),
                                                 unknown_size ? 0 : weights_bytes, o.export_path));
  Rng rng(o.seed);
  Encoder encoder = init_encoder(rng, config, placement, true);
  std::string model =
      fmt::format("the book's encoder ({}), ", o.config.empty() ? "tiny config" : o.config);
  if (!o.weights.empty()) {
    load_state_dict(encoder, describe_encoder(config, true), load_weights_file(o.weights, context),
                    o.weights);
    model += "weights " + o.weights;
  } else {
    model += fmt::format("random initialisation (seed {})", o.seed);
  }
  Ids input({1, ids.size()});
  std::copy(ids.begin(), ids.end(), input.begin());
  AttentionView view = encoder_view(encoder, input, tokens, model);
  view.pair_split = split;
  return view;
}

// A Hugging Face GPT-2 folder on --text or --ids.
AttentionView gpt2_view(const ViewCliOptions& o, const CLI::App& app, PretrainedFolder folder) {
  if (!o.pair.empty())
    refuse("pair", "--pair is BERT's second sentence; GPT-2 reads one text: drop --pair");
  const PretrainedGpt2 gpt2 = open_gpt2(std::move(folder));
  const Gpt2Text text = gpt2_text(gpt2, o.text, o.ids_text);
  const EncoderConfig& c = gpt2.config.sizes;
  check_tokens(text.tokens.size(), c.num_hidden_layers, c.num_attention_heads, o, app);
  MemoryPlan plan = plan_gpt2_reading(gpt2);
  append(plan, plan_gpt2(gpt2.config, 1, text.tokens.size(), false));
  append(plan, render::plan_view(c.num_hidden_layers, c.num_attention_heads, text.tokens.size(),
                                 text.tokens.size(), c.hidden_size / c.num_attention_heads,
                                 o.export_path));
  check_budget("view", plan);
  const Gpt2 model = read_gpt2(gpt2);
  return gpt2_view(model, text.input, text.tokens,
                   fmt::format("{} (GPT-2, {} blocks x {} heads)", o.pretrained,
                               c.num_hidden_layers, c.num_attention_heads));
}

// A Hugging Face BERT folder on --text (and --pair) or --ids; a GPT-2 folder on --text or --ids.
AttentionView pretrained_view(const ViewCliOptions& o, const CLI::App& app) {
  refuse_beside_pretrained(
      app, {"--checkpoint", "--config", "--weights", "--seed", "--norm", "--part", "--ablate"},
      "view");
  PretrainedFolder folder = open_folder(o.pretrained);
  if (is_gpt2(folder)) return gpt2_view(o, app, std::move(folder));
  const PretrainedBert bert = open_bert(std::move(folder));
  const BertText text = bert_text(bert, o.text, o.pair, o.ids_text);
  const EncoderConfig& c = bert.config.sizes;
  // Refused before the weights are read: the view could not show this many tokens.
  check_tokens(text.tokens.size(), c.num_hidden_layers, c.num_attention_heads, o, app);
  MemoryPlan plan = plan_bert_reading(bert);
  append(plan, plan_bert(bert.config, BertHeads::none, 1, text.tokens.size(), false));
  append(plan, render::plan_view(c.num_hidden_layers, c.num_attention_heads, text.tokens.size(),
                                 text.tokens.size(), c.hidden_size / c.num_attention_heads,
                                 o.export_path));
  check_budget("view", plan);
  const Bert model = read_bert(bert);
  return bert_view(model, text.input, text.tokens,
                   fmt::format("{} (BERT, {} layers x {} heads)", o.pretrained, c.num_hidden_layers,
                               c.num_attention_heads),
                   text.pair_split);
}

// A checkpoint of attn train: an encoder's self-attention on the task's letters, or an
// encoder-decoder's --part on the source and its answer (teacher forcing).
// With --ablate, `ablated` gets the line that says what the heads' absence costs, and the view is
// computed with them ablated.
AttentionView checkpoint_view(const ViewCliOptions& o, const CLI::App& app, std::string& ablated,
                              Context& context) {
  for (const char* name : {"--config", "--weights", "--seed", "--norm", "--pair", "--ids"})
    if (app.count(name) > 0)
      refuse(std::string(name).substr(2),
             fmt::format("a checkpoint brings its own model and weights: drop {}", name));
  TrainedCheckpoint c = load_checkpoint(o.checkpoint, context);
  const std::string shipped = is_shipped_checkpoint_name(o.checkpoint) ? "shipped, " : "";
  const ViewPart shown = o.part == "encoder"   ? ViewPart::encoder
                         : o.part == "decoder" ? ViewPart::decoder
                                               : ViewPart::cross;
  std::string without;  // ", with layer 0 head 1 ablated"
  if (const std::optional<Ablation> a =
          read_ablation(app, AblateCliOptions{o.ablate.ablate, o.part}, c.model, shown, "view",
                        encoder_has_one_part(o.checkpoint),
                        /*part_alone_means_nothing=*/false)) {
    ablated = ablation_line(
        c.model, c.config, *a,
        fmt::format("the weights {} are computed with these heads ablated (an ablated head still "
                    "shows its weights: what it writes is zeroed).",
                    o.export_path.empty() ? "below" : "exported"));
    without = fmt::format(", with {} ablated", ablated_heads_words(c.model, *a));
    ablate_heads_in_weights(c.model, a->heads, a->part);
  }
  if (const auto* model = std::get_if<Transformer>(&c.model)) {
    const Seq2SeqTask task = std::get<Seq2SeqTask>(c.config.task);
    const std::vector<std::int64_t> source =
        parse_source(task, o.text.empty() ? seq2seq_example(task) : o.text);
    std::vector<std::int64_t> target = {kStartId};
    for (std::int64_t id : seq2seq_answer(task, source))
      target.push_back(id);
    Ids s({1, source.size()}), t({1, target.size()});
    std::copy(source.begin(), source.end(), s.begin());
    std::copy(target.begin(), target.end(), t.begin());
    std::vector<std::string> source_labels, target_labels;
    for (std::int64_t id : source)
      source_labels.push_back(source_tokens(task)[static_cast<std::size_t>(id)]);
    for (std::int64_t id : target)
      target_labels.push_back(target_tokens(task)[static_cast<std::size_t>(id)]);
    return transformer_view(
        *model, s, t, shown, source_labels, target_labels,
        fmt::format("checkpoint {} ({}seed 001's encoder-decoder, task {}){}", o.checkpoint,
                    shipped, seq2seq_task_info(task).name, without));
  }
  if (app.count("--part") > 0)
    refuse("part", fmt::format("'{}' is an encoder: it has one part, its self-attention; drop "
                               "--part, or give an encoder-decoder such as {}",
                               o.checkpoint, kShippedSeq2Seq));
  const Ids ids = checkpoint_ids(c, o.text, "view");
  std::vector<std::string> labels;
  for (std::int64_t id : ids)
    labels.push_back(token_text(id));
  return encoder_view(std::get<TokenClassifier>(c.model).encoder, ids, labels,
                      fmt::format("checkpoint {} ({}the book's encoder, task {}){}", o.checkpoint,
                                  shipped, task_name(c.config.task), without));
}

std::vector<std::size_t> parse_heads(const std::string& text, std::size_t heads) {
  std::vector<std::size_t> out;
  if (text.empty()) {
    for (std::size_t h = 0; h < heads; ++h)
      out.push_back(h);
    return out;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty() || item.size() > 6 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      refuse("heads", fmt::format("'{}' is not a list of heads: give head numbers from 0, "
                                  "comma-separated, e.g. --heads 0,1",
                                  printable(text)));
    const std::size_t h = std::stoul(item);
    if (h >= heads)
      refuse("heads", fmt::format("head {} does not exist: the model has {} heads, 0 to {}", h,
                                  heads, heads - 1));
    out.push_back(h);
  }
  return out;
}

// `has` says what there is, e.g. "the model has 2 layers".
void check_index(std::string_view option, std::string_view what, std::size_t value,
                 std::size_t count, std::string_view has) {
  if (value < count) return;
  throw Error(ErrorKind::bad_size, "view",
              fmt::format("{} {} does not exist: {}, 0 to {}", what, value, has, count - 1))
      .about(std::string(option));
}

int run_view(ViewCliOptions& o, const CLI::App& app, Context& context) {
  if (o.kind != "head" && o.kind != "model" && o.kind != "neuron")
    refuse("kind", fmt::format("'{}' is not a view: use head, model or neuron", printable(o.kind)));
  if (o.kind != "neuron" && (app.count("--head") > 0))
    refuse("head",
           "--head picks the neuron view's head: use --heads for the head view, or drop it");
  if (o.kind != "head" && app.count("--heads") > 0)
    refuse("heads", fmt::format("--heads picks the head view's heads; the {} view {}", o.kind,
                                o.kind == "model" ? "shows them all" : "takes --head"));
  if (o.kind == "model" && app.count("--layer") > 0)
    refuse("layer", "the model view shows every layer: drop --layer, or use the head view");
  if (o.kind == "model" && app.count("--token") > 0)
    refuse("token", "--token picks a query for the head and neuron views: drop it");
  if (o.interactive && app.count("--heads") > 0)
    refuse("heads",
           "--heads picks the printed head view's heads; --interactive starts with all of them "
           "and ←→ steps through each: drop --heads, or --interactive");
  const bool exporting = app.count("--export") > 0;
  if (exporting) {
    if (o.interactive)
      refuse("interactive",
             "--interactive and --export exclude each other: an exported .html page is "
             "interactive itself; drop --interactive to export, or --export to explore in the "
             "terminal");
    if (app.count("--color") > 0)
      refuse("color",
             "--color is for the terminal; an exported view has its own colours: drop "
             "--color");
    if (o.kind == "head" && app.count("--token") > 0)
      refuse("token",
             "--token marks a query in the terminal; on the exported page, point at a "
             "token instead: drop --token");
  }
  std::string ablated;
  AttentionView view = !o.pretrained.empty()  ? pretrained_view(o, app)
                       : o.checkpoint.empty() ? book_view(o, app, context)
                                              : checkpoint_view(o, app, ablated, context);
  mark_heads(view);
  if (o.sentences != "all" && view.pair_split == 0)
    refuse("sentences",
           "the view holds one sentence, so it has no sentence A and B: give a "
           "second with --pair TEXT, or drop --sentences");
  if (o.sentences != "all") {
    const char from = o.sentences[0], to = o.sentences[2];
    view = sentence_block(view, from, to);
  }
  check_tokens(std::max(view.rows.size(), view.columns.size()), view.layers, view.heads, o, app);
  check_index("layer", "layer", o.layer, view.layers,
              fmt::format("the model has {} layers", view.layers));
  const std::vector<std::size_t> heads = parse_heads(o.heads, view.heads);
  if (o.kind == "neuron")
    check_index("head", "head", o.head, view.heads,
                fmt::format("the model has {} heads", view.heads));
  if (app.count("--token") > 0 || o.kind == "neuron")
    check_index("token", "query token", o.token, view.rows.size(),
                fmt::format("the view has {} query tokens", view.rows.size()));

  if (!ablated.empty()) std::fputs((ablated + "\n").c_str(), stdout);  // the run's checks passed
  render::ViewStyle style;
  float top = 0.0f;
  for (float w : view.weights)
    top = std::max(top, w);
  style.per_row = o.scale == "row" || (o.scale == "auto" && top < 0.5f);
  if (exporting) {
    render::ExportRequest request;
    request.kind = o.kind;
    request.layer = o.layer;
    request.heads = heads;
    request.head = o.head;
    request.token = o.token;
    request.per_row = style.per_row;
    render::export_view(view, request, o.export_path);
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(o.export_path, ec);
    std::fputs(
        fmt::format("wrote {} ({} bytes)\n", printable(o.export_path), ec ? 0 : bytes).c_str(),
        stdout);
    return kExitOk;
  }
  if (app.count("--token") > 0) style.token = o.token;

  const bool colour = render::use_color(o.color == "always"  ? render::ColorMode::always
                                        : o.color == "never" ? render::ColorMode::never
                                                             : render::ColorMode::automatic);
  style.palette = render::choose_palette(colour);
  style.width = render::terminal_width();
  if (o.interactive) return run_interactive(view, {o.kind, o.layer, o.head, o.token}, style);
  std::string text;
  if (o.kind == "head") {
    text = render::render_head_view(view, o.layer, heads, style);
  } else if (o.kind == "model") {
    text = render::render_model_view(view, style);
  } else {
    text = render::render_neuron_view(view, neuron_view(view, o.layer, o.head, o.token), style);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<ViewCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "view",
      "bertviz's views of attention: head (one layer's heads), model (every layer x head), "
      "neuron (how one query's weights are made)");
  offer_words(sub->add_option("kind", o->kind, "head, model or neuron"),
              {"head", "model", "neuron"})
      ->required()
      ->option_text("VIEW");
  sub->add_option("--checkpoint", o->checkpoint,
                  "a trained model (attn train, or shipped: reverse, sort, histogram, "
                  "previous-token, transformer-reverse); default: the book's encoder")
      ->check(not_empty_validator("--checkpoint", "reverse"))
      ->option_text("NAME|FILE");
  add_pretrained_option(*sub, o->pretrained)
      ->check(not_empty_validator("--pretrained", "bert-base-uncased"));
  sub->add_option("--config", o->config,
                  "the book's encoder: a config.json, or bert-base / tiny (default tiny)")
      ->check(not_empty_validator("--config", "bert-base"))
      ->option_text("FILE");
  sub->add_option("--weights", o->weights,
                  "the book's encoder's weights (.safetensors or .npz of its state_dict); "
                  "default: PyTorch's initialisation from --seed")
      ->check(not_empty_validator("--weights", "encoder.safetensors"))
      ->option_text("FILE");
  sub->add_option("--seed", o->seed, "the random initialisation's seed (default 0)")
      ->check(seed_validator())
      ->option_text("N");
  sub->add_option("--norm", o->norm, "the book's encoder: pre (default) or post")
      ->check(choice_validator("a placement", {"pre", "post"}))
      ->option_text("pre|post");
  sub->add_option("--text", o->text,
                  "the tokens: words for the book's encoder (default: time flies like an arrow), "
                  "a task's letters or digits for a checkpoint (default: its example)")
      ->check(not_empty_validator("--text", "'time flies'"))
      ->option_text("TEXT");
  sub->add_option("--ids", o->ids_text,
                  "the book's encoder: token ids instead of --text, e.g. 2051,10029,2066")
      ->check(not_empty_validator("--ids", "2051,10029,2066"))
      ->option_text("ID,ID,...");
  sub->add_option("--pair", o->pair,
                  "a second sentence: [CLS] text [SEP] pair [SEP], as BERT reads a pair")
      ->check(not_empty_validator("--pair", "'fruit flies like a banana'"))
      ->option_text("TEXT");
  sub->add_option("--sentences", o->sentences,
                  "with --pair: all (default), or a-a, a-b, b-a, b-b: queries from one sentence, "
                  "keys from the other")
      ->check(choice_validator("a block of the pair", {"all", "a-a", "a-b", "b-a", "b-b"}))
      ->option_text("all|a-b|...");
  sub->add_option("--part", o->part,
                  "an encoder-decoder's attention, shown and --ablate's: encoder, decoder (masked "
                  "self-attention) or cross (default)")
      ->check(choice_validator("a part", {"encoder", "decoder", "cross"}))
      ->option_text("encoder|decoder|cross");
  add_ablate_option(*sub, o->ablate, "with --checkpoint");
  sub->add_option("--layer", o->layer, "head and neuron views: the layer (default 0)")
      ->check(CLI::NonNegativeNumber)
      ->option_text("L");
  sub->add_option("--heads", o->heads, "head view: the heads to show, e.g. 0,2 (default all)")
      ->check(not_empty_validator("--heads", "0,2"))
      ->option_text("H,H,...");
  sub->add_option("--head", o->head, "neuron view: the head (default 0)")
      ->check(CLI::NonNegativeNumber)
      ->option_text("H");
  sub->add_option("--token", o->token,
                  "neuron view: the query token (default 0); head view: a query to mark")
      ->check(CLI::NonNegativeNumber)
      ->option_text("I");
  sub->add_option(
         "--heatmap-scale", o->scale,
         "fixed (0 to 1), row (0 to each row's largest weight, a near-uniform row 0 to 1), "
         "auto (default: row when every weight is below 0.5, else fixed)")
      ->check(choice_validator("a heatmap scale", {"auto", "fixed", "row"}))
      ->option_text("auto|fixed|row");
  sub->add_option("--color", o->color,
                  "auto (default; off under NO_COLOR or when not a terminal), always, never")
      ->check(choice_validator("a color mode", {"auto", "always", "never"}))
      ->option_text("auto|always|never");
  sub->add_flag("--interactive", o->interactive,
                "in a terminal: ↑↓ layer, ←→ head, j k query token, q quits (as hovering in "
                "bertviz)");
  add_output(*sub, "--export", o->export_path, OutputKind::page,
             "write the view to FILE.html (one self-contained page, interactive), FILE.svg or "
             "FILE.png instead of the terminal");
  add_memory_option(*sub);
  door_callback(*sub, [o, sub, &context] {
    context.exit_code = run_view(*o, *sub, context);
    print_warnings("view", context);
  });
}

const Registration kRegistration{"view", setup};

}  // namespace

}  // namespace attn::cli

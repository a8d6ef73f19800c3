// attn heads: lesson 17. Every head of a model scored against the standard patterns (previous
// token, first token, diagonal, mirror, duplicate, induction, a task's own keys) on probe sets,
// on a shipped or trained checkpoint, a Hugging Face BERT or GPT-2 folder; --ablate's effect.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "17-heads/heads_lesson.hpp"
#include "ablate.hpp"
#include "base/error.hpp"
#include "command.hpp"
#include "door.hpp"
#include "head_scan.hpp"
#include "heads_page.hpp"
#include "image_file.hpp"
#include "lesson_io.hpp"
#include "options.hpp"
#include "pretrained.hpp"
#include "train/ablation.hpp"
#include "train/gpt2_ablation.hpp"
#include "train/induction.hpp"
#include "train/tasks.hpp"
#include "trained.hpp"

namespace attn::cli {

namespace {

constexpr const char* kDefaultCheckpoint = "reverse";
constexpr std::size_t kMostSequences = 100'000;

struct HeadsCliOptions {
  std::string checkpoint, pretrained, text, ablate, ablate_with = "zero", export_path;
  std::size_t sequences = 20, seq = 0;
  std::uint64_t seed = 0;
  render::OutputOptions output;
};

[[noreturn]] void refuse(std::string_view option, const std::string& message) {
  throw Error(ErrorKind::bad_value, "heads", message).about(std::string(option));
}

// The model the scan runs, kept alive while the lesson runs.
struct ScannedModel {
  std::variant<std::monostate, Gpt2, Bert, TrainedCheckpoint> model;
  BpeTokenizer bpe;
  Vocabulary vocab;
};

std::size_t tokens_for(const HeadsCliOptions& o, std::size_t fallback, std::size_t positions,
                       std::string_view model) {
  const std::size_t tokens = o.seq == 0 ? std::min(fallback, positions) : o.seq;
  if (tokens > positions)
    refuse("seq", fmt::format("{} tokens are more than {}'s {} positions: give --seq {} or less",
                              tokens, model, positions, positions));
  return tokens;
}

// A text set: --text as one sequence, opened by `first` when set.
ProbeSet text_set(std::vector<std::int64_t> ids, std::optional<std::int64_t> first,
                  std::size_t positions) {
  if (first) ids.insert(ids.begin(), *first);
  if (ids.size() < 2) refuse("text", "the text has fewer than 2 tokens: give a longer --text");
  if (ids.size() > positions)
    refuse("text", fmt::format("the text has {} tokens, more than the model's {} positions: give "
                               "a shorter --text",
                               ids.size(), positions));
  ProbeSet set{"the text", Ids({1, ids.size()}), {}};
  std::copy(ids.begin(), ids.end(), set.ids.begin());
  return set;
}

// The next-token loss and top-1 accuracy of a GPT-2 model on each probe set (on a repeated
// probe, from its copy on), with every head and with `heads` ablated.
std::vector<lessons::AblationRow> gpt2_ablation(const Gpt2& model,
                                                const std::vector<HeadRef>& heads,
                                                AblationMode mode,
                                                const std::vector<ProbeSet>& sets) {
  std::vector<lessons::AblationRow> rows;
  for (const ProbeSet& set : sets) {
    if (mode == AblationMode::mean && set.ids.shape(0) < 2) continue;  // one text: no mean
    const HeadAblationEffect e =
        measure_head_ablation(model, set.ids, heads, mode, set.copies_from);
    const std::string where = set.copies_from > 0 ? "its repeated half" : "every position";
    rows.push_back({fmt::format("next-token loss on {}, {}", set.name, where), e.loss_before,
                    e.loss_after, true});
    rows.push_back({fmt::format("top-1 accuracy on {}, {}", set.name, where), e.accuracy_before,
                    e.accuracy_after, false});
  }
  return rows;
}

void check_heads(const std::vector<HeadRef>& heads, std::size_t layers, std::size_t count) {
  for (const HeadRef& h : heads) {
    if (h.layer >= layers)
      refuse("ablate", fmt::format("layer {} does not exist: the model has {} layers, 0 to {}",
                                   h.layer, layers, layers - 1));
    if (h.head >= count)
      refuse("ablate", fmt::format("head {} does not exist: each layer has {} heads, 0 to {}",
                                   h.head, count, count - 1));
  }
}

std::string heads_words(const std::vector<HeadRef>& heads, std::string_view how) {
  std::string out;
  for (const HeadRef& h : heads)
    out += fmt::format("{}{}.{}", out.empty() ? "" : ", ", h.layer, h.head);
  return fmt::format("{} ({} ablation)", out, how);
}

void set_gpt2(lessons::HeadsLessonOptions& l, ScannedModel& m, const HeadsCliOptions& o,
              const CLI::App& app, PretrainedGpt2 gpt2, const std::string& name) {
  const EncoderConfig& c = gpt2.config.sizes;
  const std::size_t positions = c.max_position_embeddings, vocab = c.vocab_size;
  const std::size_t tokens = tokens_for(o, 128, positions, name);
  // GPT-2 opens a document with <|endoftext|>, its BOS; probe tokens exclude it.
  ProbeTokens drawn{0, static_cast<std::int64_t>(vocab), std::nullopt, std::nullopt};
  const auto bos = static_cast<std::size_t>(gpt2.config.bos_token_id);
  if (bos < vocab) {
    drawn.first = gpt2.config.bos_token_id;
    if (bos + 1 == vocab) drawn.high = static_cast<std::int64_t>(bos);
  }
  MemoryPlan plan = plan_gpt2_reading(gpt2);
  const std::size_t batch = kScanBatch;
  append(plan, plan_gpt2(gpt2.config, batch, tokens, false));
  if (!o.ablate.empty()) append(plan, plan_head_ablation(gpt2.config, o.sequences, tokens));
  append(plan, lessons::plan_heads_lesson(c.num_hidden_layers, c.num_attention_heads, 6, 3, batch,
                                          tokens, 2 * o.sequences + 1));
  check_budget("heads", plan);
  // A folder attn train --task induction saved carries its run's record: its own held-out
  // sequences (copies 6 to 16 tokens back, where it learned to look) decide the previous-token
  // and induction patterns; TransformerLens's probe puts the copy T/2 back.
  if (const auto found = gpt2.folder.metadata.find("attn_induction");
      found != gpt2.folder.metadata.end()) {
    const InductionRecord record = read_induction_record(gpt2.folder.metadata, gpt2.folder.shown);
    const std::vector<InductionSequence> held = held_out_sequences(record.config);
    const std::size_t count = std::min(o.sequences, held.size()), T = record.config.tokens;
    Ids ids = Ids::from_shape({count, T});
    for (std::size_t i = 0; i < count; ++i)
      std::copy_n(held[i].ids.begin(), T, ids.begin() + static_cast<std::ptrdiff_t>(i * T));
    l.sets.push_back(
        {"the induction task's held-out sequences", std::move(ids), {"previous", "induction"}});
  }
  Rng rng(o.seed);
  l.sets.push_back(repeated_probe(rng, o.sequences, tokens, drawn));
  if (app.count("--text") > 0) {
    const std::vector<std::int64_t> ids = encode(gpt2.tokenizer, o.text);
    l.sets.push_back(text_set(ids, drawn.first, positions));
  }
  m.bpe = std::move(gpt2.tokenizer);
  m.model = read_gpt2(gpt2);
  Gpt2& model = std::get<Gpt2>(m.model);
  l.parameters = gpt2_size(gpt2.config, model.heads).parameters.value();
  l.model = name;
  l.structure = fmt::format("GPT-2, {} blocks x {} heads, causal", c.num_hidden_layers,
                            c.num_attention_heads);
  l.layers = c.num_hidden_layers;
  l.heads = c.num_attention_heads;
  l.causal = true;
  l.batch = batch;
  l.weights = gpt2_weights(model);
  l.patterns = standard_patterns(true);
  const BpeTokenizer* bpe = &m.bpe;
  l.token_text = [bpe](std::int64_t id) {
    const auto i = static_cast<std::size_t>(id);
    return i < bpe->size() ? printable(bpe->tokens[i], 40) : std::to_string(id);
  };
  if (!o.ablate.empty()) {
    const std::vector<HeadRef> heads = parse_head_list(o.ablate, "heads");
    check_heads(heads, l.layers, l.heads);
    if (o.ablate_with == "mean" && o.sequences < 2)
      refuse("ablate-with",
             "mean ablation averages each head over the probe sequences: give "
             "--sequences 2 or more");
    l.ablated = heads_words(heads, o.ablate_with);
    l.ablation = gpt2_ablation(
        model, heads, o.ablate_with == "mean" ? AblationMode::mean : AblationMode::zero, l.sets);
  }
}

void set_bert(lessons::HeadsLessonOptions& l, ScannedModel& m, const HeadsCliOptions& o,
              const CLI::App& app, PretrainedBert bert) {
  if (!o.ablate.empty())
    refuse("ablate",
           "--ablate measures a loss, and a BERT folder is scanned without its MLM head: ablate "
           "the heads of a GPT-2 folder or of a checkpoint (attn heads --checkpoint reverse "
           "--ablate 0.0)");
  const EncoderConfig& c = bert.config.sizes;
  const std::size_t positions = c.max_position_embeddings, vocab = c.vocab_size;
  const std::size_t tokens = tokens_for(o, 128, positions, o.pretrained);
  const Vocabulary& v = bert.tokenizer.vocab;
  const auto id_of = [&v](const char* token) -> std::optional<std::int64_t> {
    const auto it = v.ids.find(token);
    if (it == v.ids.end()) return std::nullopt;
    return it->second;
  };
  // [CLS] A [SEP], the ids drawn past the [unused] block when the vocabulary is large enough.
  ProbeTokens drawn{vocab > 2000 ? 999 : 0, static_cast<std::int64_t>(vocab), id_of("[CLS]"),
                    id_of("[SEP]")};
  MemoryPlan plan = plan_bert_reading(bert);
  const std::size_t batch = kScanBatch;
  append(plan, plan_bert(bert.config, BertHeads::none, batch, tokens, false));
  append(plan, lessons::plan_heads_lesson(c.num_hidden_layers, c.num_attention_heads, 7, 3, batch,
                                          tokens, 2 * o.sequences + 1));
  check_budget("heads", plan);
  Rng rng(o.seed);
  l.sets.push_back(repeated_probe(rng, o.sequences, tokens, drawn));
  if (app.count("--text") > 0) {
    const BertText text = bert_text(bert, o.text, "", "");
    std::vector<std::int64_t> ids(text.input.ids.begin(), text.input.ids.end());
    l.sets.push_back(text_set(ids, std::nullopt, positions));
  }
  m.vocab = bert.tokenizer.vocab;
  m.model = read_bert(bert);
  const Bert& read = std::get<Bert>(m.model);
  l.parameters = bert_size(bert.config, read.heads, read.pooler.has_value()).parameters.value();
  l.model = o.pretrained;
  l.structure =
      fmt::format("BERT, {} layers x {} heads", c.num_hidden_layers, c.num_attention_heads);
  l.layers = c.num_hidden_layers;
  l.heads = c.num_attention_heads;
  l.batch = batch;
  l.weights = bert_weights(std::get<Bert>(m.model));
  l.patterns = standard_patterns(false);
  const Vocabulary* vv = &m.vocab;
  l.token_text = [vv](std::int64_t id) {
    return static_cast<std::size_t>(id) < vv->tokens.size()
               ? vv->tokens[static_cast<std::size_t>(id)]
               : std::to_string(id);
  };
}

void set_checkpoint(lessons::HeadsLessonOptions& l, ScannedModel& m, const HeadsCliOptions& o,
                    const CLI::App& app, Context& context) {
  if (app.count("--seq") > 0)
    refuse("seq",
           "a checkpoint reads its task's sequences, of the length it was trained on: "
           "drop --seq");
  TrainedCheckpoint c = load_checkpoint(o.checkpoint, context);
  if (!std::holds_alternative<TokenClassifier>(c.model))
    refuse("checkpoint",
           fmt::format("'{}' is an encoder-decoder: attn heads scores self-attention that reads "
                       "one sequence; give an encoder checkpoint such as reverse, or look at its "
                       "parts with attn view model --checkpoint {} --part encoder",
                       o.checkpoint, o.checkpoint));
  const Task task = std::get<Task>(c.config.task);
  const TaskInfo& info = task_info(task);
  const std::size_t tokens = c.config.sizes.tokens, layers = c.config.layers,
                    heads = c.config.heads;
  ProbeTokens drawn{0, static_cast<std::int64_t>(c.config.sizes.vocab), std::nullopt, std::nullopt};
  MemoryPlan plan = plan_layer_tapes(encoder_config(c.config), o.sequences, tokens);
  append(plan,
         lessons::plan_heads_lesson(layers, heads, 7, 4, o.sequences, tokens, 3 * o.sequences + 1));
  check_budget("heads", plan);
  Rng rng(o.seed);
  l.sets.push_back(repeated_probe(rng, o.sequences, tokens, drawn));
  ProbeSet held{fmt::format("{}'s held-out sequences", info.name),
                lessons::measured_sequences(c.config, o.sequences).ids,
                {std::string(info.name)}};
  l.sets.push_back(std::move(held));
  if (app.count("--text") > 0) {
    const Ids ids = checkpoint_ids(c, o.text, "heads");
    l.sets.push_back({"the text", ids, {}});
  }
  l.model = lessons::checkpoint_label(o.checkpoint);
  l.structure =
      fmt::format("the book's encoder, {} layers x {} heads, task {}", layers, heads, info.name);
  l.layers = layers;
  l.heads = heads;
  l.batch = o.sequences;
  l.patterns = standard_patterns(false);
  l.patterns.push_back(
      {std::string(info.name), std::string(info.keys),
       [task](const std::vector<std::int64_t>& ids, bool) { return task_targets(task, ids); }});
  l.token_text = [](std::int64_t id) { return token_text(id); };
  if (info.claim != HeadsClaim::none && is_shipped_checkpoint_name(o.checkpoint))
    l.claims.push_back({std::string(info.name), info.claim, std::nullopt,
                        fmt::format("lesson 04 on the shipped {} checkpoint", info.name)});
  if (!o.ablate.empty()) {
    if (o.ablate_with == "mean")
      refuse("ablate-with",
             "mean ablation is measured on a GPT's next-token loss; a checkpoint's heads are "
             "ablated by zeroing them: drop --ablate-with, or give a GPT (--checkpoint gpt-char)");
    const std::vector<HeadRef> ablated = parse_head_list(o.ablate, "heads");
    check_heads(ablated, layers, heads);
    const AblationEffect e = measure_ablation(c.model, c.config, ablated, ViewPart::encoder, 2000);
    l.ablated = heads_words(ablated, "zero");
    for (std::size_t i = 0; i < e.before.size() && i < e.after.size(); ++i)
      l.ablation.push_back(
          {fmt::format("held-out {} ({} sequences)", e.before[i].first, e.examples),
           e.before[i].second, e.after[i].second, false});
  }
  for (const auto& [key, tensor] : checkpoint_state_dict(c.model))
    l.parameters += static_cast<std::int64_t>(tensor.size());
  m.model = std::move(c);
  l.weights = encoder_weights(
      std::get<TokenClassifier>(std::get<TrainedCheckpoint>(m.model).model).encoder);
}

void run(const HeadsCliOptions& o, const CLI::App& app, Context& context) {
  if (!o.export_path.empty() && render::extension_of(o.export_path) != ".html")
    refuse("export", fmt::format("attn heads exports an HTML page: give a name ending in .html, "
                                 "e.g. --export heads.html"));
  if (!o.checkpoint.empty() && !o.pretrained.empty())
    refuse("pretrained", "give one model: --checkpoint or --pretrained");
  // Each batch's forward frees and allocates the same tapes again: keep them in the process.
  keep_freed_memory();
  ScannedModel m;
  lessons::HeadsLessonOptions l;
  std::string folder = o.pretrained, name = o.pretrained;
  const std::string checkpoint =
      o.checkpoint.empty() && o.pretrained.empty() ? std::string(kDefaultCheckpoint) : o.checkpoint;
  if (!checkpoint.empty())
    if (const std::optional<std::string> shipped = shipped_checkpoint_folder(checkpoint)) {
      folder = *shipped;
      name = lessons::checkpoint_label(checkpoint);
    }
  if (!folder.empty()) {
    PretrainedFolder f = open_folder(folder);
    if (is_gpt2(f))
      set_gpt2(l, m, o, app, open_gpt2(std::move(f)), name);
    else
      set_bert(l, m, o, app, open_bert(std::move(f)));
  } else {
    HeadsCliOptions with = o;
    with.checkpoint = checkpoint;
    set_checkpoint(l, m, with, app, context);
  }
  HeadScan scan;
  const lessons::LessonRun lesson = lessons::run_heads(l, &scan);
  std::vector<render::FileOutput> files;
  if (!o.export_path.empty()) {
    render::HeadsPage page{l.model, l.structure, {}};
    for (const ProbeSet& set : l.sets)
      page.notes.push_back(fmt::format("Probe set: {}, {} sequences of {} tokens.", set.name,
                                       set.ids.shape(0), set.ids.shape(1)));
    for (const lessons::Item& item : lesson.items())
      if (const auto* c = std::get_if<lessons::Check>(&item))
        page.notes.push_back(
            fmt::format("Check {}: {}", c->passed ? "passed" : "FAILED", c->detail));
    const std::string html = render::heads_html(scan, page);
    files.push_back(
        {o.export_path, "export", std::vector<unsigned char>(html.begin(), html.end())});
  }
  context.exit_code = publish(lesson, o.output, context, files);
}

void setup(CLI::App& app, Context& context) {
  auto o = std::make_shared<HeadsCliOptions>();
  CLI::App* sub = add_lesson_command(app, "heads");
  sub->add_option("--checkpoint", o->checkpoint,
                  fmt::format("a trained model: an encoder checkpoint (attn train, or shipped: "
                              "reverse, sort, histogram, previous-token) or a shipped GPT "
                              "(gpt-char); default {}",
                              kDefaultCheckpoint))
      ->check(not_empty_validator("--checkpoint", kDefaultCheckpoint))
      ->option_text("NAME|FILE");
  add_pretrained_option(*sub, o->pretrained)->check(not_empty_validator("--pretrained", "gpt2"));
  sub->add_option(
         "--sequences", o->sequences,
         "random sequences whose second half repeats the first, the probe set (default 20)")
      ->check(whole_number_validator(1, static_cast<long long>(kMostSequences)))
      ->option_text("N");
  sub->add_option("--seq", o->seq,
                  "tokens per probe sequence (default 128, or the model's positions when fewer; "
                  "a checkpoint's are its task's)")
      ->check(whole_number_validator(3, 1'000'000))
      ->option_text("T");
  sub->add_option("--text", o->text, "one more probe set: this text, in the model's tokens")
      ->check(not_empty_validator("--text", "the cat sat on the mat. the cat"))
      ->option_text("TEXT");
  sub->add_option("--seed", o->seed, "the seed of the random probe sequences (default 0)")
      ->check(seed_validator())
      ->option_text("N");
  sub->add_option("--ablate", o->ablate,
                  "heads whose output is removed, layer.head comma-separated (e.g. 1.0,1.2): the "
                  "loss or accuracy with and without them")
      ->check(not_empty_validator("--ablate", "1.0"))
      ->option_text("L.H[,L.H...]");
  sub->add_option("--ablate-with", o->ablate_with,
                  "what replaces an ablated head's output on a GPT: zero (default), or mean, its "
                  "mean over the probe sequences at each position")
      ->check(choice_validator("an ablation", {"zero", "mean"}))
      ->option_text("zero|mean");
  add_output(*sub, "--export", o->export_path, OutputKind::page,
             "also write the scores as a page, FILE.html: each pattern's layers x heads grid and "
             "each head's best pattern");
  add_output_options(*sub, o->output);
  add_heatmap_option(*sub, o->output);
  door_callback(*sub, [o, sub, &context] { run(*o, *sub, context); });
}

const Registration kRegistration{"heads", setup};

}  // namespace

}  // namespace attn::cli

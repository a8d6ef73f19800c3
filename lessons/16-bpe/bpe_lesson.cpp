#include "16-bpe/bpe_lesson.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/utf8.hpp"
#include "io/bpe.hpp"

namespace attn::lessons {

namespace {

constexpr std::size_t kTopPairs = 4;

std::string token_text(const BpeTraining& t, std::int32_t id) {
  if (id == t.special_id()) return t.special;
  return printable(t.vocabulary[static_cast<std::size_t>(id)], 40);
}

std::string pair_text(const BpeTraining& t, BpePair pair) {
  return fmt::format("'{}'+'{}'", token_text(t, pair.first), token_text(t, pair.second));
}

// The chunks' tokens joined by '|', the tokens of id `marked` highlighted, cut after about
// kLineWidth columns.
std::string tokens_line(const BpeTraining& t, const std::vector<BpeIds>& chunks,
                        std::int32_t marked) {
  constexpr std::size_t kLineWidth = 86;
  std::string out;
  std::size_t width = 0;
  for (const BpeIds& ids : chunks)
    for (const std::int32_t id : ids) {
      const std::string text = token_text(t, id);
      if (width > kLineWidth) return out + " ...";
      if (width > 0) out += '|';
      out += id == marked ? highlighted(text) : text;
      width += column_width(text) + 1;
    }
  return out;
}

std::vector<std::int64_t> widened(const BpeIds& ids) {
  return {ids.begin(), ids.end()};
}

std::string ratio(std::size_t bytes, std::size_t tokens) {
  return fmt::format("{:.3f}",
                     tokens ? static_cast<double>(bytes) / static_cast<double>(tokens) : 0.0);
}

// The merges as a step (M, 2): row i holds the two ids merge i joins.
void merges_step(LessonRun& run, const BpeTraining& t, bool printed) {
  std::vector<std::int64_t> ids;
  for (const BpePair& pair : t.merges) {
    ids.push_back(pair.first);
    ids.push_back(pair.second);
  }
  run.step("merges", "merge i joins row i's two ids into id 256 + i (M, 2)",
           make_int64({t.merges.size(), 2}, ids), printed);
}

void show_bytes(LessonRun& run, const std::string& text) {
  run.section("bytes");
  std::vector<std::int64_t> bytes;
  for (const char c : text)
    bytes.push_back(static_cast<unsigned char>(c));
  run.step("bytes", fmt::format("the text's UTF-8 bytes, {} of them: ids 0..255", bytes.size()),
           make_int64({bytes.size()}, bytes));
}

void show_chunks(LessonRun& run, const std::string& text) {
  run.section("chunks");
  const std::vector<std::string> pieces = split_by_pattern(text);
  Table cut{"GPT-2's pattern cuts the text into chunks", {"chunk", "text", "bytes"}, {}};
  for (std::size_t c = 0; c < pieces.size(); ++c)
    cut.rows.push_back({std::to_string(c), fmt::format("'{}'", printable(pieces[c], 40)),
                        std::to_string(pieces[c].size())});
  run.table(std::move(cut));
  // The pairs a chunk's edge splits: the last byte of one chunk and the first of the next.
  std::map<std::pair<std::string, std::string>, std::size_t> across;
  std::vector<std::pair<std::string, std::string>> order;
  for (std::size_t c = 0; c + 1 < pieces.size(); ++c) {
    if (pieces[c].empty() || pieces[c + 1].empty()) continue;
    const std::pair<std::string, std::string> pair{pieces[c].substr(pieces[c].size() - 1),
                                                   pieces[c + 1].substr(0, 1)};
    if (across[pair]++ == 0) order.push_back(pair);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return across[a] > across[b]; });
  Table edges{"Pairs across a chunk's edge, never counted", {"pair", "times in the text"}, {}};
  for (std::size_t i = 0; i < order.size() && i < 6; ++i)
    edges.rows.push_back(
        {fmt::format("'{}'+'{}'", printable(order[i].first), printable(order[i].second)),
         std::to_string(across[order[i]])});
  run.table(std::move(edges));
}

// The merges one at a time as minbpe's loop makes them, with the counts before each.
BpeTraining show_merges(LessonRun& run, const std::string& text, std::size_t vocab_size) {
  run.section("merges");
  const BpeTraining t = train_bpe_reference(text, vocab_size);
  std::vector<BpeIds> chunks = bpe_chunks(text);
  Table counts{fmt::format("The {} most frequent pairs before each merge", kTopPairs),
               {"merge", "pairs (count), most frequent first; ties in the order first seen"},
               {}};
  Table texts{
      "The text's tokens after each merge, the new token highlighted", {"merge", "tokens"}, {}};
  for (std::size_t m = 0; m < t.merges.size(); ++m) {
    std::vector<BpePairCount> stats = bpe_pair_counts(chunks);
    std::stable_sort(stats.begin(), stats.end(), [](const BpePairCount& a, const BpePairCount& b) {
      return a.count > b.count;
    });
    std::string row;
    for (std::size_t i = 0; i < stats.size() && i < kTopPairs; ++i) {
      const std::string cell = fmt::format("{} ({})", pair_text(t, stats[i].pair), stats[i].count);
      row += (row.empty() ? "" : "  ") + (stats[i].pair == t.merges[m] ? highlighted(cell) : cell);
    }
    counts.rows.push_back({std::to_string(m + 1), row});
    const auto id = static_cast<std::int32_t>(256 + m);
    for (BpeIds& ids : chunks)
      ids = bpe_merge(ids, t.merges[m], id);
    texts.rows.push_back({std::to_string(m + 1), tokens_line(t, chunks, id)});
  }
  run.table(std::move(counts));
  run.table(std::move(texts));
  return t;
}

void show_vocabulary(LessonRun& run, const BpeTraining& t) {
  run.section("vocabulary");
  Table grown{"The tokens the merges add",
              {"id", "= left + right", "bytes", "as GPT-2's files write it"},
              {}};
  for (std::size_t m = 0; m < t.merges.size(); ++m) {
    const auto id = static_cast<std::int32_t>(256 + m);
    grown.rows.push_back({std::to_string(id),
                          fmt::format("{} + {}", t.merges[m].first, t.merges[m].second),
                          fmt::format("'{}'", token_text(t, id)), gpt2_token(t, id)});
  }
  grown.rows.push_back({std::to_string(t.special_id()), "(special)", t.special, t.special});
  run.table(std::move(grown));
  merges_step(run, t, true);
}

void show_compression(LessonRun& run, const BpeTraining& t) {
  run.section("compression");
  Table table{fmt::format("Tokens and bytes per token after each merge (before any: {} tokens, "
                          "one a byte)",
                          t.text_bytes),
              {"merge", "pair", "count", "tokens", "bytes per token"},
              {}};
  Curve curve{"bytes per token after each merge", {}, 8};
  for (std::size_t m = 0; m < t.merges.size(); ++m) {
    table.rows.push_back({std::to_string(m + 1), pair_text(t, t.merges[m]),
                          std::to_string(t.counts[m]), std::to_string(t.tokens[m]),
                          ratio(t.text_bytes, t.tokens[m])});
    curve.values.push_back(t.text_bytes ? static_cast<double>(t.text_bytes) / t.tokens[m] : 0.0);
  }
  run.table(std::move(table));
  if (curve.values.size() > 1) run.curve(std::move(curve));
}

Table encoded_table(const BpeTraining& t, const std::string& title, const BpeIds& ids) {
  Table table{title, {"position", "id", "token"}, {}};
  for (std::size_t i = 0; i < ids.size(); ++i)
    table.rows.push_back(
        {std::to_string(i), std::to_string(ids[i]), fmt::format("'{}'", token_text(t, ids[i]))});
  return table;
}

void show_special(LessonRun& run, const BpeTraining& t, const std::string& text) {
  run.section("special");
  std::size_t cut = std::min<std::size_t>(text.size(), 12);
  while (cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80)
    --cut;  // not inside a character
  const std::string first = text.substr(0, cut);
  const std::string document = first + t.special + first;
  const BpeIds ids = encode_trained(t, document);
  run.table(encoded_table(t, fmt::format("'{}' encoded", printable(document, 60)), ids));
  const bool whole = std::count(ids.begin(), ids.end(), t.special_id()) == 1;
  run.check(fmt::format("{} is one token, id {}", t.special, t.special_id()), whole,
            fmt::format("{} tokens, {} of them id {}", ids.size(),
                        std::count(ids.begin(), ids.end(), t.special_id()), t.special_id()));
}

void show_roundtrip(LessonRun& run, const BpeTraining& t, const std::string& text) {
  run.section("roundtrip");
  const BpeIds ids = encode_trained(t, text);
  run.step("input_ids",
           fmt::format("the text encoded: {} tokens for {} bytes", ids.size(), text.size()),
           make_int64({ids.size()}, widened(ids)));
  for (const std::string& sample : {text, std::string("naïve café 🙂 👍🏽")}) {
    const BpeIds encoded = encode_trained(t, sample);
    const std::string back = decode_trained(t, encoded);
    run.check(fmt::format("decode(encode('{}')) gives the bytes back", printable(sample, 40)),
              back == sample,
              fmt::format("{} bytes -> {} tokens -> {} bytes", sample.size(), encoded.size(),
                          back.size()));
  }
  const BpeIds cut = {0xf0, 0x9f};  // the first two of 🙂's four bytes
  const std::string bytes = decode_trained(t, cut);
  Table invalid{"Ids that cut a character: the bytes are no UTF-8 on their own",
                {"ids", "bytes (escaped)", "minbpe's decode"},
                {{"240, 159", printable(bytes), "'\xef\xbf\xbd' (U+FFFD)"}}};
  run.table(std::move(invalid));
  run.check("decode([240, 159]) gives bytes 0xf0 0x9f, which are not UTF-8",
            bytes == "\xf0\x9f" && utf8_error(bytes) != std::string_view::npos,
            "2 bytes, the start of a 4-byte character");
}

void show_files(LessonRun& run, const BpeTraining& t, const std::string& text) {
  run.section("files");
  const std::string vocab = gpt2_vocab_json(t), merges = gpt2_merges_txt(t);
  Table lines{"merges.txt, its first lines", {"line", "text"}, {}};
  std::size_t start = 0;
  for (std::size_t line = 1; line <= 6 && start < merges.size(); ++line) {
    const std::size_t end = merges.find('\n', start);
    lines.rows.push_back({std::to_string(line), merges.substr(start, end - start)});
    start = end + 1;
  }
  run.table(std::move(lines));
  const BpeTokenizer read_back = parse_bpe(vocab, merges, "the trained files");
  const BpeIds ids = encode_trained(t, text);
  const std::vector<std::int64_t> gpt2_ids = encode(read_back, text);
  run.check("attn's GPT-2 tokenizer, reading the files, encodes the text to the same ids",
            gpt2_ids == widened(ids),
            fmt::format("{} tokens; vocab.json holds {} tokens, merges.txt {} merges",
                        gpt2_ids.size(), read_back.size(), read_back.merges.size()));
  run.save_file("vocab.json", vocab);
  run.save_file("merges.txt", merges);
}

}  // namespace

LessonRun run_bpe(const BpeLessonOptions& options) {
  LessonRun run("bpe");
  run.setting("text", options.text);
  run.setting("vocab_size", std::to_string(options.vocab_size));
  show_bytes(run, options.text);
  show_chunks(run, options.text);
  const BpeTraining t = show_merges(run, options.text, options.vocab_size);
  const BpeTraining fast = train_bpe(options.text, options.vocab_size);
  run.check(
      "the fast trainer (distinct chunks, counts kept up to date, a heap) makes the same merges",
      fast.merges == t.merges, fmt::format("{} merges compared", t.merges.size()));
  show_vocabulary(run, t);
  show_compression(run, t);
  show_special(run, t, options.text);
  show_roundtrip(run, t, options.text);
  show_files(run, t, options.text);
  return run;
}

LessonRun run_tokenizer_train(const std::string& corpus, const BpeTraining& t) {
  LessonRun run("tokenizer train");
  run.setting("corpus", corpus);
  run.setting("vocab_size", std::to_string(t.vocabulary.size()));
  constexpr std::size_t kShown = 10;
  Table table{fmt::format("The merges and bytes per token ({} bytes, so {} tokens before any; "
                          "the first and last {} of {} merges)",
                          t.text_bytes, t.text_bytes, kShown, t.merges.size()),
              {"merge", "id", "pair", "count", "tokens", "bytes per token"},
              {}};
  for (std::size_t m = 0; m < t.merges.size(); ++m) {
    if (m >= kShown && m + kShown < t.merges.size()) continue;
    table.rows.push_back({std::to_string(m + 1), std::to_string(256 + m), pair_text(t, t.merges[m]),
                          std::to_string(t.counts[m]), std::to_string(t.tokens[m]),
                          ratio(t.text_bytes, t.tokens[m])});
  }
  run.table(std::move(table));
  merges_step(run, t, false);
  std::vector<std::int64_t> tokens(t.tokens.begin(), t.tokens.end());
  run.step("tokens", "the corpus's tokens after each merge (M)",
           make_int64({tokens.size()}, tokens), false);
  run.save_file("vocab.json", gpt2_vocab_json(t));
  run.save_file("merges.txt", gpt2_merges_txt(t));
  return run;
}

}  // namespace attn::lessons

#include "00-tokens/gpt2_tokens_lesson.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn::lessons {

namespace {

std::string joined(const std::vector<std::string>& symbols) {
  std::string out;
  for (const std::string& s : symbols)
    out += (out.empty() ? "" : " ") + printable(s, 40);
  return out;
}

}  // namespace

LessonRun run_gpt2_tokens(const std::string& name, const BpeTokenizer& tokenizer,
                          const std::string& text) {
  LessonRun run("tokens");
  run.setting("pretrained", name);
  run.setting("text", text);
  const std::vector<BpePiece> pieces = encode_steps(tokenizer, text);
  run.section("gpt2_pieces");

  Table cut{"GPT-2's pattern cuts the text; each byte becomes one character (a space is Ġ)",
            {"piece", "text", "byte characters"},
            {}};
  for (std::size_t p = 0; p < pieces.size(); ++p)
    cut.rows.push_back(
        {std::to_string(p), printable(pieces[p].text, 40), joined(pieces[p].initial)});
  run.table(std::move(cut));

  run.section("gpt2_merges");
  Table merges{"The merges, lowest rank first, each joined everywhere in its piece",
               {"piece", "step", "rank", "pair", "symbols after"},
               {}};
  for (std::size_t p = 0; p < pieces.size(); ++p)
    for (std::size_t s = 0; s < pieces[p].merges.size(); ++s) {
      const BpeMerge& m = pieces[p].merges[s];
      merges.rows.push_back({std::to_string(p), std::to_string(s + 1), std::to_string(m.rank),
                             printable(m.left, 40) + " + " + printable(m.right, 40),
                             joined(m.symbols)});
    }
  run.table(std::move(merges));

  run.section("gpt2_ids");
  Table tokens{"The tokens and their ids in vocab.json", {"position", "piece", "token", "id"}, {}};
  std::vector<std::int64_t> ids;
  for (std::size_t p = 0; p < pieces.size(); ++p)
    for (std::size_t t = 0; t < pieces[p].tokens.size(); ++t) {
      tokens.rows.push_back({std::to_string(ids.size()), std::to_string(p),
                             printable(pieces[p].tokens[t], 40), std::to_string(pieces[p].ids[t])});
      ids.push_back(pieces[p].ids[t]);
    }
  run.table(std::move(tokens));
  run.step("input_ids", "input_ids (B, T)", make_int64({1, ids.size()}, ids), true);
  const std::string back = decode(tokenizer, ids);
  run.check("decode(encode(text)) gives the text back byte for byte", back == text,
            fmt::format("{} bytes in, {} bytes back", text.size(), back.size()));
  return run;
}

}  // namespace attn::lessons

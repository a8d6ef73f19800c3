#include "ablate.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"
#include "lesson.hpp"
#include "lesson_io.hpp"
#include "options.hpp"

namespace attn::cli {

namespace {
constexpr std::size_t kAblationExamples = 2000;  // held-out sequences (sources) the line scores

std::string_view part_name(ViewPart part) {
  return part == ViewPart::encoder ? "encoder" : part == ViewPart::decoder ? "decoder" : "cross";
}
std::string_view part_words(ViewPart part) {
  return part == ViewPart::encoder   ? "the encoder's self-attention"
         : part == ViewPart::decoder ? "the decoder's masked self-attention"
                                     : "the decoder's cross-attention";
}
}  // namespace

void add_ablate_option(CLI::App& app, AblateCliOptions& options, std::string_view when) {
  app.add_option("--ablate", options.ablate,
                 fmt::format("{}: zero these heads' outputs (layer.head, e.g. 0.1 or 0.0,0.1) "
                             "and print the held-out accuracy with and without them",
                             when))
      ->check(not_empty_validator("--ablate", "0.1"))
      ->option_text("L.H[,L.H...]");
}

void add_ablate_part_option(CLI::App& app, AblateCliOptions& options, ViewPart fallback) {
  app.add_option("--part", options.part,
                 fmt::format("with --ablate on an encoder-decoder, the attention its heads are "
                             "in: encoder, decoder (masked self-attention) or cross (default {})",
                             part_name(fallback)))
      ->check(choice_validator("a part", {"encoder", "decoder", "cross"}))
      ->option_text("encoder|decoder|cross");
}

std::vector<HeadRef> parse_head_list(const std::string& text, std::string_view command) {
  std::vector<HeadRef> heads;
  if (text.empty()) return heads;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const std::size_t dot = item.find('.');
    const auto digits = [](std::string_view part) {
      return !part.empty() && part.size() <= 6 &&
             std::all_of(part.begin(), part.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    };
    if (dot == std::string::npos || !digits(std::string_view(item).substr(0, dot)) ||
        !digits(std::string_view(item).substr(dot + 1))) {
      throw Error(ErrorKind::bad_value, std::string(command),
                  fmt::format("'{}' is not a head: give layer.head, e.g. 0.1, or several "
                              "separated by commas, e.g. 0.0,0.1",
                              printable(item)))
          .about("ablate");
    }
    heads.push_back({std::stoul(item.substr(0, dot)), std::stoul(item.substr(dot + 1))});
    start = end + 1;
  }
  return heads;
}

void refuse_ablate_without_model(const CLI::App& app, std::string_view command,
                                 std::string_view fix) {
  if (app.count("--ablate") > 0)
    throw Error(ErrorKind::bad_value, std::string(command),
                fmt::format("it zeroes a trained model's heads: {}, or drop --ablate", fix))
        .about("ablate");
}

std::optional<Ablation> read_ablation(const CLI::App& app, const AblateCliOptions& options,
                                      const TrainedModel& model, ViewPart fallback,
                                      std::string_view command, std::string_view encoder_refusal,
                                      bool part_alone_means_nothing) {
  const bool part_given = app.get_option_no_throw("--part") != nullptr && app.count("--part") > 0;
  const bool encoder = std::holds_alternative<TokenClassifier>(model);
  if (part_given && encoder)
    throw Error(ErrorKind::bad_value, std::string(command), std::string(encoder_refusal))
        .about("part");
  if (options.ablate.empty()) {
    if (part_given && part_alone_means_nothing)
      throw Error(ErrorKind::bad_value, std::string(command),
                  "it says which attention --ablate's heads are in: add --ablate, e.g. "
                  "--ablate 0.1, or drop --part")
          .about("part");
    return std::nullopt;
  }
  Ablation a;
  a.heads = parse_head_list(options.ablate, command);
  a.default_part = !part_given;
  a.part = encoder                     ? ViewPart::encoder
           : !part_given               ? fallback
           : options.part == "encoder" ? ViewPart::encoder
           : options.part == "decoder" ? ViewPart::decoder
                                       : ViewPart::cross;
  ablated_copy(model, a.heads, a.part);  // the heads exist, or an error about "ablate"
  return a;
}

std::string encoder_has_one_part(std::string_view checkpoint) {
  return fmt::format(
      "'{}' is an encoder: it has one part, its self-attention; drop --part, or "
      "give an encoder-decoder such as {}",
      checkpoint, kShippedSeq2Seq);
}

std::string ablated_heads_words(const TrainedModel& model, const Ablation& a) {
  std::string heads;
  for (const HeadRef& h : a.heads)
    heads += fmt::format("{}layer {} head {}", heads.empty() ? "" : ", ", h.layer, h.head);
  if (std::holds_alternative<TokenClassifier>(model)) return heads;
  return fmt::format("{}, {} (--part {}{})", heads, part_words(a.part), part_name(a.part),
                     a.default_part ? ", the default" : "");
}

std::string ablation_line(const TrainedModel& model, const TrainConfig& config, const Ablation& a,
                          std::string_view then) {
  const AblationEffect e = measure_ablation(model, config, a.heads, a.part, kAblationExamples);
  std::string scores;
  for (std::size_t i = 0; i < e.before.size(); ++i) {
    std::string name = e.before[i].first;
    std::replace(name.begin(), name.end(), '_', ' ');
    scores += fmt::format("{}{} {:.3f} -> {:.3f}", i == 0 ? "held-out " : ", ", name,
                          e.before[i].second, e.after[i].second);
  }
  return lessons::wrapped_prose(
      fmt::format("ablating {}: {} ({} {}); {}", ablated_heads_words(model, a), scores, e.examples,
                  std::holds_alternative<TokenClassifier>(model) ? "sequences" : "sources", then));
}

}  // namespace attn::cli

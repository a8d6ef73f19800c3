// --ablate L.H[,L.H...] (and --part on an encoder-decoder) on the commands that run a trained model:
// the heads whose outputs are zeroed (train/ablation.hpp), checked against the model, and the line
// that says what the held-out score becomes without them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention_view.hpp"
#include "command.hpp"
#include "train/ablation.hpp"
#include "train/trainer.hpp"

namespace attn::cli {

struct AblateCliOptions {
  std::string ablate;  // --ablate L.H[,L.H...]
  std::string part;    // --part encoder|decoder|cross, on the commands that add it
};
// --ablate; `when` says what it needs, e.g. "with --checkpoint".
void add_ablate_option(CLI::App& app, AblateCliOptions& options, std::string_view when);
// --part, which attention of an encoder-decoder --ablate names (default `fallback`).
void add_ablate_part_option(CLI::App& app, AblateCliOptions& options, ViewPart fallback);

// --ablate's list, "0.1" or "0.0,1.1": layer.head pairs, whole numbers separated by commas; errors
// are about "ablate".
std::vector<HeadRef> parse_head_list(const std::string& text, std::string_view command);

// Refuses --ablate on a run without a trained model; `fix` names what to add.
void refuse_ablate_without_model(const CLI::App& app, std::string_view command,
                                 std::string_view fix);

// The heads asked for, in one attention of the model.
struct Ablation {
  std::vector<HeadRef> heads;
  ViewPart part = ViewPart::encoder;
  bool default_part = true;  // --part not given
};
// --ablate and --part read and checked against `model` (an encoder-decoder's part defaults to
// `fallback`); none without --ablate. Refuses --part on an encoder with `encoder_refusal`
// (encoder_has_one_part's words for a checkpoint), and --part without --ablate when
// `part_alone_means_nothing` (attn view's --part also picks the attention it shows).
std::optional<Ablation> read_ablation(const CLI::App& app, const AblateCliOptions& options,
                                      const TrainedModel& model, ViewPart fallback,
                                      std::string_view command, std::string_view encoder_refusal,
                                      bool part_alone_means_nothing = true);
// "'reverse' is an encoder: it has one part, its self-attention; drop --part, or give an
// encoder-decoder such as transformer-reverse".
std::string encoder_has_one_part(std::string_view checkpoint);

// "layer 0 head 1" or, on an encoder-decoder, "the decoder's cross-attention's layer 0 head 1
// (--part cross, the default)".
std::string ablated_heads_words(const TrainedModel& model, const Ablation& ablation);
// The ablated heads' effect on 2000 held-out sequences (sources), and `then`, what the command
// does with them, as one paragraph wrapped at 100 columns: "ablating layer 0 head 1: held-out token
// accuracy 1.000 -> 0.971, sequence accuracy 1.000 -> 0.775 (2000 sequences); {then}".
std::string ablation_line(const TrainedModel& model, const TrainConfig& config,
                          const Ablation& ablation, std::string_view then);

}  // namespace attn::cli

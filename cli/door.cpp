#include "door.hpp"

#include <map>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/budget.hpp"
#include "base/error.hpp"
#include "image_file.hpp"
#include "options.hpp"
#include "save.hpp"

namespace attn::cli {

namespace {

struct DeclaredOutput {
  std::string option;
  std::function<void()> check;
};

std::map<const CLI::App*, std::vector<DeclaredOutput>>& declared() {
  static std::map<const CLI::App*, std::vector<DeclaredOutput>> outputs;
  return outputs;
}

std::set<const CLI::App*>& doors() {
  static std::set<const CLI::App*> subs;
  return subs;
}

// "--export" -> "export", the subject errors about the option carry.
std::string subject_of(const std::string& option) {
  std::string subject = option.substr(2);
  for (char& c : subject)
    if (c == '-') c = '_';
  return subject;
}

}  // namespace

CLI::Option* add_output(CLI::App& sub, const std::string& name, std::string& path, OutputKind kind,
                        const std::string& help) {
  const char* example = kind == OutputKind::checkpoint ? "model.safetensors"
                        : kind == OutputKind::picture  ? "loss.png"
                                                       : "view.html";
  CLI::Option* option = sub.add_option(name, path, help)
                            ->check(not_empty_validator(name, example))
                            ->option_text("FILE");
  declare_output(sub, name, [&path, kind, example, subject = subject_of(name)] {
    switch (kind) {
      case OutputKind::checkpoint:
        render::check_checkpoint_file(path);
        return;
      case OutputKind::picture:
        render::check_output_file(path, {".svg", ".png"}, example, subject);
        return;
      case OutputKind::page:
        render::check_output_file(path, {".html", ".svg", ".png"}, example, subject);
        return;
    }
  });
  return option;
}

void declare_output(CLI::App& sub, const std::string& name, std::function<void()> check) {
  declared()[&sub].push_back({name, std::move(check)});
}

void door_callback(CLI::App& sub, std::function<void()> body) {
  doors().insert(&sub);
  sub.callback([&sub, body = std::move(body)] {
    for (const DeclaredOutput& output : declared()[&sub])
      if (sub.count(output.option) > 0) output.check();
    const std::size_t plans = budget_checks();
    body();
    if (sub.get_option_no_throw("--max-memory") != nullptr && budget_checks() == plans)
      throw Error(
          ErrorKind::internal, "door_callback",
          fmt::format("attn {} takes --max-memory but checked no memory plan", sub.get_name()));
  });
}

void check_every_command_has_a_door(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (!doors().contains(sub))
      throw Error(
          ErrorKind::internal, "check_every_command_has_a_door",
          fmt::format("the command '{}' does not go through cli/door.hpp", sub->get_name()));
    check_every_command_has_a_door(*sub);
  }
}

}  // namespace attn::cli

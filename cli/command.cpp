#include "command.hpp"

namespace attn::cli {

namespace {
std::vector<Command>& commands() {
  static std::vector<Command> registered;
  return registered;
}
}  // namespace

Registration::Registration(std::string_view name, Setup setup) {
  commands().push_back({name, setup});
}

const std::vector<Command>& registered_commands() {
  return commands();
}

}  // namespace attn::cli

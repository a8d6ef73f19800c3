// attn: the transformer encoder, one concept per subcommand, computed for real.
#include "app.hpp"

int main(int argc, char** argv) {
  return attn::cli::run(argc, argv);
}

// Weak fallbacks for subcommands whose implementation lives in another file; a strong
// definition elsewhere replaces each one at link time.
#include <cstdio>

#include "cli/commands.h"

namespace vmetrics::cli {

__attribute__((weak)) void AddServeCommand(CLI::App&, int*) {}
__attribute__((weak)) void AddSimulateCommand(CLI::App&, int*) {}
__attribute__((weak)) void AddDemoCommand(CLI::App&, int*) {}

}  // namespace vmetrics::cli

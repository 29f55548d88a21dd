// Weak fallback for the simulate subcommand while src/cli/simulate.cc is being written; the
// strong definition replaces it at link time.
#include "cli/commands.h"

namespace vmetrics::cli {

__attribute__((weak)) void AddSimulateCommand(CLI::App&, int*) {}

}  // namespace vmetrics::cli

// SPDX-License-Identifier: Apache-2.0
// vmetrics wire-reference: frontend::WireReferenceBlocks, SpliceWireReference and
// WireLayoutsJson (offline/wire_reference.h) on stdout. docs/wire_format.md's generated tables
// and tests/fixtures/wire_layouts.json are this output (tools/regen_docs.sh writes them).
#include "vmetrics/offline/wire_reference.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "commands.h"

namespace vmetrics::cli {
namespace {

struct WireReferenceFlags {
  std::string doc;
  bool json = false;
};

int Run(const WireReferenceFlags& flags) {
  std::string text;
  if (flags.json) {
    text = frontend::WireLayoutsJson();
  } else if (!flags.doc.empty()) {
    std::ifstream in(flags.doc, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "vmetrics wire-reference: cannot read %s\n", flags.doc.c_str());
      return 1;
    }
    std::ostringstream content;
    content << in.rdbuf();
    Result<std::string> spliced = frontend::SpliceWireReference(content.str());
    if (!spliced.ok()) {
      std::fprintf(stderr, "vmetrics wire-reference: %s: %s\n", flags.doc.c_str(),
                   spliced.status().message().c_str());
      return 1;
    }
    text = std::move(*spliced);
  } else {
    for (const frontend::WireReferenceBlock& b : frontend::WireReferenceBlocks()) {
      text += "<!-- BEGIN GENERATED wire-reference " + b.name + " -->\n" + b.markdown +
              "<!-- END GENERATED wire-reference " + b.name + " -->\n";
    }
  }
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}

}  // namespace

void AddWireReferenceCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "wire-reference",
      "Print the wire-layout tables (SchedulerStats keys, request layouts) of every generation");
  auto flags = std::make_shared<WireReferenceFlags>();
  cmd->add_option("--doc", flags->doc,
                  "Print this Markdown file with its generated tables replaced")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--json", flags->json,
                "Print the layouts as JSON (tests/fixtures/wire_layouts.json)");
  cmd->footer(
      "Without a flag: every generated table between its markers. docs/wire_format.md and\n"
      "tests/fixtures/wire_layouts.json are this output; regenerate both after changing a wire\n"
      "generation's table with tools/regen_docs.sh.\n"
      "\n"
      "Examples:\n"
      "  vmetrics wire-reference --doc docs/wire_format.md | diff docs/wire_format.md -\n"
      "  vmetrics wire-reference --json > tests/fixtures/wire_layouts.json");
  cmd->callback([flags, exit_code] { *exit_code = Run(*flags); });
}

}  // namespace vmetrics::cli

// SPDX-License-Identifier: Apache-2.0
// File: wire_reference.h
//
// What `vmetrics wire-reference` prints: the wire-layout tables of docs/wire_format.md and the
// same facts as JSON for the Python generators under tools/, both generated from the tables the
// decoder and the encoders run on (include/vmetrics/wire_generation.h: the SchedulerStats field
// table kStatsKeyRows and each WireGeneration's key lists, nested key counts and request
// layout). The ctest wire_reference_current fails when docs/wire_format.md or
// tests/fixtures/wire_layouts.json differ from this output, so neither can drift from the code.
//
// docs/wire_format.md stays hand-written around the tables: each generated table sits between
//   <!-- BEGIN GENERATED wire-reference NAME -->
//   <!-- END GENERATED wire-reference NAME -->
// and SpliceWireReference replaces what is between them.
//
// Thread safety: free functions over constant tables.
//
// Example:
//   std::string doc = "<!-- BEGIN GENERATED wire-reference scheduler-stats -->\n"
//                     "<!-- END GENERATED wire-reference scheduler-stats -->\n";
//   Result<std::string> spliced = SpliceWireReference(doc);
//   ASSERT_TRUE(spliced.ok());
//   EXPECT_NE(spliced->find("| `num_running_reqs` |"), std::string::npos);
#ifndef VMETRICS_FRONTEND_WIRE_REFERENCE_H_
#define VMETRICS_FRONTEND_WIRE_REFERENCE_H_

#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/status.h"

namespace vmetrics::frontend {

// One generated table: its NAME in the markers, and its Markdown (ending in a newline).
struct WireReferenceBlock {
  std::string name;
  std::string markdown;
};

// Every generated table, in the order docs/wire_format.md shows them.
std::vector<WireReferenceBlock> WireReferenceBlocks();

// SpliceWireReference
//
// `doc` with the lines between each block's BEGIN and END markers replaced by the block. Fails
// (Status::InvalidArgument naming the block) when a block's markers are missing, repeated or
// unterminated, or the document has markers for a block that does not exist; `doc` is then unusable
// as a reference and nothing is replaced.
Result<std::string> SpliceWireReference(std::string_view doc);

// WireLayoutsJson
//
// The layout facts as one JSON document (indented by two, keys in a fixed order, ending in a
// newline): "scheduler_stats_fields" (the field table's rows) and "generations" (per
// generation: name, commit, EngineCoreOutput fields, SchedulerStats keys in order, nested key
// counts, the request layout). tests/fixtures/wire_layouts.json is this output; the Python
// generators read their key lists from it.
std::string WireLayoutsJson();

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_WIRE_REFERENCE_H_

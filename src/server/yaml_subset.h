// SPDX-License-Identifier: Apache-2.0
// File: yaml_subset.h (internal to src/server)
//
// ParseYamlSubset: a strict reader for the part of YAML that exporter-toolkit web config files
// use — nested block mappings whose leaves are scalars — and nothing else. Anything outside
// that subset is an error naming the line, never a guess: a config file that is read wrongly
// could switch TLS or authentication off without anyone noticing.
//
// Accepted:
//   - block mappings, nested by indentation with spaces (`key: value`, `key:` + deeper lines);
//   - plain scalars (`$2y$10$...`, `server.crt`), single-quoted ('it''s') and double-quoted
//     scalars on one line ("a\tb": escapes \\ \" \/ \t \n \r \xXX \uXXXX);
//   - keys written plain, single- or double-quoted; `~`, `null` and an empty value are null;
//     `{}` is an empty mapping;
//   - `#` comments (at a line start or after a space), blank lines, one leading `---`, a
//     trailing `...`, a UTF-8 byte-order mark, CRLF line ends.
// Refused with kUnsupported: sequences (`- x`, `[...]`), flow mappings other than `{}`,
// anchors and aliases, tags, block scalars (`|`, `>`), directives, multi-line scalars, several
// documents. Refused with kMalformed: tabs in indentation, inconsistent indentation, duplicate
// keys, an unterminated quote, control characters, nesting deeper than kMaxYamlDepth.
//
// Why not libyaml-cpp: the schema is three keys deep with string leaves; a full YAML library
// would bring aliases, tags and multi-document streams that this file must refuse anyway, and
// report them with exceptions. This reader is one pass over the lines, allocates only the
// result, and is small enough to read in one sitting.
//
// Thread safety: a pure function.
#ifndef VMETRICS_SERVER_YAML_SUBSET_H_
#define VMETRICS_SERVER_YAML_SUBSET_H_

#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/status.h"

namespace vmetrics::internal {

// Mappings nested deeper than this are refused; a web config needs three levels.
inline constexpr int kMaxYamlDepth = 8;

struct YamlEntry;

// One value of the document.
struct YamlNode {
  enum class Kind : unsigned char { kNull, kScalar, kMapping };
  Kind kind = Kind::kNull;
  std::string scalar;              // kScalar: the text, quotes removed and escapes resolved
  bool quoted = false;             // kScalar written in quotes (never a bool or null)
  std::vector<YamlEntry> entries;  // kMapping: in file order, keys unique
  int line = 0;                    // 1-based line where the value starts (0 for an empty file)
};

struct YamlEntry {
  std::string key;
  int line = 0;  // 1-based line of the key
  YamlNode value;
};

// ParseYamlSubset
//
// Parses `text` into its root node: a mapping, or null for a document without content.
// Failure: kMalformed or kUnsupported, the message starting "line N: ".
//
// Example:
//   Result<YamlNode> root = ParseYamlSubset("a:\n  b: 'x'\n");
//   ASSERT_TRUE(root.ok());
//   EXPECT_EQ(root->entries[0].value.entries[0].value.scalar, "x");
Result<YamlNode> ParseYamlSubset(std::string_view text);

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_YAML_SUBSET_H_

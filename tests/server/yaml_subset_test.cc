// SPDX-License-Identifier: Apache-2.0
// The YAML subset of web config files (src/server/yaml_subset.cc): what it reads, and one test
// per refusal, each checking the code and the line it names.
#include "yaml_subset.h"

#include <gtest/gtest.h>

#include <string>

namespace vmetrics::internal {
namespace {

using Kind = YamlNode::Kind;

YamlNode ParseOrDie(std::string_view text) {
  Result<YamlNode> root = ParseYamlSubset(text);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  return root.ok() ? *root : YamlNode{};
}

// The code and message of a refusal, e.g. "malformed: line 3: duplicate key ...".
std::string Refusal(std::string_view text) {
  Result<YamlNode> root = ParseYamlSubset(text);
  return root.ok() ? "accepted" : root.status().ToString();
}

TEST(YamlSubset, NestedMappingsKeepFileOrderAndLines) {
  YamlNode root = ParseOrDie(
      "# web config\n"
      "tls_server_config:\n"
      "  cert_file: server.crt\n"
      "  key_file: server.key\n"
      "\n"
      "basic_auth_users:\n"
      "  prometheus: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n");
  ASSERT_EQ(root.kind, Kind::kMapping);
  ASSERT_EQ(root.entries.size(), 2u);
  EXPECT_EQ(root.entries[0].key, "tls_server_config");
  EXPECT_EQ(root.entries[0].line, 2);
  const YamlNode& tls = root.entries[0].value;
  ASSERT_EQ(tls.kind, Kind::kMapping);
  ASSERT_EQ(tls.entries.size(), 2u);
  EXPECT_EQ(tls.entries[0].key, "cert_file");
  EXPECT_EQ(tls.entries[0].value.scalar, "server.crt");
  EXPECT_EQ(tls.entries[1].line, 4);
  const YamlNode& users = root.entries[1].value;
  ASSERT_EQ(users.entries.size(), 1u);
  EXPECT_EQ(users.entries[0].value.scalar,
            "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi");
  EXPECT_FALSE(users.entries[0].value.quoted);
}

TEST(YamlSubset, EmptyDocumentsAreNull) {
  for (std::string_view text : {"", "\n\n", "# only a comment\n", "---\n", "---\n...\n"}) {
    EXPECT_EQ(ParseOrDie(text).kind, Kind::kNull) << ::testing::PrintToString(text);
  }
}

TEST(YamlSubset, QuotedScalarsAndEscapes) {
  YamlNode root = ParseOrDie(
      "a: 'it''s # not a comment'\n"
      "b: \"tab\\there \\\"q\\\" \\\\ \\/ \\x41 \\u00e9\"\n"
      "'quoted key': \"\"\n"
      "\"dq key\": x  # comment\n");
  ASSERT_EQ(root.entries.size(), 4u);
  EXPECT_EQ(root.entries[0].value.scalar, "it's # not a comment");
  EXPECT_TRUE(root.entries[0].value.quoted);
  EXPECT_EQ(root.entries[1].value.scalar, "tab\there \"q\" \\ / A \xC3\xA9");
  EXPECT_EQ(root.entries[2].key, "quoted key");
  EXPECT_EQ(root.entries[2].value.kind, Kind::kScalar);
  EXPECT_EQ(root.entries[2].value.scalar, "");
  EXPECT_EQ(root.entries[3].key, "dq key");
  EXPECT_EQ(root.entries[3].value.scalar, "x");
}

TEST(YamlSubset, PlainScalarsEndAtACommentAndKeepInnerHashesAndColons) {
  YamlNode root = ParseOrDie(
      "a: value # comment\n"
      "b: no#comment\n"
      "c: http://host:9090/x\n"
      "d:    spaced   \n");
  EXPECT_EQ(root.entries[0].value.scalar, "value");
  EXPECT_EQ(root.entries[1].value.scalar, "no#comment");
  EXPECT_EQ(root.entries[2].value.scalar, "http://host:9090/x");
  EXPECT_EQ(root.entries[3].value.scalar, "spaced");
}

TEST(YamlSubset, NullsAndEmptyMappings) {
  YamlNode root = ParseOrDie("a:\nb: ~\nc: null\nd: {}\ne: { }  # empty\nf: 'null'\n");
  EXPECT_EQ(root.entries[0].value.kind, Kind::kNull);
  EXPECT_EQ(root.entries[1].value.kind, Kind::kNull);
  EXPECT_EQ(root.entries[2].value.kind, Kind::kNull);
  EXPECT_EQ(root.entries[3].value.kind, Kind::kMapping);
  EXPECT_TRUE(root.entries[3].value.entries.empty());
  EXPECT_EQ(root.entries[4].value.kind, Kind::kMapping);
  EXPECT_EQ(root.entries[5].value.kind, Kind::kScalar);
  EXPECT_EQ(root.entries[5].value.scalar, "null");
}

TEST(YamlSubset, ByteOrderMarkCrLfMarkersAndDedent) {
  YamlNode root = ParseOrDie(
      "\xEF\xBB\xBF---\r\n"
      "a:\r\n"
      "    b:\r\n"
      "        c: 1\r\n"
      "    d: 2\r\n"
      "e: 3\r\n"
      "...\r\n");
  ASSERT_EQ(root.entries.size(), 2u);
  const YamlNode& a = root.entries[0].value;
  ASSERT_EQ(a.entries.size(), 2u);
  EXPECT_EQ(a.entries[0].value.entries[0].value.scalar, "1");
  EXPECT_EQ(a.entries[1].value.scalar, "2");
  EXPECT_EQ(root.entries[1].value.scalar, "3");
}

TEST(YamlSubset, RefusesSequences) {
  EXPECT_EQ(Refusal("cipher_suites:\n  - TLS_AES_128_GCM_SHA256\n"),
            "unsupported: line 2: 'cipher_suites' holds a sequence ('- item'); sequences are "
            "not supported");
  EXPECT_EQ(Refusal("- a\n"), "unsupported: line 1: sequences ('- item') are not supported");
  EXPECT_EQ(Refusal("a: [x, y]\n"),
            "unsupported: line 1: flow sequences ('[...]') are not supported");
  EXPECT_EQ(Refusal("a: - x\n"), "unsupported: line 1: sequences ('- item') are not supported");
}

TEST(YamlSubset, RefusesOtherYamlFeaturesByName) {
  EXPECT_EQ(Refusal("a: {b: c}\n"),
            "unsupported: line 1: flow mappings ('{...}') are not supported, except '{}'");
  EXPECT_EQ(Refusal("a: &x 1\n"),
            "unsupported: line 1: anchors and aliases ('&x', '*x') are not supported");
  EXPECT_EQ(Refusal("a: 1\nb: *x\n"),
            "unsupported: line 2: anchors and aliases ('&x', '*x') are not supported");
  EXPECT_EQ(Refusal("a: !!str 1\n"), "unsupported: line 1: tags ('!tag') are not supported");
  EXPECT_EQ(Refusal("cert: |\n  -----BEGIN\n"),
            "unsupported: line 1: block scalars ('|', '>') are not supported");
  EXPECT_EQ(Refusal("a: >\n  x\n"),
            "unsupported: line 1: block scalars ('|', '>') are not supported");
  EXPECT_EQ(Refusal("%YAML 1.2\n---\na: 1\n"),
            "unsupported: line 1: directives ('%YAML') are not supported");
  EXPECT_EQ(Refusal("? a\n"), "unsupported: line 1: complex keys ('? key') are not supported");
  EXPECT_EQ(Refusal("a: 1\n---\nb: 2\n"), "unsupported: line 2: several documents ('---')");
  EXPECT_EQ(Refusal("a: 1\n...\nb: 2\n"),
            "unsupported: line 3: content after '...' (several documents)");
}

TEST(YamlSubset, RefusesBadIndentation) {
  EXPECT_EQ(Refusal("a:\n\tb: 1\n"), "malformed: line 2: tabs are not allowed in indentation");
  EXPECT_EQ(Refusal("a:\n    b: 1\n  c: 2\n"),
            "malformed: line 3: indentation matches no enclosing mapping");
  EXPECT_EQ(Refusal("a: 1\n  b: 2\n"),
            "malformed: line 2: unexpected indentation (values cannot continue on another "
            "line)");
  EXPECT_EQ(Refusal("  a: 1\nb: 2\n"),
            "malformed: line 2: indentation matches no enclosing mapping");
}

TEST(YamlSubset, RefusesMultiLineValues) {
  EXPECT_EQ(Refusal("a: one\ntwo\n"),
            "malformed: line 2: expected 'key: value', got 'two' (values cannot continue on "
            "another line)");
  EXPECT_EQ(Refusal("a: \"one\ntwo\"\n"),
            "malformed: line 1: unterminated double-quoted value (quoted values must end on "
            "their line)");
  EXPECT_EQ(Refusal("a: 'one\n"),
            "malformed: line 1: unterminated single-quoted value (quoted values must end on "
            "their line)");
}

TEST(YamlSubset, RefusesDuplicateKeysInOneMappingOnly) {
  EXPECT_EQ(Refusal("a: 1\nb: 2\na: 3\n"),
            "malformed: line 3: duplicate key 'a' (first on line 1)");
  EXPECT_EQ(Refusal("x:\n  a: 1\ny:\n  a: 1\n"), "accepted");
}

TEST(YamlSubset, RefusesMalformedScalars) {
  EXPECT_EQ(Refusal("a: b: c\n"),
            "malformed: line 1: a plain value cannot contain ': ' (nested mappings go on their "
            "own lines; quote the value if the colon is meant)");
  EXPECT_EQ(Refusal("a: \"x\\q\"\n"),
            "malformed: line 1: unsupported escape \\q in a double-quoted value");
  EXPECT_EQ(Refusal("a: \"\\u00zz\"\n"),
            "malformed: line 1: bad hexadecimal escape in a double-quoted value");
  EXPECT_EQ(Refusal("a: \"\\u0000\"\n"), "malformed: line 1: NUL escapes are not allowed");
  EXPECT_EQ(Refusal("a: \"\\ud800\"\n"),
            "malformed: line 1: \\u escapes of UTF-16 surrogates are not allowed");
  EXPECT_EQ(Refusal("a: \"x\" y\n"), "malformed: line 1: unexpected text after the value: 'y'");
  EXPECT_EQ(Refusal("a: @x\n"), "malformed: line 1: '@' cannot start a value; quote it");
  EXPECT_EQ(Refusal(": x\n"), "malformed: line 1: a key is missing before ':'");
  EXPECT_EQ(Refusal("a: 1\x01\n"), "malformed: line 1: control character 1 in the file");
  EXPECT_EQ(Refusal(std::string("a: 1\0\n", 6)),
            "malformed: line 1: control character 0 in the file");
}

TEST(YamlSubset, RefusesNestingBeyondTheLimit) {
  std::string text;
  for (int depth = 0; depth <= kMaxYamlDepth; ++depth) {
    text += std::string(static_cast<size_t>(depth) * 2, ' ') + "k" + std::to_string(depth) + ":\n";
  }
  EXPECT_EQ(Refusal(text), "malformed: line " + std::to_string(kMaxYamlDepth + 1) +
                               ": mappings nested deeper than " + std::to_string(kMaxYamlDepth) +
                               " levels");
}

}  // namespace
}  // namespace vmetrics::internal

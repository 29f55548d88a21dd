// SPDX-License-Identifier: Apache-2.0
// The YAML subset of web config files; see yaml_subset.h for what is accepted and why.
#include "yaml_subset.h"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace vmetrics::internal {
namespace {

Status Malformed(int line, const std::string& message) {
  return Status::Malformed("line " + std::to_string(line) + ": " + message);
}

Status Unsupported(int line, const std::string& message) {
  return Status::Unsupported("line " + std::to_string(line) + ": " + message);
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

// `rest` is a document marker ("---" or "...") alone or followed by a comment.
bool IsMarker(std::string_view rest, std::string_view marker) {
  if (rest.substr(0, 3) != marker) return false;
  const std::string_view after = rest.substr(3);
  if (after.empty()) return true;
  if (!IsBlank(after.front())) return false;  // "---x" is a plain scalar, refused later
  const size_t content = after.find_first_not_of(" \t");
  return content == std::string_view::npos || after[content] == '#';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t code_point, std::string* out) {
  if (code_point < 0x80) {
    out->push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

// A quoted scalar starting at text[0] (the quote). On success sets *consumed to the bytes up
// to and including the closing quote.
Status ParseQuoted(std::string_view text, int line, std::string* out, size_t* consumed) {
  const char quote = text[0];
  out->clear();
  size_t i = 1;
  while (i < text.size()) {
    const char c = text[i];
    if (c == quote) {
      // In single quotes, '' is an escaped quote; anything else ends the scalar.
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        out->push_back('\'');
        i += 2;
        continue;
      }
      *consumed = i + 1;
      return Status::Ok();
    }
    if (c != '\\' || quote == '\'') {
      out->push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= text.size()) break;
    const char escape = text[i + 1];
    i += 2;
    size_t hex_digits = 0;
    switch (escape) {
      case '\\':
        out->push_back('\\');
        continue;
      case '"':
        out->push_back('"');
        continue;
      case '/':
        out->push_back('/');
        continue;
      case 't':
        out->push_back('\t');
        continue;
      case 'n':
        out->push_back('\n');
        continue;
      case 'r':
        out->push_back('\r');
        continue;
      case 'x':
        hex_digits = 2;
        break;
      case 'u':
        hex_digits = 4;
        break;
      default:
        return Malformed(
            line, std::string("unsupported escape \\") + escape + " in a double-quoted value");
    }
    uint32_t code_point = 0;
    for (size_t d = 0; d < hex_digits; ++d) {
      const int v = i + d < text.size() ? HexValue(text[i + d]) : -1;
      if (v < 0) return Malformed(line, "bad hexadecimal escape in a double-quoted value");
      code_point = code_point * 16 + static_cast<uint32_t>(v);
    }
    i += hex_digits;
    // NUL would cut a path or header short when handed to C; a lone surrogate is not text.
    if (code_point == 0) return Malformed(line, "NUL escapes are not allowed");
    if (code_point >= 0xD800 && code_point <= 0xDFFF) {
      return Malformed(line, "\\u escapes of UTF-16 surrogates are not allowed");
    }
    AppendUtf8(code_point, out);
  }
  return Malformed(line, std::string("unterminated ") + (quote == '"' ? "double" : "single") +
                             "-quoted value (quoted values must end on their line)");
}

// After a quoted scalar or `{}`: only blanks and a comment may follow.
Status ExpectLineEnd(std::string_view rest, int line) {
  const size_t content = rest.find_first_not_of(" \t");
  if (content == std::string_view::npos) return Status::Ok();
  if (rest[content] == '#' && content > 0) return Status::Ok();
  return Malformed(line,
                   "unexpected text after the value: '" + std::string(rest.substr(content)) + "'");
}

// The YAML indicators that cannot start a plain scalar, and why each is refused here.
Status RefuseIndicator(std::string_view text, int line, std::string_view what) {
  const char c = text[0];
  const bool spaced = text.size() == 1 || IsBlank(text[1]);
  switch (c) {
    case '-':
      if (spaced) return Unsupported(line, "sequences ('- item') are not supported");
      return Status::Ok();  // "-1", "-foo" are plain scalars
    case '?':
      if (spaced) return Unsupported(line, "complex keys ('? key') are not supported");
      return Status::Ok();
    case ':':
      if (spaced) return Malformed(line, std::string(what) + " is missing before ':'");
      return Status::Ok();
    case '[':
      return Unsupported(line, "flow sequences ('[...]') are not supported");
    case '{':
      return Unsupported(line, "flow mappings ('{...}') are not supported, except '{}'");
    case '&':
    case '*':
      return Unsupported(line, "anchors and aliases ('&x', '*x') are not supported");
    case '!':
      return Unsupported(line, "tags ('!tag') are not supported");
    case '|':
    case '>':
      return Unsupported(line, "block scalars ('|', '>') are not supported");
    case '%':
      return Unsupported(line, "directives ('%YAML') are not supported");
    case '@':
    case '`':
    case ',':
    case ']':
    case '}':
      return Malformed(line,
                       std::string("'") + c + "' cannot start " + std::string(what) + "; quote it");
    default:
      return Status::Ok();
  }
}

struct Value {
  YamlNode node;
  bool open = false;  // `key:` with nothing after it: deeper lines may make it a mapping
};

Result<Value> ParseValue(std::string_view text, int line) {
  Value value;
  value.node.line = line;
  const size_t start = text.find_first_not_of(" \t");
  if (start == std::string_view::npos || text[start] == '#') {
    value.open = true;
    return value;
  }
  text.remove_prefix(start);
  if (text[0] == '"' || text[0] == '\'') {
    size_t consumed = 0;
    if (Status s = ParseQuoted(text, line, &value.node.scalar, &consumed); !s.ok()) return s;
    if (Status s = ExpectLineEnd(text.substr(consumed), line); !s.ok()) return s;
    value.node.kind = YamlNode::Kind::kScalar;
    value.node.quoted = true;
    return value;
  }
  if (text[0] == '{') {
    const size_t close = text.find_first_not_of(" \t", 1);
    if (close != std::string_view::npos && text[close] == '}') {
      if (Status s = ExpectLineEnd(text.substr(close + 1), line); !s.ok()) return s;
      value.node.kind = YamlNode::Kind::kMapping;
      return value;
    }
  }
  if (Status s = RefuseIndicator(text, line, "a value"); !s.ok()) return s;
  // A plain scalar runs to the end of the line or to a comment (" #").
  size_t end = text.size();
  for (size_t i = 1; i < text.size(); ++i) {
    if (text[i] == '#' && IsBlank(text[i - 1])) {
      end = i;
      break;
    }
  }
  const std::string_view plain = TrimRight(text.substr(0, end));
  if (plain.back() == ':' || plain.find(": ") != std::string_view::npos ||
      plain.find(":\t") != std::string_view::npos) {
    return Malformed(line,
                     "a plain value cannot contain ': ' (nested mappings go on their own "
                     "lines; quote the value if the colon is meant)");
  }
  if (plain == "~" || plain == "null" || plain == "Null" || plain == "NULL") return value;
  value.node.kind = YamlNode::Kind::kScalar;
  value.node.scalar = std::string(plain);
  return value;
}

struct Entry {
  std::string key;
  Value value;
};

// One `key: value` line, indentation already removed.
Result<Entry> ParseEntry(std::string_view rest, int line) {
  Entry entry;
  size_t after_key = 0;
  if (rest[0] == '"' || rest[0] == '\'') {
    size_t consumed = 0;
    if (Status s = ParseQuoted(rest, line, &entry.key, &consumed); !s.ok()) return s;
    after_key = rest.find_first_not_of(" \t", consumed);
    if (after_key == std::string_view::npos || rest[after_key] != ':' ||
        (after_key + 1 < rest.size() && !IsBlank(rest[after_key + 1]))) {
      return Malformed(line, "expected ':' after the quoted key");
    }
  } else {
    if (Status s = RefuseIndicator(rest, line, "a key"); !s.ok()) return s;
    after_key = std::string_view::npos;
    for (size_t i = 0; i < rest.size(); ++i) {
      if (rest[i] == '#' && i > 0 && IsBlank(rest[i - 1])) break;  // comment: no colon
      if (rest[i] == ':' && (i + 1 == rest.size() || IsBlank(rest[i + 1]))) {
        after_key = i;
        break;
      }
    }
    if (after_key == std::string_view::npos) {
      return Malformed(line, "expected 'key: value', got '" + std::string(TrimRight(rest)) +
                                 "' (values cannot continue on another line)");
    }
    entry.key = std::string(TrimRight(rest.substr(0, after_key)));
  }
  Result<Value> value = ParseValue(rest.substr(after_key + 1), line);
  if (!value.ok()) return value.status();
  entry.value = std::move(*value);
  return entry;
}

// A mapping still accepting entries, and the indentation of its keys.
struct OpenMapping {
  size_t indent;
  YamlNode* node;
};

}  // namespace

Result<YamlNode> ParseYamlSubset(std::string_view text) {
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (text.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
    text.remove_prefix(kByteOrderMark.size());
  }
  YamlNode root;
  // Pointers stay valid: entries are only appended to the innermost open mapping, and a
  // mapping's own node lives in its parent's entries, which do not grow while it is open.
  std::vector<OpenMapping> open;
  YamlNode* pending = nullptr;  // the value of the last `key:` without a value
  std::string pending_key;      // and its key, for messages
  bool started = false;         // a `---` was seen
  bool ended = false;           // a `...` was seen
  int line = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view row = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line;
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    for (char c : row) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7F) {
        return Malformed(line, "control character " + std::to_string(u) + " in the file");
      }
    }
    const size_t indent = row.find_first_not_of(' ');
    if (indent == std::string_view::npos) continue;
    const size_t content = row.find_first_not_of(" \t");
    if (content == std::string_view::npos || row[content] == '#') continue;
    if (content != indent) return Malformed(line, "tabs are not allowed in indentation");
    const std::string_view rest = row.substr(indent);
    if (ended) return Unsupported(line, "content after '...' (several documents)");
    if (indent == 0 && IsMarker(rest, "---")) {
      if (started || !open.empty()) return Unsupported(line, "several documents ('---')");
      started = true;
      continue;
    }
    if (indent == 0 && IsMarker(rest, "...")) {
      ended = true;
      continue;
    }

    // Said here rather than in ParseEntry so the message can name the key the list is under.
    if (rest[0] == '-' && (rest.size() == 1 || IsBlank(rest[1])) && pending != nullptr) {
      return Unsupported(
          line, "'" + pending_key + "' holds a sequence ('- item'); sequences are not supported");
    }
    Result<Entry> entry = ParseEntry(rest, line);
    if (!entry.ok()) return entry.status();

    if (open.empty()) {
      root.kind = YamlNode::Kind::kMapping;
      root.line = line;
      open.push_back({indent, &root});
    } else if (pending != nullptr && indent > open.back().indent) {
      if (open.size() >= static_cast<size_t>(kMaxYamlDepth)) {
        return Malformed(
            line, "mappings nested deeper than " + std::to_string(kMaxYamlDepth) + " levels");
      }
      pending->kind = YamlNode::Kind::kMapping;
      open.push_back({indent, pending});
    } else if (indent > open.back().indent) {
      return Malformed(line, "unexpected indentation (values cannot continue on another line)");
    } else {
      while (!open.empty() && indent < open.back().indent) open.pop_back();
      if (open.empty() || indent != open.back().indent) {
        return Malformed(line, "indentation matches no enclosing mapping");
      }
    }
    pending = nullptr;
    YamlNode& mapping = *open.back().node;
    for (const YamlEntry& existing : mapping.entries) {
      if (existing.key == entry->key) {
        return Malformed(line, "duplicate key '" + entry->key + "' (first on line " +
                                   std::to_string(existing.line) + ")");
      }
    }
    const bool value_open = entry->value.open;
    mapping.entries.push_back({std::move(entry->key), line, std::move(entry->value.node)});
    if (value_open) {
      pending = &mapping.entries.back().value;
      pending_key = mapping.entries.back().key;
    }
  }
  return root;
}

}  // namespace vmetrics::internal

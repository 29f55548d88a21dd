// SPDX-License-Identifier: Apache-2.0
// The exposition checker (exposition_grammar.h): one pass over the lines, a parser per line
// kind, and the state of the family and metric (label set) being read for the rules that span
// lines. Messages name the rule in the words of the grammar it comes from.
#include "tests/support/exposition_grammar.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace vmetrics::test_support {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;  // name, unescaped value

std::string Escape(std::string_view line) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : line.substr(0, 120)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  if (line.size() > 120) out += "...";
  return out;
}

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF. Returns
// the offset of the first invalid byte, or npos.
size_t InvalidUtf8At(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    int n;
    uint32_t cp;
    if (b >= 0xc2 && b <= 0xdf) {
      n = 1;
      cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
      n = 2;
      cp = b & 0x0f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      n = 3;
      cp = b & 0x07;
    } else {
      return i;
    }
    for (int k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsMetricName(std::string_view s) {
  if (s.empty() || !(IsAlpha(s[0]) || s[0] == '_' || s[0] == ':')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == ':'; });
}

bool IsLabelName(std::string_view s) {
  if (s.empty() || !(IsAlpha(s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; });
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (x != b[i]) return false;
  }
  return true;
}

// realnumber of the OpenMetrics ABNF (also the decimal part of Go's ParseFloat):
//   [SIGN] 1*DIGIT ["." *DIGIT] ["e" [SIGN] 1*DIGIT] / [SIGN] *DIGIT "." 1*DIGIT [exponent]
bool IsRealNumber(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

// A number token: OpenMetrics `number` (realnumber, [SIGN] inf/infinity, nan; case-insensitive)
// or, for text, the decimal and special forms of Go's ParseFloat (the same set, Go also takes a
// sign on NaN). Out of float64 range is refused (both: "MUST fit within the range of a 64-bit
// floating point value"; Go reports ErrRange). Returns nullopt when `s` is not a number.
std::optional<double> ParseNumber(std::string_view s, bool om) {
  std::string_view body = s;
  bool negative = false, sign = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    sign = true;
    body.remove_prefix(1);
  }
  if (EqualsNoCase(body, "inf") || EqualsNoCase(body, "infinity")) {
    return negative ? -HUGE_VAL : HUGE_VAL;
  }
  if (EqualsNoCase(body, "nan")) {
    if (sign && om) return std::nullopt;
    return std::nan("");
  }
  if (!IsRealNumber(s)) return std::nullopt;
  const std::string copy(s);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  if (errno == ERANGE && std::isinf(v)) return std::nullopt;
  return v;
}

// Text timestamps: an int64 as Go's ParseInt reads it.
bool IsInt64(std::string_view s) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i == s.size()) return false;
  uint64_t v = 0;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  for (; i < s.size(); ++i) {
    if (!IsDigit(s[i])) return false;
    const uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (limit - d) / 10) return false;
    v = v * 10 + d;
  }
  return true;
}

enum class Type {
  kCounter,
  kGauge,
  kHistogram,
  kGaugeHistogram,
  kSummary,
  kInfo,
  kStateSet,
  kUnknown
};

std::optional<Type> ParseType(std::string_view s, bool om) {
  if (s == "counter") return Type::kCounter;
  if (s == "gauge") return Type::kGauge;
  if (s == "histogram") return Type::kHistogram;
  if (s == "summary") return Type::kSummary;
  if (om) {
    if (s == "gaugehistogram") return Type::kGaugeHistogram;
    if (s == "info") return Type::kInfo;
    if (s == "stateset") return Type::kStateSet;
    if (s == "unknown") return Type::kUnknown;
  } else if (s == "untyped") {
    return Type::kUnknown;
  }
  return std::nullopt;
}

// The sample-name suffixes a family of `type` owns ("" = the family name itself).
std::vector<std::string_view> Suffixes(Type type, bool om) {
  switch (type) {
    case Type::kCounter:
      return om ? std::vector<std::string_view>{"_total", "_created"}
                : std::vector<std::string_view>{""};
    case Type::kHistogram:
      return om ? std::vector<std::string_view>{"_bucket", "_count", "_sum", "_created"}
                : std::vector<std::string_view>{"_bucket", "_count", "_sum"};
    case Type::kGaugeHistogram:
      return {"_bucket", "_gcount", "_gsum"};
    case Type::kSummary:
      return om ? std::vector<std::string_view>{"", "_count", "_sum", "_created"}
                : std::vector<std::string_view>{"", "_count", "_sum"};
    case Type::kInfo:
      return {"_info"};
    case Type::kGauge:
    case Type::kStateSet:
    case Type::kUnknown:
      return {""};
  }
  return {""};
}

struct Sample {
  std::string_view name;
  Labels labels;
  std::string_view value_text;
  double value = 0;
  std::string_view timestamp;  // empty = none
  bool exemplar = false;
};

class Checker {
 public:
  Checker(std::string_view text, ExpositionFormat format, CheckOptions options)
      : text_(text), om_(format == ExpositionFormat::kOpenMetrics), options_(options) {}

  std::optional<GrammarViolation> Run() {
    size_t start = 0;
    while (start < text_.size()) {
      ++line_no_;
      const size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) {
        line_ = text_.substr(start);
        // OpenMetrics: `exposition = metricset HASH SP eof [LF]`: only "# EOF" may lack it.
        if (!(om_ && line_ == "# EOF")) return Fail("the last line does not end with a line feed");
        start = text_.size();
      } else {
        line_ = text_.substr(start, end - start);
        start = end + 1;
      }
      if (const size_t bad = InvalidUtf8At(line_); bad != std::string_view::npos) {
        return Fail("invalid UTF-8 at byte " + std::to_string(bad) + " of the line");
      }
      if (std::optional<GrammarViolation> v = Line(); v) return v;
    }
    line_ = "";
    ++line_no_;
    if (std::optional<GrammarViolation> v = CloseFamily(); v) return v;
    if (om_ && !eof_) return Fail("missing # EOF at the end");
    return std::nullopt;
  }

 private:
  struct Family {
    std::string name;
    Type type = Type::kUnknown;
    bool help = false, type_line = false, unit = false, samples = false;
    size_t first_line = 0;
  };

  // A metric (label set) of a histogram, gathered until the next label set starts.
  struct HistogramMetric {
    std::vector<std::pair<double, double>> buckets;  // le, value, in order
    std::optional<double> count, sum;
    bool negative_bucket = false;
  };

  std::optional<GrammarViolation> Fail(std::string message) const {
    return GrammarViolation{line_no_, std::move(message), Escape(line_)};
  }

  std::optional<GrammarViolation> Line() {
    if (eof_) return Fail("a line after # EOF");
    if (om_) {
      if (line_.empty()) return Fail("a blank line (OpenMetrics has none)");
      if (line_[0] == '#') return OmComment();
      return SampleLine(line_);
    }
    // Text: leading and trailing blanks/tabs are ignored, empty lines too.
    std::string_view l = line_;
    while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
    while (!l.empty() && (l.back() == ' ' || l.back() == '\t')) l.remove_suffix(1);
    if (l.empty()) return std::nullopt;
    if (l[0] == '#') return TextComment(l);
    return SampleLine(l);
  }

  // Splits off the next blank/tab-separated token (text).
  static std::string_view NextToken(std::string_view* rest) {
    std::string_view& r = *rest;
    while (!r.empty() && (r.front() == ' ' || r.front() == '\t')) r.remove_prefix(1);
    size_t n = 0;
    while (n < r.size() && r[n] != ' ' && r[n] != '\t') ++n;
    const std::string_view token = r.substr(0, n);
    r.remove_prefix(n);
    return token;
  }

  std::optional<GrammarViolation> TextComment(std::string_view l) {
    std::string_view rest = l.substr(1);
    const std::string_view keyword = NextToken(&rest);
    if (keyword != "HELP" && keyword != "TYPE") return std::nullopt;  // a plain comment
    const std::string_view name = NextToken(&rest);
    if (name.empty()) return Fail(std::string(keyword) + " without a metric name");
    if (!IsMetricName(name)) return Fail("invalid metric name in " + std::string(keyword));
    if (keyword == "HELP") {
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
      for (size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] != '\\') continue;
        if (i + 1 == rest.size() || (rest[i + 1] != '\\' && rest[i + 1] != 'n')) {
          return Fail("HELP docstring: a backslash not followed by \\ or n");
        }
        ++i;
      }
      return Metadata(name, 'H', std::nullopt);
    }
    const std::string_view type_token = NextToken(&rest);
    if (!NextToken(&rest).empty()) return Fail("TYPE with more than two tokens");
    const std::optional<Type> type = ParseType(type_token, false);
    if (!type) return Fail("unknown TYPE '" + std::string(type_token) + "'");
    return Metadata(name, 'T', type);
  }

  std::optional<GrammarViolation> OmComment() {
    if (line_ == "# EOF") {
      if (std::optional<GrammarViolation> v = CloseFamily(); v) return v;
      eof_ = true;
      return std::nullopt;
    }
    std::string_view rest = line_;
    char kind;
    if (rest.starts_with("# HELP ")) {
      kind = 'H';
    } else if (rest.starts_with("# TYPE ")) {
      kind = 'T';
    } else if (rest.starts_with("# UNIT ")) {
      kind = 'U';
    } else {
      return Fail("a # line that is not TYPE, HELP, UNIT or EOF");
    }
    rest.remove_prefix(7);
    const size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) return Fail("metadata without SP after the metric name");
    const std::string_view name = rest.substr(0, sp);
    const std::string_view value = rest.substr(sp + 1);
    if (!IsMetricName(name)) return Fail("invalid metric name in metadata");
    if (kind == 'H') {
      if (std::optional<GrammarViolation> v = EscapedString(value, "HELP"); v) return v;
      return Metadata(name, 'H', std::nullopt);
    }
    if (kind == 'U') {
      for (const char c : value) {
        if (!(IsAlpha(c) || IsDigit(c) || c == '_' || c == ':')) return Fail("invalid UNIT");
      }
      if (!value.empty() && !std::string_view(name).ends_with("_" + std::string(value))) {
        return Fail("UNIT is not the suffix of the metric name");
      }
      return Metadata(name, 'U', std::nullopt);
    }
    const std::optional<Type> type = ParseType(value, true);
    if (!type) return Fail("unknown TYPE '" + std::string(value) + "'");
    return Metadata(name, 'T', type);
  }

  // OpenMetrics escaped-string: no LF (lines), no `"` and no `\` but as an escape.
  std::optional<GrammarViolation> EscapedString(std::string_view s, const char* where) {
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '"') return Fail(std::string(where) + ": unescaped double quote");
      if (s[i] == '\\') {
        if (i + 1 == s.size()) return Fail(std::string(where) + ": backslash at the end");
        ++i;
      }
    }
    return std::nullopt;
  }

  std::optional<GrammarViolation> Metadata(std::string_view name, char kind,
                                           std::optional<Type> type) {
    if (!family_ || family_->name != name) {
      if (std::optional<GrammarViolation> v = OpenFamily(name, Type::kUnknown); v) return v;
    }
    Family& f = *family_;
    if (f.samples) return Fail("metadata for " + f.name + " after its samples");
    bool& seen = kind == 'H' ? f.help : kind == 'T' ? f.type_line : f.unit;
    if (seen) {
      return Fail(std::string("more than one ") +
                  (kind == 'H'   ? "HELP"
                   : kind == 'T' ? "TYPE"
                                 : "UNIT") +
                  " for " + f.name);
    }
    seen = true;
    if (type) {
      f.type = *type;
      if (om_ && f.unit && (f.type == Type::kInfo || f.type == Type::kStateSet)) {
        return Fail("UNIT is not allowed for this metric type");
      }
    }
    if (kind == 'U' && om_ && (f.type == Type::kInfo || f.type == Type::kStateSet)) {
      return Fail("UNIT is not allowed for this metric type");
    }
    return std::nullopt;
  }

  std::optional<GrammarViolation> OpenFamily(std::string_view name, Type type) {
    if (std::optional<GrammarViolation> v = CloseFamily(); v) return v;
    auto [it, fresh] = families_.emplace(std::string(name), line_no_);
    if (!fresh) {
      return Fail("family " + std::string(name) + " appears again (first at line " +
                  std::to_string(it->second) + "): families must not be interleaved or repeated");
    }
    family_ = Family{std::string(name), type, false, false, false, false, line_no_};
    return std::nullopt;
  }

  std::optional<GrammarViolation> CloseFamily() {
    if (std::optional<GrammarViolation> v = CloseMetric(); v) return v;
    family_.reset();
    metrics_seen_.clear();
    return std::nullopt;
  }

  // Parses the labels at the start of `*rest` ("{...}"), leaving what follows.
  std::optional<GrammarViolation> ParseLabels(std::string_view* rest, Labels* labels) {
    std::string_view& r = *rest;
    r.remove_prefix(1);  // '{'
    auto blanks = [&] {
      if (!om_) {
        while (!r.empty() && (r.front() == ' ' || r.front() == '\t')) r.remove_prefix(1);
      }
    };
    blanks();
    bool first = true;
    while (true) {
      if (r.empty()) return Fail("labels without a closing brace");
      if (r.front() == '}') {
        if (!first && om_) return Fail("a comma before the closing brace");
        r.remove_prefix(1);
        return std::nullopt;
      }
      size_t n = 0;
      while (n < r.size() && r[n] != '=' && r[n] != ' ' && r[n] != '\t' && r[n] != '}' &&
             r[n] != ',') {
        ++n;
      }
      const std::string_view lname = r.substr(0, n);
      if (!IsLabelName(lname)) return Fail("invalid label name '" + Escape(lname) + "'");
      if (lname.starts_with("__")) return Fail("label name " + std::string(lname) + " is reserved");
      r.remove_prefix(n);
      blanks();
      if (r.empty() || r.front() != '=') return Fail("label name not followed by =");
      r.remove_prefix(1);
      blanks();
      if (r.empty() || r.front() != '"') return Fail("label value does not start with a quote");
      r.remove_prefix(1);
      std::string value;
      bool closed = false;
      while (!r.empty()) {
        const char c = r.front();
        r.remove_prefix(1);
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          value += c;
          continue;
        }
        if (r.empty()) break;
        const char e = r.front();
        r.remove_prefix(1);
        if (e == 'n') {
          value += '\n';
        } else if (e == '\\' || e == '"') {
          value += e;
        } else if (om_) {
          value += '\\';  // `BS normal-char`: allowed, kept as written
          value += e;
        } else {
          return Fail("label value: a backslash not followed by \\, \" or n");
        }
      }
      if (!closed) return Fail("label value without a closing quote");
      for (const auto& [existing, unused] : *labels) {
        if (existing == lname) return Fail("duplicate label name " + std::string(lname));
      }
      labels->emplace_back(std::string(lname), std::move(value));
      first = false;
      blanks();
      if (!r.empty() && r.front() == ',') {
        r.remove_prefix(1);
        blanks();
        if (om_ && !r.empty() && r.front() == '}') return Fail("a comma before the closing brace");
        continue;
      }
      if (r.empty() || r.front() != '}') return Fail("labels not separated by a comma");
      r.remove_prefix(1);
      return std::nullopt;
    }
  }

  std::optional<GrammarViolation> ParseSample(std::string_view l, Sample* s) {
    size_t n = 0;
    while (n < l.size() && l[n] != '{' && l[n] != ' ' && l[n] != '\t') ++n;
    s->name = l.substr(0, n);
    if (!IsMetricName(s->name)) return Fail("invalid metric name");
    std::string_view rest = l.substr(n);
    if (!om_) {
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    }
    if (!rest.empty() && rest.front() == '{') {
      if (std::optional<GrammarViolation> v = ParseLabels(&rest, &s->labels); v) return v;
    }
    if (om_) {
      if (rest.empty() || rest.front() != ' ') return Fail("no SP before the value");
      rest.remove_prefix(1);
      const size_t sp = rest.find(' ');
      s->value_text = rest.substr(0, sp);
      rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp);
      if (!rest.empty() && !rest.starts_with(" #")) {
        rest.remove_prefix(1);
        const size_t sp2 = rest.find(' ');
        s->timestamp = rest.substr(0, sp2);
        if (!IsRealNumber(s->timestamp)) return Fail("invalid timestamp");
        rest = sp2 == std::string_view::npos ? std::string_view() : rest.substr(sp2);
      }
      if (!rest.empty()) {
        if (!rest.starts_with(" # {")) return Fail("trailing characters after the sample");
        rest.remove_prefix(3);
        Labels exemplar_labels;
        if (std::optional<GrammarViolation> v = ParseLabels(&rest, &exemplar_labels); v) return v;
        if (rest.empty() || rest.front() != ' ') return Fail("exemplar without a value");
        rest.remove_prefix(1);
        const size_t sp3 = rest.find(' ');
        if (!ParseNumber(rest.substr(0, sp3), true)) return Fail("invalid exemplar value");
        if (sp3 != std::string_view::npos && !IsRealNumber(rest.substr(sp3 + 1))) {
          return Fail("invalid exemplar timestamp");
        }
        s->exemplar = true;
      }
    } else {
      const std::string_view value = NextToken(&rest);
      if (value.empty()) return Fail("a sample without a value");
      s->value_text = value;
      s->timestamp = NextToken(&rest);
      if (!s->timestamp.empty() && !IsInt64(s->timestamp)) {
        return Fail("timestamp is not an int64 of milliseconds");
      }
      if (!NextToken(&rest).empty()) return Fail("trailing tokens after the timestamp");
    }
    const std::optional<double> v = ParseNumber(s->value_text, om_);
    if (!v) return Fail("invalid value '" + Escape(s->value_text) + "'");
    s->value = *v;
    return std::nullopt;
  }

  // The family `name` belongs to given the current family, or "" if it starts a new one.
  std::string_view Suffix(std::string_view name) const {
    if (!family_ || !name.starts_with(family_->name)) return "\x01";
    const std::string_view suffix = name.substr(family_->name.size());
    for (const std::string_view s : Suffixes(family_->type, om_)) {
      if (s == suffix) return suffix;
    }
    return "\x01";
  }

  std::optional<GrammarViolation> SampleLine(std::string_view l) {
    Sample s;
    if (std::optional<GrammarViolation> v = ParseSample(l, &s); v) return v;
    std::string_view suffix = Suffix(s.name);
    if (suffix == "\x01") {
      // A sample outside the current family starts an untyped one named after it.
      if (std::optional<GrammarViolation> v = OpenFamily(s.name, Type::kUnknown); v) return v;
      suffix = "";
    }
    Family& f = *family_;
    f.samples = true;
    if (auto [it, fresh] = sample_names_.emplace(std::string(s.name), f.name);
        !fresh && it->second != f.name) {
      return Fail("sample name " + std::string(s.name) + " clashes with family " + it->second);
    }
    // Series: every (name, labels) once (OpenMetrics: again only with a later timestamp).
    Labels sorted = s.labels;
    std::sort(sorted.begin(), sorted.end());
    std::string series(s.name);
    std::string group;
    const char* group_out = nullptr;
    if (f.type == Type::kHistogram || f.type == Type::kGaugeHistogram) group_out = "le";
    if (f.type == Type::kSummary) group_out = "quantile";
    for (const auto& [k, v] : sorted) {
      std::string part = "\xff" + k + "\xfe" + v;
      series += part;
      if (!(group_out != nullptr && k == group_out) &&
          !(f.type == Type::kStateSet && k == f.name)) {
        group += part;
      }
    }
    if (!s.timestamp.empty()) series += "\xfd" + std::string(s.timestamp);
    if (!series_.insert(series).second) return Fail("duplicate series");
    if (!metric_open_ || group != metric_) {
      if (std::optional<GrammarViolation> v = CloseMetric(); v) return v;
      if (!metrics_seen_.insert(group).second) {
        return Fail("a metric (label set) of " + f.name +
                    " appears again after another one: metrics must not be interleaved");
      }
      metric_ = group;
      metric_open_ = true;
      hist_ = HistogramMetric{};
      metric_timestamps_ = s.timestamp.empty() ? 0 : 1;
    } else if ((metric_timestamps_ == 1) != !s.timestamp.empty()) {
      return Fail("a mix of samples with and without timestamps in one metric");
    }
    return SampleRules(s, suffix);
  }

  const std::string* Label(const Sample& s, std::string_view name) const {
    for (const auto& [k, v] : s.labels) {
      if (k == name) return &v;
    }
    return nullptr;
  }

  std::optional<GrammarViolation> SampleRules(const Sample& s, std::string_view suffix) {
    const Family& f = *family_;
    const bool nan = std::isnan(s.value);
    const bool counter_like =
        suffix == "_total" || suffix == "_bucket" || suffix == "_count" || suffix == "_gcount" ||
        (suffix == "_sum" && f.type != Type::kGaugeHistogram) || suffix == "_gsum";
    if (om_ && counter_like && nan) return Fail("a counter-like sample is NaN");
    const bool negative_allowed =
        suffix == "_gsum" ||
        (suffix == "_sum" && f.type == Type::kHistogram && options_.allow_negative_histogram_sum);
    if (om_ && counter_like && !negative_allowed && s.value < 0) {
      return Fail("a counter-like sample is negative");
    }
    if (s.exemplar && !(suffix == "_bucket" || (f.type == Type::kCounter && suffix == "_total"))) {
      return Fail("only histogram buckets and counter totals can have exemplars");
    }
    if (om_ && f.type == Type::kInfo && s.value != 1) return Fail("an info sample is not 1");
    if (om_ && f.type == Type::kStateSet) {
      if (Label(s, f.name) == nullptr) return Fail("a stateset sample without its state label");
      if (s.value != 0 && s.value != 1) return Fail("a stateset sample is neither 0 nor 1");
    }
    if (f.type == Type::kSummary && suffix.empty()) {
      const std::string* q = Label(s, "quantile");
      if (q == nullptr) return Fail("a summary quantile sample without the quantile label");
      const std::optional<double> qv = ParseNumber(*q, om_);
      if (!qv || std::isnan(*qv) || (om_ && (*qv < 0 || *qv > 1))) {
        return Fail("invalid quantile label");
      }
      if (om_ && s.value < 0) return Fail("a quantile value is negative");
    }
    if (f.type != Type::kHistogram && f.type != Type::kGaugeHistogram) return std::nullopt;
    if ((suffix == "_bucket" || suffix == "_count" || suffix == "_gcount") && om_ &&
        s.value != std::floor(s.value)) {
      return Fail("a bucket or count value is not an integer");
    }
    if (suffix == "_bucket") {
      const std::string* le = Label(s, "le");
      if (le == nullptr) return Fail("a _bucket sample without the le label");
      const std::optional<double> bound = ParseNumber(*le, om_);
      if (!bound || std::isnan(*bound)) return Fail("invalid le label");
      if (nan) return Fail("a bucket value is NaN");
      if (!hist_.buckets.empty()) {
        if (*bound <= hist_.buckets.back().first) return Fail("buckets not in increasing le");
        if (s.value < hist_.buckets.back().second) {
          return Fail("bucket values decrease: buckets must be cumulative");
        }
      }
      if (*bound < 0) hist_.negative_bucket = true;
      hist_.buckets.emplace_back(*bound, s.value);
    } else if (suffix == "_count" || suffix == "_gcount") {
      hist_.count = s.value;
    } else if (suffix == "_sum" || suffix == "_gsum") {
      hist_.sum = s.value;
    }
    return std::nullopt;
  }

  // The rules over a whole metric of a histogram, when the next label set (or family) starts.
  std::optional<GrammarViolation> CloseMetric() {
    if (!metric_open_) return std::nullopt;
    metric_open_ = false;
    if (!family_ || (family_->type != Type::kHistogram && family_->type != Type::kGaugeHistogram)) {
      return std::nullopt;
    }
    const std::string where = " in a metric of " + family_->name + " (ending before this line)";
    if (hist_.buckets.empty() || !std::isinf(hist_.buckets.back().first)) {
      return Fail("the +Inf bucket is missing" + where);
    }
    if (hist_.count && *hist_.count != hist_.buckets.back().second) {
      return Fail("_count differs from the +Inf bucket" + where);
    }
    if (om_ && hist_.count.has_value() != hist_.sum.has_value()) {
      return Fail("_count and _sum must both be present or both absent" + where);
    }
    if (om_ && family_->type == Type::kHistogram && hist_.negative_bucket && hist_.sum) {
      return Fail("_sum with negative buckets" + where);
    }
    return std::nullopt;
  }

  std::string_view text_;
  bool om_;
  CheckOptions options_;
  size_t line_no_ = 0;
  std::string_view line_;
  bool eof_ = false;
  std::optional<Family> family_;
  std::unordered_map<std::string, size_t> families_;           // family name -> first line
  std::unordered_map<std::string, std::string> sample_names_;  // sample name -> family
  std::unordered_set<std::string> series_;
  std::unordered_set<std::string> metrics_seen_;  // label sets of the current family
  bool metric_open_ = false;
  std::string metric_;
  int metric_timestamps_ = 0;
  HistogramMetric hist_;
};

}  // namespace

std::string GrammarViolation::ToString() const {
  return "line " + std::to_string(line) + ": " + message + ": " + excerpt;
}

std::optional<GrammarViolation> CheckExposition(std::string_view exposition,
                                                ExpositionFormat format, CheckOptions options) {
  return Checker(exposition, format, options).Run();
}

std::string_view FormatName(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics ? "openmetrics" : "text";
}

}  // namespace vmetrics::test_support

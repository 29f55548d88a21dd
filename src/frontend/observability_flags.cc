// SPDX-License-Identifier: Apache-2.0
// --custom-histogram-buckets and --show-hidden-metrics-for-version; see observability_flags.h.
#include "observability_flags.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <span>

namespace vmetrics::frontend {
namespace {

constexpr char kBucketsFlag[] = "--custom-histogram-buckets";

// Python's repr of a str ('key') and of a sorted list of str (['a', 'b']), as vLLM's messages
// print them.
std::string Repr(std::string_view s) { return "'" + std::string(s) + "'"; }
std::string ReprList(std::span<const std::string_view> items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : ", ") + Repr(items[i]);
  return out + "]";
}

Status BucketError(std::string_view family, const std::string& what) {
  return Status::InvalidArgument(std::string(kBucketsFlag) + "[" + Repr(family) + "]: " + what);
}

// Lower-case copy for the case-insensitive version grammar.
std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class VersionCursor {
 public:
  explicit VersionCursor(std::string_view s) : s_(s) {}
  bool Done() const { return i_ == s_.size(); }
  bool Digits() {
    const size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    return i_ > start;
  }
  bool Char(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Sep() { return Char('.') || Char('-') || Char('_'); }
  // One of `words` (longest first), or nothing.
  bool Word(std::initializer_list<std::string_view> words) {
    for (std::string_view w : words) {
      if (s_.substr(i_, w.size()) == w) {
        i_ += w.size();
        return true;
      }
    }
    return false;
  }
  // [sep]word[sep][N], the shape of the pre-, post- and development-release parts; nothing is
  // consumed when no word of `words` is there.
  bool Labelled(std::initializer_list<std::string_view> words) {
    const size_t at = i_;
    Sep();
    if (!Word(words)) {
      i_ = at;
      return false;
    }
    const size_t n = i_;
    Sep();
    if (!Digits()) i_ = n;
    return true;
  }
  size_t pos() const { return i_; }
  void Reset(size_t pos) { i_ = pos; }
  bool LocalSegment() {
    const size_t start = i_;
    while (i_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[i_]))) ++i_;
    return i_ > start;
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

Result<CustomHistogramBuckets> ParseCustomHistogramBuckets(std::string_view json) {
  CustomHistogramBuckets out;
  if (json.empty()) return out;
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument(std::string(kBucketsFlag) +
                                   " must be a JSON object mapping bucket family to a list of "
                                   "upper bounds");
  }
  const std::span<const std::string_view> keys = HistogramBucketFamilyKeys();
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& family = it.key();
    if (std::find(keys.begin(), keys.end(), family) == keys.end()) {
      std::vector<std::string_view> sorted(keys.begin(), keys.end());
      std::sort(sorted.begin(), sorted.end());
      return Status::InvalidArgument(std::string(kBucketsFlag) + ": unknown bucket family " +
                                     Repr(family) + "; known families: " + ReprList(sorted));
    }
    if (!it->is_array()) return BucketError(family, "must be a list of numbers");
    std::vector<double> bounds;
    for (const nlohmann::json& b : *it) {
      if (b.is_boolean()) {
        return BucketError(family, std::string("bound ") + (b.get<bool>() ? "True" : "False") +
                                       " must be a number, not a boolean");
      }
      if (!b.is_number()) {
        // A list or an object is named by its type: dump() recurses once per level.
        return BucketError(family, "bound " +
                                       (b.is_structured() ? std::string(b.type_name()) : b.dump()) +
                                       " must be a number");
      }
      const double v = b.get<double>();
      if (!std::isfinite(v) || v <= 0) {
        return BucketError(family, "bound " + b.dump() + " must be finite and greater than 0");
      }
      bounds.push_back(v);
    }
    if (bounds.empty()) return BucketError(family, "bucket list must not be empty");
    for (size_t i = 1; i < bounds.size(); ++i) {
      if (bounds[i - 1] >= bounds[i]) {
        return BucketError(family, "bounds " + it->dump() + " must be strictly increasing");
      }
    }
    out.emplace_back(family, std::move(bounds));
  }
  return out;
}

bool IsPep440Version(std::string_view text) {
  const auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  const std::string s = Lower(text);
  VersionCursor c(s);
  c.Char('v');
  // Epoch: N!
  const size_t start = c.pos();
  if (!(c.Digits() && c.Char('!'))) c.Reset(start);
  // Release: N(.N)*
  if (!c.Digits()) return false;
  for (;;) {
    const size_t at = c.pos();
    if (c.Char('.') && c.Digits()) continue;
    c.Reset(at);
    break;
  }
  // Pre-release: [sep](a|b|c|rc|alpha|beta|pre|preview)[sep][N]
  c.Labelled({"preview", "alpha", "beta", "pre", "rc", "a", "b", "c"});
  // Post-release: -N | [sep](post|rev|r)[sep][N]
  {
    const size_t at = c.pos();
    if (!(c.Char('-') && c.Digits())) {
      c.Reset(at);
      c.Labelled({"post", "rev", "r"});
    }
  }
  // Development release: [sep]dev[sep][N]
  c.Labelled({"dev"});
  // Local version: +segment([-_.]segment)*
  if (c.Char('+')) {
    if (!c.LocalSegment()) return false;
    while (!c.Done()) {
      if (!c.Sep() || !c.LocalSegment()) return false;
    }
  }
  return c.Done();
}

bool ShowHiddenMetrics(const std::optional<std::string>& flag, std::string_view running_version) {
  if (!flag) return false;
  // __version_tuple__[0:2]: the leading "major.minor" numbers; anything else is unknown.
  const auto number = [](std::string_view s, size_t* at, int64_t* out) {
    size_t i = *at;
    int64_t v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && v < 1000000) {
      v = v * 10 + (s[i] - '0');
      ++i;
    }
    if (i == *at) return false;
    *at = i;
    *out = v;
    return true;
  };
  size_t at = 0;
  int64_t major = 0;
  int64_t minor = 0;
  const bool known = number(running_version, &at, &major) && at < running_version.size() &&
                     running_version[at] == '.' && (++at, number(running_version, &at, &minor));
  if (!known || (major == 0 && minor == 0)) return true;  // a development or unknown build
  return minor > 0 && *flag == std::to_string(major) + "." + std::to_string(minor - 1);
}

}  // namespace vmetrics::frontend

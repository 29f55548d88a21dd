// SPDX-License-Identifier: Apache-2.0
// The wire-layout tables of docs/wire_format.md and tests/fixtures/wire_layouts.json, generated
// from the wire-generation tables; see wire_reference.h.
//
// Nothing here states a layout fact: every name, position, count and type is read from
// kStatsKeyRows and WireGenerations(). Generations whose part of a table is the same share a
// column ("g20260204, g20260413"), so a table grows a column only where the wire changed.
#include "vmetrics/offline/wire_reference.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "vmetrics/wire_generation.h"

namespace vmetrics::frontend {
namespace {

using Json = nlohmann::ordered_json;
using Group = std::vector<const WireGeneration*>;

constexpr std::string_view kBegin = "<!-- BEGIN GENERATED wire-reference ";
constexpr std::string_view kEnd = "<!-- END GENERATED wire-reference ";
constexpr std::string_view kMarkerTail = " -->";

// "g20260712-370b678a" -> "g20260712", "gnewest-20260924" -> "gnewest": the names the prose of
// docs/wire_format.md uses.
std::string_view ShortName(const WireGeneration& g) { return g.name.substr(0, g.name.find('-')); }

// Text for a Markdown table cell: a `|` would end the cell.
std::string Cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string Code(std::string_view text) { return "`" + std::string(text) + "`"; }

// Consecutive generations for which `same` holds share a column.
std::vector<Group> GroupBy(
    const std::function<bool(const WireGeneration&, const WireGeneration&)>& same) {
  std::vector<Group> groups;
  for (const WireGeneration& g : WireGenerations()) {
    if (!groups.empty() && same(*groups.back().back(), g)) {
      groups.back().push_back(&g);
    } else {
      groups.push_back({&g});
    }
  }
  return groups;
}

std::string GroupName(const Group& group) {
  std::string out;
  for (const WireGeneration* g : group) {
    if (!out.empty()) out += ", ";
    out += ShortName(*g);
  }
  return out;
}

// "| first | g1 | g2 |\n|---|---|---|\n"
std::string Header(std::string_view first, const std::vector<std::string>& rest) {
  std::string out = "| " + std::string(first) + " |";
  std::string rule = "|---|";
  for (const std::string& cell : rest) {
    out += " " + cell + " |";
    rule += "---|";
  }
  return out + "\n" + rule + "\n";
}

std::string Row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const std::string& cell : cells) out += cell.empty() ? " |" : " " + cell + " |";
  return out + "\n";
}

std::vector<std::string> GroupNames(const std::vector<Group>& groups) {
  std::vector<std::string> names;
  names.reserve(groups.size());
  for (const Group& group : groups) names.push_back(GroupName(group));
  return names;
}

template <typename T>
bool SameSpan(std::span<const T> a, std::span<const T> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

template <typename T>
int IndexIn(std::span<const T> list, T item) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == item) return static_cast<int>(i);
  }
  return -1;
}

std::string WireTypesText(uint16_t accepted) {
  constexpr std::pair<uint16_t, std::string_view> kNames[] = {
      {kWireNil, "nil"},     {kWireBool, "bool"}, {kWireInt, "int"},
      {kWireFloat, "float"}, {kWireStr, "str"},   {kWireBin, "bin"},
      {kWireArray, "array"}, {kWireMap, "map"},   {kWireExt, "ext"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((accepted & bit) == 0) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::string_view UseText(StatsKeyUse use) {
  return use == StatsKeyUse::kDecoded ? "decoded" : "skipped";
}

// One row per SchedulerStats key of any generation: its position in each generation's map.
std::string SchedulerStatsTable() {
  const std::vector<Group> groups = GroupBy([](const WireGeneration& a, const WireGeneration& b) {
    return SameSpan(a.scheduler_stats_keys, b.scheduler_stats_keys);
  });
  std::vector<std::string> columns = {"Python type", "msgpack", "vmetrics"};
  for (std::string& name : GroupNames(groups)) columns.push_back(std::move(name));
  std::string out = Header("key", columns);
  for (const StatsKeyRow& row : kStatsKeyRows) {
    std::vector<std::string> cells = {Code(row.name), Cell(row.python_type),
                                      WireTypesText(row.accepted), std::string(UseText(row.use))};
    for (const Group& group : groups) {
      const int at = IndexIn(group.front()->scheduler_stats_keys, row.key);
      cells.push_back(at < 0 ? "" : std::to_string(at));
    }
    out += Row(cells);
  }
  std::vector<std::string> count = {"keys", "", "", ""};
  for (const Group& group : groups) {
    count.push_back(std::to_string(group.front()->scheduler_stats_keys.size()));
  }
  return out + Row(count);
}

std::string NestedCountsTable() {
  const auto counts = [](const WireGeneration& g) {
    return std::make_tuple(g.prefix_cache_stats_keys, g.spec_decoding_stats_keys,
                           g.prefill_stats_keys, g.nixl_keys, g.nixl_failures_are_ints);
  };
  const std::vector<Group> groups = GroupBy(
      [&](const WireGeneration& a, const WireGeneration& b) { return counts(a) == counts(b); });
  std::string out = Header("keys of", GroupNames(groups));
  const auto row = [&](std::string_view what,
                       const std::function<std::string(const WireGeneration&)>& cell) {
    std::vector<std::string> cells = {std::string(what)};
    for (const Group& group : groups) cells.push_back(cell(*group.front()));
    out += Row(cells);
  };
  row("PrefixCacheStats",
      [](const WireGeneration& g) { return std::to_string(g.prefix_cache_stats_keys); });
  row("SpecDecodingStats",
      [](const WireGeneration& g) { return std::to_string(g.spec_decoding_stats_keys); });
  row("PrefillStats", [](const WireGeneration& g) {
    return g.prefill_stats_keys == 0 ? std::string("none") : std::to_string(g.prefill_stats_keys);
  });
  row("NIXL payload", [](const WireGeneration& g) { return std::to_string(g.nixl_keys); });
  row("NIXL failure entry", [](const WireGeneration& g) {
    return std::string(g.nixl_failures_are_ints ? "int 1" : "float 1.0");
  });
  return out;
}

// A table of positions: one row per position, one column per group, the field's name in the
// cells; then a last row from `last`.
template <typename Field>
std::string PositionsTable(
    const std::function<std::span<const Field>(const WireGeneration&)>& fields,
    const std::function<std::string(Field)>& name,
    const std::function<bool(const WireGeneration&, const WireGeneration&)>& same,
    std::string_view last_title, const std::function<std::string(const WireGeneration&)>& last) {
  const std::vector<Group> groups = GroupBy(same);
  std::string out = Header("pos", GroupNames(groups));
  size_t longest = 0;
  for (const Group& group : groups) longest = std::max(longest, fields(*group.front()).size());
  for (size_t p = 0; p < longest; ++p) {
    std::vector<std::string> cells = {std::to_string(p)};
    for (const Group& group : groups) {
      const std::span<const Field> f = fields(*group.front());
      cells.push_back(p < f.size() ? name(f[p]) : std::string());
    }
    out += Row(cells);
  }
  std::vector<std::string> cells = {std::string(last_title)};
  for (const Group& group : groups) cells.push_back(last(*group.front()));
  return out + Row(cells);
}

std::span<const OutputField> OutputFields(const WireGeneration& g) {
  return std::span<const OutputField>(g.output.data(), g.output_count);
}

std::string OutputPositionsTable() {
  return PositionsTable<OutputField>(
      OutputFields, [](OutputField f) { return std::string(OutputFieldName(f)); },
      [](const WireGeneration& a, const WireGeneration& b) {
        return SameSpan(OutputFields(a), OutputFields(b));
      },
      "positions", [](const WireGeneration& g) { return std::to_string(g.output_count); });
}

std::string RequestPositionsTable() {
  return PositionsTable<RequestField>(
      [](const WireGeneration& g) { return g.request.fields; },
      [](RequestField f) { return std::string(RequestFieldName(f)); },
      [](const WireGeneration& a, const WireGeneration& b) {
        return SameSpan(a.request.fields, b.request.fields) &&
               a.request.required == b.request.required;
      },
      "positions (no default)",
      [](const WireGeneration& g) {
        return std::to_string(g.request.fields.size()) + " (" + std::to_string(g.request.required) +
               ")";
      });
}

std::string LoraPositionsTable() {
  return PositionsTable<LoraField>([](const WireGeneration& g) { return g.request.lora; },
                                   [](LoraField f) { return std::string(LoraFieldName(f)); },
                                   [](const WireGeneration& a, const WireGeneration& b) {
                                     return SameSpan(a.request.lora, b.request.lora) &&
                                            a.request.lora_required == b.request.lora_required;
                                   },
                                   "positions (no default)",
                                   [](const WireGeneration& g) {
                                     return std::to_string(g.request.lora.size()) + " (" +
                                            std::to_string(g.request.lora_required) + ")";
                                   });
}

// Every SamplingKey enumerator, in enumeration order (the newest definition order).
std::vector<SamplingKey> AllSamplingKeys() {
  std::vector<SamplingKey> keys;
  for (auto k = static_cast<unsigned>(SamplingKey::kN);
       k <= static_cast<unsigned>(SamplingKey::kRepetitionDetection); ++k) {
    keys.push_back(static_cast<SamplingKey>(k));
  }
  return keys;
}

std::string SamplingKeysTable() {
  const std::vector<Group> groups = GroupBy([](const WireGeneration& a, const WireGeneration& b) {
    return SameSpan(a.request.sampling, b.request.sampling);
  });
  std::string out = Header("key", GroupNames(groups));
  for (SamplingKey key : AllSamplingKeys()) {
    std::vector<std::string> cells = {Code(SamplingKeyName(key))};
    for (const Group& group : groups) {
      const int at = IndexIn(group.front()->request.sampling, key);
      cells.push_back(at < 0 ? "" : std::to_string(at));
    }
    out += Row(cells);
  }
  std::vector<std::string> count = {"keys"};
  for (const Group& group : groups) {
    count.push_back(std::to_string(group.front()->request.sampling.size()));
  }
  return out + Row(count);
}

// A block's Markdown: blank lines around the table, so that the markers never join it.
std::string Block(const std::string& table) { return "\n" + table + "\n"; }

}  // namespace

std::vector<WireReferenceBlock> WireReferenceBlocks() {
  return {
      {"output-positions", Block(OutputPositionsTable())},
      {"scheduler-stats", Block(SchedulerStatsTable())},
      {"nested-key-counts", Block(NestedCountsTable())},
      {"request-positions", Block(RequestPositionsTable())},
      {"lora-positions", Block(LoraPositionsTable())},
      {"sampling-keys", Block(SamplingKeysTable())},
  };
}

Result<std::string> SpliceWireReference(std::string_view doc) {
  std::map<std::string, std::string, std::less<>> blocks;
  for (WireReferenceBlock& b : WireReferenceBlocks()) blocks[b.name] = std::move(b.markdown);
  std::map<std::string, bool, std::less<>> seen;
  // The NAME of a marker line, or "" when `line` is not one.
  const auto marker = [](std::string_view line, std::string_view head) -> std::string_view {
    if (line.rfind(head, 0) != 0 || line.size() < head.size() + kMarkerTail.size() ||
        line.substr(line.size() - kMarkerTail.size()) != kMarkerTail) {
      return {};
    }
    return line.substr(head.size(), line.size() - head.size() - kMarkerTail.size());
  };
  std::string out;
  std::string_view open;  // the block being replaced, or ""
  size_t pos = 0;
  while (pos < doc.size()) {
    const size_t eol = doc.find('\n', pos);
    const size_t next = eol == std::string_view::npos ? doc.size() : eol + 1;
    const std::string_view line =
        doc.substr(pos, next - pos - (eol == std::string_view::npos ? 0 : 1));
    pos = next;
    if (const std::string_view name = marker(line, kBegin); !name.empty()) {
      if (!open.empty()) {
        return Status::InvalidArgument("block " + std::string(open) + " has no END marker");
      }
      const auto block = blocks.find(name);
      if (block == blocks.end()) {
        return Status::InvalidArgument("no generated block is named " + std::string(name));
      }
      if (seen[block->first]) {
        return Status::InvalidArgument("block " + std::string(name) + " appears twice");
      }
      seen[block->first] = true;
      open = block->first;
      out.append(line).append("\n").append(block->second);
      continue;
    }
    if (const std::string_view name = marker(line, kEnd); !name.empty()) {
      if (name != open) {
        return Status::InvalidArgument("END marker of " + std::string(name) +
                                       " without its BEGIN marker");
      }
      open = {};
      out.append(line).append("\n");
      continue;
    }
    if (open.empty())
      out.append(line).append(next == doc.size() && eol == std::string_view::npos ? "" : "\n");
  }
  if (!open.empty()) {
    return Status::InvalidArgument("block " + std::string(open) + " has no END marker");
  }
  for (const auto& [name, markdown] : blocks) {
    if (!seen[name]) {
      return Status::InvalidArgument("the document has no markers for block " + name);
    }
  }
  return out;
}

std::string WireLayoutsJson() {
  Json doc = Json::object();
  Json fields = Json::array();
  for (const StatsKeyRow& row : kStatsKeyRows) {
    fields.push_back(Json{{"name", row.name},
                          {"python_type", row.python_type},
                          {"msgpack", WireTypesText(row.accepted)},
                          {"vmetrics", UseText(row.use)}});
  }
  doc["scheduler_stats_fields"] = std::move(fields);
  Json generations = Json::array();
  for (const WireGeneration& g : WireGenerations()) {
    Json j = Json::object();
    j["name"] = g.name;
    j["commit"] = g.commit;
    Json output = Json::array();
    for (OutputField f : OutputFields(g)) output.push_back(OutputFieldName(f));
    j["output_fields"] = std::move(output);
    Json stats = Json::array();
    for (StatsKey k : g.scheduler_stats_keys) stats.push_back(StatsKeyName(k));
    j["scheduler_stats_keys"] = std::move(stats);
    j["prefix_cache_stats_keys"] = g.prefix_cache_stats_keys;
    j["spec_decoding_stats_keys"] = g.spec_decoding_stats_keys;
    j["prefill_stats_keys"] = g.prefill_stats_keys;
    j["nixl_keys"] = g.nixl_keys;
    j["nixl_failures_are_ints"] = g.nixl_failures_are_ints;
    Json request = Json::object();
    Json request_fields = Json::array();
    for (RequestField f : g.request.fields) request_fields.push_back(RequestFieldName(f));
    request["fields"] = std::move(request_fields);
    request["required"] = g.request.required;
    Json lora = Json::array();
    for (LoraField f : g.request.lora) lora.push_back(LoraFieldName(f));
    request["lora"] = std::move(lora);
    request["lora_required"] = g.request.lora_required;
    Json sampling = Json::array();
    for (SamplingKey k : g.request.sampling) sampling.push_back(SamplingKeyName(k));
    request["sampling"] = std::move(sampling);
    j["request"] = std::move(request);
    generations.push_back(std::move(j));
  }
  doc["generations"] = std::move(generations);
  return doc.dump(2) + "\n";
}

}  // namespace vmetrics::frontend

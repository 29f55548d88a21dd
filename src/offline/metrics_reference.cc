// SPDX-License-Identifier: Apache-2.0
// MetricsReference: the Markdown reference of every family; see metrics_reference.h.
//
// Nothing here names a family. The list is what a StatsRecorder registers with every option
// on (speculative decoding, --kv-cache-metrics, every catalog row configured), read back from
// the Registry in render order; the family tables (metrics/frontend_families.h) and the
// connector catalog add what the registry does not know: when a family is registered and
// which payload field feeds it.
#include "vmetrics/offline/metrics_reference.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "build_info.h"
#include "engine_states.h"
#include "http_families.h"
#include "ignored_fields.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/exposition.h"
#include "vmetrics/internal/declared_families.h"
#include "vmetrics/internal/ec_connector_rows.h"
#include "vmetrics/recorder.h"
#include "vmetrics/registry.h"

namespace vmetrics::frontend {
namespace {

using internal::BucketSet;
using internal::FamilyId;
using internal::Gate;
using FrontendFamily = internal::FamilyDeclaration;

// Text for a Markdown table cell: a `|` would end the cell and a newline the row.
std::string Cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string Code(std::string_view text) { return "`" + std::string(text) + "`"; }

// The name a scrape shows: counters carry `_total` (prometheus_client appends it).
std::string ExposedName(const Family& f) {
  return f.type() == MetricType::kCounter ? f.name() + "_total" : f.name();
}

// Bucket upper bounds as they appear in `le` (FormatGoFloat), so they can be pasted into
// PromQL; +Inf is implied and not listed.
std::string Buckets(const Family& f) {
  if (f.type() != MetricType::kHistogram) return "";
  std::string out;
  for (double b : f.spec().buckets) {
    if (!out.empty()) out += ", ";
    out += FormatGoFloat(b);
  }
  return out;
}

std::string GateText(Gate gate) { return std::string(internal::GateOf(gate).registered); }

// The field that feeds a frontend family (docs/recording.md describes every feed).
std::string FrontendSource(const FrontendFamily& f) {
  if (!f.source.empty()) return Cell(f.source);
  return "see [recording.md](recording.md)";
}

// A per-engine family's label after model_name and engine, with the values it starts with.
std::string Labels(const Family& f, const FrontendFamily* row) {
  std::string out;
  for (const std::string& l : f.spec().label_names) {
    if (!out.empty()) out += ", ";
    out += Code(l);
    if (row == nullptr || l == "model_name" || l == "engine") continue;
    if (row->eager.empty()) {
      out += " (`0` … `num_speculative_tokens`−1)";
    } else {
      std::string values;
      for (const internal::EagerValue& v : row->eager) {
        values += (values.empty() ? "" : ", ") + Code(v.value);
      }
      out += " (" + values + ")";
    }
  }
  return out;
}

std::string ConnectorLabels(const Family& f, const ConnectorRow& row, const MetricDef& m) {
  std::string out;
  for (const std::string& l : f.spec().label_names) {
    if (!out.empty()) out += ", ";
    out += Code(l);
    for (const auto& [name, value] : m.const_labels) {
      if (l == name) out += " (" + Code(value) + " for " + Code(m.samples_path) + ")";
    }
    if (l == row.record_key_label) out += " (payload key)";
    for (const auto& [field, fallback] : row.record_label_fields) {
      if (l == field) {
        out.append(" (record field `").append(field).append("`, default `").append(fallback);
        out += "`)";
      }
    }
  }
  if (m.sample_kind == SampleKind::kSetInfo) {
    out += ", then the names of the first " + Code(m.samples_path) + " map, in its order";
  }
  return out;
}

// A configuration gate as the reference states it.
std::string GateText(const ExtraConfigGate& g) {
  const std::string key =
      "`kv_connector_extra_config." + g.key + "` (default " + Code(g.default_value) + ")";
  if (g.int_at_least) return key + " is at least " + std::to_string(*g.int_at_least);
  std::string values;
  for (const std::string& v : g.values) values += (values.empty() ? "" : ", ") + Code(v);
  return key + " is one of " + values;
}

std::string SampleSource(const MetricDef& m, const ConnectorRow& row) {
  std::string path = Code(m.samples_path);
  std::string how;
  switch (m.sample_kind) {
    case SampleKind::kObserveEachF64:
    case SampleKind::kObserveEachU64AsF64:
      // A record holds one value per field; a flat payload a list per field.
      how = (row.record_shaped() ? "observe " : "observe each element of ") + path;
      break;
    case SampleKind::kIncBySumU64:
      how = "add each element of " + path;
      break;
    case SampleKind::kIncByU64:
    case SampleKind::kIncByF64:
      how = "add " + path;
      break;
    case SampleKind::kSetU64:
    case SampleKind::kSetF64:
      how = "set to " + path;
      break;
    case SampleKind::kIncByOne:
      how = "+1";
      break;
    case SampleKind::kSetInfo:
      how = "set to 1, labelled with the entries of " + path +
            " (values in the order the first map declared; missing `\"\"`, others dropped)";
      break;
  }
  if (m.scale != 1.0) how += " × " + FormatGoFloat(m.scale);
  if (row.record_shaped()) how = "per record: " + how;
  if (m.eager) how = "children for every engine at registration; " + how;
  if (m.fed_when) how += "; only while " + GateText(*m.fed_when);
  std::string registered;
  for (const ExtraConfigGate& g : m.registered_when) {
    registered += (registered.empty() ? "" : " and ") + GateText(g);
  }
  if (!registered.empty()) how = "registered only when " + registered + "; " + how;
  return how + " (" + Code(SampleKindName(m.sample_kind)) + ")";
}

std::string ShapeText(const ConnectorRow& row) {
  switch (row.shape_rule) {
    case ShapeRule::kHasKey:
      return "the payload has key " + Code(row.shape_key);
    case ShapeRule::kOperationRecords:
      return "every key is a store operation whose value is a list of record maps";
    case ShapeRule::kTypedPayload:
      return "the payload has `types` and `data`";
    case ShapeRule::kNever:
      return "never (only by class name)";
  }
  return "";
}

std::string ChildrenText(const ConnectorRow& row) {
  if (row.children == ChildCreation::kEagerPerEngine && !row.record_shaped()) {
    return "one per engine, created at registration (zero until fed)";
  }
  if (row.record_shaped()) {
    return "created on the first record of each (engine, " + row.record_key_label + [&] {
      std::string s;
      for (const auto& [field, unused] : row.record_label_fields) s += ", " + field;
      return s;
    }() + "), for all of the row's families at once";
  }
  return "created on the first value of each family";
}

const char* kTableHead =
    "| Name | Type | Labels | Buckets (`le`) | HELP | Source |\n"
    "|---|---|---|---|---|---|\n";

void TableRow(std::string* out, const Family& f, const std::string& labels,
              const std::string& source) {
  *out += "| " + Code(ExposedName(f)) + " | " + MetricTypeName(f.type()) + " | " + labels + " | " +
          Buckets(f) + " | " + Cell(f.spec().help) + " | " + source + " |\n";
}

// Configures `row` so that every gate its families are registered under is open (a row whose
// gates exclude each other, which no built-in row has, keeps the families of the first value
// that opens the most): the reference lists every family the row can register.
void OpenRegistrationGates(const ConnectorRow& row, ConnectorConfig* config) {
  std::vector<std::pair<std::string, std::string>> strings;
  std::vector<std::pair<std::string, int64_t>> ints;
  for (const MetricDef& m : row.metrics) {
    for (const ExtraConfigGate& g : m.registered_when) {
      if (g.int_at_least) {
        ints.emplace_back(g.key, *g.int_at_least);
        continue;
      }
      if (std::ranges::any_of(strings, [&](const auto& e) { return e.first == g.key; })) continue;
      // The value that opens the most gates on this key.
      std::string best;
      size_t best_count = 0;
      for (const std::string& v : g.values) {
        size_t count = 0;
        for (const MetricDef& other : row.metrics) {
          for (const ExtraConfigGate& h : other.registered_when) {
            if (h.key == g.key && !h.int_at_least && h.Open(v)) ++count;
          }
        }
        if (count > best_count) {
          best = v;
          best_count = count;
        }
      }
      strings.emplace_back(g.key, best);
    }
  }
  config->extra_config.emplace_back(row.id, std::move(strings));
  config->extra_config_ints.emplace_back(row.id, std::move(ints));
}

}  // namespace

std::string MetricsReference() {
  const ConnectorCatalog& catalog = ConnectorCatalog::BuiltIn();

  // Every option on: spec-decode families (k = 1), residency histograms, LoRA, engine
  // liveness, and every catalog row configured as a MultiConnector child, so everything that
  // can register does.
  RecorderOptions options;
  options.num_speculative_tokens = 1;
  options.kv_cache_metrics = true;
  options.max_loras = 1;
  options.track_engine_liveness = true;
  options.report_engine_wire = true;
  options.compute_nans_in_logits = true;
  options.connectors.connector = "MultiConnector";
  options.connectors.kv_role = "kv_both";
  for (const auto& row : catalog.rows()) {
    options.connectors.children.push_back(row->id);
    OpenRegistrationGates(*row, &options.connectors);
  }
  options.log = [](const std::string&) {};
  FixedClock clock(0);
  Registry registry(&clock);
  StatsRecorder recorder(&registry, options);
  // What `vmetrics serve` registers beside the recorder's (vmetrics_engine_up is the
  // recorder's, found again).
  EngineStates serve_states(&registry, {0});
  IgnoredFields ignored_fields(&registry, nullptr);
  RegisterBuildInfo(&registry);
  // The diffusion counters replace the spec-decode families, so they never register beside
  // them: a second recorder, for a diffusion model, supplies them.
  RecorderOptions diffusion_options;
  diffusion_options.diffusion_model = true;
  diffusion_options.log = options.log;
  Registry diffusion_registry(&clock);
  StatsRecorder diffusion_recorder(&diffusion_registry, diffusion_options);
  std::vector<const Family*> diffusion_families;
  for (const Family* f : diffusion_registry.Families()) {
    for (const FrontendFamily& d : internal::kDeclaredFamilies) {
      if (d.gate == Gate::kDiffusion && d.name == f->name()) diffusion_families.push_back(f);
    }
  }

  // The per-engine `vllm:` families; LoRA, cache config and vmetrics' own are described apart.
  std::map<std::string_view, const FrontendFamily*> frontend;
  for (const FrontendFamily& f : internal::kDeclaredFamilies) {
    if (f.labels.size() >= 2 && f.labels[0] == "model_name") frontend[f.name] = &f;
  }
  const FrontendFamily& lora = internal::Declaration(FamilyId::kLoraRequestsInfo);
  const FrontendFamily& cache_config = internal::Declaration(FamilyId::kCacheConfigInfo);
  std::map<std::string_view, const ConnectorRow*> connector_family;
  for (const auto& row : catalog.rows()) {
    for (const MetricDef& m : row->metrics) connector_family[m.name] = row.get();
  }
  std::map<std::string_view, const internal::EcConnectorRow*> ec_family;
  for (const internal::EcConnectorRow& row : internal::kEcConnectorRows) {
    for (const FrontendFamily& d : internal::kDeclaredFamilies) {
      if (d.gate == row.gate) ec_family[d.name] = &row;
    }
  }

  std::string out;
  out +=
      "# Metrics reference\n"
      "\n"
      "<!-- Generated by `vmetrics metrics-reference`; do not edit. Regenerate with\n"
      "     `build/src/cli/vmetrics metrics-reference > docs/metrics.md`. The ctest\n"
      "     `metrics_reference_current` fails when this file and the command disagree. -->\n"
      "\n"
      "Every family vmetrics can register, as the code defines it: the declared families\n"
      "(`include/vmetrics/internal/declared_families.h`, vmetrics' own accounting included) and\n"
      "the connector catalog (`src/metrics/connector_catalog.cc`). Families render in the order\n"
      "of this page within each section; `docs/recording.md` gives the overall order and\n"
      "exactly how each field is applied.\n"
      "\n"
      "- **Name** is the name a scrape shows in the text format: counters end in `_total`.\n"
      "  A histogram `h` exposes `h_bucket{le=…}`, `h_sum` and `h_count`, a summary `s`\n"
      "  `s_count` and `s_sum`. Counters, histograms and summaries also expose\n"
      "  `<name>_created` (the family name without `_total`) unless\n"
      "  `--disable-created-series` is given.\n"
      "- **Labels** are in declaration order; the exposition sorts them by name. `model_name`\n"
      "  is `--served-model-name` (default `model`), `engine` the data-parallel rank.\n"
      "  Listed values are created eagerly, at startup, for every engine.\n"
      "- **Buckets** are the finite upper bounds as they appear in `le` (`+Inf` is implied).\n"
      "  Token-count histograms use `build_1_2_5_buckets(--max-model-len)`; they are shown for\n"
      "  the default 8192.\n"
      "- **HELP** is vLLM's text, byte for byte.\n"
      "\n"
      "## Frontend families\n"
      "\n"
      "Registered by vLLM's Python `PrometheusStatLogger` and by vmetrics, with the same names,\n"
      "labels, buckets and HELP. Request families (latencies, token counts, `request_success`)\n"
      "are fed from request outputs together with the bookkeeping of the frontend that sent\n"
      "the requests (`RequestTracker`, `vmetrics replay --requests`); without it they stay at\n"
      "zero.\n"
      "\n"
      "| Name | Type | Labels | Buckets (`le`) | HELP | Registered | Source |\n"
      "|---|---|---|---|---|---|---|\n";

  const auto frontend_row = [&out](const Family& f, const FrontendFamily& row) {
    std::string buckets = Buckets(f);
    if (row.buckets == BucketSet::kTokens125) {
      buckets.insert(0, "1-2-5 up to `--max-model-len`: ");
    }
    out += "| " + Code(ExposedName(f)) + " | " + MetricTypeName(f.type()) + " | " +
           Labels(f, &row) + " | " + buckets + " | " + Cell(f.spec().help) + " | " +
           GateText(row.gate) + " | " + FrontendSource(row) + " |\n";
  };
  std::vector<const Family*> own;
  bool diffusion_listed = false;
  for (const Family* f : registry.Families()) {
    if (connector_family.contains(f->name()) || ec_family.contains(f->name())) continue;
    auto it = frontend.find(f->name());
    // The diffusion counters register where the spec-decode families do: before the first
    // family registered after the connectors'.
    if (!diffusion_listed && (it == frontend.end() || !it->second->before_connector_rows)) {
      for (const Family* d : diffusion_families) frontend_row(*d, *frontend.at(d->name()));
      diffusion_listed = true;
    }
    if (it != frontend.end()) {
      frontend_row(*f, *it->second);
    } else if (f->name() == lora.name) {
      out += "| " + Code(ExposedName(*f)) + " | " + MetricTypeName(f->type()) +
             " | `max_lora`, `waiting_lora_adapters`, `running_lora_adapters` (no `model_name`, "
             "no `engine`) |  | " +
             Cell(f->spec().help) + " | " + GateText(lora.gate) + " | " + FrontendSource(lora) +
             " |\n";
    } else if (f->name() == cache_config.name) {
      out += "| " + Code(ExposedName(*f)) + " | " + MetricTypeName(f->type()) +
             " | one label per `CacheConfig` key, then `engine` (no `model_name`) |  | " +
             Cell(f->spec().help) + " | " + GateText(cache_config.gate) + " | " +
             FrontendSource(cache_config) + " |\n";
    } else {
      own.push_back(f);
    }
  }

  out +=
      "\n"
      "## KV-connector families\n"
      "\n"
      "One section per row of the connector catalog, in inference order. A row's families are\n"
      "registered when its connector is configured (`--kv-transfer-config`, a MultiConnector\n"
      "child, or the engines' ready response), or on the first payload from it (logged once;\n"
      "Python would drop that payload). Labels are `model_name`, `engine`, then the row's own.\n"
      "Third-party connectors that send a `_metrics_descriptor` with their payload add rows of\n"
      "their own at run time; they are not listed here.\n";
  for (const auto& row : catalog.rows()) {
    out += "\n### " + row->id + "\n\n";
    std::string names;
    for (const std::string& n : row->class_names) names += (names.empty() ? "" : ", ") + Code(n);
    out += "- Answers to: " + names + "\n";
    out += "- Recognised with no connector configured when: " + ShapeText(*row) + "\n";
    if (row->metrics.empty()) {
      out += "- Registers no families (its Python metrics class observes nothing).\n";
      continue;
    }
    out += "- Children: " + ChildrenText(*row) + "\n";
    if (!row->upstream.empty()) out += "- Upstream: " + row->upstream + "\n";
    out += "\n" + std::string(kTableHead);
    for (const MetricDef& m : row->metrics) {
      const Family* f = registry.Find(m.name);
      if (f == nullptr) continue;  // cannot happen: every row was configured above
      TableRow(&out, *f, ConnectorLabels(*f, *row, m), SampleSource(m, *row));
    }
  }

  out +=
      "\n"
      "## EC-connector families\n"
      "\n"
      "One section per EC (encoder cache) connector vmetrics knows\n"
      "(`include/vmetrics/internal/ec_connector_rows.h`). A connector's families are registered\n"
      "when `--ec-transfer-config` names it (`ec_connector`), after the KV-connector families\n"
      "and before `vllm:estimated_flops_per_gpu`, with one child per engine from the start;\n"
      "they are fed from `SchedulerStats.ec_connector_stats` (`{types, data}`): a counter adds\n"
      "`data[name]`, a histogram observes each element of it. The framework is upstream's\n"
      "(vllm-project/vllm #54960, merged; `ECConnectorProm` in\n"
      "`vllm/distributed/ec_transfer/ec_connector/metrics.py` at 54ce10e5); the families below\n"
      "are the connector's own.\n";
  for (const internal::EcConnectorRow& row : internal::kEcConnectorRows) {
    RecorderOptions ec_options;
    ec_options.ec_connector.connector = std::string(row.class_name);
    ec_options.log = options.log;
    Registry ec_registry(&clock);
    StatsRecorder ec_recorder(&ec_registry, ec_options);
    out += "\n### " + std::string(row.class_name) + "\n\n";
    out += "- Read from: " + std::string(row.source) + "\n\n";
    out += kTableHead;
    for (const FrontendFamily& d : internal::kDeclaredFamilies) {
      if (d.gate != row.gate) continue;
      const Family* f = ec_registry.Find(d.name);
      if (f == nullptr) continue;  // cannot happen: the row's connector is configured
      const std::string key = Code("data[\"" + std::string(d.name) + "\"]");
      TableRow(&out, *f, "`model_name`, `engine`",
               d.type == MetricType::kHistogram ? "observe each element of " + key : "add " + key);
    }
  }

  // Its own registry: the HTTP families are neither vllm: nor vmetrics' own. Their sources are
  // their rows'.
  Registry http_registry(&clock);
  const HttpFamilies http_families(&http_registry);
  out +=
      "\n"
      "## HTTP families\n"
      "\n"
      "Registered by `vmetrics serve` when it binds HTTP, as prometheus-fastapi-instrumentator's\n"
      "default instrumentation registers them in vLLM's API server: after every `vllm:`\n"
      "family, before vmetrics' own (`docs/design.md` §2.6). Each request that reaches the\n"
      "server's routing is recorded when it ends, except those whose handler contains\n"
      "`/metrics`, `/health`, `/load`, `/ping`, `/version` or `/server_info`. `handler` is the\n"
      "route's path, `none` for a path and method no route serves (404, 405); `status` is\n"
      "grouped (`2xx`, `4xx`, ...); `method` is the request's. The unlabelled histogram has its\n"
      "child from the start.\n"
      "\n";
  out += kTableHead;
  for (const Family* f : http_registry.Families()) {
    std::string labels;
    for (const std::string& l : f->spec().label_names) {
      labels += (labels.empty() ? "" : ", ") + Code(l);
    }
    std::string source;
    for (const FrontendFamily& d : internal::kDeclaredFamilies) {
      if (d.name == f->name()) source = Cell(d.source);
    }
    TableRow(&out, *f, labels.empty() ? "(none)" : labels, source);
  }

  out +=
      "\n"
      "## vmetrics' own families\n"
      "\n"
      "Registered after every `vllm:` family; not in vLLM. They account for what vmetrics could\n"
      "not record and for engine liveness, and are what `deploy/prometheus/vmetrics-rules.yml`\n"
      "alerts on. The engine families (`vmetrics_engine_up`, `vmetrics_engine_state`), the\n"
      "input-socket counter and the build info are registered by `vmetrics serve` only\n"
      "(`replay` watches no engines), from its first second, before the engines are ready; the\n"
      "others always.\n"
      "\n"
      "`vmetrics serve` also writes prometheus_client's process families before every other\n"
      "family, as vLLM's frontend shows them (its default registry keeps prometheus_client's\n"
      "ProcessCollector): `process_virtual_memory_bytes`, `process_resident_memory_bytes`,\n"
      "`process_start_time_seconds`, `process_cpu_seconds_total`, `process_open_fds`,\n"
      "`process_max_fds` (include/vmetrics/process_metrics.h).\n"
      "\n";
  out +=
      "| Name | Type | Labels | HELP |\n"
      "|---|---|---|---|\n";
  for (const Family* f : own) {
    std::string labels;
    for (const std::string& l : f->spec().label_names) {
      labels += (labels.empty() ? "" : ", ") + Code(l);
    }
    out += "| " + Code(ExposedName(*f)) + " | " + MetricTypeName(f->type()) + " | " +
           (labels.empty() ? "(none)" : labels) + " | " + Cell(f->spec().help) + " |\n";
  }
  return out;
}

}  // namespace vmetrics::frontend

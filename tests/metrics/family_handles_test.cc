// SPDX-License-Identifier: Apache-2.0
// Tests of the declared families (include/vmetrics/internal/declared_families.h) and their
// typed handles (src/metrics/family_handles.{h,cc}): the table is registered in its order with
// the children it declares, handles point at exactly those children, and a family whose option
// is off has none. That a misspelt family, a value a family does not create, or a method of the
// wrong type does not compile is checked by tests/layering (typed_handles_compile_checks).
#include "family_handles.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/internal/declared_families.h"
#include "vmetrics/recorder.h"
#include "vmetrics/registry.h"

namespace vmetrics::internal {
namespace {

std::vector<std::string> Labels(const Child* c) {
  return std::vector<std::string>(c->label_values().begin(), c->label_values().end());
}

// Every gate a recorder can open (kGates rows with an `open`). Never all in a recorder (a
// diffusion model has no spec-decode families), but the table registers whatever is open.
OpenGates AllGates() {
  OpenGates g;
  for (const GateDeclaration& d : kGates) g.Set(d.gate, d.open != nullptr);
  return g;
}

TEST(DeclaredFamilies, EachNameIsDeclaredOnceAndValid) {
  std::set<std::string_view> names;
  for (const FamilyDeclaration& d : kDeclaredFamilies) {
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_TRUE(IsValidMetricName(d.name)) << d.name;
    EXPECT_FALSE(d.source.empty()) << d.name << ": the metrics reference needs its source";
    for (std::string_view l : d.labels) EXPECT_TRUE(IsValidLabelName(l)) << d.name << " " << l;
  }
}

TEST(DeclaredFamilies, EveryOpenRowIsRegisteredInTableOrderAroundTheConnectorRows) {
  Registry registry;
  DeclaredFamilies declared(&registry, "m", {"0", "1"}, 8192, 2, AllGates());
  declared.Register(/*before_connector_rows=*/true);
  registry.AddFamily({"vllm:connector_row_family", MetricType::kCounter, "C.", {}});
  declared.Register(/*before_connector_rows=*/false);
  std::vector<std::string> want;
  for (const FamilyDeclaration& d : kDeclaredFamilies) {
    if (d.before_connector_rows) want.emplace_back(d.name);
  }
  want.emplace_back("vllm:connector_row_family");
  for (int group : {0, 1}) {
    for (const FamilyDeclaration& d : kDeclaredFamilies) {
      // The rows a recorder never registers (their owners do) are not there.
      const bool recorder_registers = GateOf(d.gate).open != nullptr;
      if (!d.before_connector_rows && recorder_registers && d.render_group == group) {
        want.emplace_back(d.name);
      }
    }
  }
  std::vector<std::string> got;
  for (const Family* f : registry.Families()) got.push_back(f->name());
  EXPECT_EQ(got, want);
}

TEST(DeclaredFamilies, HandlesPointAtTheDeclaredChildrenOfTheirEngine) {
  using F = FamilyId;
  Registry registry;
  DeclaredFamilies declared(&registry, "m", {"0", "7"}, 8192, 3, AllGates());
  declared.Register(true);
  declared.Register(false);
  const EngineHandles& h = declared.engine(1);
  EXPECT_EQ(Labels(h.Get<F::kNumRequestsRunning>()), (std::vector<std::string>{"m", "7"}));
  EXPECT_EQ(Labels((h.Get<F::kNumRequestsWaitingByReason, "deferred">())),
            (std::vector<std::string>{"m", "7", "deferred"}));
  EXPECT_EQ(Labels(h.Get<F::kRequestSuccess>(4)),
            (std::vector<std::string>{"m", "7", "repetition"}));
  EXPECT_EQ((h.Get<F::kPromptTokensBySource, "external_kv_transfer">()),
            h.Get<F::kPromptTokensBySource>(2));
  ASSERT_EQ(h.positions(), 3u);
  EXPECT_EQ(Labels(h.Position<F::kSpecDecodeNumAcceptedTokensPerPos>(2)),
            (std::vector<std::string>{"m", "7", "2"}));
  EXPECT_NE(h.Get<F::kKvBlockLifetimeSeconds>(), nullptr);
  // Eager children start where the table says.
  EXPECT_EQ((h.Get<F::kEngineSleepState, "awake">()->value()), 1.0);
  EXPECT_EQ((h.Get<F::kEngineSleepState, "discard_all">()->value()), 0.0);
  // vmetrics_decode_errors_total{part}: one eager child per part, in DecodePart's order.
  const std::vector<const Child*> parts = declared.family<F::kDecodeErrors>().family().Children();
  ASSERT_EQ(parts.size(), 5u);
  EXPECT_EQ(Labels(parts[0]), (std::vector<std::string>{"message"}));
  EXPECT_EQ(Labels(parts[2]), (std::vector<std::string>{"scheduler_stats"}));
  ASSERT_TRUE(declared.family<F::kEngineUp>());
  const std::vector<const Child*> up = declared.family<F::kEngineUp>().family().Children();
  ASSERT_EQ(up.size(), 2u);
  EXPECT_EQ(up[1]->value(), 1.0);
  // Eager values outer, engines inner, as Python builds them.
  const std::vector<const Child*> reasons =
      declared.family<F::kNumRequestsWaitingByReason>().family().Children();
  ASSERT_EQ(reasons.size(), 4u);
  EXPECT_EQ(Labels(reasons[1]), (std::vector<std::string>{"m", "7", "capacity"}));
  EXPECT_EQ(Labels(reasons[2]), (std::vector<std::string>{"m", "0", "deferred"}));
}

TEST(DeclaredFamilies, AFamilyWhoseOptionIsOffHasNoFamilyAndNullHandles) {
  using F = FamilyId;
  Registry registry;
  DeclaredFamilies declared(&registry, "m", {"0"}, 8192, 0, OpenGates{});
  declared.Register(true);
  declared.Register(false);
  EXPECT_EQ(declared.engine(0).Get<F::kSpecDecodeNumDrafts>(), nullptr);
  EXPECT_EQ(declared.engine(0).Get<F::kKvBlockReuseGapSeconds>(), nullptr);
  EXPECT_EQ(declared.engine(0).positions(), 0u);
  EXPECT_FALSE(declared.family<F::kLoraRequestsInfo>());
  EXPECT_FALSE(declared.family<F::kEngineUp>());
  EXPECT_FALSE(declared.family<F::kLabelValuesDropped>()) << "the guard registers it on a drop";
  EXPECT_EQ(registry.Find("vllm:spec_decode_num_drafts"), nullptr);
  EXPECT_NE(declared.engine(0).Get<F::kNumRequestsRunning>(), nullptr);
}

TEST(DeclaredFamilies, AFamilySpecCarriesTheDeclaredBuckets) {
  const FamilySpec tokens = SpecOf(Declaration(FamilyId::kRequestPromptTokens), 1024);
  EXPECT_EQ(tokens.buckets, (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}));
  EXPECT_EQ(tokens.label_names, (std::vector<std::string>{"model_name", "engine"}));
  const FamilySpec up = SpecOf(Declaration(FamilyId::kEngineUp), 1024);
  EXPECT_EQ(up.render_group, 1);
  EXPECT_TRUE(up.buckets.empty());
}

TEST(DeclaredFamilies, NamesAreUniqueRefusesATableThatDeclaresAFamilyTwice) {
  constexpr FamilyDeclaration kTwice[] = {Declaration(FamilyId::kPromptTokens),
                                          Declaration(FamilyId::kGenerationTokens),
                                          Declaration(FamilyId::kPromptTokens)};
  static_assert(!NamesAreUnique(kTwice));
  static_assert(NamesAreUnique(std::span(kTwice).first(2)));
  EXPECT_TRUE(NamesAreUnique(kDeclaredFamilies));
}

// kGates: with no option set only kAlways is open, and each option opens its gate and no other.
TEST(Gates, EachOptionOpensItsGateAndNoOther) {
  const auto open_gates = [](const RecorderOptions& o) {
    std::vector<Gate> open;
    const OpenGates gates = OpenGates::For(o);
    for (const GateDeclaration& g : kGates) {
      if (gates.Open(g.gate)) open.push_back(g.gate);
    }
    return open;
  };
  EXPECT_EQ(open_gates(RecorderOptions{}), std::vector<Gate>{Gate::kAlways});
  struct Case {
    void (*set)(RecorderOptions*);
    Gate gate;
  };
  const Case cases[] = {
      {[](RecorderOptions* o) { o->num_speculative_tokens = 2; }, Gate::kSpecDecode},
      // A diffusion model gets the diffusion counters instead of the spec-decode families.
      {[](RecorderOptions* o) {
         o->num_speculative_tokens = 2;
         o->diffusion_model = true;
       },
       Gate::kDiffusion},
      {[](RecorderOptions* o) { o->kv_cache_metrics = true; }, Gate::kKvCacheMetrics},
      {[](RecorderOptions* o) { o->max_loras = 1; }, Gate::kLora},
      {[](RecorderOptions* o) { o->track_engine_liveness = true; }, Gate::kEngineLiveness},
      {[](RecorderOptions* o) { o->report_engine_wire = true; }, Gate::kEngineWire},
      {[](RecorderOptions* o) {
         o->connectors.connector = "NixlConnector";
         o->connectors.kv_role = "kv_consumer";
       },
       Gate::kKvConsumer},
      {[](RecorderOptions* o) { o->compute_nans_in_logits = true; }, Gate::kNansInLogits},
      {[](RecorderOptions* o) { o->ec_connector.connector = "ECCPUConnector"; },
       Gate::kEcCpuConnector},
  };
  for (const Case& c : cases) {
    RecorderOptions o;
    c.set(&o);
    EXPECT_EQ(open_gates(o), (std::vector<Gate>{Gate::kAlways, c.gate}))
        << "gate " << static_cast<int>(c.gate);
  }
  RecorderOptions producer;
  producer.connectors.connector = "NixlConnector";
  producer.connectors.kv_role = "kv_producer";
  EXPECT_EQ(open_gates(producer), std::vector<Gate>{Gate::kAlways});
  RecorderOptions unknown_ec;
  unknown_ec.ec_connector.connector = "ECExampleConnector";  // no row: registers nothing
  EXPECT_EQ(open_gates(unknown_ec), std::vector<Gate>{Gate::kAlways});
}

// The rows no recorder registers (their owners do) stay out of a recorder with every option on.
TEST(Gates, ARecorderNeverRegistersTheRowsItsGatesDoNotOpen) {
  RecorderOptions o;
  o.num_speculative_tokens = 1;
  o.kv_cache_metrics = true;
  o.max_loras = 1;
  o.track_engine_liveness = true;
  o.report_engine_wire = true;
  o.compute_nans_in_logits = true;
  o.log = [](const std::string&) {};
  Registry registry;
  StatsRecorder recorder(&registry, o);
  size_t owned = 0;
  for (const FamilyDeclaration& d : kDeclaredFamilies) {
    if (GateOf(d.gate).open != nullptr) continue;
    ++owned;
    EXPECT_EQ(registry.Find(d.name), nullptr) << d.name;
  }
  EXPECT_GE(owned, 2u) << "kFirstDrop's and kServe's rows";
  EXPECT_EQ(GateOf(Gate::kServe).open, nullptr);
  EXPECT_EQ(GateOf(Gate::kFirstDrop).open, nullptr);
}

// RegisterFamily registers the row's spec, typed, once (the second call finds it).
TEST(DeclaredFamilies, RegisterFamilyRegistersTheRowOnce) {
  Registry registry;
  const HistogramFamily duration = RegisterFamily<FamilyId::kHttpRequestDurationSeconds>(&registry);
  const FamilySpec& spec = duration.family().spec();
  const FamilyDeclaration& d = Declaration(FamilyId::kHttpRequestDurationSeconds);
  EXPECT_EQ(spec.name, d.name);
  EXPECT_EQ(spec.type, MetricType::kHistogram);
  EXPECT_EQ(spec.help, d.help);
  EXPECT_EQ(spec.label_names, (std::vector<std::string>{"method", "handler"}));
  EXPECT_EQ(spec.buckets, (std::vector<double>{0.1, 0.5, 1}));
  EXPECT_EQ(spec.render_group, 1);
  EXPECT_EQ(&RegisterFamily<FamilyId::kHttpRequestDurationSeconds>(&registry).family(),
            &duration.family());
  EXPECT_EQ(registry.Families().size(), 1u);
  const SummaryFamily sizes = RegisterFamily<FamilyId::kHttpRequestSizeBytes>(&registry);
  EXPECT_EQ(sizes.family().type(), MetricType::kSummary);
}

}  // namespace
}  // namespace vmetrics::internal

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
#include "vmetrics/registry.h"

namespace vmetrics::internal {
namespace {

std::vector<std::string> Labels(const Child* c) {
  return std::vector<std::string>(c->label_values().begin(), c->label_values().end());
}

OpenGates AllGates() {
  OpenGates g;
  g.spec_decode = g.kv_cache_metrics = g.lora = g.engine_liveness = g.engine_wire = true;
  g.kv_consumer = g.nans_in_logits = true;
  // Never both in a recorder (a diffusion model has no spec-decode families), but the table
  // registers whatever is open.
  g.diffusion = true;
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
      if (!d.before_connector_rows && d.gate != Gate::kFirstDrop && d.render_group == group) {
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

}  // namespace
}  // namespace vmetrics::internal

// SPDX-License-Identifier: Apache-2.0
// EngineStates: the engine families from the first second and /health's answer, through an
// engine's whole life (starting, ready, dead, ready again).
#include "engine_states.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "build_info.h"
#include "http_families.h"
#include "ignored_fields.h"
#include "vmetrics/exposition.h"
#include "vmetrics/internal/declared_families.h"

namespace vmetrics::frontend {
namespace {

std::string Render(const Registry& registry) {
  std::string out;
  ExpositionOptions o;
  o.created_series = false;
  WriteText(registry, o, &out);
  return out;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(EngineStates, EveryEngineStartsStartingWithAllItsChildren) {
  Registry registry;
  EngineStates states(&registry, {2, 3});
  const std::string text = Render(registry);
  EXPECT_TRUE(Has(text,
                  "# HELP vmetrics_engine_state State of each expected engine: starting (not yet "
                  "ready), ready, dead. 1 for the current state."))
      << text;
  EXPECT_TRUE(Has(text, "# TYPE vmetrics_engine_state gauge"));
  for (const char* e : {"2", "3"}) {
    const std::string engine = std::string("engine=\"") + e + "\"";
    EXPECT_TRUE(Has(text, "vmetrics_engine_up{" + engine + "} 0.0")) << text;
    EXPECT_TRUE(Has(text, "vmetrics_engine_state{" + engine + ",state=\"starting\"} 1.0"));
    EXPECT_TRUE(Has(text, "vmetrics_engine_state{" + engine + ",state=\"ready\"} 0.0"));
    EXPECT_TRUE(Has(text, "vmetrics_engine_state{" + engine + ",state=\"dead\"} 0.0"));
  }
  EXPECT_TRUE(Has(text, "vmetrics_input_messages_dropped_total{socket=\"input\"} 0.0")) << text;
  const HealthReport h = states.Health();
  EXPECT_FALSE(h.healthy);
  EXPECT_EQ(h.body, "starting: 0 of 2 engines ready\n");
}

TEST(EngineStates, ReadyDeadAndReadyAgain) {
  Registry registry;
  EngineStates states(&registry, {0, 1});
  states.SetReady(1);
  EXPECT_EQ(states.Health().body, "starting: 1 of 2 engines ready\n");
  states.SetReady(0);
  EXPECT_TRUE(states.Health().healthy);
  EXPECT_EQ(states.Health().body, "");
  states.SetDead(1, "input connection closed");
  std::string text = Render(registry);
  EXPECT_TRUE(Has(text, "vmetrics_engine_up{engine=\"1\"} 0.0")) << text;
  EXPECT_TRUE(Has(text, "vmetrics_engine_state{engine=\"1\",state=\"ready\"} 0.0"));
  EXPECT_TRUE(Has(text, "vmetrics_engine_state{engine=\"1\",state=\"dead\"} 1.0"));
  EXPECT_FALSE(states.Health().healthy);
  EXPECT_EQ(states.Health().body, "engine 1 is dead: input connection closed\n");
  // It registers again: ready, alive, healthy.
  states.SetReady(1);
  text = Render(registry);
  EXPECT_TRUE(Has(text, "vmetrics_engine_up{engine=\"1\"} 1.0")) << text;
  EXPECT_TRUE(Has(text, "vmetrics_engine_state{engine=\"1\",state=\"ready\"} 1.0"));
  EXPECT_TRUE(Has(text, "vmetrics_engine_state{engine=\"1\",state=\"dead\"} 0.0"));
  EXPECT_TRUE(states.Health().healthy);
  states.SetReady(7);  // not expected: ignored
  EXPECT_EQ(Render(registry), text);
}

TEST(EngineStates, DroppedInputIsCountedBySocket) {
  Registry registry;
  EngineStates states(&registry, {0});
  states.CountDropped("input");
  states.CountDropped("input");
  states.CountDropped("handshake");
  const std::string text = Render(registry);
  EXPECT_TRUE(Has(text, "vmetrics_input_messages_dropped_total{socket=\"input\"} 2.0")) << text;
  EXPECT_TRUE(Has(text, "vmetrics_input_messages_dropped_total{socket=\"handshake\"} 1.0"));
}

// What `serve` registers itself, before any recorder (its HTTP families, engine states, ignored
// request fields, build info), is exactly the rows gated kServe (and vmetrics_engine_up), each
// with its row's spec.
TEST(ServeFamilies, AreTheServeRowsOfTheDeclaredTable) {
  using internal::FamilyDeclaration;
  Registry registry;
  const HttpFamilies http(&registry);
  const EngineStates states(&registry, {0});
  IgnoredFields ignored(&registry, nullptr);
  RegisterBuildInfo(&registry);
  std::vector<std::string> want;
  for (const FamilyDeclaration& d : internal::kDeclaredFamilies) {
    if (d.gate == internal::Gate::kServe || d.id == internal::FamilyId::kEngineUp) {
      want.emplace_back(d.name);
    }
  }
  std::vector<std::string> got;
  for (const Family* f : registry.Families()) {
    got.push_back(f->name());
    const FamilyDeclaration* row = nullptr;
    for (const FamilyDeclaration& d : internal::kDeclaredFamilies) {
      if (d.name == f->name()) row = &d;
    }
    ASSERT_NE(row, nullptr) << f->name() << " has no row";
    const FamilySpec spec = internal::SpecOf(*row, 0);
    EXPECT_EQ(f->type(), spec.type) << f->name();
    EXPECT_EQ(f->spec().help, spec.help) << f->name();
    EXPECT_EQ(f->spec().label_names, spec.label_names) << f->name();
    EXPECT_EQ(f->spec().buckets, spec.buckets) << f->name();
    EXPECT_EQ(f->spec().render_group, spec.render_group) << f->name();
  }
  // Sorted: the rows list vmetrics_engine_up with the recorder's, serve registers it second.
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace vmetrics::frontend

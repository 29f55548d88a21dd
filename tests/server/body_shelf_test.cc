// SPDX-License-Identifier: Apache-2.0
// BodyShelf: at most max_per_kind bodies of a kind are made while they are held.
#include "body_shelf.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace vmetrics::internal {
namespace {

TEST(BodyShelf, HeldBodiesAreSharedPastTheLimitAndFreedPlacesAreReused) {
  BodyShelf shelf(2);
  int renders = 0;
  auto make = [&] { return "body " + std::to_string(++renders); };
  std::vector<std::shared_ptr<const std::string>> held;
  for (int i = 0; i < 5; ++i) held.push_back(shelf.Get(0, make));
  EXPECT_EQ(renders, 2);
  EXPECT_EQ(*held[4], "body 2");  // the newest held
  // Another kind has its own places.
  EXPECT_EQ(*shelf.Get(1, make), "body 3");
  held.clear();
  EXPECT_EQ(*shelf.Get(0, make), "body 4");
  EXPECT_EQ(shelf.made(), 4u);
}

TEST(BodyShelf, AFailedRenderGivesItsPlaceBack) {
  BodyShelf shelf(1);
  EXPECT_THROW(shelf.Get(0, []() -> std::string { throw std::runtime_error("no"); }),
               std::runtime_error);
  EXPECT_EQ(*shelf.Get(0, [] { return std::string("ok"); }), "ok");
}

TEST(BodyShelf, ABodyMayOutliveTheShelf) {
  std::shared_ptr<const std::string> body;
  {
    BodyShelf shelf(1);
    body = shelf.Get(3, [] { return std::string("late"); });
  }
  EXPECT_EQ(*body, "late");
}

}  // namespace
}  // namespace vmetrics::internal

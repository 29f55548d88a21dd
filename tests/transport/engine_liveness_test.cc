// SPDX-License-Identifier: Apache-2.0
// The attribution rules of src/transport/engine_liveness.h, one test per rule.
#include "engine_liveness.h"

#include <gtest/gtest.h>

namespace vmetrics::internal {
namespace {

using Clock = EngineLiveness::Clock;

class EngineLivenessTest : public ::testing::Test {
 protected:
  // Engines 0..2: input fds 10, 11, 12.
  EngineLivenessTest() : live_(0, 3) {
    for (int i = 0; i < 3; ++i)
      EXPECT_FALSE(live_.OnRegistered(i, 10 + i, Clock::now()).has_value());
  }
  EngineLiveness live_;
  Clock::time_point t0_ = Clock::now();
};

TEST_F(EngineLivenessTest, DeadFrameOnAnOwnedOutputConnectionNamesItsOwner) {
  live_.OnOutputMessage(20, 20, 0);
  live_.OnOutputMessage(21, 21, 1);
  live_.OnOutputMessage(22, 22, 2);
  auto death = live_.OnEngineCoreDead(21, t0_);
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 1);
  EXPECT_EQ(death->reason, "sent ENGINE_CORE_DEAD");
  EXPECT_FALSE(live_.Alive(1));
  EXPECT_EQ(live_.AliveCount(), 2);
  // Its input connection closing afterwards reports nothing new.
  EXPECT_FALSE(live_.OnInputDisconnected(11, t0_).has_value());
  EXPECT_TRUE(live_.OnTick(t0_ + EngineLiveness::kCloseGrace).empty());
}

TEST_F(EngineLivenessTest, OwnershipFollowsTheLastEngineIndexSeenOnTheConnection) {
  live_.OnOutputMessage(20, 20, 0);
  live_.OnOutputMessage(20, 20, 2);
  auto death = live_.OnEngineCoreDead(20, t0_);
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 2);
}

TEST_F(EngineLivenessTest, OutOfRangeEngineIndexTeachesNothing) {
  live_.OnOutputMessage(20, 20, 7);
  live_.OnOutputMessage(20, 20, -1);
  // Unknown connection, three alive: pending.
  EXPECT_FALSE(live_.OnEngineCoreDead(20, t0_).has_value());
  EXPECT_EQ(live_.AliveCount(), 3);
}

TEST_F(EngineLivenessTest, InputDisconnectAloneIsADeathAfterTheGrace) {
  EXPECT_FALSE(live_.OnInputDisconnected(12, t0_).has_value());
  EXPECT_TRUE(live_.Alive(2));
  std::vector<EngineLiveness::Death> deaths = live_.OnTick(t0_ + EngineLiveness::kCloseGrace);
  ASSERT_EQ(deaths.size(), 1u);
  EXPECT_EQ(deaths[0].engine_index, 2);
  EXPECT_EQ(deaths[0].reason, "input connection closed");
}

TEST_F(EngineLivenessTest, InputDisconnectWaitsForTheLastWordOnItsOutputConnection) {
  live_.OnOutputMessage(21, 21, 1);
  // The input closed first; the ENGINE_CORE_DEAD sent before it is still on its way.
  EXPECT_FALSE(live_.OnInputDisconnected(11, t0_).has_value());
  EXPECT_TRUE(live_.Alive(1));
  ASSERT_TRUE(live_.NextDeadline().has_value());
  EXPECT_EQ(*live_.NextDeadline(), t0_ + EngineLiveness::kCloseGrace);
  auto death = live_.OnEngineCoreDead(21, t0_ + std::chrono::milliseconds(2));
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 1);
  EXPECT_EQ(death->reason, "sent ENGINE_CORE_DEAD");
  EXPECT_FALSE(live_.NextDeadline().has_value());
}

TEST_F(EngineLivenessTest, InputThenOutputClosingWithoutDeadFrameIsAPlainDeath) {
  live_.OnOutputMessage(21, 21, 1);
  EXPECT_FALSE(live_.OnInputDisconnected(11, t0_).has_value());
  auto death = live_.OnOutputDisconnected(21);
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 1);
  EXPECT_EQ(death->reason, "input connection closed");
}

TEST_F(EngineLivenessTest, OutputClosedFirstThenInputIsAnImmediateDeath) {
  // Rule a: everything it sent was read, both connections are gone.
  live_.OnOutputMessage(21, 21, 1);
  EXPECT_FALSE(live_.OnOutputDisconnected(21).has_value());  // alive: its input is open
  auto death = live_.OnInputDisconnected(11, t0_);
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->reason, "input connection closed");
}

TEST_F(EngineLivenessTest, AHalfClosedEngineDiesAfterTheGrace) {
  live_.OnOutputMessage(21, 21, 1);
  EXPECT_FALSE(live_.OnInputDisconnected(11, t0_).has_value());
  EXPECT_TRUE(live_.OnTick(t0_ + EngineLiveness::kCloseGrace / 2).empty());
  std::vector<EngineLiveness::Death> deaths = live_.OnTick(t0_ + EngineLiveness::kCloseGrace);
  ASSERT_EQ(deaths.size(), 1u);
  EXPECT_EQ(deaths[0].engine_index, 1);
  EXPECT_EQ(deaths[0].reason, "input connection closed");
  EXPECT_TRUE(live_.OnTick(t0_ + EngineLiveness::kCloseGrace * 2).empty());
}

TEST_F(EngineLivenessTest, WhileOutputsAreQueuedTheGraceWaitsForThemUpToItsBound) {
  // Engine 1's input closed while the loop is behind: its ENGINE_CORE_DEAD may be queued.
  live_.OnOutputMessage(21, 21, 1);
  EXPECT_FALSE(live_.OnInputDisconnected(11, t0_).has_value());
  EXPECT_TRUE(live_.OnTick(t0_ + EngineLiveness::kCloseGrace, /*outputs_drained=*/false).empty());
  // Its frame arrives from the backlog: the exact reason.
  auto death = live_.OnEngineCoreDead(21, t0_ + EngineLiveness::kCloseGrace * 3);
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 1);
  EXPECT_EQ(death->reason, "sent ENGINE_CORE_DEAD");

  // Engine 2 vanishes while the loop stays behind: dead at the bound all the same.
  live_.OnOutputMessage(22, 22, 2);
  EXPECT_FALSE(live_.OnInputDisconnected(12, t0_).has_value());
  EXPECT_TRUE(live_
                  .OnTick(t0_ + EngineLiveness::kCloseGraceBehind - EngineLiveness::kCloseGrace,
                          /*outputs_drained=*/false)
                  .empty());
  std::vector<EngineLiveness::Death> deaths =
      live_.OnTick(t0_ + EngineLiveness::kCloseGraceBehind, /*outputs_drained=*/false);
  ASSERT_EQ(deaths.size(), 1u);
  EXPECT_EQ(deaths[0].engine_index, 2);
  EXPECT_EQ(deaths[0].reason, "input connection closed");
}

TEST_F(EngineLivenessTest, DeadFrameAfterTheInputClosedGoesToTheEngineWithoutOutputs) {
  // Engine 2 never sent an output; its disconnect was seen before its ENGINE_CORE_DEAD.
  live_.OnOutputMessage(20, 20, 0);
  EXPECT_FALSE(live_.OnInputDisconnected(12, t0_).has_value());
  auto death = live_.OnEngineCoreDead(30, t0_ + std::chrono::milliseconds(3));
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 2);
  EXPECT_EQ(death->reason, "sent ENGINE_CORE_DEAD");
  EXPECT_TRUE(live_.Alive(0));
  EXPECT_TRUE(live_.Alive(1));
}

TEST_F(EngineLivenessTest, DeadFrameBeforeTheInputClosedWaitsForIt) {
  live_.OnOutputMessage(21, 21, 1);
  // Engines 0 and 2 own no output connection: the frame cannot be placed yet.
  EXPECT_FALSE(live_.OnEngineCoreDead(30, t0_).has_value());
  auto death = live_.OnInputDisconnected(10, t0_ + std::chrono::milliseconds(1));
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 0);
  EXPECT_EQ(death->reason, "sent ENGINE_CORE_DEAD (attributed when its input connection closed)");
}

TEST_F(EngineLivenessTest, AnEarlierVanishingIsNotBlamedForALaterDeadFrame) {
  live_.OnOutputMessage(21, 21, 1);
  EXPECT_FALSE(live_.OnInputDisconnected(12, t0_).has_value());
  ASSERT_EQ(live_.OnTick(t0_ + std::chrono::seconds(60)).size(), 1u);  // engine 2 vanished
  // Much later engine 0, which never sent an output, sends ENGINE_CORE_DEAD.
  EXPECT_FALSE(live_.OnEngineCoreDead(30, t0_ + std::chrono::seconds(60)).has_value());
  auto death = live_.OnInputDisconnected(10, t0_ + std::chrono::seconds(60));
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 0);
  EXPECT_EQ(death->reason, "sent ENGINE_CORE_DEAD (attributed when its input connection closed)");
}

TEST_F(EngineLivenessTest, DeadFramesGoToClosingEnginesInTheOrderTheyClosed) {
  EXPECT_FALSE(live_.OnInputDisconnected(11, t0_).has_value());
  EXPECT_FALSE(live_.OnInputDisconnected(10, t0_ + std::chrono::milliseconds(1)).has_value());
  auto first = live_.OnEngineCoreDead(30, t0_ + std::chrono::milliseconds(2));
  auto second = live_.OnEngineCoreDead(31, t0_ + std::chrono::milliseconds(2));
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(first->engine_index, 1);
  EXPECT_EQ(second->engine_index, 0);
  // Rule 3: the only engine left.
  auto third = live_.OnEngineCoreDead(32, t0_ + std::chrono::milliseconds(3));
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->engine_index, 2);
  EXPECT_EQ(live_.AliveCount(), 0);
}

TEST(EngineLiveness, SingleEngineDeadFrameWithoutOutputs) {
  EngineLiveness live(5, 1);
  EXPECT_FALSE(live.OnRegistered(5, 9, Clock::now()).has_value());
  auto death = live.OnEngineCoreDead(40, Clock::now());
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 5);
  EXPECT_EQ(death->reason, "sent ENGINE_CORE_DEAD");
}

TEST(EngineLiveness, PendingFramesExpire) {
  EngineLiveness live(0, 2);
  live.OnRegistered(0, 10, Clock::now());
  live.OnRegistered(1, 11, Clock::now());
  const Clock::time_point t0 = Clock::now();
  EXPECT_FALSE(live.OnEngineCoreDead(30, t0).has_value());
  const Clock::time_point later = t0 + std::chrono::seconds(30);
  EXPECT_FALSE(live.OnInputDisconnected(10, later).has_value());  // the frame expired
  std::vector<EngineLiveness::Death> deaths = live.OnTick(later + EngineLiveness::kCloseGrace);
  ASSERT_EQ(deaths.size(), 1u);
  EXPECT_EQ(deaths[0].reason, "input connection closed");
}

TEST(EngineLiveness, RegistrationOnAnAlreadyClosedConnectionIsAClosingEngine) {
  EngineLiveness live(0, 2);
  const Clock::time_point t0 = Clock::now();
  live.OnInputAccepted(10);
  EXPECT_FALSE(live.OnInputDisconnected(10, t0).has_value());  // nobody owns fd 10 yet
  EXPECT_FALSE(live.OnRegistered(1, 10, t0).has_value());      // its last word may follow
  auto death = live.OnEngineCoreDead(77, t0);
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 1);
  EXPECT_EQ(death->reason, "sent ENGINE_CORE_DEAD");
  // A new connection reusing fd 10 clears the mark.
  live.OnInputAccepted(10);
  EXPECT_FALSE(live.OnRegistered(0, 10, t0).has_value());
  EXPECT_TRUE(live.OnTick(t0 + EngineLiveness::kCloseGrace).empty());
  EXPECT_TRUE(live.Alive(0));
}

TEST(EngineLiveness, ASecondRegistrationOnAnFdMeansTheFirstConnectionIsGone) {
  // fd 10: engine 0's connection closed and engine 1's took the fd before either
  // registration was read, so the disconnect was never tied to engine 0.
  EngineLiveness live(0, 2);
  const Clock::time_point t0 = Clock::now();
  live.OnInputAccepted(10);
  live.OnInputDisconnected(10, t0);
  live.OnInputAccepted(10);
  EXPECT_FALSE(live.OnRegistered(0, 10, t0).has_value());
  EXPECT_FALSE(live.OnRegistered(1, 10, t0).has_value());
  std::vector<EngineLiveness::Death> deaths = live.OnTick(t0 + EngineLiveness::kCloseGrace);
  ASSERT_EQ(deaths.size(), 1u);
  EXPECT_EQ(deaths[0].engine_index, 0);
  EXPECT_TRUE(live.Alive(1));
}

TEST(EngineLiveness, ConnectionsSharingAnFdAreToldApartByKey) {
  // Engine 1's output connection (fd 36) closed after four outputs and ENGINE_CORE_DEAD;
  // engine 0's new connection got fd 36 while engine 1's messages were still queued, and the
  // PULL socket interleaves the two.
  EngineLiveness live(0, 2);
  const Clock::time_point t0 = Clock::now();
  live.OnRegistered(0, 10, t0);
  live.OnRegistered(1, 11, t0);
  live.OnOutputMessage(100, 36, 1);
  live.OnOutputMessage(200, 36, 0);
  live.OnOutputMessage(100, 36, 1);
  live.OnOutputMessage(200, 36, 0);
  auto death = live.OnEngineCoreDead(100, t0);
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 1);
  EXPECT_TRUE(live.Alive(0));
  // The old connection closing, then engine 0's, are told apart too.
  EXPECT_FALSE(live.OnOutputDisconnected(36).has_value());
  EXPECT_FALSE(live.OnInputDisconnected(10, t0).has_value());  // engine 0 still has output 200
  auto second = live.OnOutputDisconnected(36);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->engine_index, 0);
  EXPECT_EQ(second->reason, "input connection closed");
}

TEST(EngineLiveness, ClosedConnectionsAreForgottenWhenTheirFdIsReused) {
  EngineLiveness live(0, 2);
  const Clock::time_point t0 = Clock::now();
  live.OnRegistered(0, 10, t0);
  live.OnRegistered(1, 11, t0);
  live.OnOutputMessage(100, 36, 0);
  EXPECT_FALSE(live.OnOutputDisconnected(36).has_value());
  live.OnOutputAccepted(36);
  // Engine 0 owns nothing any more: a frame on an unknown connection cannot be placed...
  EXPECT_FALSE(live.OnEngineCoreDead(300, t0).has_value());
  // ...until an engine without outputs loses its input connection.
  auto death = live.OnInputDisconnected(10, t0);
  ASSERT_TRUE(death.has_value());
  EXPECT_EQ(death->engine_index, 0);
}

TEST(PeekEngineIndex, ReadsPositionZeroOnly) {
  EXPECT_EQ(PeekEngineIndex(std::string("\x98\x03\x90", 3)), 3);
  EXPECT_EQ(PeekEngineIndex(std::string("\x91\xcd\x01\x02", 4)), 258);
  EXPECT_FALSE(PeekEngineIndex(std::string("\x90", 1)).has_value());
  EXPECT_FALSE(PeekEngineIndex(std::string("\x81\x00\x00", 3)).has_value());
  EXPECT_FALSE(PeekEngineIndex("").has_value());
  EXPECT_FALSE(PeekEngineIndex("ENGINE_CORE_DEAD").has_value());
}

}  // namespace
}  // namespace vmetrics::internal

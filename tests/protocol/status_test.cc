// SPDX-License-Identifier: Apache-2.0
// Status (include/vmetrics/status.h): an ok Status is one null pointer; a failure keeps its
// code, message and offset through copies and moves, and a copy owns its own. The transport's
// failures (codes, stages) print as they did when the transport had an error type of its own.
#include "vmetrics/status.h"

#include <gtest/gtest.h>

#include <utility>

namespace vmetrics {
namespace {

TEST(Status, OkIsOneNullPointerWithNoMessageAndNoOffset) {
  static_assert(sizeof(Status) == sizeof(void*));
  const Status ok = Status::Ok();
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), StatusCode::kOk);
  EXPECT_EQ(ok.message(), "");
  EXPECT_EQ(ok.offset(), -1);
  EXPECT_EQ(ok.ToString(), "ok");
}

TEST(Status, AFailureKeepsItsCodeMessageAndOffsetThroughCopiesAndMoves) {
  Status s = Status::Malformed("expected array", 12);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "malformed at byte 12: expected array");

  Status copy = s;  // a copy of its own: the original may go away
  s = Status::Ok();
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(copy.code(), StatusCode::kMalformed);
  EXPECT_EQ(copy.message(), "expected array");
  EXPECT_EQ(copy.offset(), 12);

  Status assigned = Status::LimitExceeded("too deep");
  assigned = copy;
  EXPECT_EQ(assigned.ToString(), "malformed at byte 12: expected array");
  const Status& same = assigned;
  assigned = same;  // self-assignment keeps it
  EXPECT_EQ(assigned.message(), "expected array");

  Status moved = std::move(copy);
  EXPECT_EQ(moved.ToString(), "malformed at byte 12: expected array");
  moved = Status::Ok();
  EXPECT_TRUE(moved.ok());

  EXPECT_EQ(Status::InvalidArgument("bad").ToString(), "invalid argument: bad");
  EXPECT_EQ(Status::Unsupported("pickle", 3).code(), StatusCode::kUnsupported);
}

TEST(Status, ADetailTellsFailuresOfOneCodeApartAndSurvivesCopies) {
  EXPECT_EQ(Status::Ok().detail(), StatusDetail::kNone);
  EXPECT_EQ(Status::Malformed("expected array", 3).detail(), StatusDetail::kNone);
  const Status aux = Status::Malformed("tensor refers to aux frame 2", 9, StatusDetail::kAuxFrame);
  EXPECT_EQ(aux.code(), StatusCode::kMalformed);
  EXPECT_EQ(aux.detail(), StatusDetail::kAuxFrame);
  Status copy = aux;
  EXPECT_EQ(copy.detail(), StatusDetail::kAuxFrame);
  EXPECT_EQ(copy.ToString(), "malformed at byte 9: tensor refers to aux frame 2")
      << "the detail is for callers, not part of the text";
}

TEST(Status, TransportFailuresNameTheirStageAfterTheCode) {
  const Status timeout =
      Status::Timeout(StatusStage::kReady, "no READY from engine 1 within 200 ms");
  EXPECT_EQ(timeout.code(), StatusCode::kTimeout);
  EXPECT_EQ(timeout.stage(), StatusStage::kReady);
  EXPECT_EQ(timeout.ToString(), "timeout during READY: no READY from engine 1 within 200 ms");
  EXPECT_EQ(
      Status::Socket(StatusStage::kBind, "cannot bind", StatusDetail::kInputSocket).ToString(),
      "socket error during bind: cannot bind");
  EXPECT_EQ(Status::Protocol(StatusStage::kInputRegistration, "duplicate registration").ToString(),
            "protocol error during input registration: duplicate registration");
  EXPECT_EQ(Status::Stopped(StatusStage::kOutput).ToString(),
            "stopped during output: stop requested");
  EXPECT_EQ(Status::Unavailable("engine 0 is dead", StatusStage::kSend).ToString(),
            "unavailable during send: engine 0 is dead");
  EXPECT_EQ(Status::Socket(StatusStage::kNone, "cannot write").ToString(),
            "socket error: cannot write");
  EXPECT_EQ(Status::Unavailable("gone").stage(), StatusStage::kNone);
  EXPECT_EQ(Status::Ok().stage(), StatusStage::kNone);
  EXPECT_STREQ(StatusStageName(StatusStage::kHello), "HELLO");
  EXPECT_STREQ(StatusStageName(StatusStage::kInit), "INIT");
  EXPECT_STREQ(StatusStageName(StatusStage::kHandshake), "handshake");
}

TEST(Status, AWrappedFailureKeepsItsDetailAndItsWordsUnderANewCode) {
  const Status bind = Status::Socket(StatusStage::kBind, "cannot bind the handshake ROUTER",
                                     StatusDetail::kHandshakeSocket);
  const Status wrapped = bind.Wrapped(StatusCode::kUnavailable, "engine sockets: ");
  EXPECT_EQ(wrapped.code(), StatusCode::kUnavailable);
  EXPECT_EQ(wrapped.detail(), StatusDetail::kHandshakeSocket);
  EXPECT_EQ(wrapped.stage(), StatusStage::kNone) << "the stage is in the message already";
  EXPECT_EQ(wrapped.ToString(),
            "unavailable: engine sockets: socket error during bind: cannot bind the handshake "
            "ROUTER");
  EXPECT_EQ(Status::InvalidArgument("bad").Wrapped(StatusCode::kInvalidArgument, "").ToString(),
            "invalid argument: invalid argument: bad");
}

TEST(Status, AResultCarriesTheFailureOrTheValue) {
  Result<int> failed = Status::Malformed("truncated", 4);
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().offset(), 4);
  Result<int> value = 7;
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, 7);
}

}  // namespace
}  // namespace vmetrics

// SPDX-License-Identifier: Apache-2.0
// Status (include/vmetrics/status.h): an ok Status is one null pointer; a failure keeps its
// code, message and offset through copies and moves, and a copy owns its own.
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

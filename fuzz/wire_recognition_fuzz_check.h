// SPDX-License-Identifier: Apache-2.0
// File: wire_recognition_fuzz_check.h
//
// The invariants the wire-recognition fuzzer checks, shared by the libFuzzer entry
// (wire_recognition_fuzz.cc) and the corpus-replay test
// (tests/protocol/wire_recognition_corpus_replay_test.cc), so an input kept in
// fuzz/corpus/wire_recognition/ fails ctest without libFuzzer.
//
// Input: one or more messages' frame 0, each prefixed by its length (2 bytes, little endian;
// a length past the end takes the rest). They are fed, in order, as messages of one stream to
// FitWireGenerations, a WireRecognizer and a WireDecoder (auto), then the stream ends.
//
// Invariants:
//   * nothing crashes (ASan/UBSan report anything else);
//   * FitWireGenerations' sets are within the known generations, and `exact` within `fits`;
//   * every recognition is one of the known generations or `unknown`, its candidates within
//     the known generations, and a recognised, non-ambiguous generation is among them;
//   * every message is delivered or failed exactly once (none lost, none twice), in order per
//     engine;
//   * decoding with the recognised table never exceeds limits: outputs, token ids, finished
//     requests and skipped parts are bounded by the frame's size.
#ifndef VMETRICS_FUZZ_WIRE_RECOGNITION_FUZZ_CHECK_H_
#define VMETRICS_FUZZ_WIRE_RECOGNITION_FUZZ_CHECK_H_

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/wire_decoder.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics::fuzz {

inline std::vector<std::string_view> SplitMessages(std::string_view data) {
  std::vector<std::string_view> messages;
  while (data.size() >= 2 && messages.size() < 64) {
    size_t n =
        static_cast<uint8_t>(data[0]) | (static_cast<size_t>(static_cast<uint8_t>(data[1])) << 8);
    data.remove_prefix(2);
    if (n > data.size()) n = data.size();
    messages.push_back(data.substr(0, n));
    data.remove_prefix(n);
  }
  return messages;
}

inline std::string CheckRecognition(const WireRecognition& r) {
  const WireCandidates all = AllWireGenerations();
  if ((r.candidates & ~all) != 0) return "candidates outside the known generations";
  if (r.generation != nullptr) {
    bool known = false;
    for (const WireGeneration& g : WireGenerations()) known |= &g == r.generation;
    if (!known) return "recognised as a generation not in the tables";
    const WireCandidates bit = WireCandidates{1} << WireGenerationIndex(*r.generation);
    if (r.recognised && !r.ambiguous && !r.forced && (r.candidates & bit) == 0) {
      return "recognised as " + std::string(r.generation->name) + ", not among its candidates";
    }
  }
  if (r.name() != "unknown" && r.generation == nullptr) return "named without a generation";
  return "";
}

inline std::string CheckWireRecognitionInvariants(std::string_view data) {
  const std::vector<std::string_view> messages = SplitMessages(data);
  for (std::string_view m : messages) {
    const WireFit fit = FitWireGenerations(m);
    if ((fit.fits & ~AllWireGenerations()) != 0) return "fits outside the known generations";
    if ((fit.exact & ~fit.fits) != 0) return "exact outside fits";
  }
  WireDecoder wire({});
  std::vector<int> seen(messages.size(), 0);
  std::string why;
  const WireDecoder::OnMessage on_message = [&](EngineCoreOutputs& out, const DecodeContext& ctx) {
    if (ctx.message_number == 0 || ctx.message_number > messages.size()) {
      why = "delivered a message never fed";
      return;
    }
    ++seen[ctx.message_number - 1];
    const size_t bytes = messages[ctx.message_number - 1].size();
    if (ctx.wire == nullptr) why = "decoded without a table";
    if (out.outputs.size() > bytes || out.skipped.outputs > bytes) why = "outputs beyond the frame";
    size_t tokens = 0;
    for (const EngineCoreOutput& o : out.outputs) tokens += o.new_token_ids.size();
    if (tokens > bytes) why = "token ids beyond the frame";
    if (out.finished_requests && out.finished_requests->size() > bytes) {
      why = "finished requests beyond the frame";
    }
  };
  const WireDecoder::OnFailure on_failure = [&](const Status&, const DecodeContext& ctx) {
    if (ctx.message_number == 0 || ctx.message_number > messages.size()) {
      why = "failed a message never fed";
      return;
    }
    ++seen[ctx.message_number - 1];
  };
  for (size_t i = 0; i < messages.size(); ++i) {
    DecodeContext ctx;
    ctx.message_number = i + 1;
    const std::string_view frames[] = {messages[i]};
    wire.Feed(frames, ctx, on_message, on_failure);
    if (!why.empty()) return why;
  }
  wire.Finish(on_message, on_failure);
  if (!why.empty()) return why;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (seen[i] != 1) {
      return "message " + std::to_string(i + 1) + " delivered " + std::to_string(seen[i]) +
             " times";
    }
  }
  for (const WireRecognition& r : wire.recognitions()) {
    if (std::string w = CheckRecognition(r); !w.empty()) return w;
  }
  return "";
}

}  // namespace vmetrics::fuzz

#endif  // VMETRICS_FUZZ_WIRE_RECOGNITION_FUZZ_CHECK_H_

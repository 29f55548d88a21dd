// SPDX-License-Identifier: Apache-2.0
// File: wire_decoder.h
//
// Which wire generation (wire_generation.h) each engine speaks, and decoding its messages with
// that generation's table.
//
// WireRecognizer narrows, for one engine, the set of generations its bytes fit. First from what
// the engine says before any output: the handshake form (an empty first frame on the input
// socket and num_gpu_blocks on READY, or a ready response, and which fields it has), and the
// `vllm_version` a ready response reports where a table pins that version. Then from the
// structure of its first messages, each checked against every remaining candidate without
// building anything: EngineCoreOutput array length and the msgpack type at every position,
// the logprobs form, the finish_reason values, the PrefillStats keys; the SchedulerStats key
// set; the key counts of PrefixCacheStats and SpecDecodingStats; the keys and failure entry
// type of a NIXL payload. msgspec writes every position and every key, so a generation whose
// layout has exactly what the message has is preferred over one that would merely accept it.
// When the structure contradicts the handshake, the structure wins (it is what is decoded).
//
// An engine is recognised once every remaining candidate decodes its messages the same way
// (LayoutsAgree): the newest of them is taken, and the others are named ("g20251105, also
// g20250927: same layout"). Later messages may still narrow it (the recognised generation
// then changes, decoding does not). Candidates that would decode differently and that no
// message has told apart yet are not guessed between: see WireDecoder. A message that fits no
// generation at all, before any message fitted one, makes the engine `unknown`: decoded with
// the newest table (which skips what it does not know) and logged with the flag to use.
// Observation ends once one candidate is left, or after kObservedMessages messages, so a
// recognised engine's messages cost nothing more.
//
// WireDecoder decodes a stream of messages from many engines. A message whose engine is
// recognised is decoded at once with its table. A message of an engine that is not recognised
// yet is decoded at once if it carries no outputs (statistics decode the same in every
// generation); one with outputs is held (copied) until the engine is recognised, or until
// kMaxHeldMessages / kMaxHeldBytes are held, or the stream ends (Finish): then the newest
// candidate is taken, the ambiguity logged with the candidates and --engine-wire, and the held
// messages are decoded in order. No message is lost and none is decoded with a guessed table
// silently. `--engine-wire <generation or vLLM release>` forces one table for every engine:
// messages that do not fit it are logged (once) and their bad parts counted when decoded.
//
// Thread safety: none; one thread (the output loop, or a replay) owns a WireDecoder.
//
// Example:
//   WireDecoder wire({});
//   wire.ObserveHandshake(/*engine_index=*/0, ready_response, &ready);
//   WireDecoder::OnMessage record = [&](EngineCoreOutputs& m, const DecodeContext& c) {
//     recorder.Record(m);
//   };
//   WireDecoder::OnFailure count = [&](const Status& s, const DecodeContext& c) {
//     recorder.CountDecodeError();
//   };
//   wire.Feed(frames, ctx, record, count);  // for each message, in order
//   ...
//   wire.Finish(record, count);  // end of a capture: held messages are decoded
#ifndef VMETRICS_WIRE_DECODER_H_
#define VMETRICS_WIRE_DECODER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/handshake.h"
#include "vmetrics/status.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics {

// A set of generations, bit i = WireGenerations()[i].
using WireCandidates = uint32_t;
WireCandidates AllWireGenerations();
// "g20260204-08e09499, g20260413-f72b2097".
std::string WireCandidateNames(WireCandidates candidates);
// The newest generation of a non-empty set.
const WireGeneration& NewestOf(WireCandidates candidates);

// What one message says about the generations it fits.
struct WireFit {
  bool informative = false;  // it carried outputs or SchedulerStats to judge by
  bool has_outputs = false;  // it carried at least one EngineCoreOutput
  WireCandidates fits = 0;   // generations whose layout accepts every part examined
  WireCandidates exact = 0;  // ... and has exactly the positions and keys it carried
  std::string evidence;      // "EngineCoreOutput of 11 positions, SchedulerStats of 9 keys"
};

// FitWireGenerations
//
// Checks frame 0 of one message against every generation (the first kMaxOutputsExamined
// outputs, the SchedulerStats). Never fails: what cannot be read is not evidence.
inline constexpr uint32_t kMaxOutputsExamined = 8;
WireFit FitWireGenerations(std::string_view frame0);

// The recognition of one engine, as reported.
struct WireRecognition {
  int64_t engine_index = 0;
  // The generation its messages are decoded with; nullptr = unknown (decoded with the newest).
  const WireGeneration* generation = nullptr;
  bool recognised = false;        // a generation was decided (possibly `unknown`)
  bool forced = false;            // --engine-wire
  bool ambiguous = false;         // decided between candidates that decode differently
  WireCandidates candidates = 0;  // what is left; more than one = same layout (or ambiguous)
  std::string how;                // the evidence that decided it
  std::string name() const {
    return generation != nullptr ? std::string(generation->name) : std::string("unknown");
  }
};

// ParseEngineWire
//
// The --engine-wire value: "auto" (nullptr: recognise each engine), a generation's name or its
// prefix ("g20260712"), or a vLLM release a table pins ("0.11.0"). kInvalidArgument naming the
// flag and the known generations otherwise.
Result<const WireGeneration*> ParseEngineWire(std::string_view value);

// One line for logs: "engine 0: wire generation g20251105-65ac8d8d (EngineCoreOutput of 11
// positions); g20250927-6f5c0931 has the same layout, decoded the same".
std::string DescribeRecognition(const WireRecognition& recognition);

class WireRecognizer {
 public:
  static constexpr uint32_t kObservedMessages = 256;

  // `forced` = --engine-wire (nullptr = recognise).
  WireRecognizer(int64_t engine_index, const WireGeneration* forced);

  // What the engine said at startup: its registration (ready response, or the older empty
  // frame) and READY. Narrows the candidates; a handshake form that fits no generation is
  // ignored (and said so in `notes`).
  void ObserveHandshake(const EngineCoreReadyResponse& ready_response,
                        const HandshakeMessage* ready);

  // One message's frame 0. Returns true if the recognition changed (recognised, narrowed to
  // another generation, or became unknown). Cheap to call once observation has ended.
  bool ObserveMessage(std::string_view frame0, uint64_t message_number);

  // Decides between the remaining candidates: the newest, marked ambiguous unless they all
  // decode the same. Returns true if the recognition changed.
  bool Decide(std::string why);

  bool observing() const { return observing_; }
  const WireRecognition& recognition() const { return rec_; }
  // The table to decode with: the recognised generation, or the newest.
  const WireGeneration& table() const {
    return rec_.generation != nullptr ? *rec_.generation : NewestWireGeneration();
  }
  // Lines to log (mismatches, conflicts), taken by the caller.
  std::vector<std::string> TakeNotes() { return std::move(notes_); }

 private:
  bool Settle(const std::string& how);

  WireRecognition rec_;
  const WireGeneration* forced_ = nullptr;
  bool matched_any_ = false;
  bool observing_ = true;
  bool told_mismatch_ = false;
  bool told_unfit_ = false;
  uint32_t observed_ = 0;
  std::vector<std::string> notes_;
};

struct WireDecoderOptions {
  // --engine-wire: nullptr = auto.
  const WireGeneration* forced = nullptr;
  // Called when an engine is recognised or its recognition changes.
  std::function<void(const WireRecognition&)> on_recognised;
  // Called with an engine's candidates whenever they change, from its handshake on, before it
  // is recognised too: what requests to it must be readable by (RequestLayoutFor).
  std::function<void(int64_t engine_index, WireCandidates candidates)> on_candidates;
  // Where notes go (conflicts, mismatches, ambiguity), one line each; nullptr = dropped.
  std::function<void(const std::string&)> log;
  size_t max_held_messages = 64;
  size_t max_held_bytes = size_t{8} << 20;
};

class WireDecoder {
 public:
  using OnMessage = std::function<void(EngineCoreOutputs& message, const DecodeContext& ctx)>;
  using OnFailure = std::function<void(const Status& status, const DecodeContext& ctx)>;

  explicit WireDecoder(WireDecoderOptions options);
  ~WireDecoder();
  WireDecoder(const WireDecoder&) = delete;
  WireDecoder& operator=(const WireDecoder&) = delete;

  // Starts (or restarts, for an engine that registers again) the recognition of an engine
  // from its handshake.
  void ObserveHandshake(int64_t engine_index, const EngineCoreReadyResponse& ready_response,
                        const HandshakeMessage* ready);

  // Feed
  //
  // One message (frames[0] is the EngineCoreOutputs, the rest aux frames). `ctx` is the
  // context to decode it with (its wire is set here). Calls on_message for each message
  // decoded now — held ones of the same engine first, in order — and on_failure for each that
  // did not decode as a whole. The EngineCoreOutputs passed is reused for the next message.
  void Feed(std::span<const std::string_view> frames, const DecodeContext& ctx,
            const OnMessage& on_message, const OnFailure& on_failure);

  // End of the stream: every engine with held messages is decided (Decide) and they are
  // decoded. Engines never recognised stay so.
  void Finish(const OnMessage& on_message, const OnFailure& on_failure);

  // Every engine seen so far, by engine index.
  std::vector<WireRecognition> recognitions() const;
  // The recognition of one engine, or nullptr if it has not been seen.
  const WireRecognition* recognition(int64_t engine_index) const;

 private:
  struct Engine;
  Engine& EngineFor(int64_t engine_index);
  void Report(Engine& e, bool changed) const;
  void Flush(Engine& e, const OnMessage& on_message, const OnFailure& on_failure);
  void DecodeNow(const WireGeneration& table, std::span<const std::string_view> frames,
                 const DecodeContext& ctx, const OnMessage& on_message,
                 const OnFailure& on_failure);

  WireDecoderOptions options_;
  std::vector<std::unique_ptr<Engine>> engines_;  // by engine index, 0 .. 65535
  std::unique_ptr<Engine> other_;                 // any other index, and unreadable frames
  EngineCoreOutputs scratch_;
};

}  // namespace vmetrics

#endif  // VMETRICS_WIRE_DECODER_H_

// SPDX-License-Identifier: Apache-2.0
// File: engine_core_client.h
//
// EngineCoreClient: the frontend's end of vLLM's EngineCore sockets over ZeroMQ. It binds the
// sockets, meets the engines the way vLLM's Python frontend does, then runs an output loop on
// its own thread that hands every received message to a callback, undecoded, in receive order.
//
// Two ways to meet engines (docs/design.md §5.2 and §5.4; vllm/v1/engine/utils.py and the Rust
// frontend's rust/src/engine-core-client/src/transport.rs at vllm-project/vllm 6adad087):
//   * frontend mode: bind the handshake ROUTER, input ROUTER and output PULL; each headless
//     engine says HELLO, gets INIT (the input/output addresses), registers on the input socket
//     with its EngineCoreReadyResponse and says READY.
//   * bootstrapped mode: a Python supervisor already did the handshake and gave us the
//     addresses; bind input ROUTER and output PULL and wait for one registration per engine.
//
// Engine death. vLLM's engine sends the single frame ENGINE_CORE_DEAD on its output socket
// before it exits, but every engine pushes to the same PULL socket, which has no identities,
// so the frame alone does not say who died. The client attributes it by connection: it learns
// which engine owns each output connection from the `engine_index` of the messages that
// arrived on it (an engine's output thread stamps every EngineCoreOutputs with its own index).
// An engine that dies before sending any output is attributed when its input connection
// closes — which follows at once, as the process exits — and an engine that vanishes without
// a word (killed, network gone) is detected the same way: a ZeroMQ socket monitor on the
// input ROUTER reports the disconnect of the connection its registration arrived on. What was
// recorded for a dead engine is kept.
//
// Engines that come back. A restarted engine meets the frontend again as at startup: HELLO on
// the handshake socket (answered with the same INIT), its registration on the input socket and
// READY (frontend mode), or just the registration (bootstrapped mode). It is then alive again
// (EngineEventKind::kConnected once more). An engine that says HELLO while alive has restarted:
// its previous life is reported dead first. So after startup the output thread keeps reading
// the handshake and input ROUTERs; anything else that arrives there is dropped and reported
// (on_input_dropped), and both sockets queue at most kInputHighWaterMark messages of at most
// kMaxInputMessageBytes each per connection (a peer sending more is slowed down by TCP; one
// sending a larger message is disconnected), so nothing sent to them can grow the process.
//
// Thread safety: Bind, WaitForEngines and Start are called once each, in that order, from one
// thread. Send, engines(), AllEnginesAlive() and the counters may be called from any thread at
// any time after Bind. RequestStop() is async-signal-safe and may be called from anywhere,
// including a signal handler; Stop() from any thread except a callback. Callbacks run on the
// client's output thread, one at a time.
//
// Example:
//   EngineCoreClientOptions options;
//   options.handshake_address = "tcp://127.0.0.1:29550";
//   options.engine_count = 2;  // vLLM --data-parallel-size
//   EngineCoreClient client(options);
//   if (Status s = client.Connect(); !s.ok()) {
//     std::fprintf(stderr, "%s\n", s.ToString().c_str());
//     return;
//   }
//   EngineCoreClientCallbacks callbacks;
//   callbacks.on_message = [&](auto frames, uint64_t n) { /* decode, record */ };
//   Status started = client.Start(std::move(callbacks));
//   ...
//   client.Stop();
#ifndef VMETRICS_ENGINE_CORE_CLIENT_H_
#define VMETRICS_ENGINE_CORE_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/handshake.h"
#include "vmetrics/status.h"

namespace vmetrics {

// Limits of the handshake and input ROUTERs, which engines only use to join (see the file
// comment): messages queued per connection, and the largest message accepted (a ready response
// is under 400 bytes in every generation; a peer that sends more than this is disconnected by
// ZeroMQ). ZeroMQ allocates a message whole when its header arrives, so a connection holds at
// most this much of a message it has not finished sending.
inline constexpr int kInputHighWaterMark = 16;
inline constexpr int64_t kMaxInputMessageBytes = 64 << 10;
// The default largest frame on the output PULL socket
// (EngineCoreClientOptions::max_output_message_bytes). A step's outputs are kilobytes; the
// largest frames are logprob tensors, which the token API asks for per sampled token only.
inline constexpr int64_t kMaxOutputMessageBytes = int64_t{64} << 20;

// EngineCoreRequestType (vllm/v1/engine/__init__.py): the one-byte frame that follows the
// identity on the input socket. Values are wire format: do not change.
enum class EngineCoreRequestType : uint8_t {
  kAdd = 0x00,
  kAbort = 0x01,
  kStartDpWave = 0x02,
  kUtility = 0x03,
};

enum class StartupMode : uint8_t {
  kFrontend,      // own the handshake (vLLM engines started with --headless)
  kBootstrapped,  // addresses fixed by a Python supervisor; registrations only
};

// EngineCoreClientOptions, field by field.
struct EngineCoreClientOptions {
  // ---- Affect behaviour ----
  StartupMode mode = StartupMode::kFrontend;

  // Frontend mode only, required: where engines say HELLO. vLLM engines connect to
  // tcp://<--data-parallel-address>:<--data-parallel-rpc-port> (default port 29550).
  std::string handshake_address;

  // Where the input ROUTER and output PULL bind. Frontend mode: default "tcp://127.0.0.1:0"
  // (an ephemeral port, read back and sent in INIT). Bootstrapped mode: required (the
  // supervisor's --input-address/--output-address). ipc:// works in both.
  std::string input_address;
  std::string output_address;

  // Frontend mode: host written into INIT in place of the bound host, for wildcard binds
  // ("tcp://0.0.0.0:0" binds everywhere but is no address an engine can connect to).
  // "" = INIT carries the endpoints exactly as bound.
  std::string advertised_host;

  // The engines expected: indexes engine_start_index .. engine_start_index + engine_count - 1,
  // each identified by its 2-byte little-endian index. In frontend mode engine_count is vLLM's
  // --data-parallel-size. Identities outside the range are refused. REQUIRES: the range fits
  // in 16 bits and engine_count >= 1.
  int engine_start_index = 0;
  int engine_count = 1;

  // ---- Startup deadlines, one per stage (vLLM's VLLM_ENGINE_READY_TIMEOUT_S is 600 s) ----
  // HELLO: until every engine said HELLO. READY: until every engine said READY (covers model
  // loading, so keep it long). Input registration: until every engine registered.
  std::chrono::milliseconds hello_timeout{600'000};
  std::chrono::milliseconds ready_timeout{600'000};
  std::chrono::milliseconds registration_timeout{600'000};

  // ---- Bounds ----
  // The largest frame accepted on the output socket; an engine that sends a larger one is
  // disconnected by ZeroMQ (its connection closes, which EngineLiveness reads as its death).
  // REQUIRES: >= 1.
  int64_t max_output_message_bytes = kMaxOutputMessageBytes;
};

// The endpoints actually bound (ZMQ_LAST_ENDPOINT), valid after Bind().
struct BoundEndpoints {
  std::string handshake;  // "" in bootstrapped mode
  std::string input;
  std::string output;
};

// Everything learned about one engine at startup, and whether it is still alive.
struct EngineInfo {
  int index = 0;
  std::string identity;                   // 2 bytes, little-endian index
  std::optional<HandshakeMessage> hello;  // frontend mode only
  std::optional<HandshakeMessage> ready;  // frontend mode only
  EngineCoreReadyResponse ready_response;
  bool alive = true;
  std::string death_reason;  // why it was declared dead; "" while alive
};

// What the frontend takes from all ready responses, applied as vLLM's frontend applies them
// (vllm/v1/engine/core_client.py): max_model_len = the minimum reported; num_gpu_blocks = the
// sum (from READY for engines that registered with an empty frame); block_size = the last
// reported; kv_cache_size_tokens / kv_cache_max_concurrency / dp_stats_address = the first
// reported. kv_connector = the first reported (every engine of a deployment shares one
// --kv-transfer-config).
struct ReadyResponseSummary {
  std::optional<int64_t> max_model_len;
  int64_t num_gpu_blocks = 0;
  std::optional<int64_t> block_size;
  std::optional<int64_t> kv_cache_size_tokens;
  std::optional<double> kv_cache_max_concurrency;
  std::optional<std::string> dp_stats_address;
  std::optional<std::string> kv_connector;
  std::optional<std::string> kv_role;  // the engine's whose kv_connector is taken
  // The largest max_loras of an engine that supports LoRA; 0 when none does.
  int64_t max_loras = 0;
};

// SummarizeEngines
//
// Folds the engines' ready responses (in the order given, normally by index) as described on
// ReadyResponseSummary. Never fails; an empty span gives an empty summary.
//
// Example:
//   ReadyResponseSummary s = SummarizeEngines(client.engines());
//   int64_t max_model_len = s.max_model_len.value_or(flag_max_model_len);
ReadyResponseSummary SummarizeEngines(std::span<const EngineInfo> engines);

enum class EngineEventKind : uint8_t { kConnected, kDead };
const char* EngineEventKindName(EngineEventKind kind);  // "connected", "dead"

struct EngineEvent {
  int engine_index = 0;
  EngineEventKind kind = EngineEventKind::kConnected;
  // "registered", "ready", "registered again", "sent ENGINE_CORE_DEAD", "input connection
  // closed ...", "said HELLO again (restarted)". For people: branch on kind and rejoined.
  std::string reason;
  // kConnected only: a new life of an engine that had joined before (it registered again
  // once the output loop ran; reason "registered again").
  bool rejoined = false;
};

// A message dropped from the handshake or input ROUTER (EngineCoreClientCallbacks).
struct DroppedMessage {
  std::string_view socket;  // "handshake" or "input"
  // What was wrong, one of a few fixed texts ("unknown engine identity", "not [identity,
  // message]", "undecodable", "unexpected"): the same for every message of the kind.
  std::string_view kind;
  std::string detail;  // the kind with the particulars: the engine, the identity bytes, ...
};

// The output loop's callbacks. Each may be empty. They run on the output thread.
struct EngineCoreClientCallbacks {
  // Every message received on the output socket except ENGINE_CORE_DEAD, in receive order:
  // frame 0 is the msgpack EngineCoreOutputs, frames 1.. its aux buffers. The views are valid
  // only during the call (copy what you keep). `message_number` counts messages from 1.
  // Decoding is the callback's job; whatever it makes of a frame — malformed bytes included —
  // the loop carries on with the next message. An exception thrown by the callback is caught,
  // counted (callback_exceptions()) and does not stop the loop either.
  std::function<void(std::span<const std::string_view> frames, uint64_t message_number)> on_message;
  // Engine lifecycle: one kConnected per engine (index order) when the loop starts, then per
  // engine kDead and kConnected in turn: kDead when it dies, kConnected when it joins again.
  std::function<void(const EngineEvent& event)> on_engine_event;
  // A message on the handshake or input ROUTER that is not part of an engine joining (once the
  // loop runs), dropped: for the accounting and the log.
  std::function<void(const DroppedMessage& dropped)> on_input_dropped;
  // Called once when the loop ends: ok after RequestStop()/Stop(), an error (kSocket, stage
  // kOutput) when receiving failed and nothing more can arrive.
  std::function<void(const Status& status)> on_loop_exit;
};

class EngineCoreClient {
 public:
  explicit EngineCoreClient(EngineCoreClientOptions options);
  // Stops the loop (if running) and closes every socket without lingering.
  ~EngineCoreClient();
  EngineCoreClient(const EngineCoreClient&) = delete;
  EngineCoreClient& operator=(const EngineCoreClient&) = delete;

  // Bind
  //
  // Validates the options and binds the sockets (input ROUTER and output PULL first, then the
  // handshake ROUTER, as vLLM does, so INIT can carry the real endpoints). Returns
  // InvalidArgument for bad options, Socket (stage kBind) when an address cannot be bound, its
  // detail naming the socket (kHandshakeSocket, kInputSocket, kOutputSocket).
  // After success endpoints() holds the bound endpoints — connect engines to them.
  //
  // Example:
  //   options.handshake_address = "tcp://127.0.0.1:0";  // ephemeral, for tests and demo
  //   EngineCoreClient client(options);
  //   ASSERT_TRUE(client.Bind().ok());
  //   StartSimulator(client.endpoints().handshake);
  Status Bind();
  const BoundEndpoints& endpoints() const;

  // WaitForEngines
  //
  // Blocks until every expected engine has completed startup (frontend mode: HELLO -> INIT ->
  // READY, then the input registrations; bootstrapped: the registrations), then returns ok and
  // engines() is filled. Accepts the "overlapping READY" (an engine's READY arriving while
  // others have not said HELLO yet) and the older empty registration frame. Fails with
  // Timeout naming the stage and the engines still missing, Protocol (detail
  // kUnknownEngineIdentity, kNotIdentityAndMessage, kUndecodableMessage or none) for an unknown or
  // duplicate identity or a message that breaks the sequence, Stopped after RequestStop(). A
  // failure leaves the client unusable (destroy it).
  //
  //
  // `on_progress`, when given, is called on this thread as engines become ready (kConnected,
  // reason "ready": HELLO, READY and the registration in frontend mode, the registration in
  // bootstrapped mode) and when one that was ready dies meanwhile (kDead); the output loop
  // reports them again when it starts (see EngineCoreClientCallbacks::on_engine_event).
  //
  // Example:
  //   options.hello_timeout = std::chrono::milliseconds(200);  // and no engine comes
  //   Status s = client.WaitForEngines();
  //   EXPECT_EQ(s.code(), StatusCode::kTimeout);
  //   EXPECT_EQ(s.stage(), StatusStage::kHello);
  Status WaitForEngines(const std::function<void(const EngineEvent&)>& on_progress = {});

  // Connect: Bind() then WaitForEngines().
  Status Connect();

  // Start
  //
  // Starts the output thread with `callbacks`. REQUIRES: WaitForEngines() returned ok.
  // Returns InvalidArgument if called out of order or twice, Stopped after RequestStop(). The
  // callbacks (and whatever they capture) must outlive the loop: until Stop() returned or the
  // client is destroyed.
  //
  // Example:
  //   EngineCoreClientCallbacks cb;
  //   cb.on_message = [&](std::span<const std::string_view> frames, uint64_t n) {
  //     ctx.message_number = n;
  //     if (!DecodeEngineCoreOutputs(frames, ctx, &out).ok()) ++decode_errors;  // loop goes on
  //   };
  //   cb.on_engine_event = [&](const EngineEvent& e) {
  //     std::printf("engine %d %s\n", e.engine_index, EngineEventKindName(e.kind));
  //   };
  //   ASSERT_TRUE(client.Start(std::move(cb)).ok());
  Status Start(EngineCoreClientCallbacks callbacks);

  // RequestStop: asks the output loop (or a WaitForEngines in progress) to end, and returns at
  // once. Async-signal-safe. Idempotent. Sticky: later calls to WaitForEngines/Start return
  // Stopped.
  void RequestStop() noexcept;
  // Stop: RequestStop(), then waits for the output thread to finish (on_loop_exit has run).
  // From inside a callback it only requests the stop.
  //
  // Example (a signal handler may call RequestStop; the main thread then joins):
  //   g_client->RequestStop();  // in the SIGTERM handler
  //   client.Stop();            // in main, after the wait for the signal returned
  void Stop();

  // Send
  //
  // Sends [identity, request_type, frames...] to engine `engine_index` on the input ROUTER;
  // the engine's DEALER receives [request_type, frames...] (frames[0] is the msgpack body,
  // the rest aux buffers). Thread-safe. Returns Unavailable when the engine is dead or not
  // connected, InvalidArgument for an index outside the expected range, Socket otherwise.
  //
  // Example:
  //   std::string_view body[] = {abort_body};
  //   Status s = client.Send(0, EngineCoreRequestType::kAbort, body);
  //   if (!s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  Status Send(int engine_index, EngineCoreRequestType type,
              std::span<const std::string_view> frames);

  // A snapshot of the engines, by index. Empty until WaitForEngines() succeeded.
  std::vector<EngineInfo> engines() const;
  // True when every engine is alive (false before WaitForEngines() succeeded).
  bool AllEnginesAlive() const;
  // Messages delivered to on_message so far; exceptions it threw.
  uint64_t messages_received() const;
  uint64_t callback_exceptions() const;
  // Messages dropped from the handshake and input ROUTERs since the loop started.
  uint64_t input_messages_dropped() const;
  // How long the output socket has held messages the output thread has not read: zero when
  // it found the socket empty after its last read, else the time since it first found it
  // non-empty (which includes a callback still busy with a message). The frontend's /health
  // reads it to say when recording falls behind. Any thread.
  std::chrono::steady_clock::duration output_backlog() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vmetrics

#endif  // VMETRICS_ENGINE_CORE_CLIENT_H_

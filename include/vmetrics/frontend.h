// File: frontend.h
//
// Frontend: the running service behind `vmetrics serve` and `vmetrics demo`. It binds the
// engine sockets, waits for the engines (HELLO/INIT/READY, or bootstrapped registrations),
// builds the recorder from their ready responses (max_model_len for the 1-2-5 buckets,
// kv_connector when no --kv-transfer-config is given, cache config), records every message the
// engines send, and serves /metrics, /health and POST /v1/completions (token ids in and out,
// sent to the engines by a RequestService, request_service.h, whose IterationStats feed the
// request and iteration families).
#ifndef VMETRICS_CLI_FRONTEND_H_
#define VMETRICS_CLI_FRONTEND_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace vmetrics::cli {

struct FrontendArgs {
  // Engines (frontend mode): the handshake ROUTER at tcp://<address>:<port>, as vLLM's
  // --data-parallel-address / --data-parallel-rpc-port; --handshake-address overrides both.
  std::string data_parallel_address = "127.0.0.1";
  int data_parallel_rpc_port = 29550;
  std::string handshake_address;
  int data_parallel_size = 1;
  // Engines (bootstrapped mode): addresses fixed by a supervisor.
  std::string input_address;
  std::string output_address;
  int engine_start_index = 0;
  int engine_count = 0;                 // > 0 selects bootstrapped mode
  double engine_ready_timeout_s = 600;  // vLLM's VLLM_ENGINE_READY_TIMEOUT_S default

  // Metrics.
  std::string served_model_name;  // default: "model"
  std::string kv_transfer_config;
  std::string speculative_config;
  bool kv_cache_metrics = false;
  int64_t max_model_len = 0;      // 0 = from the engines' ready responses
  std::string cache_config_info;  // JSON object of extra CacheConfig labels
  bool disable_created_series = false;
  size_t max_label_values_per_family = 1000;  // 0 = no limit (RecorderOptions)
  // LoRA, as vLLM's flags: --enable-lora registers vllm:lora_requests_info (also when the
  // engines' ready responses say they support LoRA); --lora-modules name=path (or a JSON
  // object with name and path) are the adapters a completion's `model` may name.
  bool enable_lora = false;
  int64_t max_loras = 1;
  std::vector<std::string> lora_modules;

  // HTTP.
  std::string host = "127.0.0.1";
  int port = 8000;
  unsigned http_threads = 2;
  std::string web_config_file;

  std::string log_format = "text";
};

// Adds the flags of FrontendArgs to a subcommand.
void AddFrontendFlags(CLI::App* cmd, FrontendArgs* args);

class Frontend {
 public:
  explicit Frontend(FrontendArgs args);
  ~Frontend();

  // Binds the engine sockets. Returns false with `error` set on failure.
  bool Bind(std::string* error);
  // The bound handshake endpoint (frontend mode) or input/output endpoints.
  std::string handshake_endpoint() const;
  std::string input_endpoint() const;
  std::string output_endpoint() const;

  // Waits for every engine, starts recording and the HTTP endpoint.
  bool Start(std::string* error);
  uint16_t http_port() const;

  // Blocks until every engine in `engine_indexes` has been reported dead (ENGINE_CORE_DEAD,
  // or its connections closed, after its outputs were read to the end), or `timeout` passes.
  // True if they all died in time. REQUIRES: Start() succeeded.
  bool WaitForDeadEngines(std::span<const int> engine_indexes, std::chrono::milliseconds timeout);

  // Blocks until at least `n` messages were recorded (messages_recorded() >= n; messages that
  // failed to decode are not counted), or `timeout` passes. True if they were. One waiter at a
  // time. REQUIRES: Start() succeeded.
  bool WaitForRecorded(uint64_t n, std::chrono::milliseconds timeout);

  // Renders /metrics as text (for the demo's excerpt).
  std::string RenderText() const;
  uint64_t messages_recorded() const;
  // Requests the frontend tracks (0 when nothing is in flight) and completions waiting for
  // their answer.
  size_t live_requests() const;
  size_t live_completions() const;

  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Blocks SIGINT and SIGTERM in the calling thread (call before starting threads), then
// WaitForStopSignal waits for one, or for `timeout_s` seconds when > 0. Returns the signal
// number, or 0 on timeout.
void BlockStopSignals();
int WaitForStopSignal(double timeout_s);

}  // namespace vmetrics::cli

#endif  // VMETRICS_CLI_FRONTEND_H_

// SPDX-License-Identifier: Apache-2.0
// `vmetrics simulate`: the flags of RunSimulation (include/vmetrics/run_simulation.h), stand-in
// vLLM engines that meet a frontend (handshake or bootstrapped) and send realistic
// EngineCoreOutputs, or write them to a capture file.
//
//   vmetrics simulate --handshake-address tcp://127.0.0.1:29550 --engines 2 --connector nixl
//   vmetrics simulate --input-address tcp://127.0.0.1:5001 --output-address tcp://127.0.0.1:5002
//   vmetrics simulate --capture nixl.msgpack --steps 1000 --connector multi --seed 1
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "vmetrics/run_simulation.h"
#include "vmetrics/simulator.h"
#include "vmetrics/wire_decoder.h"

namespace vmetrics::cli {
namespace {

struct SimulateFlags {
  std::string handshake_address;
  std::string input_address;
  std::string output_address;
  int engine_start_index = 0;
  int engines = 1;
  uint64_t steps = 100;
  double rate = 0;
  std::string connector = "none";
  uint64_t seed = 0;
  int64_t max_model_len = 8192;
  int num_speculative_tokens = 0;
  std::string capture;
  std::string report_totals;
  uint64_t die_after = 0;
  uint64_t vanish_after = 0;
  int fault_engine = -1;
  double malformed_probability = 0;
  double truncated_multipart_probability = 0;
  bool stats_only = false;
  bool legacy_multi_shape = false;
  bool hold = false;
  bool serve_requests = false;
  bool no_synthetic_requests = false;
  std::string served_stop = "sampled";
  bool echo_kv_transfer_params = false;
  int64_t routed_experts_layers = 0;
  std::string per_request_spec_decode_metrics = "none";
  std::string kv_role = "none";
  std::string kv_engine_id;
  std::string kv_events_config;
  int64_t handshake_timeout_ms = 60'000;
  std::string engine_wire = "auto";
  CLI::Option* seed_opt = nullptr;
  CLI::Option* die_opt = nullptr;
  CLI::Option* vanish_opt = nullptr;
};

int RunSimulate(const SimulateFlags& f) {
  SimulationRunOptions run;
  run.report_totals_path = f.report_totals;
  SimulatorOptions& o = run.simulator;
  o.handshake_address = f.handshake_address;
  o.input_address = f.input_address;
  o.output_address = f.output_address;
  o.capture_path = f.capture;
  o.engine_start_index = f.engine_start_index;
  o.engines = f.engines;
  o.steps = f.steps;
  o.rate_hz = f.rate;
  o.connector = *ParseSimConnector(f.connector);  // checked by CLI11
  o.legacy_multi_shape = f.legacy_multi_shape;
  if (f.seed_opt->count() > 0) o.seed = f.seed;
  o.max_model_len = f.max_model_len;
  o.num_speculative_tokens = f.num_speculative_tokens;
  o.request_outputs = !f.stats_only;
  o.serve_requests = f.serve_requests;
  o.synthetic_requests = !f.no_synthetic_requests;
  o.served_stop = f.served_stop == "earliest" ? SimulatorOptions::ServedStop::kEarliest
                                              : SimulatorOptions::ServedStop::kSampled;
  o.echo_kv_transfer_params = f.echo_kv_transfer_params;
  o.routed_experts_layers = f.routed_experts_layers;
  using SpecLevel = SimulatorOptions::SpecDecodeMetrics;
  o.per_request_spec_decode_metrics =
      f.per_request_spec_decode_metrics == "detailed"  ? SpecLevel::kDetailed
      : f.per_request_spec_decode_metrics == "summary" ? SpecLevel::kSummary
                                                       : SpecLevel::kNone;
  o.kv_role = *ParseSimKvRole(f.kv_role);  // checked by CLI11
  o.kv_engine_id = f.kv_engine_id;
  o.kv_events_config = f.kv_events_config;
  if (f.die_opt->count() > 0) o.die_after = f.die_after;
  if (f.vanish_opt->count() > 0) o.vanish_after = f.vanish_after;
  o.fault_engine = f.fault_engine;
  o.malformed_probability = f.malformed_probability;
  o.truncated_multipart_probability = f.truncated_multipart_probability;
  o.hold_after_steps = f.hold;
  o.handshake_timeout = std::chrono::milliseconds(f.handshake_timeout_ms);
  o.wire = *ParseEngineWire(f.engine_wire);  // checked in the callback

  Result<SimulatorTotals> totals = RunSimulation(run);
  if (!totals.ok()) {
    std::fprintf(stderr, "vmetrics simulate: %s\n", totals.status().message().c_str());
    return 1;
  }
  uint64_t messages = 0;
  for (const EngineTotals& e : totals->engines) messages += e.messages;
  std::fprintf(stderr, "vmetrics simulate: %d engine(s) sent %llu messages (seed %llu)\n",
               static_cast<int>(totals->engines.size()), static_cast<unsigned long long>(messages),
               static_cast<unsigned long long>(totals->seed));
  return 0;
}

}  // namespace

void AddSimulateCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Stand-in vLLM engines sending realistic EngineCoreOutputs to a frontend");
  SimulateFlags& f = *flags;
  auto* hs = cmd->add_option("--handshake-address", f.handshake_address,
                             "Frontend mode: the frontend's handshake ROUTER "
                             "(tcp://<--data-parallel-address>:<--data-parallel-rpc-port>)");
  auto* in = cmd->add_option("--input-address", f.input_address,
                             "Bootstrapped mode: the frontend's input ROUTER");
  auto* out = cmd->add_option("--output-address", f.output_address,
                              "Bootstrapped mode: the frontend's output PULL");
  auto* cap =
      cmd->add_option("--capture", f.capture,
                      "Write every frame 0 to FILE (concatenated msgpack) instead of sending");
  hs->excludes(in)->excludes(out)->excludes(cap);
  cap->excludes(in)->excludes(out);
  in->needs(out);
  out->needs(in);
  cmd->add_option("--engine-start-index", f.engine_start_index, "Index of the first engine")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--engines", f.engines, "Number of engines (threads)")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--steps", f.steps, "Steps per engine; 0 = until interrupted")
      ->capture_default_str();
  cmd->add_option("--rate", f.rate, "Steps per second per engine; 0 = as fast as possible")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--connector", f.connector, "KV connector whose statistics are sent")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "nixl", "mooncake-p2p", "mooncake-store", "multi"}));
  cmd->add_flag("--legacy-multi-shape", f.legacy_multi_shape,
                "MultiConnector children wrapped in {\"data\": ...} (wire shape before 2026-09)");
  f.seed_opt =
      cmd->add_option("--seed", f.seed, "Deterministic payloads and step-derived timestamps");
  cmd->add_option("--max-model-len", f.max_model_len, "Reported in the ready response")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 40));
  cmd->add_option("--num-speculative-tokens", f.num_speculative_tokens,
                  "Send SpecDecodingStats with this many draft tokens")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  cmd->add_flag("--stats-only", f.stats_only, "Send no request outputs, only SchedulerStats");
  cmd->add_flag("--serve-requests", f.serve_requests,
                "Answer the frontend's ADD and ABORT requests like an engine");
  cmd->add_flag(
      "--no-synthetic-requests", f.no_synthetic_requests,
      "Generate no requests of the engine's own (with --serve-requests: only served ones)");
  cmd->add_option("--served-stop", f.served_stop,
                  "How a served request with stop tokens stops: sampled (30% of them, at a "
                  "random position) or earliest (all, right after min_tokens)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sampled", "earliest"}));
  cmd->add_flag("--echo-kv-transfer-params", f.echo_kv_transfer_params,
                "A served request's final output returns the kv_transfer_params it was sent");
  cmd->add_option("--routed-experts-layers", f.routed_experts_layers,
                  "As an engine with --enable-return-routed-experts: served requests' outputs "
                  "carry routed_experts of this many layers (needs --serve-requests; 0 = off)")
      ->check(CLI::Range(int64_t{0}, int64_t{256}));
  cmd->add_option("--per-request-spec-decode-metrics", f.per_request_spec_decode_metrics,
                  "As an engine with vLLM's flag: every final output carries the request's "
                  "RequestSpecDecodeMetrics (needs --num-speculative-tokens and --engine-wire "
                  "gnewest; detailed keeps the per-step lists)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "summary", "detailed"}));
  cmd->add_option("--kv-role", f.kv_role,
                  "Prefill/decode disaggregation through NIXL (needs --serve-requests and "
                  "--connector nixl): kv_producer answers do_remote_decode requests that finish "
                  "at max_tokens with the params a decode instance pulls with, kv_consumer "
                  "pulls the KV of do_remote_prefill requests (one NIXL transfer each), kv_both "
                  "does either, as each request's kv_transfer_params say")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "kv_producer", "kv_consumer", "kv_both"}));
  cmd->add_option("--kv-engine-id", f.kv_engine_id,
                  "remote_engine_id in a producer's params (default stand-in-<engine index>)");
  cmd->add_option("--kv-events-config", f.kv_events_config,
                  "vLLM's --kv-events-config (KVEventsConfig JSON): each engine reports it, "
                  "resolved for its rank, as kv_events_config in its ready response (no events "
                  "are published)");
  cmd->add_option("--report-totals", f.report_totals,
                  "Write what was sent as JSON to FILE at exit");
  f.die_opt =
      cmd->add_option("--die-after", f.die_after, "Send ENGINE_CORE_DEAD and exit after N steps");
  f.vanish_opt = cmd->add_option("--vanish-after", f.vanish_after,
                                 "Close the sockets without a word after N steps");
  cmd->add_option("--malformed-probability", f.malformed_probability,
                  "Before each step, send a frame that cannot decode with this probability")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--truncated-multipart-probability", f.truncated_multipart_probability,
                  "Before each step, send a multipart message missing its last frame with this "
                  "probability")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--fault-engine", f.fault_engine,
                  "Engine index the faults above apply to; -1 = all")
      ->capture_default_str();
  cmd->add_flag("--hold", f.hold, "After the last step stay connected until interrupted");
  cmd->add_option("--handshake-timeout-ms", f.handshake_timeout_ms, "How long to wait for INIT")
      ->capture_default_str();
  cmd->add_option("--engine-wire", f.engine_wire,
                  "Speak this wire generation (g20260204-08e09499, g20260204, or a vLLM release "
                  "a table pins): its handshake, its output layouts, and its request layout, a "
                  "refused ADD ending the engine's input as in vLLM; auto = vLLM 6adad087's")
      ->capture_default_str();
  cmd->callback([flags, exit_code, hs, in, cap] {
    if (hs->count() == 0 && in->count() == 0 && cap->count() == 0) {
      std::fprintf(stderr,
                   "vmetrics simulate: give --handshake-address, --input-address/--output-address "
                   "or --capture\n");
      *exit_code = 2;
      return;
    }
    const SimulateFlags& sf = *flags;
    Result<const WireGeneration*> wire = ParseEngineWire(sf.engine_wire);
    if (!wire.ok()) {
      std::fprintf(stderr, "vmetrics simulate: %s\n", wire.status().message().c_str());
      *exit_code = 2;
      return;
    }
    if (sf.kv_role != "none" && (!sf.serve_requests || sf.connector != "nixl")) {
      std::fprintf(stderr,
                   "vmetrics simulate: --kv-role needs --serve-requests and --connector nixl\n");
      *exit_code = 2;
      return;
    }
    if (sf.per_request_spec_decode_metrics != "none" &&
        (sf.num_speculative_tokens == 0 || *wire == nullptr ||
         (*wire)->PositionOf(OutputField::kSpecDecodeMetrics) < 0)) {
      std::fprintf(stderr,
                   "vmetrics simulate: --per-request-spec-decode-metrics needs "
                   "--num-speculative-tokens and an --engine-wire whose outputs carry "
                   "spec_decode_metrics (gnewest)\n");
      *exit_code = 2;
      return;
    }
    if (sf.routed_experts_layers > 0 && !sf.serve_requests) {
      std::fprintf(stderr, "vmetrics simulate: --routed-experts-layers needs --serve-requests\n");
      *exit_code = 2;
      return;
    }
    if (sf.kv_role != "none" && sf.echo_kv_transfer_params) {
      std::fprintf(stderr,
                   "vmetrics simulate: --kv-role and --echo-kv-transfer-params exclude each "
                   "other\n");
      *exit_code = 2;
      return;
    }
    *exit_code = RunSimulate(*flags);
  });
}

}  // namespace vmetrics::cli

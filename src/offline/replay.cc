// SPDX-License-Identifier: Apache-2.0
// Replay: a capture recorded as a frontend would record it; see replay.h.
#include "vmetrics/offline/replay.h"

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "capture.h"
#include "environment.h"
#include "flag_checks.h"
#include "ingest.h"
#include "observability_flags.h"
#include "requests_sidecar.h"
#include "vmetrics/recorder.h"
#include "vmetrics/requests.h"

namespace vmetrics::frontend {
namespace {

// The requests of a capture, from its sidecar (--requests): a RequestTracker fed the outputs
// at the clocks the sidecar gives each message.
class SidecarBookkeeping final : public IngestBookkeeping {
 public:
  SidecarBookkeeping(RequestSidecar* sidecar, RequestTracker* tracker, double* monotonic)
      : sidecar_(sidecar), tracker_(tracker), monotonic_(monotonic) {}

  std::optional<IterationStats> Track(EngineCoreOutputs* message, uint64_t number) override {
    const RequestSidecar::Clocks clocks = sidecar_->Advance(number, tracker_);
    *monotonic_ = clocks.monotonic;
    std::optional<IterationStats> it =
        tracker_->ProcessOutputs(*message, clocks.iteration_timestamp);
    if (message->scheduler_stats) tracker_->UpdateSchedulerStats(&*message->scheduler_stats);
    return it;
  }
  void Settle(const EngineCoreOutputs& /*message*/) override {}  // nobody waits for an answer

 private:
  RequestSidecar* sidecar_;
  RequestTracker* tracker_;
  double* monotonic_;  // the tracker's monotonic clock
};

std::string ResolveBesideInput(const std::string& path, const std::string& input) {
  if (path.empty() || path[0] == '/' || std::filesystem::exists(path) || input == "-") return path;
  const std::filesystem::path beside = std::filesystem::path(input).parent_path() / path;
  return std::filesystem::exists(beside) ? beside.string() : path;
}

}  // namespace

Result<ReplayOutput> Replay(const ReplayOptions& args) {
  if (Status s = CheckMaxModelLen(args.max_model_len, /*zero_is_from_engines=*/false); !s.ok()) {
    return s;
  }
  if (Status s =
          CheckServedModelName(args.served_model_name, RecorderOptions{}.max_label_value_bytes);
      !s.ok()) {
    return s;
  }
  RecorderOptions options;
  options.served_model_name = args.served_model_name;
  options.engine_indexes.clear();
  for (int64_t i = 0; i < args.data_parallel_size; ++i) options.engine_indexes.push_back(i);
  options.max_model_len = args.max_model_len;
  options.kv_cache_metrics = args.kv_cache_metrics;
  Result<bool> nans = ComputeNansInLogitsFromEnvironment();
  if (!nans.ok()) return nans.status();
  options.compute_nans_in_logits = *nans;
  Result<CustomHistogramBuckets> buckets =
      ParseCustomHistogramBuckets(args.custom_histogram_buckets);
  if (!buckets.ok()) return buckets.status();
  options.custom_histogram_buckets = std::move(*buckets);
  std::optional<std::string> show_hidden;
  if (!args.show_hidden_metrics_for_version.empty()) {
    if (!IsPep440Version(args.show_hidden_metrics_for_version)) {
      return Status::InvalidArgument("--show-hidden-metrics-for-version: invalid version '" +
                                     args.show_hidden_metrics_for_version + "'");
    }
    show_hidden = args.show_hidden_metrics_for_version;
  }
  // No engines report a vLLM version to replay: a development build, which shows them.
  options.show_hidden_metrics = ShowHiddenMetrics(show_hidden, "");
  if (args.enable_lora) options.max_loras = args.max_loras;
  if (!args.kv_transfer_config.empty()) {
    Result<ConnectorConfig> c = ConnectorConfig::FromKvTransferConfigJson(args.kv_transfer_config);
    if (!c.ok()) return c.status();
    options.connectors = *c;
  }
  if (!args.ec_transfer_config.empty()) {
    Result<EcConnectorConfig> ec =
        EcConnectorConfig::FromEcTransferConfigJson(args.ec_transfer_config);
    if (!ec.ok()) return ec.status();
    options.ec_connector = std::move(*ec);
  }
  Result<int64_t> speculative = ParseNumSpeculativeTokens(args.speculative_config);
  if (!speculative.ok()) return speculative.status();
  options.num_speculative_tokens = *speculative;
  options.diffusion_model = args.diffusion_model;
  auto log = [&args](std::string_view line) {
    if (args.log) args.log(line);
  };
  options.log = [&log](const std::string& line) { log(line); };

  std::unique_ptr<Clock> clock;
  if (args.created_timestamp >= 0) clock = std::make_unique<FixedClock>(args.created_timestamp);
  Registry registry(clock.get());
  StatsRecorder recorder(&registry, options);

  // --requests: feed outputs through a RequestTracker. A relative path that does not exist
  // is also tried next to the capture, so a capture and its sidecar travel together.
  std::optional<RequestSidecar> sidecar;
  double monotonic = 0;
  RequestTracker::Options tracker_options;
  tracker_options.monotonic = [&monotonic] { return monotonic; };
  tracker_options.track_nans_in_logits = options.compute_nans_in_logits;
  RequestTracker tracker(tracker_options);
  if (!args.requests.empty()) {
    Result<RequestSidecar> loaded =
        RequestSidecar::Load(ResolveBesideInput(args.requests, args.input));
    if (!loaded.ok()) return loaded.status();
    sidecar = std::move(*loaded);
  }

  Result<const WireGeneration*> forced = ParseEngineWire(args.engine_wire);
  if (!forced.ok()) return forced.status();
  Result<std::string> data = ReadCaptureFile(args.input);
  if (!data.ok()) return data.status();
  ReplayOutput out;
  WireDecoderOptions wire_options;
  wire_options.forced = *forced;
  wire_options.log = [&log](const std::string& line) { log(line); };
  wire_options.on_recognised = [&log](const WireRecognition& r) { log(DescribeRecognition(r)); };
  WireDecoder wire(std::move(wire_options));
  std::optional<SidecarBookkeeping> bookkeeping;
  if (sidecar) bookkeeping.emplace(&*sidecar, &tracker, &monotonic);
  // The path `serve` records with: Python's output handler order (ingest.h).
  Ingest ingest(&recorder, bookkeeping ? &*bookkeeping : nullptr);
  out.failed_messages = DecodeStream(
      *data, wire, [&](uint64_t n) { return recorder.decode_context(n); },
      [&](EngineCoreOutputs& m, uint64_t number, size_t, const DecodeContext&) {
        ingest.Message(&m, number);
      },
      [&](const std::string& what) {
        recorder.CountDecodeError();
        log(what);
      });
  if (sidecar) sidecar->Finish(&tracker);
  out.recognitions = wire.recognitions();
  for (const WireRecognition& r : out.recognitions) {
    if (!r.recognised) log(DescribeRecognition(r));
  }
  ExpositionOptions expo;
  expo.created_series = !(args.disable_created_series || CreatedDisabledByEnvironment());
  if (args.format == ExpositionFormat::kOpenMetrics) {
    WriteOpenMetrics(registry, expo, &out.exposition);
  } else {
    WriteText(registry, expo, &out.exposition);
  }
  return out;
}

}  // namespace vmetrics::frontend

// SPDX-License-Identifier: Apache-2.0
// The process families against prometheus_client's own ProcessCollector (the peer vLLM's
// frontend uses), both pointed at the same fixed /proc-like directory: text 0.0.4 and
// OpenMetrics must be byte-identical. Then the live /proc: every family there, sane values.
#include "vmetrics/process_metrics.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace vmetrics {
namespace {

namespace fs = std::filesystem;

// A /proc-like directory: stat with btime, <pid>/stat (a comm with spaces and parentheses),
// <pid>/limits, <pid>/fd with `fds` entries.
class FakeProc {
 public:
  FakeProc(bool with_limits, int fds) {
    char tmpl[] = "/tmp/vmetrics-proc-XXXXXX";
    root_ = mkdtemp(tmpl);
    Write("stat", "cpu  1 2 3 4\nintr 5\nctxt 6\nbtime 1764600000\nprocesses 7\n");
    fs::create_directories(root_ + "/4242/fd");
    // Fields 1 (pid) and 2 (comm) then 3.. : utime (14) 1234, stime (15) 567, starttime (22)
    // 98765, vsize (23) 123456789, rss (24) 4321.
    Write("4242/stat",
          "4242 (vm etrics) (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 9 0 "
          "98765 123456789 4321 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n");
    if (with_limits) {
      Write("4242/limits",
            "Limit                     Soft Limit           Hard Limit           Units     \n"
            "Max cpu time              unlimited            unlimited            seconds   \n"
            "Max open files            20000                1048576              files     \n");
    }
    for (int i = 0; i < fds; ++i) Write("4242/fd/" + std::to_string(i), "");
  }
  ~FakeProc() { fs::remove_all(root_); }
  const std::string& root() const { return root_; }

 private:
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(root_ + "/" + name, std::ios::binary) << text;
  }
  std::string root_;
};

// prometheus_client's rendering of its ProcessCollector over `root`/4242.
std::string Python(const std::string& root, const char* format) {
  const std::string cmd =
      "/usr/bin/python3 -c '"
      "import sys\n"
      "from prometheus_client import CollectorRegistry\n"
      "from prometheus_client.process_collector import ProcessCollector\n"
      "from prometheus_client.exposition import generate_latest\n"
      "from prometheus_client.openmetrics.exposition import generate_latest as om\n"
      "r = CollectorRegistry()\n"
      "ProcessCollector(proc=sys.argv[1], pid=lambda: \"4242\", registry=r)\n"
      "sys.stdout.write((generate_latest if sys.argv[2] == \"text\" else om)(r).decode())\n"
      "' " +
      root + " " + format;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "(popen failed)";
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  if (status != 0) out += "(python3 exited " + std::to_string(status) + ")";
  return out;
}

void ExpectSameAsPrometheusClient(const FakeProc& proc) {
  const ProcessStats stats = ReadProcessStats(proc.root(), "4242");
  std::string text;
  WriteProcessMetrics(stats, ExpositionFormat::kText, &text);
  EXPECT_EQ(text, Python(proc.root(), "text"));
  std::string om;
  WriteProcessMetrics(stats, ExpositionFormat::kOpenMetrics, &om);
  EXPECT_EQ(om + "# EOF\n", Python(proc.root(), "openmetrics"));
}

TEST(ProcessMetrics, ByteIdenticalToPrometheusClientsProcessCollector) {
  FakeProc proc(/*with_limits=*/true, /*fds=*/7);
  ExpectSameAsPrometheusClient(proc);
  std::string text;
  WriteProcessMetrics(ReadProcessStats(proc.root(), "4242"), ExpositionFormat::kText, &text);
  EXPECT_NE(text.find("process_open_fds 7.0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("process_max_fds 20000.0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("process_virtual_memory_bytes 1.23456789e+08\n"), std::string::npos);
}

TEST(ProcessMetrics, WithoutLimitsBothFdFamiliesAreLeftOutAsPrometheusClientDoes) {
  FakeProc proc(/*with_limits=*/false, /*fds=*/2);
  ExpectSameAsPrometheusClient(proc);
  std::string text;
  WriteProcessMetrics(ReadProcessStats(proc.root(), "4242"), ExpositionFormat::kText, &text);
  EXPECT_EQ(text.find("process_open_fds"), std::string::npos) << text;
  EXPECT_NE(text.find("process_cpu_seconds_total 18.0"), std::string::npos) << text;
}

TEST(ProcessMetrics, WithoutBtimeNothingIsWritten) {
  const ProcessStats stats = ReadProcessStats("/nonexistent-proc", "self");
  std::string out;
  WriteProcessMetrics(stats, ExpositionFormat::kText, &out);
  EXPECT_EQ(out, "");
}

TEST(ProcessMetrics, TheLiveProcHasEverySixFamilies) {
  const ProcessStats stats = ReadProcessStats();
  ASSERT_TRUE(stats.have_btime);
  ASSERT_TRUE(stats.stat.has_value());
  ASSERT_TRUE(stats.fds.has_value());
  EXPECT_GT(stats.stat->resident_memory_bytes, 0);
  EXPECT_GT(stats.stat->start_time_seconds, 1.5e9);
  EXPECT_GE(stats.fds->open, 3);  // stdin, stdout, stderr
  EXPECT_GT(stats.fds->max, 0);
}

}  // namespace
}  // namespace vmetrics

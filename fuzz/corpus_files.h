// SPDX-License-Identifier: Apache-2.0
// File: corpus_files.h
//
// Listing and reading a fuzz corpus directory, for the ctest replays of the corpora
// (tests/*/..._corpus_replay_test.cc): each replays every input through its fuzzer's invariant
// check, so a minimized crash input kept in fuzz/corpus/<target>/ fails ctest without libFuzzer.
#ifndef VMETRICS_FUZZ_CORPUS_FILES_H_
#define VMETRICS_FUZZ_CORPUS_FILES_H_

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace vmetrics::fuzz {

// The regular files of `dir`, sorted by path (empty if it does not exist).
inline std::vector<std::string> CorpusFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string ReadCorpusFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace vmetrics::fuzz

#endif  // VMETRICS_FUZZ_CORPUS_FILES_H_

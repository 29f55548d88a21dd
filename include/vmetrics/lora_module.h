// SPDX-License-Identifier: Apache-2.0
// File: lora_module.h
//
// LoraModule: a LoRA adapter the frontend offers (vLLM's --lora-modules name=path), named by
// FrontendOptions (frontend.h) and by the token APIs' ServingConfig. Its own header so that the
// token APIs know the adapters without the whole service (frontend.h pulls in the HTTP server,
// the exposition and the registry).
//
// Thread safety: a plain value.
//
// Example:
//   LoraModule sql{.name = "sql", .path = "/adapters/sql"};
//   EXPECT_EQ(sql.lora_int_id, 0);  // numbered 1, 2, ... by Frontend::Bind
#ifndef VMETRICS_LORA_MODULE_H_
#define VMETRICS_LORA_MODULE_H_

#include <cstdint>
#include <string>

namespace vmetrics {

// A completion whose `model` is `name` runs with it; the engines load it from `path`.
struct LoraModule {
  std::string name;
  std::string path;
  // vLLM's lora_int_id. Bind numbers FrontendOptions::lora_modules 1, 2, ... in order, as
  // vLLM does; a value set here is replaced.
  int64_t lora_int_id = 0;
};

}  // namespace vmetrics

#endif  // VMETRICS_LORA_MODULE_H_

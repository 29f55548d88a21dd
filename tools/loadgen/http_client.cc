// SPDX-License-Identifier: Apache-2.0
// HttpClient on libcurl's easy interface; see http_client.h.
#include "loadgen/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <mutex>

namespace vmetrics::loadgen {
namespace {

// curl_global_init is not thread-safe in every libcurl build: done once, before any handle.
void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  const std::function<bool(std::string_view)>* on_body = nullptr;
  HttpClientResponse* response = nullptr;
  bool hung_up = false;
};

size_t OnData(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (t->on_body == nullptr || !*t->on_body) {
    t->response->body.append(data, n);
    return n;
  }
  if ((*t->on_body)(std::string_view(data, n))) return n;
  t->hung_up = true;
  return 0;  // anything but n: libcurl aborts the transfer and closes the connection
}

struct HeaderList {
  ~HeaderList() { curl_slist_free_all(list); }
  curl_slist* list = nullptr;
};

struct UrlHandle {
  UrlHandle() : url(curl_url()) {}
  ~UrlHandle() { curl_url_cleanup(url); }
  CURLU* url;
};

}  // namespace

Status CheckHttpUrl(std::string_view text) {
  UrlHandle h;
  if (h.url == nullptr) return Status::InvalidArgument("cannot parse URLs (out of memory)");
  const std::string url(text);
  if (curl_url_set(h.url, CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
    return Status::InvalidArgument(url + " is not a URL");
  }
  char* scheme = nullptr;
  char* host = nullptr;
  const bool has_scheme = curl_url_get(h.url, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK;
  const bool has_host = curl_url_get(h.url, CURLUPART_HOST, &host, 0) == CURLUE_OK;
  const std::string s = has_scheme ? scheme : "";
  curl_free(scheme);
  curl_free(host);
  // Without an explicit scheme libcurl would guess one; a benchmark should say what it means.
  if (text.substr(0, s.size() + 3) != s + "://" || (s != "http" && s != "https")) {
    return Status::InvalidArgument(url + " is not an http:// or https:// URL");
  }
  if (!has_host) return Status::InvalidArgument(url + " has no host");
  return Status::Ok();
}

HttpClient::HttpClient(HttpClientOptions options) : options_(std::move(options)) {
  InitCurlOnce();
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

HttpClientResponse HttpClient::Perform(const std::string& url, const std::string_view* post_body,
                                       const std::function<bool(std::string_view)>& on_body) {
  HttpClientResponse r;
  auto* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) {
    r.error = "libcurl could not make a handle";
    return r;
  }
  // Options reset per request: the handle only carries its connection (and TLS session) over.
  curl_easy_reset(curl);
  char error[CURL_ERROR_SIZE] = "";
  Transfer transfer{&on_body, &r};
  HeaderList headers;
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  // Threads own their handles, and libcurl must not use signals for its timeouts then.
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnData);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  const long timeout_ms = static_cast<long>(std::max<int64_t>(options_.timeout.count(), 1));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  // A response that goes quiet for the timeout ends; a live stream may last.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, (timeout_ms + 999) / 1000));
  if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
  if (!options_.user.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(curl, CURLOPT_USERNAME, options_.user.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, options_.password.c_str());
  }
  if (post_body != nullptr) {
    headers.list = curl_slist_append(headers.list, "Content-Type: application/json");
    // Sent at once: waiting for 100 Continue costs a round trip the server never asks for.
    headers.list = curl_slist_append(headers.list, "Expect:");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post_body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body->size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  r.status = static_cast<int>(status);
  char* content_type = nullptr;
  if (curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &content_type) == CURLE_OK &&
      content_type != nullptr) {
    r.content_type = content_type;
  }
  r.hung_up = transfer.hung_up;
  if (rc != CURLE_OK && !transfer.hung_up) {
    r.error = error[0] != '\0' ? error : curl_easy_strerror(rc);
  }
  // An aborted transfer's connection is closed by libcurl, never reused. The buffer and the
  // header list are about to go: the handle must not point at them while it keeps the
  // connection.
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  return r;
}

HttpClientResponse HttpClient::Post(const std::string& url, std::string_view body,
                                    const std::function<bool(std::string_view)>& on_body) {
  return Perform(url, &body, on_body);
}

HttpClientResponse HttpClient::Get(const std::string& url) { return Perform(url, nullptr, {}); }

HttpClientResponse HttpPost(const std::string& url, std::string_view body,
                            const std::function<bool(std::string_view)>& on_body,
                            const HttpClientOptions& options) {
  return HttpClient(options).Post(url, body, on_body);
}

HttpClientResponse HttpGet(const std::string& url, const HttpClientOptions& options) {
  return HttpClient(options).Get(url);
}

}  // namespace vmetrics::loadgen

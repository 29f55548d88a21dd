// SPDX-License-Identifier: Apache-2.0
// HttpExchange: an asynchronous answer on a suspended libmicrohttpd connection.
//
// The connection is suspended from the moment the handler gets the exchange until the answer
// starts, and, while streaming, whenever the content reader finds nothing to send (returning
// 0 without suspending would make libmicrohttpd call the reader again at once, a busy loop).
// Whoever adds something to send resumes it. Suspension and resumption happen under `mu_`,
// with `suspended_` recording which of the two came last, so a resume never precedes its
// suspend and a connection is never resumed twice.
//
// A stream is cut on its client's account (CutLocked) by shutting its socket down rather than
// by a reply: a client that does not read leaves libmicrohttpd's own buffer unsent, so
// libmicrohttpd would neither ask the content reader again nor notice anything else. With the
// socket shut down its next send fails and it closes the connection. The socket is still the
// connection's while `connection_` is set: Detach, which clears it, runs (from the request's
// completion) before libmicrohttpd closes the socket.
#include <microhttpd.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

#include "vmetrics/http_route.h"

namespace vmetrics {

void HttpExchange::ResumeLocked() {
  if (!suspended_ || connection_ == nullptr) return;
  suspended_ = false;
  MHD_resume_connection(connection_);
}

void HttpExchange::Reply(unsigned status, std::string_view content_type, std::string body) {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kWaiting) return;
  phase_ = Phase::kReplied;
  status_ = status;
  content_type_ = std::string(content_type);
  body_ = std::move(body);
  ResumeLocked();
}

void HttpExchange::StartStream(std::string_view content_type) {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kWaiting) return;
  phase_ = Phase::kStreaming;
  status_ = MHD_HTTP_OK;
  content_type_ = std::string(content_type);
  ResumeLocked();
}

bool HttpExchange::Write(std::string data) {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kStreaming || ended_ || connection_ == nullptr) return false;
  if (max_unsent_bytes_ != 0 && data.size() > max_unsent_bytes_ - unsent_) {
    CutLocked(Cut::kUnsentBound);
    return false;
  }
  if (!data.empty()) {
    wrote_ = true;
    // The client is waited for from now: the time the stream had nothing to send was the
    // engine's, not the client's.
    if (unsent_ == 0) waiting_since_ = std::chrono::steady_clock::now();
    unsent_ += data.size();
    chunks_.push_back(std::move(data));
  }
  ResumeLocked();
  return true;
}

void HttpExchange::End() {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kStreaming || ended_) return;
  ended_ = true;
  // The end waits for the client too (libmicrohttpd takes it once its buffer is out).
  if (unsent_ == 0) waiting_since_ = std::chrono::steady_clock::now();
  ResumeLocked();
}

size_t HttpExchange::unsent_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return unsent_;
}

void HttpExchange::CutLocked(Cut why) {
  ended_ = true;
  cancelled_ = true;
  cut_ = why;
  chunks_.clear();
  chunk_offset_ = 0;
  unsent_ = 0;
  if (connection_ != nullptr && socket_ >= 0) shutdown(socket_, SHUT_RDWR);
  ResumeLocked();
}

bool HttpExchange::CutIfStalled(std::chrono::steady_clock::time_point before) {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kStreaming || connection_ == nullptr || cancelled_) return false;
  // An ended stream waits until libmicrohttpd has sent it all and completed the request
  // (Detach): what it took last may still sit in its buffer, unread.
  const bool waiting = unsent_ > 0 || ended_;
  if (!waiting || waiting_since_ > before) return false;
  CutLocked(Cut::kStalled);
  return true;
}

HttpExchange::Cut HttpExchange::cut() {
  std::lock_guard<std::mutex> lock(mu_);
  return cut_;
}

void HttpExchange::SetOnClientGone(std::function<void()> on_client_gone) {
  std::lock_guard<std::mutex> lock(mu_);
  on_client_gone_ = std::move(on_client_gone);
}

void HttpExchange::SuspendUntilAnswered() {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kWaiting || connection_ == nullptr || suspended_) return;
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection_, MHD_CONNECTION_INFO_CONNECTION_FD);
  socket_ = info != nullptr ? info->connect_fd : -1;
  suspended_ = true;
  MHD_suspend_connection(connection_);
}

int HttpExchange::WaitingSocket() {
  std::lock_guard<std::mutex> lock(mu_);
  if (connection_ == nullptr) return -1;
  if (phase_ == Phase::kWaiting) return suspended_ ? socket_ : -1;
  // A stream with nothing written yet (a request still queued at its engine): nothing would
  // notice the client leaving until the first write, so it is watched too.
  return phase_ == Phase::kStreaming && !ended_ && !wrote_ ? socket_ : -1;
}

void HttpExchange::ClientHungUp(int socket) {
  std::function<void()> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // libmicrohttpd has not closed this connection (it waits for an answer, or for a
    // stream's first bytes), so `socket` is still its socket.
    if (connection_ == nullptr || socket != socket_) return;
    if (phase_ == Phase::kStreaming && !ended_ && !wrote_) {
      // A stream nothing was written to: ended, so that libmicrohttpd finishes (and closes)
      // the connection.
      ended_ = true;
      cancelled_ = true;
    } else if (phase_ == Phase::kWaiting && suspended_) {
      // Nobody will read an answer: a later Reply or StartStream does nothing, and this one
      // only lets libmicrohttpd find the connection closed (499: client closed request).
      phase_ = Phase::kReplied;
      status_ = 499;
      content_type_.clear();
      body_.clear();
    } else {
      return;
    }
    gone = std::move(on_client_gone_);
    on_client_gone_ = nullptr;
    ResumeLocked();
  }
  if (gone) gone();
}

HttpExchange::Phase HttpExchange::TakeAnswer(unsigned* status, std::string* content_type,
                                             std::string* body) {
  std::lock_guard<std::mutex> lock(mu_);
  *status = status_;
  *content_type = content_type_;
  if (phase_ == Phase::kReplied) *body = std::move(body_);
  return phase_;
}

ssize_t HttpExchange::ReadStream(char* buf, size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t copied = 0;
  while (copied < max && !chunks_.empty()) {
    const std::string& front = chunks_.front();
    const size_t n = std::min(max - copied, front.size() - chunk_offset_);
    std::copy_n(front.data() + chunk_offset_, n, buf + copied);  // bytes, not a C string
    copied += n;
    chunk_offset_ += n;
    if (chunk_offset_ == front.size()) {
      chunks_.pop_front();
      chunk_offset_ = 0;
    }
  }
  if (copied > 0) {
    unsent_ -= copied;
    // libmicrohttpd asks for more only once what it had went out: the client is taking bytes.
    waiting_since_ = std::chrono::steady_clock::now();
    return static_cast<ssize_t>(copied);
  }
  // Cut on the client's account: closed without the last chunk, so the client can tell the
  // body is incomplete (the socket is shut down anyway).
  if (cut_ != Cut::kNone) return MHD_CONTENT_READER_END_WITH_ERROR;
  if (ended_) {
    delivered_ = !cancelled_;
    waiting_since_ = std::chrono::steady_clock::now();
    return MHD_CONTENT_READER_END_OF_STREAM;
  }
  if (connection_ != nullptr && !suspended_) {
    suspended_ = true;
    MHD_suspend_connection(connection_);
  }
  return 0;
}

void HttpExchange::Cancel(HttpReply stopping) {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ == Phase::kWaiting) {
    phase_ = Phase::kReplied;
    status_ = stopping.status;
    content_type_ = std::move(stopping.content_type);
    body_ = std::move(stopping.body);
  } else if (phase_ == Phase::kStreaming && !ended_) {
    ended_ = true;
    cancelled_ = true;
  }
  ResumeLocked();
}

void HttpExchange::Detach() {
  std::function<void()> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (connection_ == nullptr) return;
    connection_ = nullptr;
    suspended_ = false;
    const bool complete = phase_ == Phase::kReplied || delivered_;
    // From here on nothing can reach the client: later Writes fail, later answers vanish.
    if (phase_ == Phase::kWaiting) phase_ = Phase::kReplied;
    ended_ = true;
    chunks_.clear();
    chunk_offset_ = 0;
    unsent_ = 0;
    if (!complete) gone = std::move(on_client_gone_);
    on_client_gone_ = nullptr;
  }
  if (gone) gone();
}

}  // namespace vmetrics

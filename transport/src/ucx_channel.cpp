#include "cnet/transport/ucx_channel.hpp"

#include <ucp/api/ucp.h>
#include <ucs/debug/log_def.h>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "cnet/transport/peer_watch.hpp"

namespace cnet::transport {
namespace {

// Tag layout: source rank in the upper 24 bits, user tag in the lower 32; receives match both.
constexpr int kRankShift = 40;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};
ucp_tag_t make_tag(std::uint32_t source, std::uint32_t tag) {
  return (static_cast<ucp_tag_t>(source) << kRankShift) | tag;
}

void check(ucs_status_t status, const std::string& what) {
  if (status != UCS_OK) throw TransportError(what + " failed: " + ucs_status_string(status));
}

// UCX's CMA transport (same-node copies with process_vm_readv/writev) escalates a failed copy to a
// fatal error that aborts the process whenever the endpoint has no peer error handling, which is how
// watched same-node endpoints are made. By the time it logs that, UCX has already marked the endpoint
// failed and completes the transfer with an error; only the abort is held back, so the failed request
// reaches wait(), which names the peer whose process exited. Every other message goes on to UCX's own
// handlers.
ucs_log_func_rc_t contain_failed_copies(const char*, unsigned, const char* function, ucs_log_level_t level,
                                        const ucs_log_component_config_t*, const char*, va_list) {
  bool failed_copy = level == UCS_LOG_LEVEL_FATAL && function && std::strncmp(function, "uct_cma_", 8) == 0;
  return failed_copy ? UCS_LOG_FUNC_RC_STOP : UCS_LOG_FUNC_RC_CONTINUE;
}

// How long a transfer that failed waits for a same-node peer to finish exiting before the failure is
// reported as a plain transport error: a killed process is unreachable a moment before it has exited.
constexpr std::chrono::milliseconds kDyingPeer{1000};

}  // namespace

struct UcxChannel::Ucx {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<Blob> addresses;      // every rank's worker address
  std::vector<ucp_ep_h> endpoints;  // made on first use
  std::vector<ucs_status_t> peer_status;  // set by the error handler when a peer dies
  struct ErrorSlot {
    Ucx* ucx;
    std::uint32_t peer;
  };
  std::vector<ErrorSlot> error_slots;
  std::vector<std::optional<PeerWatch>> watches;  // same-node peers' processes
  bool abandoned_request = false;  // a send to a dead same-node peer that UCX can never finish
};

UcxChannel::UcxChannel(Bootstrap& bootstrap, UcxOptions options)
    : rank_(bootstrap.placement().rank), size_(bootstrap.placement().size), options_(options), ucx_(std::make_unique<Ucx>()) {
  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  // Keepalive is what notices a dead peer on a quiet connection; UCX's 20 s default is too slow for a
  // job that must fail within 10 s. Site or user settings win.
  if (options_.detect_peer_failure && !std::getenv("UCX_KEEPALIVE_INTERVAL"))
    ucp_config_modify(config, "KEEPALIVE_INTERVAL", "2s");
  if (!options_.net_devices.empty()) {
    if (ucs_status_t s = ucp_config_modify(config, "NET_DEVICES", options_.net_devices.c_str()); s != UCS_OK) {
      ucp_config_release(config);
      check(s, "UCX_NET_DEVICES=" + options_.net_devices);
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features = UCP_FEATURE_TAG;
  params.estimated_num_eps = size_;
  ucs_status_t status = ucp_init(&params, config, &ucx_->context);
  ucp_config_release(config);
  check(status, "ucp_init");

  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  check(ucp_worker_create(ucx_->context, &wparams, &ucx_->worker), "ucp_worker_create");

  ucp_address_t* address = nullptr;
  std::size_t address_length = 0;
  check(ucp_worker_get_address(ucx_->worker, &address, &address_length), "ucp_worker_get_address");
  auto* bytes = reinterpret_cast<const std::byte*>(address);
  // Each channel a process makes publishes under its own keys, so a second one (cnet-perf --sweep makes
  // one per value) never reads an earlier channel's address: which value a PMIx server hands out for a
  // key put twice is not something to rely on. Every rank makes its channels in the same order.
  static std::atomic<unsigned> channels_made{0};
  std::string suffix = std::to_string(channels_made++);
  ucx_->addresses = bootstrap.allgather("cnet.ucx.address." + suffix, std::span(bytes, address_length));
  ucp_worker_release_address(ucx_->worker, address);
  hosts_ = bootstrap.allgather_text("cnet.ucx.host." + suffix, bootstrap.placement().hostname);
  // Same node (as Slurm names it) and the process visible from here: shared memory, watched by pid.
  // Each side decides for its own endpoint; should only one side manage to watch (its pidfd_open
  // failed), that side sends over shared memory and the other over tcp/ib, and both still detect.
  auto processes = bootstrap.allgather_text("cnet.ucx.process." + suffix, process_identity());
  ucx_->watches.resize(size_);
  if (options_.detect_peer_failure)
    for (std::uint32_t r = 0; r < size_; ++r)
      if (r != rank_ && hosts_[r] == hosts_[rank_]) ucx_->watches[r] = PeerWatch::open(processes[r]);
  if (std::any_of(ucx_->watches.begin(), ucx_->watches.end(), [](const auto& w) { return w.has_value(); })) {
    static std::once_flag contained;
    std::call_once(contained, [] { ucs_log_push_handler(contain_failed_copies); });
  }

  ucx_->endpoints.assign(size_, nullptr);
  ucx_->peer_status.assign(size_, UCS_OK);
  ucx_->error_slots.resize(size_);
  for (std::uint32_t r = 0; r < size_; ++r) ucx_->error_slots[r] = {ucx_.get(), r};
}

UcxChannel::~UcxChannel() {
  // A send to a dead same-node peer is still inside UCX and can never finish: tearing UCX down under
  // it is not worth the risk in a process that is about to report the failure and end.
  if (ucx_->abandoned_request) return;
  for (std::uint32_t peer = 0; peer < size_; ++peer) {
    ucp_ep_h ep = ucx_->endpoints[peer];
    if (!ep) continue;
    // Forced close needs peer error handling on both sides; a shared-memory endpoint is flushed.
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = watched(peer) ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
    void* req = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (ucp_request_check_status(req) == UCS_INPROGRESS && std::chrono::steady_clock::now() < deadline)
        ucp_worker_progress(ucx_->worker);
      if (ucp_request_check_status(req) == UCS_INPROGRESS) return;  // a flush a dead peer never answers
      ucp_request_free(req);
    }
  }
  if (ucx_->worker) ucp_worker_destroy(ucx_->worker);
  if (ucx_->context) ucp_cleanup(ucx_->context);
}

bool UcxChannel::watched(std::uint32_t peer) const { return ucx_->watches[peer].has_value(); }

bool UcxChannel::peer_exited(std::uint32_t peer, std::chrono::milliseconds within) {
  if (watched(peer) && ucx_->peer_status[peer] == UCS_OK && ucx_->watches[peer]->exited(within))
    ucx_->peer_status[peer] = UCS_ERR_CONNECTION_RESET;
  return watched(peer) && ucx_->peer_status[peer] != UCS_OK;
}

void* UcxChannel::endpoint(std::uint32_t peer) {
  if (peer >= size_) throw TransportError("rank " + std::to_string(peer) + " is outside this job of " + std::to_string(size_));
  if (ucx_->endpoints[peer]) return ucx_->endpoints[peer];
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(ucx_->addresses[peer].data());
  bool ucx_detects = options_.detect_peer_failure && !watched(peer);
  params.err_mode = ucx_detects ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  if (ucx_detects) {
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_handler.cb = [](void* arg, ucp_ep_h, ucs_status_t status) {
      auto* slot = static_cast<Ucx::ErrorSlot*>(arg);
      slot->ucx->peer_status[slot->peer] = status;
    };
    params.err_handler.arg = &ucx_->error_slots[peer];
  }
  ucs_status_t status = ucp_ep_create(ucx_->worker, &params, &ucx_->endpoints[peer]);
  if (status != UCS_OK && peer_exited(peer, kDyingPeer)) {  // its shared memory went with it
    ucx_->endpoints[peer] = nullptr;
    check_peer(peer, "connect");
  }
  if (status != UCS_OK)
    throw TransportError("cannot reach rank " + std::to_string(peer) + " on " + hosts_[peer] + ": " +
                         ucs_status_string(status) +
                         (ucx_detects ? " (peer-failure detection needs tcp or ib in UCX_TLS)" : ""));
  return ucx_->endpoints[peer];
}

void UcxChannel::check_peer(std::uint32_t peer, const char* what) {
  if (ucx_->peer_status[peer] != UCS_OK)
    throw PeerFailure(peer, std::string(what) + ": rank " + std::to_string(peer) + " on " + hosts_[peer] +
                                " is gone (" + (watched(peer) ? "its process exited" : ucs_status_string(ucx_->peer_status[peer])) + ")");
}

std::unique_ptr<UcxChannel::Request> UcxChannel::send(std::uint32_t peer, std::uint32_t tag, std::span<const std::byte> data) {
  auto ep = static_cast<ucp_ep_h>(endpoint(peer));
  check_peer(peer, "send");
  auto req = std::make_unique<Request>();
  req->peer = peer;
  req->is_send = true;
  req->length = data.size();
  ucp_request_param_t param{};
  void* handle = ucp_tag_send_nbx(ep, data.data(), data.size(), make_tag(rank_, tag), &param);
  if (UCS_PTR_IS_ERR(handle)) req->status = UCS_PTR_STATUS(handle);
  else req->handle = handle;
  return req;
}

std::unique_ptr<UcxChannel::Request> UcxChannel::recv(std::uint32_t peer, std::uint32_t tag, std::span<std::byte> data) {
  endpoint(peer);  // an endpoint to the sender is what reports its death
  check_peer(peer, "receive");
  auto req = std::make_unique<Request>();
  req->peer = peer;
  req->length = data.size();
  ucp_request_param_t param{};
  void* handle = ucp_tag_recv_nbx(ucx_->worker, data.data(), data.size(), make_tag(peer, tag), kFullMask, &param);
  if (UCS_PTR_IS_ERR(handle)) req->status = UCS_PTR_STATUS(handle);
  else req->handle = handle;
  return req;
}

void UcxChannel::wait(Request& req) {
  auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  unsigned spins = 0, idle = 0;
  while (req.handle) {
    // Yield after a stretch with nothing to do: with more ranks than cores a spinning rank would
    // otherwise starve the very peer it waits for; a short stretch keeps small-message latency.
    idle = ucp_worker_progress(ucx_->worker) ? 0 : idle + 1;
    if (idle % 256 == 255) sched_yield();
    ucs_status_t s = ucp_request_check_status(req.handle);
    if (s != UCS_INPROGRESS) {
      req.status = s;
      ucp_request_free(req.handle);
      req.handle = nullptr;
      break;
    }
    if (++spins % 1024 == 0) {
      peer_exited(req.peer);
      if (ucx_->peer_status[req.peer] != UCS_OK) {
        if (watched(req.peer) && req.is_send) {
          ucx_->abandoned_request = true;  // UCX cannot cancel a send; over shared memory it would wait forever
        } else {
          ucp_request_cancel(ucx_->worker, req.handle);
          while (ucp_request_check_status(req.handle) == UCS_INPROGRESS) ucp_worker_progress(ucx_->worker);
          ucp_request_free(req.handle);
        }
        req.handle = nullptr;
        check_peer(req.peer, req.is_send ? "send" : "receive");
      }
      if (std::chrono::steady_clock::now() > deadline)
        throw TransportError(std::string(req.is_send ? "send to" : "receive from") + " rank " + std::to_string(req.peer) +
                             " on " + hosts_[req.peer] + " did not complete within " +
                             std::to_string(options_.timeout.count()) + " ms (peer stalled or hung)");
    }
  }
  auto status = static_cast<ucs_status_t>(req.status);
  if (status == UCS_ERR_MESSAGE_TRUNCATED)
    throw TransportError("message from rank " + std::to_string(req.peer) + " is larger than the " +
                         std::to_string(req.length) + "-byte buffer posted for it");
  if (status != UCS_OK) {
    peer_exited(req.peer, kDyingPeer);  // a failed shared-memory copy: say the peer's process is gone, if it is
    check_peer(req.peer, req.is_send ? "send" : "receive");
    throw PeerFailure(req.peer, std::string(req.is_send ? "send to" : "receive from") + " rank " + std::to_string(req.peer) +
                                    " on " + hosts_[req.peer] + " failed: " + ucs_status_string(status));
  }
}

void UcxChannel::wait_all(std::vector<std::unique_ptr<Request>>& requests) {
  for (auto& r : requests) wait(*r);
  requests.clear();
}

bool UcxChannel::test(Request& req) {
  if (req.handle) {
    ucp_worker_progress(ucx_->worker);
    if (ucp_request_check_status(req.handle) == UCS_INPROGRESS) {
      // A peer found gone fails the request now (through wait()), rather than leaving it pending for a
      // caller that only ever tests it.
      peer_exited(req.peer);
      if (ucx_->peer_status[req.peer] == UCS_OK) return false;
    }
  }
  wait(req);  // completes it, and reports a failure the way wait() does
  return true;
}

void UcxChannel::progress() {
  while (ucp_worker_progress(ucx_->worker) != 0) {
  }
}

void UcxChannel::send_blocking(std::uint32_t peer, std::uint32_t tag, std::span<const std::byte> data) {
  auto r = send(peer, tag, data);
  wait(*r);
}

void UcxChannel::recv_blocking(std::uint32_t peer, std::uint32_t tag, std::span<std::byte> data) {
  auto r = recv(peer, tag, data);
  wait(*r);
}

std::string UcxChannel::transports_to(std::uint32_t peer) {
  auto ep = static_cast<ucp_ep_h>(endpoint(peer));
  char* buffer = nullptr;
  std::size_t size = 0;
  FILE* stream = open_memstream(&buffer, &size);
  if (!stream) return "";
  ucp_ep_print_info(ep, stream);
  std::fclose(stream);
  std::string info(buffer, size);
  std::free(buffer);
  // Lines look like "#   lane[0]:  3:tcp/eth0.0 md[1] ..."; collect "tcp/eth0" (transport and device,
  // without UCX's path index), so a reader sees which interface carries the traffic.
  std::string out;
  for (std::size_t pos = info.find("lane["); pos != std::string::npos; pos = info.find("lane[", pos + 1)) {
    std::size_t colon = info.find(':', info.find(':', pos) + 1);
    std::size_t end = info.find_first_of(" \n", colon);
    if (colon == std::string::npos || end == std::string::npos) break;
    std::string lane = info.substr(colon + 1, end - colon - 1);
    if (auto dot = lane.rfind('.'); dot != std::string::npos && lane.find_first_not_of("0123456789", dot + 1) == std::string::npos) lane.erase(dot);
    if (("," + out + ",").find("," + lane + ",") == std::string::npos) out += (out.empty() ? "" : ",") + lane;
  }
  return out;
}

}  // namespace cnet::transport

#include "cnet/transport/bootstrap.hpp"

#include <pmix.h>
#include <unistd.h>

#include <cstdio>

#include <condition_variable>
#include <cstring>
#include <mutex>

#include "cnet/common/host.hpp"

namespace cnet::transport {
namespace {

std::string status_text(pmix_status_t rc) { return PMIx_Error_string(rc); }

void check(pmix_status_t rc, std::string_view what) {
  if (rc != PMIX_SUCCESS) throw BootstrapError(std::string(what) + " failed: " + status_text(rc));
}

// PMIx_Get with the value type checked: PMIx hands back integers of several widths.
std::uint32_t get_uint(const pmix_proc_t& proc, const char* key) {
  pmix_value_t* value = nullptr;
  check(PMIx_Get(&proc, key, nullptr, 0, &value), std::string("PMIx_Get(") + key + ")");
  std::uint32_t out = 0;
  switch (value->type) {
    case PMIX_UINT32: out = value->data.uint32; break;
    case PMIX_UINT16: out = value->data.uint16; break;
    case PMIX_INT: out = static_cast<std::uint32_t>(value->data.integer); break;
    case PMIX_UINT64: out = static_cast<std::uint32_t>(value->data.uint64); break;
    default: {
      std::string type = PMIx_Data_type_string(value->type);
      PMIX_VALUE_RELEASE(value);
      throw BootstrapError(std::string("PMIx key ") + key + " has unexpected type " + type);
    }
  }
  PMIX_VALUE_RELEASE(value);
  return out;
}

std::string get_text(const pmix_proc_t& proc, const char* key) {
  pmix_value_t* value = nullptr;
  check(PMIx_Get(&proc, key, nullptr, 0, &value), std::string("PMIx_Get(") + key + ")");
  std::string out = value->type == PMIX_STRING && value->data.string ? value->data.string : "";
  PMIX_VALUE_RELEASE(value);
  return out;
}

// Waits for a PMIx non-blocking call with our own deadline: Slurm's PMIx server ignores PMIX_TIMEOUT
// (it applies its own PMIxTimeout, 300 s by default). Heap-held and shared, because after a timeout
// the callback may still fire.
struct PendingCall {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  pmix_status_t status = PMIX_SUCCESS;

  static void op_done(pmix_status_t status, void* self) { static_cast<PendingCall*>(self)->finish(status); }
  static void value_done(pmix_status_t status, pmix_value_t*, void* self) { static_cast<PendingCall*>(self)->finish(status); }
  void finish(pmix_status_t s) {
    std::lock_guard lock(m);
    status = s;
    done = true;
    cv.notify_all();
  }
  // PMIX_ERR_TIMEOUT when the deadline passes first.
  pmix_status_t wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, timeout, [&] { return done; }) ? status : PMIX_ERR_TIMEOUT;
  }
};

// Leaked on purpose when the call times out: PMIx may still call back into it.
pmix_status_t wait_or_abandon(PendingCall* call, pmix_status_t started, std::chrono::milliseconds timeout) {
  if (started != PMIX_SUCCESS) {
    delete call;
    return started;
  }
  pmix_status_t rc = call->wait(timeout);
  if (rc != PMIX_ERR_TIMEOUT) delete call;
  return rc;
}

}  // namespace

struct PmixBootstrap::PmixState {
  pmix_proc_t self{};
};

std::span<const std::byte> as_bytes(std::string_view text) { return std::as_bytes(std::span(text.data(), text.size())); }

std::vector<std::string> Bootstrap::allgather_text(std::string_view key, std::string_view mine) {
  std::vector<std::string> out;
  for (const auto& blob : allgather(key, as_bytes(mine))) out.emplace_back(reinterpret_cast<const char*>(blob.data()), blob.size());
  return out;
}

SingleProcessBootstrap::SingleProcessBootstrap() {
  placement_.hostname = common::hostname();
  placement_.job_id = "single." + std::to_string(getpid());
}

void SingleProcessBootstrap::abort(int status, std::string_view message) {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
  std::_Exit(status == 0 ? 1 : status);
}

std::unique_ptr<PmixBootstrap> PmixBootstrap::connect(std::chrono::seconds timeout) {
  return std::unique_ptr<PmixBootstrap>(new PmixBootstrap(timeout));
}

PmixBootstrap::PmixBootstrap(std::chrono::seconds timeout) : timeout_(timeout), pmix_(std::make_unique<PmixState>()) {
  if (std::getenv("PMIX_NAMESPACE") == nullptr)
    throw BootstrapError("no PMIx server in this environment: run under 'srun --mpi=pmix' (or MpiDefault=pmix) "
                         "or with a cnet '--local N' launcher");
  check(PMIx_Init(&pmix_->self, nullptr, 0), "PMIx_Init");
  pmix_proc_t job{};
  PMIX_LOAD_PROCID(&job, pmix_->self.nspace, PMIX_RANK_WILDCARD);
  placement_.rank = pmix_->self.rank;
  placement_.job_id = pmix_->self.nspace;
  placement_.size = get_uint(job, PMIX_JOB_SIZE);
  placement_.local_size = get_uint(job, PMIX_LOCAL_SIZE);
  placement_.num_nodes = get_uint(job, PMIX_NUM_NODES);
  placement_.local_rank = get_uint(pmix_->self, PMIX_LOCAL_RANK);
  placement_.node_id = get_uint(pmix_->self, PMIX_NODEID);
  placement_.hostname = get_text(pmix_->self, PMIX_HOSTNAME);
}

PmixBootstrap::~PmixBootstrap() { PMIx_Finalize(nullptr, 0); }

void PmixBootstrap::put(std::string_view key, std::span<const std::byte> blob) {
  pmix_value_t value{};
  value.type = PMIX_BYTE_OBJECT;
  // PMIx copies the value during Put, so pointing at the caller's bytes is enough.
  value.data.bo.bytes = const_cast<char*>(reinterpret_cast<const char*>(blob.data()));
  value.data.bo.size = blob.size();
  check(PMIx_Put(PMIX_GLOBAL, std::string(key).c_str(), &value), "PMIx_Put(" + std::string(key) + ")");
}

void PmixBootstrap::put(std::string_view key, std::string_view text) { put(key, as_bytes(text)); }

void PmixBootstrap::commit() { check(PMIx_Commit(), "PMIx_Commit"); }

void PmixBootstrap::fence(bool collect_data) {
  // Each rank commits an arrival mark first, so a timed-out fence can tell who never came.
  unsigned epoch = ++fence_epoch_;
  put("cnet.arrived." + std::to_string(epoch), std::string_view("1"));
  commit();
  pmix_proc_t all{};
  PMIX_LOAD_PROCID(&all, pmix_->self.nspace, PMIX_RANK_WILDCARD);
  pmix_info_t info[2];
  bool collect = collect_data;
  int timeout_s = static_cast<int>(timeout_.count());
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout_s, PMIX_INT);
  auto* call = new PendingCall;
  pmix_status_t rc = wait_or_abandon(call, PMIx_Fence_nb(&all, 1, info, 2, PendingCall::op_done, call), timeout_);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  if (rc == PMIX_ERR_TIMEOUT) {
    std::string missing;
    for (auto r : ranks_missing_from_fence(epoch)) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    throw BootstrapError("fence timed out after " + std::to_string(timeout_s) + " s in job " + placement_.job_id + " (" +
                         std::to_string(placement_.size) + " ranks); rank(s) not confirmed as arrived: " +
                         (missing.empty() ? std::string("none could be told apart") : missing));
  }
  check(rc, "PMIx_Fence");
}

std::vector<std::uint32_t> PmixBootstrap::ranks_missing_from_fence(unsigned epoch) {
  // A rank that arrived has committed its mark; asking for it from one that did not waits in vain.
  // All ranks are asked at once so one silent rank does not delay the answers of the others.
  std::string key = "cnet.arrived." + std::to_string(epoch);
  std::vector<std::pair<PendingCall*, pmix_status_t>> probes;
  for (std::uint32_t r = 0; r < placement_.size; ++r) {
    pmix_proc_t peer{};
    PMIX_LOAD_PROCID(&peer, pmix_->self.nspace, r);
    auto* call = new PendingCall;
    probes.emplace_back(call, PMIx_Get_nb(&peer, key.c_str(), nullptr, 0, PendingCall::value_done, call));
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  std::vector<std::uint32_t> missing;
  for (std::uint32_t r = 0; r < placement_.size; ++r) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto [call, started] = probes[r];
    if (wait_or_abandon(call, started, std::max(left, std::chrono::milliseconds(0))) != PMIX_SUCCESS) missing.push_back(r);
  }
  return missing;
}

std::vector<Blob> PmixBootstrap::allgather(std::string_view key, std::span<const std::byte> mine) {
  put(key, mine);
  fence(true);
  std::vector<Blob> all;
  all.reserve(placement_.size);
  for (std::uint32_t r = 0; r < placement_.size; ++r) all.push_back(r == placement_.rank ? Blob(mine.begin(), mine.end()) : get(r, key));
  return all;
}

Blob PmixBootstrap::get(std::uint32_t rank, std::string_view key) {
  pmix_proc_t peer{};
  PMIX_LOAD_PROCID(&peer, pmix_->self.nspace, rank);
  pmix_info_t info;
  int timeout_s = static_cast<int>(timeout_.count());
  PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &timeout_s, PMIX_INT);
  pmix_value_t* value = nullptr;
  pmix_status_t rc = PMIx_Get(&peer, std::string(key).c_str(), &info, 1, &value);
  PMIX_INFO_DESTRUCT(&info);
  if (rc != PMIX_SUCCESS)
    throw BootstrapError("rank " + std::to_string(rank) + " published no '" + std::string(key) +
                         "': " + status_text(rc));
  if (value->type != PMIX_BYTE_OBJECT) {
    PMIX_VALUE_RELEASE(value);
    throw BootstrapError("key '" + std::string(key) + "' of rank " + std::to_string(rank) + " is not a blob");
  }
  auto* bytes = reinterpret_cast<const std::byte*>(value->data.bo.bytes);
  std::vector<std::byte> out(bytes, bytes + value->data.bo.size);
  PMIX_VALUE_RELEASE(value);
  return out;
}

std::string PmixBootstrap::get_string(std::uint32_t rank, std::string_view key) {
  auto blob = get(rank, key);
  return std::string(reinterpret_cast<const char*>(blob.data()), blob.size());
}

void PmixBootstrap::abort(int status, std::string_view message) {
  PMIx_Abort(status, std::string(message).c_str(), nullptr, 0);
  std::_Exit(status == 0 ? 1 : status);
}

}  // namespace cnet::transport

// A single-node PMIx server built on the public pmix_server.h only (openpmix's examples/server.c needs
// internal headers): register one namespace with node and process maps, set up each child's
// environment, fork/exec, answer fences inline (every participant is local), reap children ourselves.
#include "cnet/transport/local_launcher.hpp"

#include <pmix.h>
#include <pmix_server.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "cnet/common/files.hpp"
#include "cnet/common/host.hpp"
#include "cnet/common/process.hpp"
#include "cnet/common/text.hpp"
#include "cnet/transport/bootstrap.hpp"

namespace cnet::transport {
namespace {

struct Waiter {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  pmix_status_t status = PMIX_SUCCESS;
  static void callback(pmix_status_t status, void* self) {
    auto* w = static_cast<Waiter*>(self);
    std::lock_guard lock(w->m);
    w->status = status;
    w->done = true;
    w->cv.notify_all();
  }
  pmix_status_t wait() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return done; });
    return status;
  }
};

void check(pmix_status_t rc, const std::string& what) {
  if (rc != PMIX_SUCCESS) throw BootstrapError(what + " failed: " + PMIx_Error_string(rc));
}

// Set by the abort upcall (a rank called PMIx_Abort); read by the reaping loop.
std::mutex g_abort_mutex;
int g_abort_status = 0;
int g_abort_rank = -1;

pmix_status_t on_connected(const pmix_proc_t*, void*, pmix_op_cbfunc_t cb, void* cbdata) {
  if (cb) cb(PMIX_SUCCESS, cbdata);
  return PMIX_SUCCESS;
}
pmix_status_t on_finalized(const pmix_proc_t*, void*, pmix_op_cbfunc_t cb, void* cbdata) {
  if (cb) cb(PMIX_SUCCESS, cbdata);  // without this the child hangs in PMIx_Finalize
  return PMIX_SUCCESS;
}
pmix_status_t on_abort(const pmix_proc_t* proc, void*, int status, const char msg[], pmix_proc_t*, size_t,
                       pmix_op_cbfunc_t cb, void* cbdata) {
  {
    std::lock_guard lock(g_abort_mutex);
    g_abort_status = status ? status : 1;
    g_abort_rank = static_cast<int>(proc->rank);
  }
  std::fprintf(stderr, "cnet --local: rank %u aborted (status %d): %s\n", proc->rank, status, msg ? msg : "");
  if (cb) cb(PMIX_SUCCESS, cbdata);
  return PMIX_SUCCESS;
}
// Every participant is local, so the server library has already collected all their data.
pmix_status_t on_fence(const pmix_proc_t[], size_t, const pmix_info_t[], size_t, char* data, size_t ndata,
                       pmix_modex_cbfunc_t cb, void* cbdata) {
  if (cb) cb(PMIX_SUCCESS, data, ndata, cbdata, nullptr, nullptr);
  return PMIX_SUCCESS;
}
pmix_status_t on_direct_modex(const pmix_proc_t*, const pmix_info_t[], size_t, pmix_modex_cbfunc_t, void*) {
  return PMIX_ERR_NOT_FOUND;  // no other node to ask
}

std::string joined_ranks(unsigned n) {
  std::vector<std::string> ranks;
  for (unsigned r = 0; r < n; ++r) ranks.push_back(std::to_string(r));
  return common::join(ranks, ",");
}

void stop_all(const std::vector<pid_t>& pids) {
  for (pid_t p : pids)
    if (p > 0) kill(p, SIGTERM), kill(p, SIGCONT);  // a stopped (hung) rank acts on SIGTERM only once continued
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (pid_t p : pids) {
    if (p <= 0) continue;
    while (waitpid(p, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace

LocalLaunch relaunch_locally(unsigned ranks, int argc, char** argv) {
  LocalLaunch launch;
  launch.ranks = ranks;
  launch.argv.push_back("/proc/self/exe");
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--local") ++i;
    else if (a.rfind("--local=", 0) != 0) launch.argv.push_back(a);
  }
  return launch;
}

namespace {

// The PMIx server and its private folder, taken down on every way out of run_local, a throw included.
// After a rank aborted or was killed, PMIx 4.2 tearing down the dead clients' connections crashed in
// server_finalize now and then (about one run in 30), and deadlocked in deregister_client (its progress
// thread waiting on a lock the call holds, about one run in 20 on a loaded machine); the process is
// about to exit anyway, so then the server is left as it is (keep_up_after_failure).
class LocalPmixServer {
 public:
  explicit LocalPmixServer(pmix_server_module_t* module) {
    std::string tmpl = common::temp_folder() + "/cnet-pmix-XXXXXX";
    if (!mkdtemp(tmpl.data()))
      throw BootstrapError("cannot create a private PMIx folder in " + common::temp_folder() + " (" + std::strerror(errno) + "): set TMPDIR to a writable folder");
    tmpdir_ = tmpl;
    pmix_info_t info[2];
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, tmpdir_.c_str(), PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, tmpdir_.c_str(), PMIX_STRING);
    pmix_status_t rc = PMIx_server_init(module, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS) {
      std::error_code ec;
      std::filesystem::remove_all(tmpdir_, ec);
      check(rc, "PMIx_server_init");
    }
  }
  LocalPmixServer(const LocalPmixServer&) = delete;
  LocalPmixServer& operator=(const LocalPmixServer&) = delete;
  ~LocalPmixServer() {
    if (!keep_up_) PMIx_server_finalize();
    std::error_code ec;
    std::filesystem::remove_all(tmpdir_, ec);
  }
  void keep_up_after_failure() { keep_up_ = true; }

 private:
  std::string tmpdir_;
  bool keep_up_ = false;
};

// Memory PMIx's C API hands back, freed on every way out.
struct PmixStrings {
  char *node_map = nullptr, *proc_map = nullptr;
  std::vector<pmix_info_t> job;
  PmixStrings() = default;
  PmixStrings(const PmixStrings&) = delete;
  PmixStrings& operator=(const PmixStrings&) = delete;
  ~PmixStrings() {
    for (auto& info : job) PMIX_INFO_DESTRUCT(&info);
    std::free(node_map);
    std::free(proc_map);
  }
};

}  // namespace

int run_local(const LocalLaunch& launch) {
  if (launch.ranks == 0 || launch.ranks > 1024) throw BootstrapError("--local needs between 1 and 1024 ranks");
  if (launch.argv.empty()) throw BootstrapError("--local needs a program to run");
  pmix_server_module_t module{};
  module.client_connected = on_connected;
  module.client_finalized = on_finalized;
  module.abort = on_abort;
  module.fence_nb = on_fence;
  module.direct_modex = on_direct_modex;
  LocalPmixServer server(&module);

  std::string host = common::hostname();
  pmix_nspace_t nspace;
  PMIX_LOAD_NSPACE(nspace, ("cnet.local." + std::to_string(getpid())).c_str());
  PmixStrings c;
  check(PMIx_generate_regex(host.c_str(), &c.node_map), "PMIx_generate_regex");
  check(PMIx_generate_ppn(joined_ranks(launch.ranks).c_str(), &c.proc_map), "PMIx_generate_ppn");

  std::uint32_t n = launch.ranks, one = 1;
  bool spawned = false;
  std::string peers = joined_ranks(n);
  std::vector<pmix_info_t>& job = c.job;
  job.resize(8);
  PMIX_INFO_LOAD(&job[0], PMIX_UNIV_SIZE, &n, PMIX_UINT32);
  PMIX_INFO_LOAD(&job[1], PMIX_JOB_SIZE, &n, PMIX_UINT32);
  PMIX_INFO_LOAD(&job[2], PMIX_LOCAL_SIZE, &n, PMIX_UINT32);
  PMIX_INFO_LOAD(&job[3], PMIX_NUM_NODES, &one, PMIX_UINT32);
  PMIX_INFO_LOAD(&job[4], PMIX_SPAWNED, &spawned, PMIX_BOOL);
  PMIX_INFO_LOAD(&job[5], PMIX_LOCAL_PEERS, peers.c_str(), PMIX_STRING);
  PMIX_INFO_LOAD(&job[6], PMIX_NODE_MAP, c.node_map, PMIX_REGEX);
  PMIX_INFO_LOAD(&job[7], PMIX_PROC_MAP, c.proc_map, PMIX_REGEX);
  Waiter registered;
  check(PMIx_server_register_nspace(nspace, static_cast<int>(n), job.data(), job.size(), Waiter::callback, &registered),
        "PMIx_server_register_nspace");
  check(registered.wait(), "registering the local job");

  std::vector<pid_t> pids(n, -1);
  for (std::uint32_t r = 0; r < n; ++r) {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, nspace, r);
    char** env = nullptr;
    for (char** e = environ; *e; ++e) pmix_argv_append_nosize(&env, *e);
    check(PMIx_server_setup_fork(&proc, &env), "PMIx_server_setup_fork");
    Waiter client;  // the client must be registered before it starts (a known race otherwise)
    check(PMIx_server_register_client(&proc, getuid(), getgid(), nullptr, Waiter::callback, &client), "PMIx_server_register_client");
    check(client.wait(), "registering rank " + std::to_string(r));
    const pid_t launcher = getpid();
    pid_t pid = fork();
    if (pid == 0) {
      // A rank outlives no launcher: killed with it, it cannot go on writing or hold the output's lock.
      common::die_with_parent(launcher);
      std::vector<char*> args;
      for (const auto& a : launch.argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execve(args[0], args.data(), env);
      std::fprintf(stderr, "cnet --local: cannot run %s: %s\n", args[0], std::strerror(errno));
      _exit(127);
    }
    pmix_argv_free(env);
    if (pid < 0) {
      stop_all(pids);
      throw BootstrapError(std::string("fork failed: ") + std::strerror(errno));
    }
    pids[r] = pid;
  }

  // Reap: the first failure stops the rest; a job past its timeout is stopped whole.
  int result = 0;
  unsigned running = n;
  auto deadline = std::chrono::steady_clock::now() + launch.timeout;
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      std::uint32_t rank = 0;
      while (rank < n && pids[rank] != pid) ++rank;
      if (rank == n) continue;
      pids[rank] = -1;
      --running;
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code != 0 && result == 0) {
        {
          // A rank that aborted is the cause; others failing right after it (a fence cut short) are not.
          std::lock_guard lock(g_abort_mutex);
          result = g_abort_rank >= 0 ? g_abort_status : code;
        }
        std::fprintf(stderr, "cnet --local: rank %u %s %d; stopping the other ranks\n", rank,
                     WIFEXITED(status) ? "exited with" : "was killed by signal", WIFEXITED(status) ? code : WTERMSIG(status));
        stop_all(pids);
        break;
      }
      continue;
    }
    {
      std::lock_guard lock(g_abort_mutex);
      if (g_abort_rank >= 0 && result == 0) {
        result = g_abort_status;
        stop_all(pids);
        break;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "cnet --local: job exceeded %lld s; stopping every rank\n", static_cast<long long>(launch.timeout.count()));
      stop_all(pids);
      result = 124;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  if (result != 0) {
    server.keep_up_after_failure();  // see LocalPmixServer
  } else {
    for (std::uint32_t r = 0; r < n; ++r) {
      pmix_proc_t proc;
      PMIX_LOAD_PROCID(&proc, nspace, r);
      PMIx_server_deregister_client(&proc, nullptr, nullptr);
    }
    PMIx_server_deregister_nspace(nspace, nullptr, nullptr);
  }
  return result;
}

}  // namespace cnet::transport

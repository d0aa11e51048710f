#include "cnet/scheduling/template_watcher.hpp"

#include <sys/stat.h>

#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

namespace cnet::scheduling {

// Shared with the thread, so a thread still stuck in a read when the watcher goes away touches nothing freed.
struct TemplateWatcher::State {
  std::string path;
  std::chrono::milliseconds interval;
  Report report;
  mutable std::mutex mutex;
  std::condition_variable wake;
  mutable std::condition_variable first_read;
  bool stop = false, looked = false;
  std::shared_ptr<const TemplateCatalog> catalog;
  std::string problem;
  std::uint64_t problem_sequence = 0;
  std::promise<void> finished;

  void set_problem(const std::string& p) {
    {
      std::lock_guard lock(mutex);
      if (p == problem) return;
      problem = p;
      ++problem_sequence;
    }
    if (report) report(p, true);
  }

  void run() {
    struct timespec mtime {};
    off_t size = -1;
    bool have_stamp = false;
    while (true) {
      struct stat st {};
      if (stat(path.c_str(), &st) != 0) {
        set_problem("cannot read templates file " + path + ": " + std::strerror(errno));
      } else if (!have_stamp || st.st_mtim.tv_sec != mtime.tv_sec || st.st_mtim.tv_nsec != mtime.tv_nsec || st.st_size != size) {
        have_stamp = true, mtime = st.st_mtim, size = st.st_size;
        try {
          auto fresh = std::make_shared<const TemplateCatalog>(TemplateCatalog::load(path));
          std::string line = path + ": " + std::to_string(fresh->templates().size()) + " templates: " + fresh->names();
          {
            std::lock_guard lock(mutex);
            catalog = std::move(fresh);
            problem.clear();
          }
          if (report) report(line, false);
        } catch (const std::exception& e) {
          bool kept;
          {
            std::lock_guard lock(mutex);
            kept = catalog != nullptr;
          }
          set_problem(std::string(e.what()) + (kept ? "; keeping the templates read before" : "; no templates until it is fixed"));
        }
      }
      std::unique_lock lock(mutex);
      if (!looked) {
        looked = true;
        first_read.notify_all();
      }
      if (wake.wait_for(lock, interval, [&] { return stop; })) break;
    }
    finished.set_value();
  }
};

TemplateWatcher::TemplateWatcher(std::string path, std::chrono::milliseconds interval, Report report)
    : state_(std::make_shared<State>()) {
  state_->path = std::move(path);
  state_->interval = interval;
  state_->report = std::move(report);
  std::thread([s = state_] { s->run(); }).detach();
}

TemplateWatcher::~TemplateWatcher() {
  auto done = state_->finished.get_future();
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
  }
  state_->wake.notify_all();
  done.wait_for(std::chrono::seconds(1));  // a thread stuck in a read finishes later, holding its own state
}

const std::string& TemplateWatcher::path() const { return state_->path; }

std::shared_ptr<const TemplateCatalog> TemplateWatcher::current() const {
  std::lock_guard lock(state_->mutex);
  return state_->catalog;
}

std::string TemplateWatcher::problem(std::uint64_t* sequence) const {
  std::lock_guard lock(state_->mutex);
  if (sequence) *sequence = state_->problem_sequence;
  return state_->problem;
}

bool TemplateWatcher::wait_for_first_read(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mutex);
  return state_->first_read.wait_for(lock, timeout, [&] { return state_->looked; });
}

}  // namespace cnet::scheduling

#pragma once
// The template catalogue job_submit/cnet serves from, read away from slurmctld's locks: a background
// thread rereads the file whenever it changes (regular files only, size checked before reading, a
// linear parse) and swaps the new catalogue in; a damaged file keeps the last good one. A submission
// only takes the current catalogue, so an NFS hang or a FIFO at that path can never stall the controller.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cnet/scheduling/template_catalog.hpp"

namespace cnet::scheduling {

class TemplateWatcher {
 public:
  // `report` hears, from the watcher's thread, each catalogue taken into use ("3 templates: a, b, c")
  // and each new problem with the file (error = true), once each.
  using Report = std::function<void(const std::string& line, bool error)>;
  TemplateWatcher(std::string path, std::chrono::milliseconds interval, Report report = {});
  ~TemplateWatcher();  // stops the thread; one stuck in a read is left to finish on its own
  TemplateWatcher(const TemplateWatcher&) = delete;
  TemplateWatcher& operator=(const TemplateWatcher&) = delete;

  const std::string& path() const;
  std::shared_ptr<const TemplateCatalog> current() const;  // nullptr until a file was read successfully
  // Why the file is not the one in use ("" when it is), and a number that grows with each new problem.
  std::string problem(std::uint64_t* sequence = nullptr) const;
  // Waits until the file was looked at once (successfully or not); false if that took longer.
  bool wait_for_first_read(std::chrono::milliseconds timeout) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace cnet::scheduling

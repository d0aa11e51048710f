#pragma once
// Small helpers for topology tests: fixture paths and throw-away fake sysfs trees.
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "cnet/topology/discover.hpp"

namespace cnet::topology::testing {

inline std::filesystem::path fixture(const std::string& rel) { return std::filesystem::path(CNET_FIXTURES_DIR) / rel; }

// Discovery from one of the real-machine hwloc exports, e.g. load_fixture("nvidiaDGX2.xml").
inline NodeTopology load_fixture(const std::string& name) {
  DiscoveryOptions o;
  o.hwloc_xml = fixture("hwloc/" + name);
  return discover(o);
}

// A temporary directory removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cnet-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories((path_ / rel).parent_path());
    std::ofstream(path_ / rel) << text;
  }
  void link(const std::string& rel, const std::string& target) const {
    std::filesystem::create_directories((path_ / rel).parent_path());
    std::filesystem::create_symlink(target, path_ / rel);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace cnet::topology::testing

#pragma once
// The one kind of scratch folder unit tests use: a fresh private folder (mkdtemp), removed with
// everything in it when the object goes away, with helpers to lay out files and links inside it.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace cnet::testing {

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cnet-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a scratch folder in " + tmpl);
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& rel) const { return (path_ / rel).string(); }
  // Writes `text` to `rel` (folders made as needed) and returns its path.
  std::string write(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories((path_ / rel).parent_path());
    std::ofstream(path_ / rel, std::ios::binary) << text;
    return file(rel);
  }
  void link(const std::string& rel, const std::string& target) const {
    std::filesystem::create_directories((path_ / rel).parent_path());
    std::filesystem::create_symlink(target, path_ / rel);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace cnet::testing

#pragma once
// What the fuzz targets share: the input as text, or as a file the code under test opens by path
// (a fresh scratch file per run, removed afterwards).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace cnet::fuzz {

inline std::string text(const std::uint8_t* data, std::size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// A private scratch folder for the whole fuzzing run.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cnet-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

// Writes the input to `name` in the scratch folder and returns its path.
inline std::string as_file(const std::uint8_t* data, std::size_t size, const std::string& name) {
  std::filesystem::path p = scratch() / name;
  FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) std::abort();
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return p.string();
}

}  // namespace cnet::fuzz

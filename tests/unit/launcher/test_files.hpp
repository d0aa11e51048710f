#pragma once
// Scratch files for launcher tests: a fresh folder per test, removed afterwards.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace cnet::launcher::test {

class ScratchDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cnet-launcher-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A safetensors file from a raw header and a data section of `data_bytes` zero bytes.
  std::string raw_file(const std::string& name, const std::string& header, std::size_t data_bytes) {
    std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    std::uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << std::string(data_bytes, '\0');
    return p;
  }

  std::filesystem::path dir_;
};

}  // namespace cnet::launcher::test

#pragma once
// Launcher tests: a scratch folder per test, and safetensors files built byte by byte.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "../scratch_dir.hpp"

namespace cnet::inference::test {

class ScratchDir : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return scratch_.file(name); }

  // A safetensors file from a raw header and a data section of `data_bytes` zero bytes.
  std::string raw_file(const std::string& name, const std::string& header, std::size_t data_bytes) {
    std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    std::uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << std::string(data_bytes, '\0');
    return p;
  }

  cnet::testing::ScratchDir scratch_;
};

}  // namespace cnet::inference::test

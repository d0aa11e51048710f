#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cnet/inference/safetensors.hpp"
#include "test_files.hpp"

using namespace cnet::inference;
using Safetensors = cnet::inference::test::ScratchDir;

namespace {
std::string error_of(const std::string& path) {
  try {
    SafetensorsFile f(path);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_F(Safetensors, WriterAndReaderAgree) {
  std::string p = path("a.safetensors");
  {
    SafetensorsWriter w(p, {{"x", {2, 3}}, {"y", {4}}}, {{"k", "v"}});
    w.write("x", 0, std::vector<float>{1, 2, 3, 4, 5, 6});
    w.write("y", 2, std::vector<float>{7, 8});
    w.sync();
  }
  SafetensorsFile f(p);
  EXPECT_EQ(f.metadata().at("k"), "v");
  EXPECT_EQ(f.tensor("x").shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(f.data_offset() % 8, 0u);
  std::vector<float> storage;
  auto x = f.floats("x", storage);
  EXPECT_TRUE(storage.empty()) << "F32 must be used in place";
  EXPECT_EQ(std::vector<float>(x.begin(), x.end()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  auto y = f.floats("y", storage);
  EXPECT_EQ(std::vector<float>(y.begin(), y.end()), (std::vector<float>{0, 0, 7, 8}));
  EXPECT_THROW(f.tensor("z"), FormatError);
}

TEST_F(Safetensors, ConvertsHalfPrecision) {
  // 1.0, -2.0, 0.5 and a subnormal in F16; 1.0 and -3.0 in BF16
  std::string header = R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}})";
  std::string p = raw_file("h.safetensors", header, 0);
  std::ofstream out(p, std::ios::binary | std::ios::app);
  std::uint16_t words[] = {0x3c00, 0xc000, 0x3800, 0x0001, 0x3f80, 0xc040};
  out.write(reinterpret_cast<const char*>(words), sizeof words);
  out.close();
  SafetensorsFile f(p);
  std::vector<float> s;
  auto h = f.floats("h", s);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 0.5f);
  EXPECT_EQ(h[3], std::ldexp(1.0f, -24));
  auto b = f.floats("b", s);
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], -3.0f);
}

TEST_F(Safetensors, WritesHalfAndBfloat16RoundedToNearestEven) {
  std::string p = path("h.safetensors");
  const std::vector<float> values{1.0f, -2.5f, 0.1f, 65504.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 1e-7f, 70000.0f};
  {
    SafetensorsWriter w(p, {{"h", {8}, "F16"}, {"b", {8}, "BF16"}}, {});
    w.write("h", 0, values);
    w.write("b", 0, values);
    w.sync();
  }
  SafetensorsFile f(p);
  EXPECT_EQ(f.tensor("h").dtype, "F16");
  EXPECT_EQ(f.tensor("b").end - f.tensor("b").begin, 16u);
  std::uint16_t first_h, first_b;
  std::memcpy(&first_h, f.raw("h").data(), 2);
  std::memcpy(&first_b, f.raw("b").data(), 2);
  EXPECT_EQ(first_h, 0x3c00);  // 1.0
  EXPECT_EQ(first_b, 0x3f80);
  std::vector<float> sh, sb;
  auto h = f.floats("h", sh);
  auto b = f.floats("b", sb);
  EXPECT_EQ(h[1], -2.5f);
  EXPECT_EQ(h[2], 0.0999755859375f);   // nearest half to 0.1
  EXPECT_EQ(b[2], 0.10009765625f);     // nearest bfloat16 to 0.1
  EXPECT_EQ(h[3], 65504.0f);           // largest half
  EXPECT_EQ(h[4], 1.0f);               // halfway between two halves: to the even one, down
  EXPECT_EQ(h[5], 1.0f + 2.0f / 1024);  // and up
  EXPECT_EQ(b[4], 1.0f);
  EXPECT_EQ(h[6], 2.0f / 16777216);     // 1e-7 is 1.68 units of 2^-24: subnormal 2
  EXPECT_TRUE(std::isinf(h[7]));        // beyond the largest half
  EXPECT_EQ(b[7], 70144.0f);            // bfloat16 has the range, not the digits
  EXPECT_THROW(SafetensorsWriter(path("bad.safetensors"), {{"x", {1}, "I8"}}, {}), FormatError);
}

TEST_F(Safetensors, TruncatedFileNamesTheTensorAndOffset) {
  std::string p = path("t.safetensors");
  { SafetensorsWriter w(p, {{"a", {4}}, {"b", {16}}}, {}); }
  auto size = std::filesystem::file_size(p);
  std::filesystem::resize_file(p, size - 10);
  std::string e = error_of(p);
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  EXPECT_NE(e.find("'b'"), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(size)), std::string::npos) << e;
}

TEST_F(Safetensors, RejectsDamagedHeaders) {
  struct Case {
    std::string header;
    std::size_t data;
    std::string expect;
  };
  std::vector<Case> cases = {
      {"{not json", 0, "not valid JSON"},
      {"[1,2]", 0, "JSON object"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4, "needs 8"},
      {R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", 4, "unknown dtype"},
      {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, "non-negative"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, "gap before it"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, "overlaps"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12, "8 bytes after the last tensor"},
      {R"({"a":{"dtype":"F32","shape":[1]}})", 4, "needs dtype, shape and data_offsets"},
      {R"({"__metadata__":{"k":3}})", 0, "must be a string"},
  };
  for (const auto& c : cases) {
    std::string e = error_of(raw_file("bad.safetensors", c.header, c.data));
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.header << " -> " << e;
  }
}

TEST_F(Safetensors, RejectsFilesThatAreNotSafetensors) {
  std::string p = path("short");
  std::ofstream(p) << "abc";
  EXPECT_NE(error_of(p).find("too short"), std::string::npos);
  std::ofstream(p, std::ios::binary) << std::string(8, '\xff') << "{}";
  EXPECT_NE(error_of(p).find("over 100 MB"), std::string::npos);
  std::ofstream(p, std::ios::binary) << std::string("\x40\0\0\0\0\0\0\0", 8) << "{}";
  EXPECT_NE(error_of(p).find("runs past the end"), std::string::npos);
  EXPECT_NE(error_of(path("missing")).find("cannot open"), std::string::npos);
}

TEST_F(Safetensors, ResumeRefusesAnotherLayout) {
  std::string p = path("o.safetensors");
  { SafetensorsWriter w(p, {{"output", {4, 2}}}, {}); }
  EXPECT_NO_THROW(SafetensorsWriter(p, {{"output", {4, 2}}}, {}, false));
  try {
    SafetensorsWriter(p, {{"output", {4, 3}}}, {}, false);
    FAIL() << "resumed into a file of another shape";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("without --resume"), std::string::npos) << e.what();
  }
}

// Headers written to attack the reader: every size product checked, nesting bounded, keys unique.
TEST_F(Safetensors, HostileHeadersAreRefusedNotTrusted) {
  // 2^56 x 64 F32 elements: the byte count wraps to 0 in 64 bits, so [0,0] offsets looked right.
  EXPECT_NE(error_of(raw_file("wrap.safetensors", R"({"t":{"dtype":"F32","shape":[72057594037927936,64],"data_offsets":[0,0]}})", 0))
                .find("overflows"), std::string::npos);
  // 100 000 nested '[' in one value: refused by depth, no stack exhausted printing it.
  std::string deep = R"({"t":{"dtype":)" + std::string(100000, '[') + std::string(100000, ']') + R"(,"shape":[1],"data_offsets":[0,4]}})";
  std::string e = error_of(raw_file("deep.safetensors", deep, 4));
  EXPECT_NE(e.find("nested deeper than"), std::string::npos) << e.substr(0, 200);
  EXPECT_LT(e.size(), 600u) << "the message quotes no attacker text at length";
  // The same tensor twice: which one would be used is the attacker's choice.
  e = error_of(raw_file("dup.safetensors",
                        R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
  EXPECT_NE(e.find("tensor 't' is named twice"), std::string::npos) << e;
  // More tensors than any checkpoint holds: refused by count, before a value is built.
  std::string many = "{";
  for (int i = 0; i <= 200'000; ++i) many += (i ? ",\"" : "\"") + std::to_string(i) + R"(":{"dtype":"U8","shape":[0],"data_offsets":[0,0]})";
  e = error_of(raw_file("many.safetensors", many + "}", 0));
  EXPECT_NE(e.find("more than 200000 tensors"), std::string::npos) << e.substr(0, 200);
  e = error_of(raw_file("dtype.safetensors", R"({"t":{"dtype":")" + std::string(5000, 'A') + R"(","shape":[1],"data_offsets":[0,4]}})", 4));
  EXPECT_NE(e.find("unknown dtype"), std::string::npos);
  EXPECT_LT(e.size(), 600u);
}

// OutputSink: rows in any arrival order land at their offsets, the committer records every micro-batch,
// the output appears only when complete, and a missing micro-batch is an error naming how many.
#include "cnet/inference/output_sink.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_files.hpp"

using namespace cnet::inference;
using Sink = cnet::inference::test::ScratchDir;

namespace {
std::vector<float> rows_of(const MicroBatch& mb, std::size_t width) {
  std::vector<float> v(mb.rows * width);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(mb.first_row * width + i);
  return v;
}
}  // namespace

TEST_F(Sink, RowsInAnyOrderMakeTheCompleteOutput) {
  std::string out = path("out.safetensors");
  auto mbs = micro_batches(10, 3);  // 3, 3, 3, 1 rows
  {
    OutputSink sink("t", out, 10, 2, "id", mbs.size(), false);
    sink.start();
    for (std::size_t k : {2, 0, 3, 1}) sink.put(mbs[k], rows_of(mbs[k], 2));
    EXPECT_FALSE(std::filesystem::exists(out));  // not before every micro-batch is durable
    sink.finish();
    EXPECT_EQ(sink.rows_this_run(), 10u);
  }
  SafetensorsFile f(out);
  std::vector<float> storage;
  auto v = f.floats("output", storage);
  ASSERT_EQ(v.size(), 20u);
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], static_cast<float>(i));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
  std::ifstream log(out + ".progress");
  std::string text((std::istreambuf_iterator<char>(log)), {});
  for (const char* line : {"done 0", "done 1", "done 2", "done 3"}) EXPECT_NE(text.find(line), std::string::npos) << text;
}

TEST_F(Sink, AMissingMicroBatchIsAnErrorAndLeavesNoOutput) {
  std::string out = path("out.safetensors");
  auto mbs = micro_batches(6, 2);
  OutputSink sink("t", out, 6, 1, "id", mbs.size(), false);
  sink.start();
  sink.put(mbs[0], rows_of(mbs[0], 1));
  sink.put(mbs[2], rows_of(mbs[2], 1));
  try {
    sink.finish();
    FAIL() << "finished with a micro-batch missing";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("1 micro-batches missing"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_TRUE(std::filesystem::exists(out + ".partial"));
}

TEST_F(Sink, ARunThatStopsEarlyKeepsWhatItRecorded) {
  std::string out = path("out.safetensors");
  auto mbs = micro_batches(4, 1);
  {
    OutputSink sink("t", out, 4, 1, "id", mbs.size(), false);
    sink.start();
    sink.put(mbs[1], rows_of(mbs[1], 1));
  }  // dropped without finish(), as when a stage fails: what was written is still synced, then recorded
  EXPECT_FALSE(std::filesystem::exists(out));
  {
    SafetensorsFile partial(out + ".partial");
    std::vector<float> storage;
    EXPECT_EQ(partial.floats("output", storage)[1], 1.0f);
  }
  OutputSink resumed("t", out, 4, 1, "id", mbs.size(), true);
  EXPECT_EQ(resumed.done(), std::set<std::uint32_t>{1});
}

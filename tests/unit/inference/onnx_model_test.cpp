#include "cnet/inference/onnx_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "cnet/inference/forward.hpp"
#include "cnet/inference/model.hpp"
#include "cnet/inference/schedule.hpp"
#include "onnx_builder.hpp"
#include "test_files.hpp"

using namespace cnet::inference;
using cnet::inference::test::OnnxBuilder;

namespace {

std::vector<float> draws(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 0.5f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// x [N,2,4,4] -> Conv 3x3 pad 1 -> Relu -> Conv 1x1 -> Add x -> Relu -> GlobalAveragePool -> Flatten -> Gemm [N,3]:
// a ResNet basic block and head in miniature.
struct ResidualBlock {
  std::vector<float> w1 = draws(2 * 2 * 3 * 3, 1), b1 = draws(2, 2), w2 = draws(2 * 2, 3), fc = draws(3 * 2, 4), fcb = draws(3, 5);
  OnnxBuilder model() const {
    OnnxBuilder b;
    b.input("x", {0, 2, 4, 4}).output("y", {0, 3});
    b.weight("w1", {2, 2, 3, 3}, w1);
    b.weight("b1", {2}, b1);
    b.weight("w2", {2, 2, 1, 1}, w2);
    b.weight("fc", {3, 2}, fc);
    b.weight("fcb", {3}, fcb);
    auto& c1 = b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
    OnnxBuilder::ints(c1, "pads", {1, 1, 1, 1});
    OnnxBuilder::ints(c1, "kernel_shape", {3, 3});
    b.node("Relu", {"c1"}, {"r1"});
    b.node("Conv", {"r1", "w2"}, {"c2"}, "conv2");
    b.node("Add", {"c2", "x"}, {"a"});
    b.node("Relu", {"a"}, {"r2"});
    b.node("GlobalAveragePool", {"r2"}, {"p"});
    b.node("Flatten", {"p"}, {"f"});
    auto& g = b.node("Gemm", {"f", "fc", "fcb"}, {"y"}, "fc");
    OnnxBuilder::integer(g, "transB", 1);
    return b;
  }
  // The same block in plain loops, in double.
  std::vector<double> expected(const std::vector<float>& x, int n) const {
    std::vector<double> out;
    for (int s = 0; s < n; ++s) {
      const float* img = x.data() + s * 32;
      double r1[2][4][4], pooled[2];
      for (int m = 0; m < 2; ++m)
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) {
            double acc = b1[m];
            for (int c = 0; c < 2; ++c)
              for (int u = 0; u < 3; ++u)
                for (int v = 0; v < 3; ++v) {
                  int ii = i + u - 1, jj = j + v - 1;
                  if (ii >= 0 && ii < 4 && jj >= 0 && jj < 4) acc += w1[((m * 2 + c) * 3 + u) * 3 + v] * img[(c * 4 + ii) * 4 + jj];
                }
            r1[m][i][j] = std::max(acc, 0.0);
          }
      for (int m = 0; m < 2; ++m) {
        double sum = 0;
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) sum += std::max(w2[m * 2] * r1[0][i][j] + w2[m * 2 + 1] * r1[1][i][j] + img[(m * 4 + i) * 4 + j], 0.0);
        pooled[m] = sum / 16;
      }
      for (int k = 0; k < 3; ++k) out.push_back(fcb[k] + fc[k * 2] * pooled[0] + fc[k * 2 + 1] * pooled[1]);
    }
    return out;
  }
};

class Onnx : public cnet::inference::test::ScratchDir {
 protected:
  std::string error_of(const std::string& path) {
    try {
      open_model(path);
    } catch (const FormatError& e) {
      return e.what();
    }
    return "";
  }
};

}  // namespace

TEST_F(Onnx, AResidualBlockComputesWhatItsLoopsDo) {
  ResidualBlock block;
  LoadedModel m = open_model(block.model().save(path("block.onnx")));
  ASSERT_TRUE(m.spec.graph);
  EXPECT_EQ(m.spec.input_width(), 32u);
  EXPECT_EQ(m.spec.output_width(), 3u);
  // Cuts only where one tensor crosses: not inside the block, where the input waits for the Add. The
  // Relus are done by the Conv and the Add before them (fused at load).
  ASSERT_EQ(m.spec.layers.size(), 4u);
  EXPECT_EQ(m.spec.layers[0].text, "nodes 0-2 (Conv,Add) [2,4,4]->[2,4,4]");
  EXPECT_GT(m.spec.layers[0].cost(), m.spec.layers[3].cost());

  auto x = draws(3 * 32, 9);
  std::vector<float> y;
  StageForward(nullptr, m.spec, 0, m.spec.layers.size()).forward(x, 3, y);
  auto want = block.expected(x, 3);
  ASSERT_EQ(y.size(), want.size());
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << i;

  // Two stages give the same bits as one: a cut changes where an operator runs, not what it computes.
  std::vector<float> mid, split;
  StageForward(nullptr, m.spec, 0, 2).forward(x, 3, mid);
  StageForward(nullptr, m.spec, 2, m.spec.layers.size()).forward(mid, 3, split);
  EXPECT_EQ(split, y);
}

TEST_F(Onnx, AnUnsupportedOperatorIsNamedWithTheSupportedList) {
  OnnxBuilder b;
  b.input("x", {0, 4}).output("y", {0, 4});
  b.node("Relu", {"x"}, {"r"});
  b.node("Hardmax", {"r"}, {"y"}, "the_hardmax");
  std::string err = error_of(b.save(path("m.onnx")));
  EXPECT_NE(err.find("uses operators cnet does not run: Hardmax (first at node 'the_hardmax' (Hardmax))"), std::string::npos) << err;
  EXPECT_NE(err.find("supported: "), std::string::npos) << err;
  EXPECT_NE(err.find("Conv"), std::string::npos) << err;
}

TEST_F(Onnx, ATruncatedFileIsNamed) {
  std::string whole = ResidualBlock().model().bytes();
  std::ofstream(path("cut.onnx"), std::ios::binary) << whole.substr(0, whole.size() / 2);
  std::string err = error_of(path("cut.onnx"));
  EXPECT_NE(err.find("cut.onnx: is not a complete ONNX model (truncated or damaged)"), std::string::npos) << err;
  std::ofstream(path("empty.onnx"), std::ios::binary) << "";
  EXPECT_NE(error_of(path("empty.onnx")).find("holds no graph"), std::string::npos);
  EXPECT_NE(error_of(path("missing.onnx")).find("no such file"), std::string::npos);
}

TEST_F(Onnx, MissingOrShortExternalDataIsNamed) {
  OnnxBuilder b;
  b.input("x", {0, 2}).output("y", {0, 2});
  auto& w = b.weight("w", {2, 2}, {1, 2, 3, 4});
  w.clear_raw_data();
  w.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* loc = w.add_external_data();
  loc->set_key("location");
  loc->set_value("weights.bin");
  b.node("MatMul", {"x", "w"}, {"y"});
  b.save(path("ext.onnx"));
  std::string err = error_of(path("ext.onnx"));
  EXPECT_NE(err.find("tensor 'w': its external data file"), std::string::npos) << err;
  EXPECT_NE(err.find("weights.bin is missing"), std::string::npos) << err;
  std::ofstream(path("weights.bin"), std::ios::binary) << std::string(4, '\0');
  auto* len = w.add_external_data();
  len->set_key("length");
  len->set_value("16");
  b.save(path("ext.onnx"));
  err = error_of(path("ext.onnx"));
  EXPECT_NE(err.find("holds 4 bytes, the tensor needs 16 (truncated"), std::string::npos) << err;
  float values[4] = {1, 2, 3, 4};
  std::ofstream(path("weights.bin"), std::ios::binary).write(reinterpret_cast<const char*>(values), 16);
  EXPECT_EQ(error_of(path("ext.onnx")), "") << "with the data beside it the model loads";
}

TEST_F(Onnx, AnOpsetOutsideTheSupportedRangeIsRefused) {
  OnnxBuilder b(11);
  b.input("x", {0, 4}).output("y", {0, 4});
  b.node("Relu", {"x"}, {"y"});
  std::string err = error_of(b.save(path("old.onnx")));
  EXPECT_NE(err.find("opset 11 is not supported (cnet runs opsets 13 to 17); re-export with opset_version=17"), std::string::npos) << err;
}

TEST_F(Onnx, ADynamicDimensionOtherThanTheBatchIsNamed) {
  OnnxBuilder b;
  b.input("x", {0, -1}, "width").output("y", {0, -1});
  b.node("Relu", {"x"}, {"y"});
  std::string err = error_of(b.save(path("dyn.onnx")));
  EXPECT_NE(err.find("tensor 'x' (the model's input) has a dynamic dimension 1 ('width') other than the batch"), std::string::npos) << err;
}

TEST_F(Onnx, StagesAreOnlyWhereOneTensorCrosses) {
  // Two branches from the input meet at the end: no place inside where one tensor crosses.
  OnnxBuilder b;
  b.input("x", {0, 4}).output("y", {0, 4});
  b.node("Relu", {"x"}, {"a"});
  b.node("Sigmoid", {"x"}, {"s"});
  b.node("Mul", {"a", "s"}, {"y"});
  LoadedModel m = open_model(b.save(path("branches.onnx")));
  EXPECT_EQ(m.spec.layers.size(), 1u);
  try {
    balance_stages(m.spec, 2);
    FAIL() << "two stages of a graph with one part";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("2 stages asked, but the graph has 1 part(s) between places where exactly one tensor crosses"), std::string::npos)
        << e.what();
  }
}

TEST_F(Onnx, BroadcastingAndMatMulAgainstConstants) {
  // [N,3,2] x [2,4] + [4] -> Softmax: the shape of a transformer's projection and attention weights.
  OnnxBuilder b;
  b.input("x", {0, 3, 2}).output("y", {0, 3, 4});
  b.weight("w", {2, 4}, {1, 0, -1, 2, 0.5f, 1, 0, -2});
  b.weight("bias", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
  b.node("MatMul", {"x", "w"}, {"m"});
  b.node("Add", {"m", "bias"}, {"a"});
  b.node("Softmax", {"a"}, {"y"});
  LoadedModel m = open_model(b.save(path("mm.onnx")));
  std::vector<float> x = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6}, y;
  StageForward(nullptr, m.spec, 0, m.spec.layers.size()).forward(x, 2, y);
  ASSERT_EQ(y.size(), 24u);
  const float w[2][4] = {{1, 0, -1, 2}, {0.5f, 1, 0, -2}}, bias[4] = {0.1f, 0.2f, 0.3f, 0.4f};
  for (int row = 0; row < 6; ++row) {
    double e[4], sum = 0;
    for (int j = 0; j < 4; ++j) sum += e[j] = std::exp(x[row * 2] * w[0][j] + x[row * 2 + 1] * w[1][j] + bias[j]);
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(y[row * 4 + j], e[j] / sum, 1e-6) << row << "," << j;
  }
}

namespace {
onnx::TensorProto& int_weight(OnnxBuilder& b, const std::string& name, const std::vector<long>& values) {
  auto& t = b.weight(name, {static_cast<long>(values.size())}, {});
  t.set_data_type(onnx::TensorProto_DataType_INT64);
  std::vector<std::int64_t> v(values.begin(), values.end());
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8));
  return t;
}
}  // namespace

// What a ViT export does with shapes: the batch read from Shape and put back through Concat/Reshape,
// a class token expanded over the batch and concatenated, heads split and transposed, a slice.
TEST_F(Onnx, ShapeArithmeticFollowsTheBatch) {
  OnnxBuilder b;
  b.input("x", {0, 4, 6}).output("y", {0, 10});
  b.weight("cls", {1, 1, 6}, {9, 8, 7, 6, 5, 4});
  int_weight(b, "zero", {0});
  int_weight(b, "one_six", {1, 6});
  int_weight(b, "heads", {5, 2, 3});
  int_weight(b, "flat", {-1});
  int_weight(b, "starts", {0});
  int_weight(b, "ends", {10});
  int_weight(b, "axes", {1});
  b.node("Shape", {"x"}, {"s"});
  auto& g = b.node("Gather", {"s", "zero"}, {"n"});  // [1]: the batch
  OnnxBuilder::integer(g, "axis", 0);
  auto& c1 = b.node("Concat", {"n", "one_six"}, {"cls_shape"});
  OnnxBuilder::integer(c1, "axis", 0);
  b.node("Expand", {"cls", "cls_shape"}, {"cls_n"});
  auto& c2 = b.node("Concat", {"cls_n", "x"}, {"tokens"});  // [N,5,6]
  OnnxBuilder::integer(c2, "axis", 1);
  auto& c3 = b.node("Concat", {"n", "heads"}, {"split_shape"});
  OnnxBuilder::integer(c3, "axis", 0);
  b.node("Reshape", {"tokens", "split_shape"}, {"split"});  // [N,5,2,3]
  auto& t = b.node("Transpose", {"split"}, {"heads_first"});  // [N,2,5,3]
  OnnxBuilder::ints(t, "perm", {0, 2, 1, 3});
  auto& c4 = b.node("Concat", {"n", "flat"}, {"flat_shape"});
  OnnxBuilder::integer(c4, "axis", 0);
  b.node("Reshape", {"heads_first", "flat_shape"}, {"flat_out"});  // [N,30]
  b.node("Slice", {"flat_out", "starts", "ends", "axes"}, {"y"});  // [N,10]
  LoadedModel m = open_model(b.save(path("shapes.onnx")));
  std::vector<float> x(2 * 24), y;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  StageForward(nullptr, m.spec, 0, m.spec.layers.size()).forward(x, 2, y);
  ASSERT_EQ(y.size(), 20u);
  // Sample 1: tokens are cls then x[24..47] in rows of 6; head 0 takes columns 0-2 of each token.
  const std::vector<float> want = {9, 8, 7, 24, 25, 26, 30, 31, 32, 36};
  EXPECT_EQ(std::vector<float>(y.begin() + 10, y.end()), want);
  EXPECT_EQ(m.spec.output_width(), 10u);
}

// A graph whose output drops the batch from the first axis cannot be cut into rows: said at load.
TEST_F(Onnx, AnOutputWithoutTheBatchFirstIsRefused) {
  OnnxBuilder b;
  b.input("x", {0, 4}).output("y", {4, 0});
  b.node("Transpose", {"x"}, {"y"});
  std::string err = error_of(b.save(path("t.onnx")));
  EXPECT_NE(err.find("does not keep the batch as its first axis ([4,1] for one sample)"), std::string::npos) << err;
}

// FLOPs misjudge stages (an early convolution or a memory-bound operator runs slower per FLOP), so a
// graph's stages are cut by the seconds its ranks timed at load, their median, the same on every rank.
TEST_F(Onnx, StagesAreCutByTheTimeRanksMeasuredAtLoad) {
  ResidualBlock block;
  LoadedModel m = open_model(block.model().save(path("block.onnx")));
  ASSERT_EQ(m.spec.layers.size(), 4u);
  const auto mine = timed_seconds(m.spec);
  ASSERT_EQ(mine.size(), 4u);
  for (double s : mine) EXPECT_GT(s, 0);
  EXPECT_EQ(m.spec.layers[0].seconds, 0) << "not agreed yet: balancing stays on FLOPs";

  // Three ranks: the median per layer, whatever one slow rank timed.
  agree_on_timed_costs(m.spec, {{1, 1, 1, 9}, {1, 1, 1, 3}, {50, 50, 50, 50}});
  EXPECT_EQ(m.spec.layers[0].cost(), 1);
  EXPECT_EQ(m.spec.layers[3].cost(), 9);
  auto stages = balance_stages(m.spec, 2);
  EXPECT_EQ(stages[0].last, 3u) << "the last layer alone takes as long as the three before it";

  try {
    agree_on_timed_costs(m.spec, {{1, 1, 1, 1}, {1, 1}});
    FAIL() << "a rank with another model";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 read a model of 2 part(s)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("every rank must read the same model file"), std::string::npos) << e.what();
  }
}

// A stage holds only its own weights: large weights stay in the model file after loading (no rank ever
// holds the whole model, not even while it is measured) and a stage reads in the ones it computes with.
TEST_F(Onnx, AStageReadsOnlyItsOwnWeightsFromTheFile) {
  OnnxBuilder b;
  b.input("x", {0, 32}).output("y", {0, 32});
  std::vector<float> w1(32 * 64), w2(64 * 32);
  for (std::size_t i = 0; i < w1.size(); ++i) w1[i] = static_cast<float>(i % 7) - 3, w2[i] = static_cast<float>(i % 5) - 2;
  b.weight("w1", {32, 64}, w1);  // 8 KiB each: over the size left in the file
  b.weight("w2", {64, 32}, w2);
  b.weight("shift", {32}, std::vector<float>(32, 1));  // small: kept in memory
  b.node("MatMul", {"x", "w1"}, {"h"});
  b.node("Sigmoid", {"h"}, {"s"});
  b.node("MatMul", {"s", "w2"}, {"m"});
  b.node("Add", {"m", "shift"}, {"y"});
  const std::string file = b.save(path("two.onnx"));
  LoadedModel m = open_model(file);
  auto& g = *m.spec.graph;
  auto value = [&](const std::string& name) -> const Value& {
    for (const auto& v : g.values)
      if (v.name == name) return v;
    throw std::runtime_error("no value " + name);
  };
  EXPECT_TRUE(value("w1").stored && value("w1").data.f.empty());
  EXPECT_TRUE(value("w2").stored && value("w2").data.f.empty());
  EXPECT_FALSE(value("shift").stored);
  ASSERT_EQ(m.spec.layers.size(), 4u);

  auto x = draws(2 * 32, 3);
  std::vector<float> whole;
  {
    LoadedModel one = open_model(file);
    StageForward(nullptr, one.spec, 0, 4).forward(x, 2, whole);
  }
  StageForward last(nullptr, m.spec, 2, 4);  // the second MatMul and the Add
  EXPECT_TRUE(value("w1").stored) << "the first stage's weight stays in the file";
  EXPECT_FALSE(value("w2").stored);
  EXPECT_EQ(value("w2").data.f, w2);
  std::vector<float> mid, y;
  StageForward(nullptr, m.spec, 0, 2).forward(x, 2, mid);
  last.forward(mid, 2, y);
  EXPECT_EQ(y, whole);

  // The file cut short after loading: the stage that reads the lost weight says which and why.
  LoadedModel later = open_model(file);
  std::filesystem::resize_file(file, 100);
  try {
    StageForward(nullptr, later.spec, 0, 1);
    FAIL() << "read a weight from a truncated file";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'w1': cannot read its 8192 bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("replaced or truncated"), std::string::npos) << e.what();
  }
  // Cut inside a large weight: refused at load like any truncated model.
  EXPECT_NE(error_of(file).find("is not a complete ONNX model (truncated or damaged)"), std::string::npos) << error_of(file);
}

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cnet/inference/forward.hpp"
#include "cnet/inference/model.hpp"
#include "cnet/inference/schedule.hpp"
#include "test_files.hpp"

using namespace cnet::inference;
using Model = cnet::inference::test::ScratchDir;

namespace {

// A model file with the given tensors (all filled with `fill`) and layer list.
std::string write_model(const std::string& p, const std::vector<TensorSpec>& tensors, const std::string& layers,
                        const std::vector<std::vector<float>>& values = {}) {
  SafetensorsWriter w(p, tensors, {{"cnet.layers", layers}});
  for (std::size_t i = 0; i < values.size(); ++i) w.write(tensors[i].name, 0, values[i]);
  return p;
}

std::string load_error(const std::string& p) {
  try {
    SafetensorsFile f(p);
    load_model(f);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_F(Model, ExampleModelLoads) {
  std::string p = path("m.safetensors");
  write_example_model(p, {3, 16, 8, 4, 1});
  SafetensorsFile f(p);
  ModelSpec m = load_model(f);
  ASSERT_EQ(m.layers.size(), 5u);  // 3 blocks, final norm, head
  EXPECT_EQ(m.layers[0].kind, LayerKind::residual_mlp);
  EXPECT_EQ(m.layers[0].hidden, 64u);
  EXPECT_EQ(m.input_width(), 16u);
  EXPECT_EQ(m.output_width(), 8u);
  EXPECT_EQ(m.layers[4].describe(), "linear 16->8");
}

TEST_F(Model, ExampleModelInHalfPrecisionIsTheF32OneRounded) {
  std::string p32 = path("m32.safetensors"), p16 = path("m16.safetensors"), pb = path("mb.safetensors");
  write_example_model(p32, {2, 16, 8, 4, 1});
  write_example_model(p16, {2, 16, 8, 4, 1, "F16"});
  write_example_model(pb, {2, 16, 8, 4, 1, "BF16"});
  SafetensorsFile f32(p32), f16(p16), fb(pb);
  EXPECT_EQ(load_model(f16).layers.size(), load_model(f32).layers.size());
  for (const auto& [name, t] : f32.tensors()) {
    EXPECT_EQ(f16.tensor(name).dtype, "F16") << name;
    EXPECT_EQ(fb.tensor(name).dtype, "BF16") << name;
    std::vector<float> a, b, c;
    auto full = f32.floats(name, a), half = f16.floats(name, b), brain = fb.floats(name, c);
    for (std::size_t i = 0; i < full.size(); ++i) {
      EXPECT_NEAR(half[i], full[i], std::fabs(full[i]) / 1024 + 1e-7) << name << "[" << i << "]";
      EXPECT_NEAR(brain[i], full[i], std::fabs(full[i]) / 128 + 1e-30) << name << "[" << i << "]";
    }
  }
}

TEST_F(Model, ExampleFilesAreDeterministic) {
  write_example_model(path("a"), {2, 8, 0, 4, 7});
  write_example_model(path("b"), {2, 8, 0, 4, 7});
  write_example_model(path("c"), {2, 8, 0, 4, 8});
  auto bytes = [&](const std::string& n) {
    std::ifstream in(path(n), std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  EXPECT_EQ(bytes("a"), bytes("b"));
  EXPECT_NE(bytes("a"), bytes("c"));
}

TEST_F(Model, BadLayerListsNameTheLayerAndTensor) {
  // "z" is [65536, 0]: no bytes in the file, yet a layer 65536 wide from nothing (a 200-byte model
  // that made a 256 MiB output).
  std::vector<TensorSpec> t = {{"w", {4, 3}}, {"b", {4}}, {"g", {4}}, {"z", {65536, 0}}, {"w1", {8, 4}}, {"w2", {4, 8}}};
  struct Case {
    std::string layers, expect;
  };
  std::vector<Case> cases = {
      {R"([{"type":"linear","weight":"w","bias":"b"},{"type":"conv"}])", "layer 1: unknown layer type 'conv'"},
      {R"([{"type":"linear","weight":"nope"}])", "tensor 'nope' is not in"},
      {R"([{"type":"linear","weight":"w","bias":"g2"}])", "tensor 'g2'"},
      {R"([{"type":"linear","weight":"w"},{"type":"linear","weight":"w"}])", "layer 1 (linear): tensor 'w' has shape [4,3], expected [4,4]"},
      {R"([{"type":"relu"}])", "cannot come before the first layer with weights"},
      {R"([{"type":"linear","weight":"w"},{"type":"layernorm","weight":"g"}])", "needs \"bias\""},
      {R"([{"type":"linear","weight":"b"}])", "must be 2-D"},
      {R"([])", "non-empty JSON array"},
      {R"({"layers": 3})", "non-empty JSON array"},
      {"[{", "not valid JSON"},
      {R"({"2":22222222222222222222222222e22222222})", "not valid JSON"},  // a number past double (found by fuzzing)
      {R"([{"type":"linear","weight":"w","eps":-1}])", "eps must be a positive number"},
      {R"([{"type":"linear","weight":"z"}])", "has a zero dimension"},
      // A number where a name belongs escaped as a JSON library error (found by fuzzing).
      {R"([{"type":"linear","weight":"w"},{"type":"residual_mlp","fc1_weight":"w1","fc2_weight":"w2","activation":1e-5}])",
       "activation must be gelu or relu"},
      {R"([{"type":"linear","weight":"w","eps":1e300}])", "eps must be a positive number"},  // past float
  };
  for (const auto& c : cases) {
    std::string e = load_error(write_model(path("m.safetensors"), t, c.layers));
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.layers << " -> " << e;
  }
}

TEST_F(Model, LayerListMayLiveBesideTheModel) {
  std::string p = path("m.safetensors");
  { SafetensorsWriter w(p, {{"w", {2, 2}}}, {}); }
  EXPECT_NE(load_error(p).find("m.layers.json"), std::string::npos);
  std::ofstream(path("m.layers.json")) << R"({"layers":[{"type":"linear","weight":"w"},{"type":"softmax"}]})";
  SafetensorsFile f(p);
  EXPECT_EQ(load_model(f).layers.size(), 2u);
}

// A layer list nested a million brackets deep crashed the reader (and then hung); it is refused by its
// depth before anything is built, the message quoting none of it.
TEST_F(Model, ADeeplyNestedLayerListIsRefused) {
  std::string p = path("deep.safetensors");
  { SafetensorsWriter w(p, {{"w", {2, 2}}}, {}); }
  std::ofstream(path("deep.layers.json")) << R"({"layers":[)" + std::string(1'000'000, '[') + std::string(1'000'000, ']') + "]}";
  std::string e = load_error(p);
  EXPECT_NE(e.find("nested deeper than"), std::string::npos) << e.substr(0, 200);
  EXPECT_LT(e.size(), 400u);
}

TEST_F(Model, ForwardMatchesHandComputedValues) {
  // linear: W = [[1,2],[3,4],[0,-1]], b = [0.5, 0, 1]; then relu; then layernorm over 3; then softmax.
  std::vector<TensorSpec> t = {{"w", {3, 2}}, {"b", {3}}, {"g", {3}}, {"beta", {3}}};
  std::string layers = R"([{"type":"linear","weight":"w","bias":"b"},{"type":"relu"},
                           {"type":"layernorm","weight":"g","bias":"beta","eps":1e-5},{"type":"softmax"}])";
  write_model(path("m"), t, layers, {{1, 2, 3, 4, 0, -1}, {0.5f, 0, 1}, {1, 1, 1}, {0, 0, 0}});
  SafetensorsFile f(path("m"));
  ModelSpec m = load_model(f);
  std::vector<float> x = {1, 1, -1, 0}, y;
  StageForward(&f, m, 0, 2).forward(x, 2, y);  // linear + relu
  EXPECT_EQ(y, (std::vector<float>{3.5f, 7, 0, 0, 0, 1}));
  StageForward(&f, m, 0, 4).forward(x, 2, y);
  ASSERT_EQ(y.size(), 6u);
  for (int r = 0; r < 2; ++r) EXPECT_NEAR(y[3 * r] + y[3 * r + 1] + y[3 * r + 2], 1.0, 1e-6);
  EXPECT_GT(y[1], y[0]);  // 7 is the largest of row 0
}

TEST_F(Model, StagesTogetherGiveTheSameBitsAsTheWholeModel) {
  write_example_model(path("m"), {6, 32, 16, 4, 3});
  write_example_input(path("in"), 8, 32, 5);
  SafetensorsFile f(path("m")), in(path("in"));
  ModelSpec m = load_model(f);
  std::vector<float> s;
  auto x = in.floats("input", s);
  std::vector<float> whole, mid, split;
  StageForward(&f, m, 0, m.layers.size()).forward(x, 8, whole);
  StageForward(&f, m, 0, 3).forward(x, 8, mid);
  StageForward(&f, m, 3, m.layers.size()).forward(mid, 8, split);
  ASSERT_EQ(whole.size(), 8u * 16);
  EXPECT_EQ(0, std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)));

  // A part of a stage's layers (as a stage whose cut swings runs them) gives the same bits too.
  StageForward held(&f, m, 1, m.layers.size());
  std::vector<std::size_t> done;
  held.forward_layers(3, m.layers.size(), mid, 8, split, [&](std::size_t layer) { done.push_back(layer); });
  EXPECT_EQ(done, (std::vector<std::size_t>{3, 4, 5, 6, 7}));
  ASSERT_EQ(split.size(), whole.size());
  EXPECT_EQ(0, std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)));
  // Layers it does not hold, an empty part, and too little input are refused, not read past.
  EXPECT_THROW(held.forward_layers(0, 3, x, 8, split, {}), std::out_of_range);
  EXPECT_THROW(held.forward_layers(3, m.layers.size() + 1, mid, 8, split, {}), std::out_of_range);
  EXPECT_THROW(held.forward_layers(3, 3, mid, 8, split, {}), std::out_of_range);
  EXPECT_THROW(held.forward_layers(3, 5, std::span<const float>(mid).first(7 * 32), 8, split, {}), std::invalid_argument);
}

TEST(Schedule, BalancesCostNotLayerCount) {
  ModelSpec m;
  auto linear = [](std::size_t in, std::size_t out) {
    LayerSpec l;
    l.kind = LayerKind::linear, l.in = in, l.out = out;
    return l;
  };
  // one big layer, then six small ones: two stages must split 1 | 6, not 4 | 3
  m.layers = {linear(1000, 1000)};
  for (int i = 0; i < 6; ++i) m.layers.push_back(linear(100, 1000));
  auto st = balance_stages(m, 2);
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].first, 0u);
  EXPECT_EQ(st[0].last, 1u);
  EXPECT_EQ(st[1].last, 7u);
  auto four = balance_stages(m, 4);
  for (std::size_t i = 1; i < four.size(); ++i) EXPECT_EQ(four[i].first, four[i - 1].last);
  EXPECT_THROW(balance_stages(m, 8), std::invalid_argument);
  EXPECT_THROW(balance_stages(m, 0), std::invalid_argument);
}

namespace {
// Six layers of equal cost, so a split's cost is its layer count.
ModelSpec six_equal_layers() {
  ModelSpec m;
  for (int i = 0; i < 6; ++i) {
    LayerSpec l;
    l.kind = LayerKind::linear, l.in = 10, l.out = 10;
    m.layers.push_back(l);
  }
  return m;
}
}  // namespace

TEST(Schedule, StagesOfGivenLayerCounts) {
  ModelSpec m = six_equal_layers();
  auto st = split_stages(m, {4, 2}, 2);
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].first, 0u);
  EXPECT_EQ(st[0].last, 4u);
  EXPECT_EQ(st[1].first, 4u);
  EXPECT_EQ(st[1].last, 6u);
  EXPECT_DOUBLE_EQ(st[0].cost, 2 * st[1].cost);
  auto message = [&](std::vector<std::size_t> counts, unsigned stages) {
    try {
      split_stages(m, counts, stages);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({3, 2}, 2).find("5 layers, the model has 6"), std::string::npos) << message({3, 2}, 2);
  EXPECT_NE(message({2, 2, 2}, 2).find("3 stages, the job has 2"), std::string::npos) << message({2, 2, 2}, 2);
  EXPECT_NE(message({6, 0}, 2).find("at least one layer"), std::string::npos) << message({6, 0}, 2);
}

TEST(Schedule, BalancesForUnequalSpeeds) {
  ModelSpec m = six_equal_layers();
  auto st = balance_stages(m, std::vector<double>{2.0, 1.0});  // stage 0 twice as fast: 4 | 2
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].last, 4u);
  EXPECT_THROW(balance_stages(m, std::vector<double>{1.0, 0.0}), std::invalid_argument);

  // Split 3 | 3, stage 0 took twice as long: 2 | 4 evens them out, a third off the slowest stage's time.
  auto even = balance_stages(m, 2);
  auto advice = faster_split(m, even, {2.0, 1.0});
  ASSERT_TRUE(advice);
  EXPECT_EQ(advice->layers_per_stage, (std::vector<std::size_t>{2, 4}));
  EXPECT_EQ(advice->slowest, 0u);
  EXPECT_NEAR(advice->gain, 1.0 / 3, 1e-9);
  // Within noise, a run too short to tell warm-up from speed, a stage that computed nothing, a single
  // stage: no advice.
  EXPECT_FALSE(faster_split(m, even, {1.0, 1.02}));
  EXPECT_FALSE(faster_split(m, even, {0.2, 0.1}));
  EXPECT_FALSE(faster_split(m, even, {1.0, 0.0}));
  EXPECT_FALSE(faster_split(m, balance_stages(m, 1), {1.0}));
}

TEST(Schedule, ParsesStageLayerCounts) {
  EXPECT_EQ(parse_stage_layers("9,7"), (std::vector<std::size_t>{9, 7}));
  EXPECT_EQ(parse_stage_layers("12"), (std::vector<std::size_t>{12}));
  for (const char* bad : {"", "9,", ",9", "9,,7", "a,7", "9;7", "-1,3", "9 ,7", "99999999999999999999999,1"})
    EXPECT_THROW(parse_stage_layers(bad), std::invalid_argument) << bad;
}

TEST(Schedule, LayoutsAndMicroBatches) {
  JobLayout p = make_layout(Scheme::pipeline, 4, 0);
  EXPECT_EQ(p.stages, 4u);
  EXPECT_EQ(p.writer(), 3u);
  JobLayout h = make_layout(Scheme::hybrid, 6, 3);
  EXPECT_EQ(h.replicas, 2u);
  EXPECT_EQ(h.stage_of(4), 1u);
  EXPECT_EQ(h.replica_of(4), 1u);
  EXPECT_EQ(h.rank_of(1, 2), 5u);
  EXPECT_EQ(make_layout(Scheme::data, 3, 0).replicas, 3u);
  EXPECT_THROW(make_layout(Scheme::pipeline, 3, 2), std::invalid_argument);
  EXPECT_THROW(make_layout(Scheme::hybrid, 5, 2), std::invalid_argument);
  EXPECT_THROW(make_layout(Scheme::data, 2, 2), std::invalid_argument);

  auto mbs = micro_batches(10, 4);
  ASSERT_EQ(mbs.size(), 3u);
  EXPECT_EQ(mbs[2].first_row, 8u);
  EXPECT_EQ(mbs[2].rows, 2u);
  auto second = share_of(mbs, 1, 2);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].index, 1u);
  EXPECT_THROW(micro_batches(10, 0), std::invalid_argument);
}

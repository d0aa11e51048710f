#include "cnet/inference/images.hpp"

#include <gtest/gtest.h>
#include <png.h>

#include <fstream>

#include "cnet/inference/predictions.hpp"
#include "cnet/inference/safetensors.hpp"
#include "test_files.hpp"

using namespace cnet::inference;

namespace {

class Images : public cnet::inference::test::ScratchDir {
 protected:
  // A PNG whose pixel (x, y) is (x, y, 7), through libpng's own writer.
  std::string png(const std::string& name, unsigned w, unsigned h) {
    std::vector<unsigned char> rgb(w * h * 3);
    for (unsigned y = 0; y < h; ++y)
      for (unsigned x = 0; x < w; ++x) {
        rgb[(y * w + x) * 3] = static_cast<unsigned char>(x), rgb[(y * w + x) * 3 + 1] = static_cast<unsigned char>(y);
        rgb[(y * w + x) * 3 + 2] = 7;
      }
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    image.width = w, image.height = h, image.format = PNG_FORMAT_RGB;
    std::string p = path(name);
    EXPECT_TRUE(png_image_write_to_file(&image, p.c_str(), 0, rgb.data(), 0, nullptr));
    return p;
  }
  std::string error_of(const std::string& p, const ImagePreprocess& pre = {}) {
    try {
      load_image(p, pre);
    } catch (const ImageError& e) {
      return e.what();
    }
    return "";
  }
};

}  // namespace

// No resize (the shorter side is already the size), a centre crop: the values are the pixels', scaled
// and normalised, in CHW order.
TEST_F(Images, ACropOfAnImageAtSizeIsItsPixelsNormalised) {
  ImagePreprocess p;
  p.resize = 4, p.crop = 2, p.mean = {0, 0, 0}, p.std = {1, 1, 1};
  auto v = load_image(png("a.png", 6, 4), p);  // 6x4: shorter side 4 already; crop rows 1-2, columns 2-3
  ASSERT_EQ(v.size(), 12u);
  EXPECT_FLOAT_EQ(v[0], 2 / 255.0f);   // R at (x=2, y=1) is x
  EXPECT_FLOAT_EQ(v[1], 3 / 255.0f);
  EXPECT_FLOAT_EQ(v[4], 1 / 255.0f);   // G is y
  EXPECT_FLOAT_EQ(v[6], 2 / 255.0f);
  EXPECT_FLOAT_EQ(v[8], 7 / 255.0f);   // B
}

// Halves round to even as Python's round does in torchvision's CenterCrop: 7 - 2 = 5 columns, left 2.
TEST_F(Images, TheCropRoundsAsTorchvisionDoes) {
  ImagePreprocess p;
  p.resize = 4, p.crop = 2, p.mean = {0, 0, 0}, p.std = {1, 1, 1};
  auto v = load_image(png("b.png", 7, 4), p);
  EXPECT_FLOAT_EQ(v[0], 2 / 255.0f);
}

TEST_F(Images, WhatIsNotAnImageIsNamed) {
  std::ofstream(path("text.jpg")) << "hello";
  EXPECT_NE(error_of(path("text.jpg")).find("text.jpg: not a JPEG or PNG image"), std::string::npos);
  std::string whole;
  {
    png("c.png", 64, 64);
    std::ifstream in(path("c.png"), std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(path("cut.png"), std::ios::binary) << whole.substr(0, whole.size() / 2);
  EXPECT_NE(error_of(path("cut.png")).find("cut.png: damaged or truncated PNG"), std::string::npos) << error_of(path("cut.png"));
  std::ofstream(path("cut.jpg"), std::ios::binary) << std::string("\xFF\xD8\xFF\xE0", 4);
  EXPECT_NE(error_of(path("cut.jpg")).find("cut.jpg: damaged or truncated JPEG"), std::string::npos) << error_of(path("cut.jpg"));
  EXPECT_NE(error_of(path("none.png")).find("none.png"), std::string::npos);
}

TEST_F(Images, AFolderIsListedInNameOrderAndAListAgainstItsFolder) {
  png("b.PNG", 2, 2);
  png("a.png", 2, 2);
  std::ofstream(path("readme.txt")) << "not an image";
  auto names = list_images(scratch_.path().string());
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], path("a.png"));
  EXPECT_EQ(names[1], path("b.PNG"));
  std::ofstream(path("list.txt")) << "# two\nb.PNG\n\na.png\n";
  EXPECT_EQ(list_images(path("list.txt")), (std::vector<std::string>{path("b.PNG"), path("a.png")}));
  EXPECT_TRUE(names_images(path("list.txt")));
  EXPECT_FALSE(names_images(path("x.safetensors")));
  std::filesystem::create_directory(path("empty"));
  try {
    list_images(path("empty"));
    FAIL();
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("no images in the folder (cnet-run reads *.jpg, *.jpeg and *.png)"), std::string::npos);
  }
}

TEST_F(Images, ChannelTriplesAreThreeNumbers) {
  EXPECT_EQ(parse_channel_triple("0.5, 0.25,1", "--std", true), (std::array<float, 3>{0.5f, 0.25f, 1.0f}));
  EXPECT_THROW(parse_channel_triple("0.5,0.25", "--std", true), std::invalid_argument);
  EXPECT_THROW(parse_channel_triple("0.5,0,1", "--std", true), std::invalid_argument);
  EXPECT_THROW(parse_channel_triple("1,2,3,4", "--mean", false), std::invalid_argument);
  EXPECT_THROW(parse_channel_triple("a,b,c", "--mean", false), std::invalid_argument);
}

TEST_F(Images, PredictionsAreTheTopScoresInRowOrder) {
  std::vector<float> logits = {0, 3, 1, 2,   5, 5, 0, 1};  // two rows of 4 classes; a tie keeps the lower index first
  write_predictions(path("p.jsonl"), logits, 4, {"/x/a.jpg", "/x/b.png"}, {2, {"zero", "one", "two", "thr,ee"}});
  std::ifstream in(path("p.jsonl"));
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_NE(first.find(R"({"file":"a.jpg","top_k":[1,3],"scores":[0.643914,0.236883],"labels":["one","thr,ee"]})"), std::string::npos) << first;
  EXPECT_NE(second.find(R"("top_k":[0,1])"), std::string::npos) << second;
  write_predictions(path("p.csv"), logits, 4, {}, {2, {"zero", "one", "two", "thr,ee"}});
  std::ifstream csv(path("p.csv"));
  std::getline(csv, first);
  std::getline(csv, second);
  EXPECT_EQ(first, "row,class_1,score_1,label_1,class_2,score_2,label_2");
  EXPECT_EQ(second, "0,1,0.643914,one,3,0.236883,\"thr,ee\"");
  std::ofstream(path("labels.txt")) << "a\nb\n";
  EXPECT_THROW(read_labels(path("labels.txt"), 3), FormatError);
  EXPECT_EQ(read_labels(path("labels.txt"), 2).size(), 2u);
}

#include "cnet/inference/images.hpp"

// clang-format off
#include <cstdio>
#include <csetjmp>
#include <jpeglib.h>
#include <png.h>
// clang-format on

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cnet/common/files.hpp"
#include "cnet/common/text.hpp"
#include "cnet/inference/safetensors.hpp"

namespace cnet::inference {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kMostPixels = 1ull << 28;  // 16k x 16k: a larger header is a damaged or hostile file

struct Rgb {
  std::size_t width = 0, height = 0;
  std::vector<unsigned char> pixels;  // height x width x 3
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool image_extension(const fs::path& p) {
  std::string e = lower(p.extension().string());
  return e == ".jpg" || e == ".jpeg" || e == ".png";
}

// libjpeg reports errors through a callback that must not return, and merely warns about a truncated
// file (filling the rest grey): both end the decode here, with libjpeg's own words.
struct JpegErrors {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

void jpeg_fail(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegErrors*>(c->err);
  c->err->format_message(c, e->message);
  std::longjmp(e->jump, 1);
}

void jpeg_warn(j_common_ptr c, int level) {
  if (level < 0) jpeg_fail(c);  // a warning (corrupt or truncated data), not trace output
}

// `img` lives in the caller: nothing this frame changes after setjmp is read after the jump.
void decode_jpeg(const std::string& path, const std::string& bytes, Rgb& img) {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors;
  cinfo.err = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = jpeg_fail;
  errors.mgr.emit_message = jpeg_warn;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw ImageError(path + ": damaged or truncated JPEG (" + std::string(errors.message) + ")");
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;  // greyscale and CMYK come out as RGB too
  if (static_cast<std::size_t>(cinfo.image_width) * cinfo.image_height > kMostPixels) {
    jpeg_destroy_decompress(&cinfo);
    throw ImageError(path + ": " + std::to_string(cinfo.image_width) + "x" + std::to_string(cinfo.image_height) + " pixels is more than cnet decodes (268M)");
  }
  jpeg_start_decompress(&cinfo);
  img.width = cinfo.output_width;
  img.height = cinfo.output_height;
  img.pixels.resize(img.width * img.height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    unsigned char* row = img.pixels.data() + static_cast<std::size_t>(cinfo.output_scanline) * img.width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
}

Rgb decode_png(const std::string& path, const std::string& bytes) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    throw ImageError(path + ": damaged PNG (" + std::string(image.message) + ")");
  if (static_cast<std::size_t>(image.width) * image.height > kMostPixels) {
    png_image_free(&image);
    throw ImageError(path + ": " + std::to_string(image.width) + "x" + std::to_string(image.height) + " pixels is more than cnet decodes (268M)");
  }
  image.format = PNG_FORMAT_RGB;  // alpha composited on black, palettes and grey expanded
  Rgb img;
  img.width = image.width;
  img.height = image.height;
  img.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, img.pixels.data(), 0, nullptr))
    throw ImageError(path + ": damaged or truncated PNG (" + std::string(image.message) + ")");
  return img;
}

// Bilinear resize to out_w x out_h, sampling at pixel centres (align_corners=False), into floats 0..255.
std::vector<float> resize(const Rgb& img, std::size_t out_w, std::size_t out_h) {
  std::vector<float> out(out_w * out_h * 3);
  const double sx = static_cast<double>(img.width) / static_cast<double>(out_w), sy = static_cast<double>(img.height) / static_cast<double>(out_h);
  auto source = [](double scale, std::size_t o, std::size_t size, std::size_t& i0, std::size_t& i1, double& t) {
    double s = std::max((static_cast<double>(o) + 0.5) * scale - 0.5, 0.0);
    i0 = std::min(static_cast<std::size_t>(s), size - 1);
    i1 = std::min(i0 + 1, size - 1);
    t = s - static_cast<double>(i0);
  };
  for (std::size_t y = 0; y < out_h; ++y) {
    std::size_t y0, y1;
    double ty;
    source(sy, y, img.height, y0, y1, ty);
    for (std::size_t x = 0; x < out_w; ++x) {
      std::size_t x0, x1;
      double tx;
      source(sx, x, img.width, x0, x1, tx);
      for (std::size_t c = 0; c < 3; ++c) {
        auto at = [&](std::size_t yy, std::size_t xx) { return static_cast<double>(img.pixels[(yy * img.width + xx) * 3 + c]); };
        double top = at(y0, x0) * (1 - tx) + at(y0, x1) * tx, bottom = at(y1, x0) * (1 - tx) + at(y1, x1) * tx;
        out[(y * out_w + x) * 3 + c] = static_cast<float>(top * (1 - ty) + bottom * ty);
      }
    }
  }
  return out;
}

std::string triple(const std::array<float, 3>& v) {
  std::ostringstream s;
  s << v[0] << "," << v[1] << "," << v[2];
  return s.str();
}

}  // namespace

std::string ImagePreprocess::describe() const {
  return "resize " + std::to_string(resize) + ", crop " + std::to_string(crop) + ", mean " + triple(mean) + ", std " + triple(std);
}

bool names_images(const std::string& input) {
  std::error_code ec;
  return fs::is_directory(input, ec) || lower(fs::path(input).extension().string()) == ".txt";
}

std::vector<std::string> list_images(const std::string& input) {
  std::vector<std::string> out;
  std::error_code ec;
  if (fs::is_directory(input, ec)) {
    for (const auto& e : fs::directory_iterator(input, ec))
      if (image_extension(e.path()) && e.is_regular_file(ec)) out.push_back(e.path().string());
    if (ec) throw ImageError(input + ": cannot list the folder (" + ec.message() + ")");
    std::sort(out.begin(), out.end());
    if (out.empty()) throw ImageError(input + ": no images in the folder (cnet-run reads *.jpg, *.jpeg and *.png)");
    return out;
  }
  std::string text;
  try {
    text = common::read_file(input);
  } catch (const common::FileError& e) {
    throw ImageError(e.what());
  }
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    line = common::trim(line);
    if (line.empty() || line[0] == '#') continue;
    fs::path p(line);
    out.push_back(p.is_absolute() ? p.string() : (fs::path(input).parent_path() / p).string());
  }
  if (out.empty()) throw ImageError(input + ": the list names no images (one path per line)");
  return out;
}

std::vector<float> load_image(const std::string& path, const ImagePreprocess& p) {
  std::string bytes;
  try {
    bytes = common::read_file(path, 1ull << 30);
  } catch (const common::FileError& e) {
    throw ImageError(e.what());
  }
  Rgb img;
  if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xFF && static_cast<unsigned char>(bytes[1]) == 0xD8) decode_jpeg(path, bytes, img);
  else if (bytes.size() >= 8 && bytes.compare(1, 3, "PNG") == 0) img = decode_png(path, bytes);
  else throw ImageError(path + ": not a JPEG or PNG image");
  if (img.width == 0 || img.height == 0) throw ImageError(path + ": the image has no pixels");
  // The shorter side to `resize`, the longer in proportion (torchvision truncates it the same way).
  const std::size_t shorter = std::min(img.width, img.height), longer = std::max(img.width, img.height);
  const std::size_t scaled_longer = static_cast<std::size_t>(static_cast<double>(p.resize) * static_cast<double>(longer) / static_cast<double>(shorter));
  const std::size_t w = img.width <= img.height ? p.resize : scaled_longer, h = img.width <= img.height ? scaled_longer : p.resize;
  std::vector<float> resized = resize(img, w, h);
  // The centre crop, rounded as torchvision's CenterCrop does (Python's round: halves to even).
  const std::size_t top = static_cast<std::size_t>(std::nearbyint(static_cast<double>(h - p.crop) / 2.0)),
                    left = static_cast<std::size_t>(std::nearbyint(static_cast<double>(w - p.crop) / 2.0));
  std::vector<float> out(p.values());
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t y = 0; y < p.crop; ++y)
      for (std::size_t x = 0; x < p.crop; ++x)
        out[(c * p.crop + y) * p.crop + x] = (resized[((top + y) * w + left + x) * 3 + c] / 255.0f - p.mean[c]) / p.std[c];
  return out;
}

void write_image_input(const std::string& path, const std::vector<std::string>& images, const ImagePreprocess& p) {
  TensorSpec t{"input", {images.size(), p.values()}};
  SafetensorsWriter w(path, {t}, {{"format", "pt"}, {"cnet.preprocess", p.describe()}});
  for (std::size_t i = 0; i < images.size(); ++i) w.write("input", i * p.values(), load_image(images[i], p));
  w.sync();
}

std::array<float, 3> parse_channel_triple(const std::string& text, const std::string& flag, bool positive) {
  std::array<float, 3> v{};
  std::istringstream in(text);
  std::string part;
  std::size_t n = 0;
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    part = common::trim(part);
    double d = std::strtod(part.c_str(), &end);
    if (n >= 3 || part.empty() || *end != '\0' || !std::isfinite(d) || (positive && d <= 0))
      throw std::invalid_argument(flag + " takes three numbers for R,G,B" + std::string(positive ? " above 0" : "") + ", e.g. " +
                                  (positive ? "0.229,0.224,0.225" : "0.485,0.456,0.406") + "; got '" + common::printable(text, 64) + "'");
    v[n++] = static_cast<float>(d);
  }
  if (n != 3) throw std::invalid_argument(flag + " takes three numbers for R,G,B, e.g. 0.485,0.456,0.406; got '" + common::printable(text, 64) + "'");
  return v;
}

}  // namespace cnet::inference

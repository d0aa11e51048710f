#pragma once
// Images as a vision model's input: JPEG (libjpeg-turbo) and PNG (libpng) decoded to RGB, then
// torchvision's standard preprocessing: the shorter side resized to `resize` (bilinear, as
// torch.nn.functional.interpolate with align_corners=False, no antialiasing), a centre crop of `crop`,
// scaled to [0, 1] and normalised with `mean`/`std` per channel; CHW floats, the layout the model takes.
// Two small decoders from Debian rather than OpenCV: they are what Pillow and torchvision decode with,
// and the resize is a few lines whose rounding is then known.

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace cnet::inference {

class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ImagePreprocess {
  std::size_t resize = 256, crop = 224;
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f}, std{0.229f, 0.224f, 0.225f};
  std::size_t values() const { return 3 * crop * crop; }
  std::string describe() const;  // "resize 256, crop 224, mean 0.485,0.456,0.406, std 0.229,0.224,0.225"
};

// Whether --input names images: a folder, or a list file (.txt, one image path per line).
bool names_images(const std::string& input);
// The images --input names: a folder's *.jpg/*.jpeg/*.png (any case) in file-name order, or a list
// file's paths (relative ones against the list's folder) in its order. Throws ImageError when there are
// none, naming the folder and what it looks for.
std::vector<std::string> list_images(const std::string& input);

// One image, decoded and preprocessed: values() floats. Throws ImageError naming the file and what is
// wrong (not a JPEG or PNG, truncated, damaged, too large).
std::vector<float> load_image(const std::string& path, const ImagePreprocess& p);

// The images preprocessed into a tensor 'input' [images, 3 x crop x crop] (safetensors): what cnet-run
// feeds the model, for a comparison with another framework on the same values.
void write_image_input(const std::string& path, const std::vector<std::string>& images, const ImagePreprocess& p);

// Parses "0.485,0.456,0.406" (--mean, --std): three numbers, std ones above 0.
std::array<float, 3> parse_channel_triple(const std::string& text, const std::string& flag, bool positive);

}  // namespace cnet::inference

// What a job reads as its rows: a tensor file, or a folder of images decoded into the model's input.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "cnet/common/files.hpp"
#include "cnet/inference/progress_log.hpp"
#include "job.hpp"

namespace cnet::inference {
namespace {

InputRows open_tensor(const std::string& path, std::size_t width) {
  InputRows in;
  in.file = std::make_unique<SafetensorsFile>(path);
  std::string name = "input";
  if (!in.file->tensors().count(name)) {
    if (in.file->tensors().size() != 1)
      throw FormatError(path + ": needs a tensor named 'input' of shape [rows, " + std::to_string(width) + "]");
    name = in.file->tensors().begin()->first;
  }
  const TensorInfo& t = in.file->tensor(name);
  if (t.shape.size() != 2 || t.shape[1] != width)
    throw FormatError(path + ": tensor '" + name + "' has shape " + nlohmann::json(t.shape).dump() + ", but the model's first layer takes rows of width " +
                      std::to_string(width) + " ([rows, " + std::to_string(width) + "])");
  in.data = in.file->floats(name, in.storage);
  in.file_backed = in.storage.empty();  // F32 is read in place from the file's mapping
  in.rows = t.shape[0];
  return in;
}

// Decoded images go to a scratch file, not to memory: a folder of 50 000 ImageNet images is 30 GB of
// floats. The file is in $TMPDIR (Slurm's job-private one under a job_container, else /tmp), unlinked
// from the start so nothing is left behind whatever happens to the job, written image by image and
// then mapped; its pages are the kernel's to evict and read back, and sent rows are released.
class ScratchRows {
 public:
  ScratchRows() : folder_(common::temp_folder()) {
    fd_ = ::open(folder_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) {  // a filesystem without O_TMPFILE: a named file, unlinked at once
      std::string name = folder_ + "/cnet-run-images-XXXXXX";
      fd_ = ::mkostemp(name.data(), O_CLOEXEC);
      if (fd_ >= 0) ::unlink(name.c_str());
    }
    if (fd_ < 0)
      throw FormatError("cannot make a scratch file for the decoded images in " + folder_ + " (" + std::strerror(errno) +
                        "): set TMPDIR to a writable folder");
  }
  ~ScratchRows() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScratchRows(const ScratchRows&) = delete;
  ScratchRows& operator=(const ScratchRows&) = delete;

  void append(std::span<const float> values, std::size_t total_rows, std::size_t width) {
    const char* p = reinterpret_cast<const char*>(values.data());
    for (std::size_t left = values.size_bytes(); left > 0;) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw FormatError("cannot write the decoded images to a scratch file in " + folder_ + " (" + std::strerror(n < 0 ? errno : EIO) + "): " +
                          std::to_string(total_rows * width * sizeof(float) >> 20) + " MiB are needed; set TMPDIR to a folder with that much free");
      p += n, left -= static_cast<std::size_t>(n), bytes_ += static_cast<std::size_t>(n);
    }
  }

  std::shared_ptr<const float> map() const {
    void* at = ::mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd_, 0);
    if (at == MAP_FAILED) throw FormatError("cannot map the decoded images' scratch file (" + std::string(std::strerror(errno)) + ")");
    const std::size_t bytes = bytes_;
    return std::shared_ptr<const float>(static_cast<const float*>(at), [bytes](const float* q) { ::munmap(const_cast<float*>(q), bytes); });
  }

 private:
  std::string folder_;
  int fd_ = -1;
  std::size_t bytes_ = 0;
};

// A vision model takes [3, H, W] per sample: the crop must be that size.
void check_image_model(const std::string& input, const ModelSpec& model, const ImagePreprocess& p) {
  if (!model.graph)
    throw FormatError("--input " + input + " names images, but the model is a layer list taking rows of width " + std::to_string(model.input_width()) +
                      "; images need a vision model (an ONNX file whose input is [batch, 3, H, W])");
  const auto& shape = model.graph->values[model.graph->input].sample_shape;
  if (shape.size() != 3 || shape[0] != 3)
    throw FormatError("--input " + input + " names images, but the model's input is not [batch, 3, H, W] (it is " + std::to_string(shape.size() + 1) +
                      "-D): give it a tensor file instead");
  if (shape[1] != static_cast<std::int64_t>(p.crop) || shape[2] != static_cast<std::int64_t>(p.crop))
    throw FormatError("the model takes " + std::to_string(shape[1]) + "x" + std::to_string(shape[2]) + " images, but --crop is " + std::to_string(p.crop) +
                      ": give --crop " + std::to_string(shape[1]) + (shape[1] != shape[2] ? " (a square crop cannot fill a non-square input)" : ""));
}

}  // namespace

InputRows open_input(const std::string& path, const ModelSpec& model, const InputOptions& options, bool decode) {
  if (!names_images(path)) return open_tensor(path, model.input_width());
  check_image_model(path, model, options.images);
  InputRows in;
  try {
    in.names = list_images(path);
  } catch (const ImageError& e) {
    throw FormatError(std::string("--input: ") + e.what());
  }
  if (!decode) {
    in.rows = in.names.size();
    return in;
  }
  const std::size_t width = options.images.values();
  std::vector<std::string> kept;
  ScratchRows scratch;
  for (const auto& name : in.names) {
    try {
      auto values = load_image(name, options.images);
      scratch.append(values, in.names.size(), width);
      kept.push_back(name);
    } catch (const ImageError& e) {
      if (!options.skip_bad) throw FormatError(std::string(e.what()) + "; remove it, or pass --skip-bad-inputs to leave such files out");
      in.skipped.push_back(e.what());
    }
  }
  if (kept.empty()) throw FormatError("--input " + path + ": none of the " + std::to_string(in.names.size()) + " files is a readable image");
  in.names = std::move(kept);
  in.rows = in.names.size();
  in.scratch = scratch.map();
  in.data = std::span<const float>(in.scratch.get(), in.rows * width);
  in.file_backed = true;
  return in;
}

void InputRows::release(std::size_t first, std::size_t count, std::size_t width) const {
  if (!file_backed || data.empty() || count == 0) return;
  static const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Whole pages inside the rows only: the pages at either end may hold a neighbour's values.
  const auto begin = reinterpret_cast<std::uintptr_t>(data.data() + first * width), end = reinterpret_cast<std::uintptr_t>(data.data() + (first + count) * width);
  const std::uintptr_t from = (begin + page - 1) / page * page, to = end / page * page;
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

void drop_skipped(InputRows& input, const std::vector<std::string>& skipped) {
  std::set<std::string> bad;
  for (const auto& why : skipped)  // "PATH: why"
    for (const auto& name : input.names)
      if (why.starts_with(name + ": ")) bad.insert(name);
  std::erase_if(input.names, [&](const std::string& n) { return bad.count(n) > 0; });
  input.skipped = skipped;
  input.rows = input.names.size();
}

std::string input_identity(const InferenceOptions& o, const InputRows& input) {
  if (input.names.empty()) return file_identity(o.input);
  std::string all = o.inputs.images.describe();
  for (const auto& name : input.names) all += "\n" + name + " " + file_identity(name);
  return text_identity(all);
}

}  // namespace cnet::inference

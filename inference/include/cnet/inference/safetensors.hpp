#pragma once
// safetensors files: an 8-byte little-endian header length, a JSON header naming every tensor (dtype,
// shape, data_offsets) plus an optional string map "__metadata__", then the raw little-endian data.
// SafetensorsFile maps a file read-only and checks all of it before anyone computes with it;
// SafetensorsWriter lays out a file of F32 tensors up front and fills it in pieces (pwrite), so a few-GB
// model or an output written row by row never has to sit in memory whole.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace cnet::inference {

// A file that is not a well-formed safetensors file, or lacks what the model needs. The message names
// the file, the tensor or byte offset, and what is wrong.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TensorInfo {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", ...
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets into the data section, end exclusive
  std::uint64_t elements() const;
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // maps and validates; throws FormatError
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo& tensor(const std::string& name) const;  // throws FormatError naming the missing tensor
  std::uint64_t data_offset() const { return data_offset_; }  // file offset of the data section

  // The tensor as floats: F32 in place (no copy), F16 and BF16 converted; other dtypes throw.
  std::span<const float> floats(const std::string& name, std::vector<float>& storage) const;
  // The tensor's bytes as stored (the GPU path uploads F16/BF16 weights without converting them).
  std::span<const std::byte> raw(const std::string& name) const;

 private:
  std::string path_;
  int fd_ = -1;
  const std::byte* map_ = nullptr;
  std::size_t size_ = 0;
  std::uint64_t data_offset_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, TensorInfo> tensors_;
};

// Bytes per element of a safetensors dtype, 0 for an unknown one.
std::size_t dtype_size(const std::string& dtype);

struct TensorSpec {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::string dtype = "F32";  // or F16/BF16: write() rounds to nearest even
};

class SafetensorsWriter {
 public:
  // Writes the header for these tensors (F32, F16, BF16) and sizes the file; data is then filled with write().
  // `create`: a new file (an existing one is replaced); otherwise an existing file with exactly this
  // layout is reopened to go on filling it (resume), else FormatError says how it differs.
  SafetensorsWriter(const std::string& path, const std::vector<TensorSpec>& tensors,
                    const std::map<std::string, std::string>& metadata, bool create = true);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Writes `values` at element `first_element` of tensor `name`.
  void write(const std::string& name, std::uint64_t first_element, std::span<const float> values);
  void sync();  // data reaches the disk before the caller records it as done

 private:
  std::string path_;
  int fd_ = -1;
  std::map<std::string, TensorInfo> layout_;
  std::uint64_t data_offset_ = 0;
};

// The header a writer produces for these tensors (exposed for tests that damage files on purpose).
std::string safetensors_header(const std::vector<TensorSpec>& tensors, const std::map<std::string, std::string>& metadata);

}  // namespace cnet::inference

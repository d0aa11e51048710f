#include "cnet/inference/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "bounded_json.hpp"
#include "cnet/common/text.hpp"

namespace cnet::inference {
namespace {

using json = nlohmann::json;
using common::printable;
constexpr std::uint64_t kMaxHeader = 100'000'000;  // the reference reader's limit
constexpr int kMaxDepth = 8;                       // a header is objects of tensors of arrays: 3 levels
constexpr std::size_t kMaxTensors = 200'000;        // the largest published checkpoints hold a few thousand per file

std::string sys_error(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

float half_to_float(std::uint16_t h) {
  std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  std::uint32_t bits = exp == 31 ? sign | 0x7f800000u | (mant << 13) : sign | ((exp + 112) << 23) | (mant << 13);
  return std::bit_cast<float>(bits);
}

// Round to nearest even, as PyTorch's .half() and .bfloat16() do.
// By hand: _Float16 is not available with every compiler cnet builds with (clang before 15).
std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f), mag = x & 0x7fffffffu;
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  if (mag > 0x7f800000u) return sign | 0x7e00u | static_cast<std::uint16_t>((mag >> 13) & 0x3ffu);  // NaN stays NaN
  if (mag >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round to infinity
  std::uint32_t h, rem, half;
  if (mag >= 0x38800000u) {  // a normal half: rebias the exponent, keep 10 mantissa bits
    h = (mag - 0x38000000u) >> 13, rem = mag & 0x1fffu, half = 0x1000u;
  } else {  // subnormal half (or zero): units of 2^-24
    const std::uint32_t shift = 126 - (mag >> 23), m = (mag & 0x7fffffu) | 0x800000u;
    if (shift > 24) return sign;
    h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  }
  if (rem > half || (rem == half && (h & 1))) ++h;  // to nearest, ties to even (a carry may bump the exponent)
  return sign | static_cast<std::uint16_t>(h);
}
std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // NaN stays NaN
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

// Bytes per element of a tensor the writer can write.
std::uint64_t writable_size(const TensorSpec& t) {
  if (t.dtype == "F32") return 4;
  if (t.dtype == "F16" || t.dtype == "BF16") return 2;
  throw FormatError(t.name + ": cannot write dtype " + t.dtype + " (F32, F16 or BF16)");
}

// The product of `shape` times `unit` (bytes per element), refused when it does not fit in 64 bits:
// a wrapped product would make absurd shapes look as if their data were there.
std::uint64_t checked_product(const std::vector<std::uint64_t>& shape, const std::string& where, std::uint64_t unit = 1) {
  std::uint64_t n = unit;
  for (auto d : shape) {
    if (d != 0 && n > UINT64_MAX / d) throw FormatError(where + ": shape overflows 64 bits");
    n *= d;
  }
  return n;
}

}  // namespace

std::uint64_t TensorInfo::elements() const { return checked_product(shape, name); }

std::size_t dtype_size(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "BOOL" || d == "U8" || d == "I8" || d == "F8_E5M2" || d == "F8_E4M3") return 1;
  return 0;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw FormatError(sys_error("cannot open", path));
  struct stat st{};
  if (fstat(fd_, &st) != 0) throw FormatError(sys_error("cannot stat", path));
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ < 8) throw FormatError(path + ": " + std::to_string(size_) + " bytes is too short for a safetensors file (8-byte header length first)");
  if (size_ > 0) {
    void* m = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (m == MAP_FAILED) throw FormatError(sys_error("cannot map", path));
    map_ = static_cast<const std::byte*>(m);
  }
  try {
    std::uint64_t n = 0;
    std::memcpy(&n, map_, 8);  // little-endian, as is every machine cnet builds for
    if (n > kMaxHeader) throw FormatError(path + ": header length " + std::to_string(n) + " at offset 0 is over 100 MB: not a safetensors file");
    if (8 + n > size_) throw FormatError(path + ": header of " + std::to_string(n) + " bytes runs past the end of the " + std::to_string(size_) + "-byte file (truncated?)");
    data_offset_ = 8 + n;
    // Nesting and the tensor count are bounded before anything is built, and tensor names are unique:
    // with two, which one counts would be the file's choice.
    auto too_many_tensors = [&] { return FormatError(path + ": header lists more than " + std::to_string(kMaxTensors) + " tensors: not a model cnet reads (split it into shards)"); };
    JsonBoundBroken broken;
    json header = parse_bounded_json(std::string_view(reinterpret_cast<const char*>(map_) + 8, n),
                                     {kMaxDepth, kMaxTensors + 1, true}, broken);  // + __metadata__
    switch (broken.kind) {
      case JsonBoundBroken::none: break;
      case JsonBoundBroken::depth:
        throw FormatError(path + ": header JSON is nested deeper than " + std::to_string(kMaxDepth) + " levels: not a safetensors header");
      case JsonBoundBroken::members:  // counted before __metadata__ could be told apart
        throw too_many_tensors();
      case JsonBoundBroken::duplicate:
        throw FormatError(path + ": tensor '" + printable(broken.detail, 128) + "' is named twice in the header");
      case JsonBoundBroken::syntax:
        throw FormatError(path + ": header is not valid JSON (" + printable(broken.detail, 200) + ")");
    }
    if (!header.is_object()) throw FormatError(path + ": header must be a JSON object");
    if (header.size() - header.count("__metadata__") > kMaxTensors) throw too_many_tensors();  // the bound let __metadata__ in
    for (auto& [key, value] : header.items()) {
      std::string where = path + ": tensor '" + printable(key, 128) + "'";
      if (key == "__metadata__") {
        if (!value.is_object()) throw FormatError(path + ": __metadata__ must be an object of strings");
        for (auto& [mk, mv] : value.items()) {
          if (!mv.is_string()) throw FormatError(path + ": __metadata__ entry '" + printable(mk, 128) + "' must be a string");
          metadata_[mk] = mv.get<std::string>();
        }
        continue;
      }
      if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") || !value.contains("data_offsets"))
        throw FormatError(where + " needs dtype, shape and data_offsets");
      TensorInfo t;
      t.name = key;
      if (!value["dtype"].is_string() || dtype_size(t.dtype = value["dtype"].get<std::string>()) == 0)
        throw FormatError(where + " has unknown dtype " + printable(value["dtype"].dump(), 32));
      const auto& shape = value["shape"];
      const auto& offsets = value["data_offsets"];
      if (!shape.is_array()) throw FormatError(where + ": shape must be an array of sizes");
      for (const auto& d : shape) {
        if (!d.is_number_unsigned()) throw FormatError(where + ": shape " + printable(shape.dump(), 64) + " must hold non-negative integers");
        t.shape.push_back(d.get<std::uint64_t>());
      }
      if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
        throw FormatError(where + ": data_offsets must be [begin, end]");
      t.begin = offsets[0].get<std::uint64_t>();
      t.end = offsets[1].get<std::uint64_t>();
      std::uint64_t expect = checked_product(t.shape, where, dtype_size(t.dtype));
      if (t.end < t.begin || t.end - t.begin != expect)
        throw FormatError(where + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "] hold " +
                          std::to_string(t.end - t.begin) + " bytes, but " + t.dtype + " " + printable(shape.dump(), 64) + " needs " +
                          std::to_string(expect));
      tensors_.emplace(key, std::move(t));
    }
    // The data section must be covered exactly: no gaps, no overlaps, nothing missing at the end.
    std::vector<const TensorInfo*> order;
    for (const auto& [_, t] : tensors_) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->begin < b->begin || (a->begin == b->begin && a->end < b->end); });
    std::uint64_t at = 0;
    for (const auto* t : order) {
      if (t->begin != at)
        throw FormatError(path + ": tensor '" + t->name + "' starts at data byte " + std::to_string(t->begin) + ", expected " +
                          std::to_string(at) + (t->begin < at ? " (overlaps the previous tensor)" : " (gap before it)"));
      at = t->end;
    }
    std::uint64_t data_size = size_ - data_offset_;
    if (at > data_size) {
      std::string last = order.empty() ? std::string("?") : order.back()->name;
      throw FormatError(path + ": truncated: tensor '" + last + "' ends at file offset " + std::to_string(data_offset_ + at) +
                        " but the file has " + std::to_string(size_) + " bytes");
    }
    if (at < data_size)
      throw FormatError(path + ": " + std::to_string(data_size - at) + " bytes after the last tensor (file offset " +
                        std::to_string(data_offset_ + at) + "): not a safetensors file, or damaged");
  } catch (...) {
    if (map_) munmap(const_cast<std::byte*>(map_), size_);
    ::close(fd_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) munmap(const_cast<std::byte*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
}

const TensorInfo& SafetensorsFile::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw FormatError(path_ + ": no tensor '" + name + "'");
  return it->second;
}

std::span<const float> SafetensorsFile::floats(const std::string& name, std::vector<float>& storage) const {
  const TensorInfo& t = tensor(name);
  const std::byte* p = map_ + data_offset_ + t.begin;
  std::size_t n = t.elements();
  if (t.dtype == "F32") {
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(float) == 0) return {reinterpret_cast<const float*>(p), n};
    storage.resize(n);
    std::memcpy(storage.data(), p, n * sizeof(float));
    return storage;
  }
  if (t.dtype != "F16" && t.dtype != "BF16")
    throw FormatError(path_ + ": tensor '" + name + "' is " + t.dtype + "; cnet-run computes with F32, F16 or BF16 weights");
  storage.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    storage[i] = t.dtype == "BF16" ? std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16) : half_to_float(h);
  }
  return storage;
}

std::span<const std::byte> SafetensorsFile::raw(const std::string& name) const {
  const TensorInfo& t = tensor(name);
  return {map_ + data_offset_ + t.begin, static_cast<std::size_t>(t.end - t.begin)};
}

std::string safetensors_header(const std::vector<TensorSpec>& tensors, const std::map<std::string, std::string>& metadata) {
  // Built by hand to keep the writer's order (nlohmann sorts keys; readers do not care, people do).
  std::string h = "{";
  if (!metadata.empty()) h += "\"__metadata__\":" + json(metadata).dump() + ",";
  std::uint64_t at = 0;
  for (const auto& t : tensors) {
    std::uint64_t bytes = checked_product(t.shape, t.name, writable_size(t));
    h += json(t.name).dump() + ":{\"dtype\":" + json(t.dtype).dump() + ",\"shape\":" + json(t.shape).dump() + ",\"data_offsets\":[" +
         std::to_string(at) + "," + std::to_string(at + bytes) + "]},";
    at += bytes;
  }
  if (h.back() == ',') h.pop_back();
  h += "}";
  h.append((8 - h.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned
  return h;
}

SafetensorsWriter::SafetensorsWriter(const std::string& path, const std::vector<TensorSpec>& tensors,
                                     const std::map<std::string, std::string>& metadata, bool create)
    : path_(path) {
  std::string header = safetensors_header(tensors, metadata);
  std::uint64_t at = 0;
  for (const auto& t : tensors) {
    std::uint64_t bytes = checked_product(t.shape, t.name, writable_size(t));
    layout_[t.name] = TensorInfo{t.name, t.dtype, t.shape, at, at + bytes};
    at += bytes;
  }
  data_offset_ = 8 + header.size();
  if (!create) {
    std::string why;
    try {
      SafetensorsFile existing(path);
      for (const auto& [name, t] : layout_) {
        auto it = existing.tensors().find(name);
        if (it == existing.tensors().end() || it->second.shape != t.shape || it->second.dtype != "F32" ||
            it->second.begin != t.begin || existing.data_offset() != data_offset_)
          why = "tensor '" + name + "' differs from what this run writes";
      }
    } catch (const FormatError& e) {
      why = e.what();
    }
    if (!why.empty()) throw FormatError("cannot resume into " + path + ": " + why + " (run without --resume to start over)");
  }
  fd_ = ::open(path.c_str(), (create ? O_RDWR | O_CREAT | O_TRUNC : O_RDWR) | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) throw FormatError(sys_error("cannot write", path));
  if (create) {
    std::uint64_t n = header.size();
    std::string head(reinterpret_cast<const char*>(&n), 8);
    head += header;
    if (::pwrite(fd_, head.data(), head.size(), 0) != static_cast<ssize_t>(head.size()) ||
        ::ftruncate(fd_, static_cast<off_t>(data_offset_ + at)) != 0) {
      std::string e = sys_error("cannot write", path);
      ::close(fd_);
      throw FormatError(e);
    }
  }
}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void SafetensorsWriter::write(const std::string& name, std::uint64_t first, std::span<const float> values) {
  auto it = layout_.find(name);
  if (it == layout_.end()) throw FormatError(path_ + ": no tensor '" + name + "' to write");
  if (first + values.size() > it->second.elements())
    throw FormatError(path_ + ": write past the end of tensor '" + name + "'");
  const char* p = reinterpret_cast<const char*>(values.data());
  std::size_t left = values.size_bytes();
  std::vector<std::uint16_t> narrow;
  if (it->second.dtype != "F32") {
    narrow.resize(values.size());
    bool bf16 = it->second.dtype == "BF16";
    for (std::size_t i = 0; i < values.size(); ++i) narrow[i] = bf16 ? float_to_bf16(values[i]) : float_to_half(values[i]);
    p = reinterpret_cast<const char*>(narrow.data());
    left = narrow.size() * 2;
  }
  off_t at = static_cast<off_t>(data_offset_ + it->second.begin + first * (narrow.empty() ? 4 : 2));
  while (left > 0) {
    ssize_t w = ::pwrite(fd_, p, left, at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw FormatError(sys_error("cannot write", path_));
    p += w, at += w, left -= static_cast<std::size_t>(w);
  }
}

void SafetensorsWriter::sync() {
  if (::fdatasync(fd_) != 0) throw FormatError(sys_error("cannot sync", path_));
}

}  // namespace cnet::inference

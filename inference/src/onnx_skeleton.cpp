#include "onnx_skeleton.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <functional>

#include "cnet/inference/safetensors.hpp"

namespace cnet::inference {
namespace {

namespace io = google::protobuf::io;
using WFL = google::protobuf::internal::WireFormatLite;

// The fields walked into; every other field is copied as it is.
constexpr int kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;

struct Damaged {};  // the file ends or breaks inside a message

bool is_bytes_field(std::uint32_t tag, int number) {
  return WFL::GetTagFieldNumber(tag) == number && WFL::GetTagWireType(tag) == WFL::WIRETYPE_LENGTH_DELIMITED;
}

class Walker {
 public:
  Walker(io::CodedInputStream& in, std::string file_name) : in_(in), file_name_(std::move(file_name)) {}

  std::string model() {
    return copy_message([&](std::uint32_t tag, io::CodedOutputStream& out) {
      return is_bytes_field(tag, kModelGraph) && nested(tag, out, [&] { return graph(); });
    });
  }

 private:
  using Special = std::function<bool(std::uint32_t tag, io::CodedOutputStream& out)>;

  // A message's fields up to its end (the current limit), `special` writing the ones it takes.
  std::string copy_message(const Special& special) {
    std::string bytes;
    {
      io::StringOutputStream sink(&bytes);
      io::CodedOutputStream out(&sink);
      for (std::uint32_t tag; (tag = in_.ReadTag()) != 0;)
        if (!special(tag, out) && !WFL::SkipField(&in_, tag, &out)) throw Damaged{};
      if (!in_.ConsumedEntireMessage()) throw Damaged{};
    }
    return bytes;
  }

  // A length-delimited message field, rewritten by `inner` (its length changes, so it is written after).
  bool nested(std::uint32_t tag, io::CodedOutputStream& out, const std::function<std::string()>& inner) {
    int length = 0;
    if (!in_.ReadVarintSizeAsInt(&length)) throw Damaged{};
    const auto limit = in_.PushLimit(length);
    std::string bytes = inner();
    in_.PopLimit(limit);
    out.WriteTag(tag);
    out.WriteVarint32(static_cast<std::uint32_t>(bytes.size()));
    out.WriteString(bytes);
    return true;
  }

  std::string graph() {
    return copy_message([&](std::uint32_t tag, io::CodedOutputStream& out) {
      return is_bytes_field(tag, kGraphInitializer) && nested(tag, out, [&] { return tensor(); });
    });
  }

  std::string tensor() {
    std::int64_t offset = -1;
    int length = 0;
    std::string bytes = copy_message([&](std::uint32_t tag, io::CodedOutputStream& out) {
      if (!is_bytes_field(tag, kTensorRawData)) return false;
      if (!in_.ReadVarintSizeAsInt(&length)) throw Damaged{};
      if (static_cast<std::size_t>(length) < kWeightLeftInFileBytes) {  // small (shapes, biases): kept in the message
        std::string raw;
        if (!in_.ReadString(&raw, length)) throw Damaged{};
        out.WriteTag(tag);
        out.WriteVarint32(static_cast<std::uint32_t>(length));
        out.WriteString(raw);
        return true;
      }
      offset = in_.CurrentPosition();
      if (!in_.Skip(length)) throw Damaged{};
      return true;
    });
    onnx::TensorProto t;
    if (!t.ParseFromString(bytes)) throw Damaged{};
    if (offset >= 0) {
      if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) throw Damaged{};  // both in the message and outside
      t.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
      t.clear_external_data();
      for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", file_name_}, {"offset", std::to_string(offset)},
                                       {"length", std::to_string(length)}}) {
        auto* kv = t.add_external_data();
        kv->set_key(key);
        kv->set_value(value);
      }
    }
    return t.SerializeAsString();
  }

  io::CodedInputStream& in_;
  std::string file_name_;
};

}  // namespace

onnx::ModelProto parse_onnx_skeleton(const std::string& path, const std::string& damaged_hint) {
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& what) -> void { throw FormatError(path + ": " + what); };
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(fs::exists(path, ec) ? "not a regular file" : "no such file");
  std::ifstream file(path, std::ios::binary);
  if (!file) fail("cannot be read");
  io::IstreamInputStream raw(&file);
  io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT_MAX);
  onnx::ModelProto model;
  try {
    if (!model.ParseFromString(Walker(in, fs::path(path).filename().string()).model())) throw Damaged{};
  } catch (const Damaged&) {
    fail("is not a complete ONNX model (truncated or damaged); copy it again or re-export it: " + damaged_hint);
  }
  return model;
}

}  // namespace cnet::inference

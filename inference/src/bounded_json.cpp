#include "bounded_json.hpp"

#include <unordered_set>

namespace cnet::inference {
namespace {

// Counts depth and the top object's members; stops at the first broken bound.
class BoundsCheck : public nlohmann::json::json_sax_t {
 public:
  BoundsCheck(const JsonBounds& bounds, JsonBoundBroken& broken) : bounds_(bounds), broken_(broken) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return enter(true); }
  bool end_object() override { return leave(); }
  bool start_array(std::size_t) override { return enter(false); }
  bool end_array() override { return leave(); }
  bool key(string_t& name) override {
    if (depth_ != 1 || !top_is_object_) return true;
    if (++members_ > bounds_.max_top_members) return fail(JsonBoundBroken::members, std::to_string(bounds_.max_top_members));
    if (bounds_.unique_top_members && !names_.insert(name).second) return fail(JsonBoundBroken::duplicate, name);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& e) override {
    if (broken_.kind == JsonBoundBroken::none) broken_ = {JsonBoundBroken::syntax, e.what()};
    return false;
  }

 private:
  bool enter(bool object) {
    if (!seen_top_) top_is_object_ = object;
    seen_top_ = true;
    if (++depth_ > bounds_.max_depth) return fail(JsonBoundBroken::depth, std::to_string(bounds_.max_depth));
    return true;
  }
  bool leave() {
    --depth_;
    return true;
  }
  bool fail(JsonBoundBroken::Kind kind, std::string detail) {
    broken_ = {kind, std::move(detail)};
    return false;
  }
  const JsonBounds& bounds_;
  JsonBoundBroken& broken_;
  int depth_ = 0;
  bool seen_top_ = false, top_is_object_ = false;
  std::size_t members_ = 0;
  std::unordered_set<std::string> names_;
};

}  // namespace

nlohmann::json parse_bounded_json(std::string_view text, const JsonBounds& bounds, JsonBoundBroken& broken) {
  broken = {};
  BoundsCheck check(bounds, broken);
  if (!nlohmann::json::sax_parse(text.begin(), text.end(), &check) || broken.kind != JsonBoundBroken::none) {
    if (broken.kind == JsonBoundBroken::none) broken = {JsonBoundBroken::syntax, "not valid JSON"};
    return {};
  }
  return nlohmann::json::parse(text.begin(), text.end());  // within bounds: depth bounded, so is the copy
}

}  // namespace cnet::inference

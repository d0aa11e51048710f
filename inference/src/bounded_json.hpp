#pragma once
// JSON from a file someone else wrote, read within bounds and in linear time. A SAX pass checks the
// nesting depth, the number of members of the top object and that their names are unique before any
// value is built; only then is the document parsed. (nlohmann's callback parser, used for this before,
// scans the siblings at every end_object: 20k tensors took 3 s, 80k over a minute; and an unbounded
// parse of 10^6 nested brackets overflowed the stack when the value was copied.)

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace cnet::inference {

struct JsonBounds {
  int max_depth = 8;                     // arrays and objects inside each other
  std::size_t max_top_members = SIZE_MAX;  // members of the top-level object
  bool unique_top_members = false;       // two members of the top object may not share a name
};

// What broke a bound: which, and the member's name or the count, for the caller's message.
struct JsonBoundBroken {
  enum Kind { none, depth, members, duplicate, syntax } kind = none;
  std::string detail;  // the duplicate's name, or the parser's message
};

// Parses `text`; on a broken bound or bad syntax returns a null json and says why in `broken`.
nlohmann::json parse_bounded_json(std::string_view text, const JsonBounds& bounds, JsonBoundBroken& broken);

}  // namespace cnet::inference

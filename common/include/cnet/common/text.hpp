#pragma once
// Text as Slurm, the kernel and the environment spell it: lists joined and split on a separator,
// index ranges ("0-2,5"), trimming, and the whitelist every user-supplied option value passes first.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cnet::common {

std::string join(const std::vector<std::string>& parts, std::string_view separator);
// "a,,b," -> {"a", "b"}: empty items are dropped.
std::vector<std::string> split(std::string_view text, char separator = ',');
// "a,,b," -> {"a", "", "b", ""}: every field, empty ones kept, for lists where an empty item is an error.
std::vector<std::string> split_fields(std::string_view text, char separator = ',');
std::string trim(std::string_view text);  // without leading/trailing spaces, tabs, CR and LF
std::string to_lower(std::string_view text);
bool equal_ignoring_case(std::string_view a, std::string_view b);

// A whole decimal number of at most `max_digits` digits, nothing else (no sign, no spaces); nullopt otherwise.
std::optional<unsigned> parse_unsigned(std::string_view text, std::size_t max_digits = 9);

// "0,1,3", "0-2,5" -> the indexes in the order given; nullopt on anything else, on a range written
// high-low, or on more than `limit` entries. `range` is the character between bounds ('-', or ':' as
// iptables writes port ranges).
std::optional<std::vector<unsigned>> parse_ranges(std::string_view text, std::size_t limit = 1024, char range = '-');
// {0,1,2,5} -> "0-2,5" (sorted, duplicates merged).
std::string compress_ranges(std::vector<unsigned> values);

// A user-supplied option value is only looked at when it is short and made of letters, digits and
// "_-.,:" alone; anything else is refused before it reaches a path, a log line or the environment.
bool plain_value(std::string_view value, std::size_t max_length = 64);

// Bytes that cannot be shown as they are (control characters, non-ASCII, quotes, backslash) as \xNN,
// for printing text a peer or a file supplied.
std::string printable(std::string_view text, std::size_t max_length = 256);

// Text for XML content or a quoted attribute: & < > " escaped, control characters XML forbids dropped.
std::string xml_escaped(std::string_view text);

}  // namespace cnet::common

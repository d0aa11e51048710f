#include "cnet/common/text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

namespace cnet::common {

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::vector<std::string> split_fields(std::string_view text, char separator) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find(separator, start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string trim(std::string_view text) {
  constexpr std::string_view space = " \t\r\n";
  std::size_t first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return "";
  return std::string(text.substr(first, text.find_last_not_of(space) - first + 1));
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::optional<unsigned> parse_unsigned(std::string_view s, std::size_t max_digits) {
  if (s.empty() || s.size() > std::min<std::size_t>(max_digits, 9)) return std::nullopt;
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::vector<unsigned>> parse_ranges(std::string_view text, std::size_t limit, char range) {
  std::vector<unsigned> out;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    std::string_view part = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t sep = part.find(range);
    auto lo = parse_unsigned(part.substr(0, sep));
    auto hi = sep == std::string_view::npos ? lo : parse_unsigned(part.substr(sep + 1));
    if (!lo || !hi || *hi < *lo || out.size() + (*hi - *lo) >= limit) return std::nullopt;
    for (unsigned i = *lo; i <= *hi; ++i) out.push_back(i);
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

std::string compress_ranges(std::vector<unsigned> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    parts.push_back(std::to_string(v[i]) + (j > i ? "-" + std::to_string(v[j]) : ""));
    i = j + 1;
  }
  return join(parts, ",");
}

bool plain_value(std::string_view v, std::size_t max_length) {
  if (v.empty() || v.size() > max_length) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ',' || c == ':';
  });
}

std::string xml_escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n' || c == '\r') out += c;
    }
  }
  return out;
}

std::string printable(std::string_view text, std::size_t max_length) {
  std::string out;
  for (unsigned char c : text.substr(0, max_length)) {
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (text.size() > max_length) out += "...";
  return out;
}

}  // namespace cnet::common

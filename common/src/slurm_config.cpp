#include "cnet/common/slurm_config.hpp"

#include <cctype>

#include "cnet/common/text.hpp"

namespace cnet::common {
namespace {

// One physical line without its comment: a '#' after an even number of backslashes starts it.
std::string_view without_comment(std::string_view line) {
  unsigned backslashes = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && backslashes % 2 == 0) return line.substr(0, i);
    backslashes = line[i] == '\\' ? backslashes + 1 : 0;
  }
  return line;
}

// A trailing backslash (spaces after it allowed) continues the line: it is cut off and true returned.
bool strip_continuation(std::string& line) {
  std::size_t end = line.find_last_not_of(" \t");
  if (end == std::string::npos || line[end] != '\\') return false;
  std::size_t run = 0;
  while (run <= end && line[end - run] == '\\') ++run;
  if (run % 2 == 0) return false;  // "\\" at the end is an escaped backslash, not a continuation
  line.erase(end);
  return true;
}

// Tokens of one logical line: Key=Value, Key="value with spaces", or a bare word. Escapes are removed
// inside tokens ("\#" -> "#", "\\" -> "\").
void tokenize(const std::string& text, ConfigLine& out, bool strict) {
  std::size_t i = 0;
  auto unescape = [](std::string s) {
    std::string r;
    for (std::size_t k = 0; k < s.size(); ++k) r += s[k] == '\\' && k + 1 < s.size() ? s[++k] : s[k];
    return r;
  };
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= text.size()) break;
    std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])) && text[i] != '=') ++i;
    std::string key = text.substr(start, i - start);
    if (i >= text.size() || text[i] != '=') {
      if (strict) throw ConfigError(out.where() + ": expected Key=Value, found '" + printable(key, 64) + "'");
      out.words.push_back(unescape(key));
      continue;
    }
    ++i;  // '='
    std::string value;
    if (i < text.size() && text[i] == '"') {
      std::size_t close = text.find('"', i + 1);
      if (close == std::string::npos)
        throw ConfigError(out.where() + ": unterminated quote in " + key +
                          "= (a '#' starts a comment even inside quotes; write \\# for a literal #)");
      value = text.substr(i + 1, close - i - 1);
      i = close + 1;
    } else {
      std::size_t end = i;
      while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
      value = text.substr(i, end - i);
      i = end;
    }
    if (key.empty()) throw ConfigError(out.where() + ": '=" + printable(value, 64) + "' has no key before the '='");
    out.pairs.emplace_back(unescape(key), unescape(value));
  }
}

}  // namespace

const std::string* ConfigLine::find(std::string_view key) const {
  for (const auto& [k, v] : pairs)
    if (equal_ignoring_case(k, key)) return &v;
  return nullptr;
}

std::string ConfigLine::value(std::string_view key, std::string fallback) const {
  const std::string* v = find(key);
  return v ? *v : fallback;
}

std::vector<ConfigLine> parse_config_lines(std::string_view text, const std::string& source, bool strict) {
  std::vector<ConfigLine> out;
  std::string logical;
  unsigned number = 0, start = 0;
  bool continued = false;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t eol = text.find('\n', at);
    std::string_view physical = text.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    at = eol == std::string_view::npos ? text.size() : eol + 1;
    ++number;
    if (!physical.empty() && physical.back() == '\r') physical.remove_suffix(1);
    if (physical.find('\0') != std::string_view::npos)
      throw ConfigError(source + ":" + std::to_string(number) + ": contains a NUL byte; is this a text file?");
    if (!continued) start = number;
    std::string line(without_comment(physical));
    continued = strip_continuation(line);
    logical += line;
    if (continued) {
      logical += ' ';
      continue;
    }
    ConfigLine parsed{source, start, {}, {}};
    tokenize(logical, parsed, strict);
    logical.clear();
    if (!parsed.pairs.empty() || !parsed.words.empty()) out.push_back(std::move(parsed));
  }
  if (continued) throw ConfigError(source + ":" + std::to_string(start) + ": file ends inside a continued line (trailing '\\')");
  return out;
}

namespace {

// Expands one comma-free host expression with any number of bracket groups, appending to `out`. Every
// group is read and checked first and the count of hosts known before any is made, so a malformed
// group is refused wherever it stands and a long list costs nothing before it is refused.
void expand_one(std::string_view expr, std::vector<std::string>& out, std::size_t limit, std::string_view whole) {
  std::vector<std::string> literals;              // text before each group, and after the last
  std::vector<std::vector<std::string>> groups;  // each group's numbers, as written (cn[01-10] keeps its width)
  std::size_t hosts = 1;
  auto check_count = [&] {
    if (out.size() + hosts > limit)
      throw ConfigError("host list '" + printable(whole) + "' names more than " + std::to_string(limit) + " hosts");
  };
  while (true) {
    std::size_t open = expr.find('[');
    std::string_view text = expr.substr(0, open);
    if (text.find(']') != std::string_view::npos) throw ConfigError("host list '" + printable(whole) + "': ']' without '['");
    literals.emplace_back(text);
    if (open == std::string_view::npos) break;
    std::size_t close = expr.find(']', open);
    if (close == std::string_view::npos) throw ConfigError("host list '" + printable(whole) + "': '[' without ']'");
    std::vector<std::string>& numbers = groups.emplace_back();
    for (const auto& item : split(expr.substr(open + 1, close - open - 1), ',')) {
      auto dash = item.find('-');
      std::string lo = item.substr(0, dash), hi = dash == std::string::npos ? lo : item.substr(dash + 1);
      auto range = parse_ranges(lo + "-" + hi, limit + 1);
      if (!range || numbers.size() + range->size() > limit)
        throw ConfigError("host list '" + printable(whole) + "': '" + printable(item) + "' is not N or LOW-HIGH" +
                          (range ? " of at most " + std::to_string(limit) + " hosts" : ""));
      for (unsigned n : *range) {
        std::string digits = std::to_string(n);
        if (digits.size() < lo.size()) digits.insert(0, lo.size() - digits.size(), '0');
        numbers.push_back(std::move(digits));
      }
    }
    if (numbers.empty()) throw ConfigError("host list '" + printable(whole) + "': '[]' names no host");
    hosts *= numbers.size();  // each factor <= limit, and the product is checked as it grows
    check_count();
    expr = expr.substr(close + 1);
  }
  check_count();  // a list with no group at all is one host
  // An odometer over the groups, the last one turning fastest.
  std::vector<std::size_t> at(groups.size(), 0);
  for (std::size_t made = 0; made < hosts; ++made) {
    std::string host = literals[0];
    for (std::size_t g = 0; g < groups.size(); ++g) host += groups[g][at[g]] + literals[g + 1];
    out.push_back(std::move(host));
    for (std::size_t g = groups.size(); g-- > 0 && ++at[g] == groups[g].size();) at[g] = 0;
  }
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view expression, std::size_t limit) {
  std::vector<std::string> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= expression.size(); ++i) {
    char c = i < expression.size() ? expression[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) throw ConfigError("host list '" + printable(expression) + "': brackets do not match");
    if (c == ',' && depth == 0) {
      if (i > start) expand_one(expression.substr(start, i - start), out, limit, expression);
      start = i + 1;
    }
  }
  if (depth != 0) throw ConfigError("host list '" + printable(expression) + "': brackets do not match");
  return out;
}

}  // namespace cnet::common

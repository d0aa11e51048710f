#pragma once
// The line grammar of slurm.conf, gres.conf and cnet-templates.conf, by Slurm's own rules
// (src/common/parse_config.c): a '#' not escaped as "\#" starts a comment, also inside quotes; a
// line ending in '\' continues on the next; "\\" is a backslash; CR before LF is dropped; each line is
// Key=Value pairs, a value in double quotes may hold spaces; keys compare without regard to case.
// And Slurm's host lists: "cn[1-3,5],gpu[01-02]" -> cn1 cn2 cn3 cn5 gpu01 gpu02.

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cnet::common {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ConfigLine {
  std::string source;  // file name, for messages
  unsigned number = 0;  // where the (first physical) line starts
  std::vector<std::pair<std::string, std::string>> pairs;  // in order, keys as written
  std::vector<std::string> words;  // tokens without '=' ("Include /etc/slurm/x.conf")

  const std::string* find(std::string_view key) const;  // the first value of `key`, any case
  std::string value(std::string_view key, std::string fallback = "") const;
  std::string where() const { return source + ":" + std::to_string(number); }
};

// Every non-empty logical line. Throws ConfigError("source:line: ...") for an unterminated quote or a
// file ending inside a continued line; with `strict`, also for a token that is not Key=Value.
std::vector<ConfigLine> parse_config_lines(std::string_view text, const std::string& source, bool strict = false);

// Slurm's hostlist expression. Throws ConfigError on a malformed one (unbalanced brackets, a range
// written high-low) or one naming more than `limit` hosts.
std::vector<std::string> expand_hostlist(std::string_view expression, std::size_t limit = 100000);

}  // namespace cnet::common

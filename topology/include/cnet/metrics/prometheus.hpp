#pragma once
// Prometheus text exposition format (0.0.4) for node_exporter's textfile collector: cnet-doctor and
// cnet-perf write their verdicts and link numbers as *.prom files that node_exporter serves.

#include <map>
#include <string>
#include <vector>

namespace cnet::metrics {

struct Sample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Family {
  std::string name;  // [a-zA-Z_:][a-zA-Z0-9_:]*
  std::string help;
  std::string type;  // gauge, counter
  std::vector<Sample> samples;
};

// The families as exposition text; label values escaped (\\, \", \n). Throws std::invalid_argument on
// a metric or label name Prometheus would reject.
std::string to_text(const std::vector<Family>& families);

// Writes `text` to `path` the way the textfile collector needs: a temporary file in the same folder,
// renamed over the old one, so node_exporter never reads half a file. `path` must end in .prom (the
// collector ignores anything else); throws std::runtime_error naming the path and the problem.
void write_textfile(const std::string& path, const std::string& text);
// The same checks on `path` alone, for a tool to refuse a bad --prometheus before it starts measuring.
void check_textfile_path(const std::string& path);

}  // namespace cnet::metrics

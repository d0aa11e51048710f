#pragma once
// Prometheus text exposition format (0.0.4) for node_exporter's textfile collector: cnet-doctor and
// cnet-perf write their verdicts and link numbers as *.prom files that node_exporter serves.

#include <map>
#include <string>
#include <vector>

namespace cnet::common {

struct MetricSample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct MetricFamily {
  std::string name;  // [a-zA-Z_:][a-zA-Z0-9_:]*
  std::string help;
  std::string type;  // gauge, counter
  std::vector<MetricSample> samples;
};

// The families as exposition text; label values escaped (\\, \", \n). Throws std::invalid_argument on
// a metric or label name Prometheus would reject.
std::string prometheus_text(const std::vector<MetricFamily>& families);

// Writes `text` to `path` atomically (write_file_atomically), as the textfile collector needs: it never
// reads half a file. `path` must end in .prom (the collector ignores anything else) and its folder must
// exist; throws std::runtime_error naming the path and the problem.
void write_textfile(const std::string& path, const std::string& text);
// The same checks on `path` alone, for a tool to refuse a bad --prometheus before it starts measuring.
void check_textfile_path(const std::string& path);

}  // namespace cnet::common

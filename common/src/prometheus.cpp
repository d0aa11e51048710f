#include "cnet/common/prometheus.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "cnet/common/files.hpp"

namespace cnet::common {
namespace {
namespace fs = std::filesystem;

const std::regex kMetricName("[a-zA-Z_:][a-zA-Z0-9_:]*");
const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");

std::string escaped(const std::string& value, bool quote_too) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quote_too) out += "\\\"";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string prometheus_text(const std::vector<MetricFamily>& families) {
  std::ostringstream out;
  for (const auto& f : families) {
    if (!std::regex_match(f.name, kMetricName)) throw std::invalid_argument("invalid Prometheus metric name '" + f.name + "'");
    out << "# HELP " << f.name << " " << escaped(f.help, false) << "\n# TYPE " << f.name << " " << f.type << "\n";
    for (const auto& s : f.samples) {
      out << f.name;
      if (!s.labels.empty()) {
        out << "{";
        bool first = true;
        for (const auto& [k, v] : s.labels) {
          if (!std::regex_match(k, kLabelName) || k.starts_with("__"))
            throw std::invalid_argument("invalid Prometheus label name '" + k + "' on " + f.name);
          out << (first ? "" : ",") << k << "=\"" << escaped(v, true) << "\"";
          first = false;
        }
        out << "}";
      }
      out << " " << number(s.value) << "\n";
    }
  }
  return out.str();
}

void check_textfile_path(const std::string& path) {
  if (!path.ends_with(".prom"))
    throw std::runtime_error(path + ": the file name must end in .prom (node_exporter's textfile collector reads only those)");
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    throw std::runtime_error(path + ": folder " + dir.string() + " does not exist (node_exporter's --collector.textfile.directory)");
}

void write_textfile(const std::string& path, const std::string& text) {
  check_textfile_path(path);
  try {
    write_file_atomically(path, text, 0644);
  } catch (const FileError& e) {
    throw std::runtime_error(e.what());
  }
}

}  // namespace cnet::common

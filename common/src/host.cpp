#include "cnet/common/host.hpp"

#include <unistd.h>

namespace cnet::common {

std::string hostname() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

std::string short_name(const std::string& host) {
  if (host.find_first_not_of("0123456789.") == std::string::npos) return host;
  return host.substr(0, host.find('.'));
}

std::string short_hostname() { return short_name(hostname()); }

}  // namespace cnet::common

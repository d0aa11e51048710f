#include "cnet/common/host.hpp"

#include <unistd.h>

namespace cnet::common {

std::string hostname() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

std::string short_hostname() {
  std::string h = hostname();
  return h.substr(0, h.find('.'));
}

}  // namespace cnet::common

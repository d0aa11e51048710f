#include "cnet/common/host.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>

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

std::string interface_address(const std::string& iface) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return iface.empty() ? "127.0.0.1" : "";
  std::string found;
  for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP)) continue;
    bool loopback = a->ifa_flags & IFF_LOOPBACK;
    if (iface.empty() ? loopback : iface != a->ifa_name) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    found = text;
  }
  freeifaddrs(list);
  if (found.empty() && iface.empty()) found = "127.0.0.1";
  return found;
}

std::vector<std::string> ipv4_interfaces() {
  std::vector<std::string> names;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return names;
  for (ifaddrs* a = list; a; a = a->ifa_next)
    if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && (a->ifa_flags & IFF_UP) && !(a->ifa_flags & IFF_LOOPBACK) &&
        std::find(names.begin(), names.end(), a->ifa_name) == names.end())
      names.emplace_back(a->ifa_name);
  freeifaddrs(list);
  return names;
}

std::string interface_with_address(const std::string& address) {
  in_addr wanted{};
  if (inet_pton(AF_INET, address.c_str(), &wanted) != 1) return "";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next)
    if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr == wanted.s_addr)
      found = a->ifa_name;
  freeifaddrs(list);
  return found;
}

}  // namespace cnet::common

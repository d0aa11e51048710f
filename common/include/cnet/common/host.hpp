#pragma once
// This machine's name, as the kernel reports it, the short form Slurm uses for node names, and the
// address of one of its interfaces, and the interface an address belongs to.
#include <string>
#include <vector>

namespace cnet::common {

std::string hostname();        // gethostname(), "" if it fails
std::string short_hostname();  // short_name(hostname()): how slurmd names this node by default
// "node7.cluster.example.org" -> "node7": up to the first '.', as slurmd does; an IPv4 address is kept.
std::string short_name(const std::string& host);
// The IPv4 address of interface `iface` while it is up, "" when it has none; for "" the first up,
// non-loopback interface's, else 127.0.0.1.
std::string interface_address(const std::string& iface);
// The up, non-loopback interfaces with an IPv4 address, in the order interface_address("") looks.
std::vector<std::string> ipv4_interfaces();
// The interface that holds this IPv4 address, "" when none here does (or it is not an address).
std::string interface_with_address(const std::string& address);

}  // namespace cnet::common

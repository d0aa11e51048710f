#pragma once
// The NICs a job names in its environment, read once with the grammar of the variable that names them,
// for every place that asks which NICs a job uses (--cnet-check, cnet-doctor's MTU and job-interface
// checks):
//   NCCL_SOCKET_IFNAME, NCCL_IB_HCA (NCCL's grammar): a comma-separated list of names; each item is a
//     prefix ("eth" selects eth0 and eth1) unless the list starts with '=' (exact names); a leading '^'
//     excludes the listed NICs and selects every other ("^docker,lo", "^=eth0"); ":port" is dropped.
//   UCX_NET_DEVICES (UCX's grammar): exact device names ("mlx5_0:1,eth0"), a leading '^' excludes them,
//     "all" (UCX's default) names no particular NIC.
// A NIC is matched by its name, its netdev or its RDMA device.

#include <string>
#include <string_view>
#include <vector>

#include "cnet/topology/model.hpp"

namespace cnet::topology {

class NicSelection {
 public:
  static NicSelection from_nccl(std::string_view value);
  static NicSelection from_ucx(std::string_view value);
  static NicSelection exactly(const std::vector<std::string>& names);  // a site's own list (doctor.conf)
  // NCCL_SOCKET_IFNAME, NCCL_IB_HCA and UCX_NET_DEVICES as `getenv` answers for each (nullptr: unset),
  // together: a NIC any of them selects.
  template <typename GetEnv>
  static NicSelection from_environment(GetEnv getenv) {
    NicSelection s;
    for (const char* var : {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA"})
      if (const char* v = getenv(var)) s.add(from_nccl(v));
    if (const char* v = getenv("UCX_NET_DEVICES")) s.add(from_ucx(v));
    return s;
  }

  void add(const NicSelection& other);  // the union: a NIC either selects
  bool empty() const { return rules_.empty(); }  // names no NIC in particular: the caller's default applies
  bool selects(std::string_view name) const;
  bool selects(const Nic& nic) const;

 private:
  struct Rule {
    std::vector<std::string> names;
    bool exact = false;
    bool exclude = false;
    bool lists(std::string_view name) const;  // named by the list, whether to select or exclude
  };
  static NicSelection parse(std::string_view value, bool prefixes);
  std::vector<Rule> rules_;  // a NIC is selected when any rule selects it
};

}  // namespace cnet::topology

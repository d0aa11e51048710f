#pragma once
// What cnet-doctor reads off one node, before judging any of it: clock discipline, swap, kernel
// parameters, limits, NICs and their driver settings (libcnet_topology), GPU device files gres.conf promises, name resolution of
// the cluster's nodes, the controller's address and the firewall. Gathered from a root folder (/ live, a
// fake tree in tests) with a deadline on every probe that can hang (discovery, name lookups,
// iptables-save), so the checks are pure functions over these facts; a snapshot is these facts as JSON.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cnet/topology/model.hpp"
#include "cnet/topology/nic_selection.hpp"
#include "cnet/scheduling/stuck_jobs.hpp"
#include "cnet/topology/nic_settings.hpp"

namespace cnet::doctor {

struct ClockState {
  bool known = false;
  bool synchronized = false;   // the kernel's clock is disciplined (adjtimex: no STA_UNSYNC)
  double offset_ms = 0;        // last measured offset from the time source
  double max_error_ms = 0;     // the kernel's bound on the error
};

struct GresDevice {
  std::string name;  // "gpu", "rdma"
  std::string file;  // /dev/nvidia0
  bool present = false;
};

// A cnet plugin file this node's Slurm is set up to load, and the release it was built for.
struct PluginFile {
  std::string path;
  std::optional<std::uint32_t> version;  // plugin_version; nullopt: not readable as a Slurm plugin
  bool spank = false;
};

// Slurm's authentication on this node (AuthType=auth/munge, the default): munged must answer, a
// credential it makes must decode again, and its key must be readable by its owner alone.
struct MungeState {
  bool used = true;             // false: slurm.conf names another AuthType
  std::string socket;           // AuthInfo's socket=, "" for munge's own default
  bool probed = false;          // munge -n and unmunge were run (a live node, not a fake root)
  bool encodes = false;         // munge -n made a credential
  bool decodes = false;         // unmunge took it back
  std::string problem;          // which step failed, and how
  std::string credential;       // what munge -n made: --job hands it to rank 0's node to decode there
  std::string key_file = "/etc/munge/munge.key";
  bool key_exists = false;
  unsigned key_mode = 0;        // permission bits
  std::string key_owner;        // user name, or uid when it has none
};

struct NodeFacts {
  std::string hostname;
  ClockState clock;
  std::uint64_t swap_kb = 0;                    // swap in use as configured (/proc/swaps sizes)
  std::map<std::string, std::string> sysctl;    // "net.core.rmem_max" -> "212992"
  std::optional<std::uint64_t> memlock_bytes;   // RLIMIT_MEMLOCK soft; nullopt: unlimited
  std::uint64_t open_files = 0;                 // RLIMIT_NOFILE soft
  topology::NodeTopology topology;
  std::string topology_problem;                 // discovery failed: why
  bool topology_hung = false;                   // discovery did not finish within its deadline
  std::vector<GresDevice> gres_devices;         // gres.conf File= entries for this node
  std::map<std::string, std::string> resolved;  // node -> address, "" when it does not resolve
  std::vector<std::string> unresolved_in_time;  // nodes whose lookup had not answered at the deadline
  std::vector<std::string> cloud_nodes;         // State=CLOUD in slurm.conf: not expected to resolve
  unsigned slurmctld_port = 6817, slurmd_port = 6818;
  std::string controller;                       // SlurmctldHost's name
  std::string controller_address;               // its address (from slurm.conf, else resolved), "" unknown
  std::string route_table;                      // /proc/net/route, to find the interface traffic arrives on
  std::string firewall_rules;                   // iptables-save output ("" unknown)
  bool firewall_known = false;
  std::string firewall_problem;                 // why it is not known (no iptables-save, it hung, ...)
  topology::NicSelection job_fabric;           // NICs jobs use from UCX_NET_DEVICES/NCCL_*, if set
  // The interface job traffic leaves by: the first job_fabric netdev, else the one holding this node's
  // Slurm address (NodeAddr or its resolved name); its MTU must match the other nodes' (--job compares).
  std::string job_interface;
  unsigned job_interface_mtu = 0;
  std::optional<std::uint32_t> slurm_version;   // the running Slurm's (slurmd -V), 0x160508 for 22.05.8
  std::vector<PluginFile> cnet_plugins;         // cnet.so (plugstack.conf), job_submit_cnet.so, gres_rdma.so (PluginDir)
  MungeState munge;
  std::vector<topology::NicSettings> nic_settings;  // queues, rings, IRQ binding, driver/firmware, offloads
  std::string nic_settings_problem;  // the NIC drivers did not answer in time (ethtool ioctl, sysfs): why
  std::string nic_drivers;  // driver_summaries() of them, else the job interface's driver (a veth's)
  // Running and completing jobs on this node as slurmctld lists them (squeue -w), at `now`: one stuck
  // completing, or running long past its end, holds resources nobody else can use.
  std::vector<scheduling::HeldJob> held_jobs;
  bool held_jobs_known = false;
  std::int64_t now = 0;                         // unix seconds when the facts were gathered
};

struct Deadlines {
  std::chrono::seconds discovery{15}, dns{10}, firewall{5}, munge{5}, squeue{10}, nics{5};
  // The whole run's end: slurmd kills a HealthCheckProgram at 60 s, and the steps' own deadlines add up
  // to more. Each step waits for its own deadline or what is left of the run, whichever is less.
  std::chrono::steady_clock::time_point finish_by = std::chrono::steady_clock::time_point::max();
  std::chrono::milliseconds within(std::chrono::milliseconds own) const;
};

struct GatherOptions {
  std::string root = "/";             // procfs/sysfs/dev under this folder
  std::string slurm_conf;             // default: $SLURM_CONF or /etc/slurm/slurm.conf
  std::string hostname;               // default: the short host name (slurmd's default node name)
  std::vector<std::string> nodes;     // names to resolve; default: slurm.conf's NodeName= entries
  // Resolve only this node (and the controller), not every node: as HealthCheckProgram every node runs
  // at once, and each resolving all N names is N^2 lookups across the cluster each interval.
  bool only_this_node = false;
  std::string firewall_rules_file;    // default: run iptables-save when it exists
  bool live_process_limits = true;    // read this process's rlimits and adjtimex (off for fake trees)
  std::string slurm_version;          // default: what `slurmd -V` (or `scontrol --version`) says
  topology::EthtoolReader ethtool;    // default: the live ethtool ioctl when root is "/", nothing for a fake tree
  Deadlines deadlines;
};

NodeFacts gather_facts(const GatherOptions& options);

// The clock's offset from its time source in ms, from `chronyc -c tracking`: the larger of the system
// time's offset and the last measured one (adjtimex clamps what it reports to 500 ms). Nothing when the
// text is not chrony's.
std::optional<double> chrony_offset_ms(const std::string& tracking_csv);

// Hands a munge credential to this node's munged (`socket`, "" for munge's default) to decode: "" when
// it decodes, else what went wrong (another node's credential that fails here: their keys differ).
std::string unmunge_problem(const std::string& credential, const std::string& socket, std::chrono::milliseconds deadline);

// How many of a NIC's IRQs may run only on CPUs of its own NUMA node.
unsigned irqs_on_numa_node(const topology::NicSettings& nic);

// Snapshots: the facts that should match across a cluster's nodes (not hostname, addresses, clock).
std::string snapshot_json(const NodeFacts& facts);
// "net.core.rmem_max: template 4194304, here 212992", one line per difference; empty when alike.
std::vector<std::string> compare_snapshot(const std::string& template_json, const NodeFacts& facts);

// slurm.conf's NodeName= entries expanded ("cn[1-3]" -> cn1 cn2 cn3), with their NodeAddr and state.
struct SlurmNode {
  std::string name, address;
  bool cloud = false;  // State=CLOUD: powered up on demand, not resolvable until then
};
std::vector<SlurmNode> slurm_conf_nodes(const std::string& slurm_conf_text);

// Name lookups with one deadline for all of them (getaddrinfo_a): name -> address ("" unresolvable);
// names still unanswered at the deadline are left out of the map and listed in `late`.
std::map<std::string, std::string> resolve_all(const std::vector<std::string>& names, std::chrono::milliseconds deadline,
                                               std::vector<std::string>& late);

}  // namespace cnet::doctor

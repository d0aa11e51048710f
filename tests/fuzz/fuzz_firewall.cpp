// iptables-save output, the firewall cnet-doctor evaluates as the kernel would: any text gives a verdict.
#include "cnet/doctor/firewall.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string rules = cnet::fuzz::text(data, size);
  cnet::doctor::evaluate_firewall(rules, {"10.0.0.1", 6818, "eth0"});
  cnet::doctor::evaluate_firewall(rules, {"", 6818, ""});
  cnet::doctor::interface_for(rules, "10.0.0.1");
  return 0;
}

// doctor.conf as a site writes it: accepted key by key or refused naming file:line; the checks then run
// with whatever it set on an empty node.
#include "cnet/doctor/checks.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto config = cnet::doctor::DoctorConfig::parse(cnet::fuzz::text(data, size), "doctor.conf");
    cnet::doctor::NodeFacts facts;
    facts.firewall_known = true;
    facts.firewall_rules = "-A INPUT -p tcp --dport 6818 -j DROP\n";
    cnet::doctor::run_checks(facts, config);
  } catch (const std::runtime_error&) {
  }
  return 0;
}

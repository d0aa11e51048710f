// cnet-templates.conf, as an admin (or a careless edit) writes it: parsed, and every template's
// constraint and gres built, or refused with TemplateError naming the line.
#include "cnet/scheduling/template_catalog.hpp"
#include "cnet/scheduling/template_expansion.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto c = cnet::scheduling::TemplateCatalog::parse(cnet::fuzz::text(data, size), "fuzz.conf");
    for (const auto& t : c.templates()) {
      t.summary();
      cnet::scheduling::JobRequest user;
      user.features = "rack1";
      cnet::scheduling::expand_template(t, user);
    }
  } catch (const cnet::scheduling::TemplateError&) {
  }
  return 0;
}

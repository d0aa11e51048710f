#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../scratch_dir.hpp"
#include "cnet/doctor/checks.hpp"
#include "cnet/doctor/slurm_plugins.hpp"

using namespace cnet::doctor;
namespace fs = std::filesystem;

TEST(SlurmPlugins, VersionsAndSlurmsLoadRule) {
  EXPECT_EQ(version_text(0x160508), "22.05.8");
  EXPECT_EQ(version_text(0x180b05), "24.11.5");
  EXPECT_EQ(parse_slurm_version("slurm 22.05.8\n"), 0x160508u);
  EXPECT_EQ(parse_slurm_version("slurm-wlm 24.11.5"), 0x180b05u);
  EXPECT_FALSE(parse_slurm_version("no version here"));
  EXPECT_TRUE(slurm_would_load(0x160508, 0x160508, false));
  EXPECT_FALSE(slurm_would_load(0x160507, 0x160508, false)) << "another release: skipped";
  EXPECT_TRUE(slurm_would_load(0x160507, 0x160508, true)) << "a SPANK plugin needs major.minor only";
  EXPECT_FALSE(slurm_would_load(0x180b05, 0x160508, true));
}

// The version is read out of the plugin file itself, as Slurm would find it, without loading it.
TEST(SlurmPlugins, ReadsTheBuiltPluginsVersionWithoutLoadingIt) {
  fs::path cnet = fs::path(CNET_PLUGIN_DIR) / "cnet.so";
  ASSERT_TRUE(fs::exists(cnet)) << cnet;
  EXPECT_EQ(plugin_version(cnet), static_cast<std::uint32_t>(CNET_SLURM_VERSION));
  cnet::testing::ScratchDir d;
  // The same plugin patched as if built for 24.11.5: what a mixed-up install looks like.
  fs::copy_file(cnet, d.file("cnet.so"));
  auto sym = find_dynamic_symbol(d.file("cnet.so"), "plugin_version");
  ASSERT_TRUE(sym);
  {
    std::fstream f(d.file("cnet.so"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(sym->file_offset));
    std::uint32_t other = 0x180b05;
    f.write(reinterpret_cast<const char*>(&other), 4);
  }
  EXPECT_EQ(plugin_version(d.file("cnet.so")), 0x180b05u);
  // Not ELF, cut short, missing: no version, no crash.
  d.write("garbage.so", "not an ELF file at all");
  EXPECT_FALSE(plugin_version(d.file("garbage.so")));
  std::ifstream in(cnet, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), 4096);
  d.write("cut.so", head);
  EXPECT_FALSE(plugin_version(d.file("cut.so")));
  EXPECT_FALSE(plugin_version(d.file("missing.so")));
  EXPECT_FALSE(find_dynamic_symbol(cnet, "check_this_node")) << "not exported";
}

TEST(SlurmPlugins, TheCheckNamesAPluginOfAnotherRelease) {
  NodeFacts f;
  f.slurm_version = 0x160508;
  f.cnet_plugins = {{"/usr/lib/slurm/cnet.so", 0x160507u, true}, {"/usr/lib/slurm/gres_rdma.so", 0x180b05u, false}};
  auto r = run_checks(f, DoctorConfig::parse("clock = off\nclock.unsync = off\n", "t"));
  const CheckResult* p = nullptr;
  for (const auto& x : r)
    if (x.check == "plugins") p = &x;
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->status, Status::fail);
  EXPECT_EQ(p->seen, "gres_rdma.so was built for Slurm 24.11.5, but this node runs Slurm 22.05.8, which skips it");
  f.cnet_plugins.pop_back();
  for (const auto& x : run_checks(f, DoctorConfig::defaults())) {
    if (x.check == "plugins") {
      EXPECT_EQ(x.status, Status::pass) << x.seen;
    }
  }
}

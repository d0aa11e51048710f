#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "cnet/scheduling/template_expansion.hpp"
#include "../scratch_dir.hpp"
#include "cnet/scheduling/template_bridge.h"

using namespace cnet::scheduling;

namespace {

ResourceTemplate from(const std::string& line) { return TemplateCatalog::parse(line).templates().at(0); }

}  // namespace

TEST(TemplateExpansion, FillsWhatTheUserLeftUnset) {
  auto t = from("TemplateName=t Gpus=2 GpuType=a100 RdmaNics=1 Nodes=2-4 TimeLimit=02:00:00 Qos=high Exclusive=yes SameSwitch=yes SwitchWait=05:00");
  auto x = expand_template(t, {});
  ASSERT_EQ(x.error, "");
  EXPECT_EQ(x.set.tres_per_node, "gres:gpu:a100:2,gres:rdma:1");
  EXPECT_EQ(x.set.min_nodes, 2u);
  EXPECT_EQ(x.set.max_nodes, 4u);
  EXPECT_EQ(x.set.time_limit_min, 120u);
  EXPECT_EQ(x.set.qos, "high");
  EXPECT_EQ(x.set.exclusive, true);
  EXPECT_EQ(x.set.switches, 1u);
  EXPECT_EQ(x.set.switch_wait_s, 300u);
}

TEST(TemplateExpansion, KeepsTheUsersOtherGresAndCompatibleChoices) {
  auto t = from("TemplateName=t Gpus=1 Nodes=1-2 TimeLimit=01:00:00");
  JobRequest user;
  user.tres_per_node = "gres:gpu:1,gres:shard:2";
  user.min_nodes = user.max_nodes = 2;
  user.time_limit_min = 30;
  auto x = expand_template(t, user);
  ASSERT_EQ(x.error, "");
  EXPECT_FALSE(x.set.tres_per_node) << "already what the template asks";
  EXPECT_FALSE(x.set.min_nodes);
  EXPECT_FALSE(x.set.time_limit_min) << "a shorter limit stays the user's";
  user.tres_per_node = "gres:shard:2";
  EXPECT_EQ(expand_template(t, user).set.tres_per_node, "gres:shard:2,gres:gpu:1");
}

TEST(TemplateExpansion, ConflictsNameBothSides) {
  auto t = from("TemplateName=t Gpus=1 Nodes=1-2 TimeLimit=01:00:00 Qos=low Exclusive=yes");
  struct Case {
    JobRequest user;
    std::string expect;
  };
  JobRequest gres, nodes, time, qos, shared;
  gres.tres_per_node = "gres:gpu:4";
  nodes.min_nodes = nodes.max_nodes = 3;
  time.time_limit_min = 90;
  qos.qos = "high";
  shared.exclusive = false;
  for (const auto& c : std::vector<Case>{{gres, "sets --gres=gpu:1 but the job asks for --gres=gpu:4"},
                                          {nodes, "sets --nodes=1-2 but the job asks for --nodes=3"},
                                          {time, "sets a time limit of 1:00:00 but the job asks for --time=1:30:00"},
                                          {qos, "sets --qos=low but the job asks for --qos=high"},
                                          {shared, "sets --exclusive but the job asks for --oversubscribe"}}) {
    auto x = expand_template(t, c.user);
    EXPECT_NE(x.error.find(c.expect), std::string::npos) << x.error;
    EXPECT_NE(x.error.find("AllowOverride=yes"), std::string::npos) << x.error;
  }
  auto lenient = from("TemplateName=t Gpus=1 AllowOverride=yes");
  auto x = expand_template(lenient, gres);
  EXPECT_EQ(x.error, "");
  EXPECT_FALSE(x.set.tres_per_node) << "the user's gres stands";
}

TEST(TemplateExpansion, ModifyChecksButAddsNothing) {
  auto t = from("TemplateName=t Gpus=1 TimeLimit=01:00:00");
  EXPECT_FALSE(expand_template(t, {}, true).set.tres_per_node);
  JobRequest longer;
  longer.time_limit_min = 180;
  EXPECT_NE(expand_template(t, longer, true).error, "");
}

TEST(TemplateExpansion, ConstraintCutToFeaturesNodesHave) {
  auto t = from("TemplateName=t Gpus=1 MinGpuMemory=40G Fabric=ib MinBandwidth=100 Features=nvlink");
  std::set<std::string> cluster = {"nvlink", "gpumem80g", "gpumem40g", "ib200", "eth25"};
  auto x = expand_template(t, {}, false, &cluster);
  ASSERT_EQ(x.error, "");
  EXPECT_EQ(x.set.features, "nvlink&(gpumem40g|gpumem80g)&ib200");
  JobRequest user;
  user.features = "rack1";
  EXPECT_EQ(expand_template(t, user, false, &cluster).set.features, "(rack1)&nvlink&(gpumem40g|gpumem80g)&ib200");
  std::set<std::string> ethernet = {"nvlink", "gpumem80g", "eth25"};
  auto refused = expand_template(t, {}, false, &ethernet);
  EXPECT_NE(refused.error.find("needs node feature (ib100|ib200|ib400|ib800), which no node has"), std::string::npos) << refused.error;
}

TEST(TemplateExpansion, TemplateNameFromSpankEnvironment) {
  EXPECT_EQ(template_from_spank_env({"FOO=1", "SPANK_CNET_TEMPLATE=infer-small"}), "infer-small");
  EXPECT_EQ(template_from_spank_env({"CNET_TEMPLATE=debug"}), "debug");
  EXPECT_EQ(template_from_spank_env({"CNET_TEMPLATES=x"}), "");
}

// The C bridge job_submit/cnet calls: unknown names listed, a damaged file keeps the last good catalogue.
TEST(TemplateBridge, UnknownNamesAndDamagedCatalogues) {
  cnet::testing::ScratchDir scratch;
  std::string path = scratch.write("cnet-templates.conf", "TemplateName=small Gpus=1\nTemplateName=big Gpus=8\n");
  char env0[] = "SPANK_CNET_TEMPLATE=small", env1[] = "SPANK_CNET_TEMPLATE=huge";
  char* small_env[] = {env0};
  char* huge_env[] = {env1};
  cnet_job_request_t r{};
  r.min_nodes = r.max_nodes = r.time_limit = r.req_switch = r.wait4switch = CNET_UNSET_U32;
  r.exclusive = -1;
  r.spank_env = huge_env;
  r.spank_env_size = 1;
  cnet_job_edit_t e;
  EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 1);
  EXPECT_NE(std::string(e.message).find("unknown template 'huge'; valid templates: small, big"), std::string::npos) << e.message;
  cnet_job_edit_free(&e);

  r.spank_env = small_env;
  EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 0);
  EXPECT_STREQ(e.tres_per_node, "gres:gpu:1");
  cnet_job_edit_free(&e);

  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(path) << "TemplateName=small Gpus=many\n";
  EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 0);
  EXPECT_STREQ(e.tres_per_node, "gres:gpu:1") << "the last good catalogue stays";
  ASSERT_NE(e.catalog_problem, nullptr);
  EXPECT_NE(std::string(e.catalog_problem).find("keeping the templates read before"), std::string::npos) << e.catalog_problem;
  cnet_job_edit_free(&e);

  r.spank_env_size = 0;  // no template: nothing to do
  EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 0);
  EXPECT_EQ(e.template_name, nullptr);
  cnet_job_edit_free(&e);
}

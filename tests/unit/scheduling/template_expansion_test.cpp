#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "../scratch_dir.hpp"
#include "cnet/scheduling/template_expansion.hpp"
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

// Slurm 23.02 and later spell tres_per_node "gres/gpu:2": the user's entries are recognised and the
// template's are added in that spelling (24.11 misreads "gres:gpu:2").
TEST(TemplateExpansion, SpeaksTheTresSpellingOfSlurm2302AndLater) {
  auto t = from("TemplateName=t Gpus=1 RdmaNics=1");
  JobRequest user;
  user.tres_gres_prefix = "gres/";
  EXPECT_EQ(expand_template(t, user).set.tres_per_node, "gres/gpu:1,gres/rdma:1");
  user.tres_per_node = "gres/gpu:1,gres/shard:2";
  EXPECT_EQ(expand_template(t, user).set.tres_per_node, "gres/gpu:1,gres/shard:2,gres/rdma:1");
  user.tres_per_node = "gres/gpu:4";
  auto x = expand_template(t, user);
  EXPECT_NE(x.error.find("sets --gres=gpu:1 but the job asks for --gres=gpu:4"), std::string::npos) << x.error;
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

// What a user typed reaches slurmctld's log (and the user) escaped: a newline there would forge a log
// line, a terminal escape would act on whoever reads the log.
TEST(TemplateExpansion, TheUsersTextIsEscapedInMessages) {
  auto t = from("TemplateName=t Gpus=1 Qos=low");
  JobRequest qos;
  qos.qos = "high\n[2026-01-01T00:00:00] error: forged\x1b[2J";
  auto x = expand_template(t, qos);
  EXPECT_EQ(x.error.find('\n'), std::string::npos) << x.error;
  EXPECT_EQ(x.error.find('\x1b'), std::string::npos) << x.error;
  EXPECT_NE(x.error.find("--qos=high\\x0a[2026"), std::string::npos) << x.error;
  auto lenient = from("TemplateName=t Gpus=1 Qos=low AllowOverride=yes");
  for (const auto& note : expand_template(lenient, qos).notes) EXPECT_EQ(note.find('\n'), std::string::npos) << note;
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
  // Containing the template's text is not meeting it; unbalanced parentheses would rewrite its meaning.
  user.features = "nvlink&(gpumem40g|gpumem80g)&ib200x";
  EXPECT_EQ(expand_template(t, user, false, &cluster).set.features, "(nvlink&(gpumem40g|gpumem80g)&ib200x)&nvlink&(gpumem40g|gpumem80g)&ib200");
  user.features = "cheap)|(x";
  auto unbalanced = expand_template(t, user, false, &cluster);
  EXPECT_NE(unbalanced.error.find("--constraint 'cheap)|(x' has unbalanced parentheses"), std::string::npos) << unbalanced.error;
  user.features = "(rack1)&nvlink&(gpumem40g|gpumem80g)&ib200";  // already merged (a modify of a templated job)
  EXPECT_FALSE(expand_template(t, user, true, &cluster).set.features);
  std::set<std::string> ethernet = {"nvlink", "gpumem80g", "eth25"};
  auto refused = expand_template(t, {}, false, &ethernet);
  EXPECT_NE(refused.error.find("needs node feature (ib100|ib200|ib400|ib800), which no node has"), std::string::npos) << refused.error;
}

// A user's change to a queued templated job is checked as a submission would be, and adds nothing.
TEST(TemplateExpansion, ChangesToAQueuedJobAreChecked) {
  auto catalog = TemplateCatalog::parse("TemplateName=t Gpus=1 TimeLimit=60\n");
  const ResourceTemplate& t = *catalog.find("t");
  JobRequest change;
  change.time_limit_min = 180;
  auto x = expand_template(t, change, true);
  EXPECT_NE(x.error.find("sets a time limit of 1:00:00 but the job asks for --time=3:00:00"), std::string::npos) << x.error;
  change.time_limit_min = 30;
  x = expand_template(t, change, true);
  EXPECT_EQ(x.error, "");
  EXPECT_FALSE(x.set.tres_per_node) << "a change adds nothing the job does not already have";
}

TEST(TemplateExpansion, TemplateNameFromSpankEnvironment) {
  EXPECT_EQ(template_from_spank_env({"FOO=1", "SPANK_CNET_TEMPLATE=infer-small"}), "infer-small");
  EXPECT_EQ(template_from_spank_env({"CNET_TEMPLATE=debug"}), "debug");
  EXPECT_EQ(template_from_spank_env({"CNET_TEMPLATES=x"}), "");
}

namespace {
cnet_job_request_t request_for(char** env, std::uint32_t n) {
  cnet_job_request_t r{};
  r.min_nodes = r.max_nodes = r.time_limit = r.req_switch = r.wait4switch = CNET_UNSET_U32;
  r.exclusive = -1;
  r.spank_env = env;
  r.spank_env_size = n;
  return r;
}
// What the catalogue reader told slurmctld's log (it runs on its own thread).
std::mutex g_log_mutex;
std::vector<std::pair<std::string, int>> g_log;
void capture(const char* line, int is_error) {
  std::lock_guard lock(g_log_mutex);
  g_log.emplace_back(line, is_error);
}
bool logged(const std::string& part, int is_error) {
  std::lock_guard lock(g_log_mutex);
  for (const auto& [line, error] : g_log)
    if (error == is_error && line.find(part) != std::string::npos) return true;
  return false;
}
// Until `done` holds (the reader polls every 20 ms here), at most 5 s.
template <typename Done>
bool eventually(Done done) {
  for (int i = 0; i < 250; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}
}  // namespace

// The C bridge job_submit/cnet calls: unknown names listed, a damaged file keeps the last good catalogue
// and is logged once, a good change is taken into use.
TEST(TemplateBridge, UnknownNamesAndDamagedCatalogues) {
  cnet::testing::ScratchDir scratch;
  std::string path = scratch.write("cnet-templates.conf", "TemplateName=small Gpus=1\nTemplateName=big Gpus=8\n");
  cnet_preload_templates(path.c_str(), 20, capture);
  EXPECT_TRUE(logged("2 templates: small, big", 0));
  char env0[] = "SPANK_CNET_TEMPLATE=small", env1[] = "SPANK_CNET_TEMPLATE=huge";
  char* small_env[] = {env0};
  char* huge_env[] = {env1};
  auto r = request_for(huge_env, 1);
  cnet_job_edit_t e;
  EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 1);
  EXPECT_NE(std::string(e.message).find("unknown template 'huge'; valid templates: small, big"), std::string::npos) << e.message;
  cnet_job_edit_free(&e);

  r.spank_env = small_env;
  EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 0);
  EXPECT_STREQ(e.tres_per_node, "gres:gpu:1");
  cnet_job_edit_free(&e);
  r.tres_gres_prefix = "gres/";  // what job_submit/cnet passes when built for Slurm 23.02 or later
  EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 0);
  EXPECT_STREQ(e.tres_per_node, "gres/gpu:1");
  cnet_job_edit_free(&e);
  r.tres_gres_prefix = nullptr;

  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(path) << "TemplateName=small Gpus=many\n";
  EXPECT_TRUE(eventually([] { return logged("Gpus=many must be a whole number", 1); }));
  EXPECT_TRUE(logged("keeping the templates read before", 1));
  EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 0);
  EXPECT_STREQ(e.tres_per_node, "gres:gpu:1") << "the last good catalogue stays";
  cnet_job_edit_free(&e);

  std::ofstream(path) << "TemplateName=small Gpus=2\n";
  EXPECT_TRUE(eventually([&] {
    cnet_apply_template(path.c_str(), &r, &e);
    bool changed = e.tres_per_node && std::string(e.tres_per_node) == "gres:gpu:2";
    cnet_job_edit_free(&e);
    return changed;
  }));

  r.spank_env_size = 0;  // no template: nothing to do
  EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 0);
  EXPECT_EQ(e.template_name, nullptr);
  cnet_job_edit_free(&e);
  cnet_stop_templates();
}

// A submission never opens the file: a FIFO (or a hung NFS mount) at the templates path does not
// stall slurmctld, which goes on with the last good catalogue.
TEST(TemplateBridge, SubmissionsNeverWaitOnTheFile) {
  cnet::testing::ScratchDir scratch;
  std::string path = scratch.write("cnet-templates.conf", "TemplateName=small Gpus=1\n");
  cnet_preload_templates(path.c_str(), 20, capture);
  std::filesystem::remove(path);
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  char env0[] = "SPANK_CNET_TEMPLATE=small";
  char* env[] = {env0};
  auto r = request_for(env, 1);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    cnet_job_edit_t e;
    EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 0);
    EXPECT_STREQ(e.tres_per_node, "gres:gpu:1");
    cnet_job_edit_free(&e);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_TRUE(eventually([] { return logged("not a regular file", 1); }));
  cnet_stop_templates();
}

// The template name comes from the user's SPANK environment: a newline would forge slurmctld log lines.
TEST(TemplateBridge, TemplateNamesFromTheJobAreChecked) {
  cnet::testing::ScratchDir scratch;
  std::string path = scratch.write("cnet-templates.conf", "TemplateName=small Gpus=1\n");
  cnet_preload_templates(path.c_str(), 20, nullptr);
  char env0[] = "SPANK_CNET_TEMPLATE=small\nerror: forged";
  char* env[] = {env0};
  auto r = request_for(env, 1);
  cnet_job_edit_t e;
  EXPECT_EQ(cnet_apply_template(path.c_str(), &r, &e), 1);
  EXPECT_EQ(std::string(e.message), "cnet: the job's template name 'small\\x0aerror: forged' is not a template name (letters, digits, '_', '.', '-'; at most 64)");
  cnet_job_edit_free(&e);
  cnet_stop_templates();
}

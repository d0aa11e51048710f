#include <gtest/gtest.h>

#include <filesystem>

#include "cnet/scheduling/template_catalog.hpp"

using namespace cnet::scheduling;

namespace {
std::string error_of(const std::string& text) {
  try {
    TemplateCatalog::parse(text, "t.conf");
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(TemplateCatalog, TheShippedExampleParses) {
  auto catalog = TemplateCatalog::load(CNET_SOURCE_DIR "/contrib/slurm/cnet-templates.conf");
  EXPECT_EQ(catalog.names(), "infer-small, infer-pipeline, train-8gpu, debug");
  const ResourceTemplate* t = catalog.find("train-8gpu");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->gpus_per_node, 8u);
  EXPECT_EQ(t->gres_per_node(), "gpu:8");
  EXPECT_EQ(t->nodes_min, 2u);
  EXPECT_EQ(t->nodes_max, 16u);
  EXPECT_TRUE(t->same_switch);
  EXPECT_EQ(t->switch_wait_s, 600u);
  EXPECT_TRUE(t->exclusive);
  EXPECT_EQ(t->time_limit_min, 2u * 24 * 60);
  EXPECT_EQ(t->qos, "normal");
  EXPECT_EQ(t->constraint(),
            "nvlink&(gpumem80g|gpumem94g|gpumem96g|gpumem120g|gpumem128g|gpumem141g|gpumem144g|gpumem180g|gpumem192g|"
            "gpumem288g)&(ib200|ib400|ib800)");
  EXPECT_EQ(catalog.find("debug")->constraint(), "");
  EXPECT_EQ(catalog.find("nope"), nullptr);
}

TEST(TemplateCatalog, SlurmStyleValues) {
  auto c = TemplateCatalog::parse(
      "TemplateName=a Gpus=2 GpuType=a100 MinGpuMemory=141GB Fabric=eth MinBandwidth=100 TimeLimit=30 "
      "Description=\"two GPUs, quoted\"\n"
      "TemplateName=b Fabric=roce TimeLimit=1-12 Nodes=3  # comment\n");
  EXPECT_EQ(c.find("a")->gres_per_node(), "gpu:a100:2");
  EXPECT_EQ(c.find("a")->constraint(), "(gpumem141g|gpumem144g|gpumem180g|gpumem192g|gpumem288g)&(eth100|eth200|eth400|eth800)");
  EXPECT_EQ(c.find("a")->time_limit_min, 30u);
  EXPECT_EQ(c.find("a")->description, "two GPUs, quoted");
  EXPECT_EQ(c.find("b")->time_limit_min, 36u * 60);
  EXPECT_EQ(c.find("b")->constraint(), "(roce1|roce10|roce25|roce40|roce50|roce100|roce200|roce400|roce800)");
  EXPECT_EQ(c.find("b")->nodes_max, 3u);
}

// Keys in any case, as slurm.conf's; a '#' wanted in a description is written \#, as in slurm.conf.
TEST(TemplateCatalog, SlurmsLineGrammar) {
  auto c = TemplateCatalog::parse("templatename=a GPUS=2 description=\"GPU \\#1\" \\\r\n  timelimit=10\r\n");
  ASSERT_NE(c.find("a"), nullptr);
  EXPECT_EQ(c.find("a")->gpus_per_node, 2u);
  EXPECT_EQ(c.find("a")->description, "GPU #1");
  EXPECT_EQ(c.find("a")->time_limit_min, 10u) << "continued over a CRLF line";
}

// Every mistake names the file and line, what is wrong and what would be right.
TEST(TemplateCatalog, MalformedFilesAreRefusedWithFileLineAndFix) {
  EXPECT_EQ(error_of("Gpus=2"), "t.conf:1: each template starts with TemplateName=NAME, found Gpus=");
  EXPECT_EQ(error_of("\n\nTemplateName=a Gpus=many"), "t.conf:3: Gpus=many must be a whole number from 0 to 64");
  EXPECT_EQ(error_of("TemplateName=a Colour=blue").rfind("t.conf:1: unknown key Colour= (known: Description,", 0), 0u);
  EXPECT_EQ(error_of("TemplateName=a\nTemplateName=a"), "t.conf:2: template a is defined twice");
  EXPECT_EQ(error_of("TemplateName=../x"), "t.conf:1: TemplateName=../x must be letters, digits, '_', '.' or '-' (at most 64)");
  EXPECT_EQ(error_of("TemplateName=list"), "t.conf:1: TemplateName=list is reserved for --cnet-template=list");
  EXPECT_EQ(error_of("TemplateName=a Fabric=opa"), "t.conf:1: Fabric=opa must be one of any, ib, roce, eth");
  EXPECT_EQ(error_of("TemplateName=a Nodes=4-2"), "t.conf:1: Nodes=4-2 must be at least 1 and MIN <= MAX");
  EXPECT_EQ(error_of("TemplateName=a TimeLimit=soon"), "t.conf:1: TimeLimit=soon is not a Slurm time (MM, HH:MM:SS or D-HH:MM:SS)");
  EXPECT_EQ(error_of("TemplateName=a Description=\"open"),
            "t.conf:1: unterminated quote in Description= (a '#' starts a comment even inside quotes; write \\# for a literal #)");
  EXPECT_EQ(error_of("TemplateName=a MinGpuMemory=500G"),
            "t.conf:1: MinGpuMemory=500G is more than any GPU memory class cnet knows (the largest is 288G)");
  EXPECT_EQ(error_of("TemplateName=a Fabric=ib MinBandwidth=1600"),
            "t.conf:1: MinBandwidth=1600 is faster than any ib link rate cnet knows (the fastest is 800)");
  EXPECT_EQ(error_of("TemplateName=a Features=ok,$(id)"),
            "t.conf:1: Features=ok,$(id): '$(id)' is not a node feature name (letters, digits, '_', '.', '-')");
  EXPECT_EQ(error_of("TemplateName=a Exclusive=maybe"), "t.conf:1: Exclusive=maybe must be yes or no");
  EXPECT_EQ(error_of("TemplateName=a GpuType=a100"), "t.conf:1: GpuType= needs Gpus= for template a");
  EXPECT_EQ(error_of("TemplateName=a \\"), "t.conf:1: file ends inside a continued line (trailing '\\')");
  EXPECT_EQ(error_of(std::string("TemplateName=a\0", 15)), "t.conf:1: contains a NUL byte; is this a text file?");
  EXPECT_EQ(error_of("TemplateName=a Gpus=1 Gpus=2"), "t.conf:1: Gpus given twice for template a");
  EXPECT_EQ(error_of("TemplateName=a junk"), "t.conf:1: expected Key=Value, found 'junk'");
}

TEST(TemplateCatalog, UnreadableFileSaysWhichAndWhere) {
  try {
    TemplateCatalog::load("/nonexistent/cnet-templates.conf");
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_STREQ(e.what(), "cannot read templates file: /nonexistent/cnet-templates.conf: does not exist (check the templates= path in plugstack.conf)");
  }
}

TEST(TemplateCatalog, NameGrammar) {
  EXPECT_TRUE(valid_template_name("train-8gpu"));
  EXPECT_TRUE(valid_template_name("a.b_c"));
  for (const std::string& bad : std::vector<std::string>{"", "-x", "../etc", "a b", "$(id)", "a;b", std::string(65, 'a'), std::string("a\0b", 3)})
    EXPECT_FALSE(valid_template_name(bad)) << bad;
}

#include <gtest/gtest.h>

#include "cnet/common/slurm_config.hpp"

using namespace cnet::common;

namespace {
std::string error_of(const std::string& text) {
  try {
    parse_config_lines(text, "x.conf", true);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(SlurmConfig, LinesPairsAndComments) {
  auto lines = parse_config_lines("# a comment\nNodeName=cn[1-2] CPUs=4 # trailing\n\n  Gres=gpu:2\r\n", "slurm.conf");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].number, 2u);
  EXPECT_EQ(lines[0].where(), "slurm.conf:2");
  EXPECT_EQ(*lines[0].find("nodename"), "cn[1-2]") << "keys compare without case, as Slurm's";
  EXPECT_EQ(lines[0].value("CPUS"), "4");
  EXPECT_EQ(lines[1].value("Gres"), "gpu:2") << "CR before LF dropped";
  EXPECT_EQ(lines[1].find("Nope"), nullptr);
}

TEST(SlurmConfig, QuotesContinuationsAndEscapes) {
  auto lines = parse_config_lines("TemplateName=a Description=\"two words\" \\\n   Gpus=2\nX=a\\#b Y=c\\\\\n", "t.conf", true);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].value("Description"), "two words");
  EXPECT_EQ(lines[0].value("Gpus"), "2");
  EXPECT_EQ(lines[1].value("X"), "a#b") << "\\# is a literal #";
  EXPECT_EQ(lines[1].value("Y"), "c\\") << "an escaped backslash at the end does not continue the line";
}

TEST(SlurmConfig, ErrorsNameTheLineAndTheFix) {
  EXPECT_EQ(error_of("A=1 B=\"open\n"), "x.conf:1: unterminated quote in B= (a '#' starts a comment even inside quotes; write \\# for a literal #)");
  EXPECT_NE(error_of("A=1\nDescription=\"GPU #1\"\n").find("x.conf:2: unterminated quote"), std::string::npos);
  EXPECT_EQ(error_of("A=1 \\\n"), "x.conf:1: file ends inside a continued line (trailing '\\')");
  EXPECT_EQ(error_of("\nbare word\n"), "x.conf:2: expected Key=Value, found 'bare'");
  EXPECT_EQ(error_of("=5\n"), "x.conf:1: '=5' has no key before the '='");
  EXPECT_NE(error_of(std::string("A=1\0", 4)).find("NUL byte"), std::string::npos);
  auto lenient = parse_config_lines("Include /etc/slurm/more.conf\n", "slurm.conf");
  EXPECT_EQ(lenient.at(0).words, (std::vector<std::string>{"Include", "/etc/slurm/more.conf"}));
}

TEST(SlurmConfig, LinearInTheFileSize) {
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "TemplateName=t" + std::to_string(i) + " Gpus=1 Description=\"x\"\n";
  EXPECT_EQ(parse_config_lines(big, "big.conf", true).size(), 20000u);
}

TEST(SlurmConfig, HostLists) {
  EXPECT_EQ(expand_hostlist("cn[1-3,5]"), (std::vector<std::string>{"cn1", "cn2", "cn3", "cn5"}));
  EXPECT_EQ(expand_hostlist("gpu[08-10]"), (std::vector<std::string>{"gpu08", "gpu09", "gpu10"}));
  EXPECT_EQ(expand_hostlist("/dev/nvidia[0-1]"), (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia1"}));
  EXPECT_EQ(expand_hostlist("plain"), std::vector<std::string>{"plain"});
  EXPECT_EQ(expand_hostlist("a[1-2]b[1-2],c"), (std::vector<std::string>{"a1b1", "a1b2", "a2b1", "a2b2", "c"}));
  for (const char* bad : {"cn[1-3", "cn1-3]", "cn[3-1]", "cn[a-b]", "cn[[1]]"}) EXPECT_THROW(expand_hostlist(bad), ConfigError) << bad;
  EXPECT_THROW(expand_hostlist("n[0-999999]", 1000), ConfigError);
  EXPECT_EQ(expand_hostlist("n[1-2]x[08-09]y"), (std::vector<std::string>{"n1x08y", "n1x09y", "n2x08y", "n2x09y"}));
  // An empty group made no host and no error, so the groups before it were walked through without end
  // (found by fuzzing): refused, as is a list too long, before any host is made.
  for (const char* bad : {"cn[]", "a[0-9999]b[0-9999]c[0-9999][]", "a[0-9999]b[0-9999]c[0-9999]x"}) {
    try {
      expand_hostlist(bad, 10000);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_TRUE(std::string(e.what()).find("names no host") != std::string::npos ||
                  std::string(e.what()).find("names more than 10000 hosts") != std::string::npos) << e.what();
    }
  }
}

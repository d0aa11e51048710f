#include <gtest/gtest.h>

#include "cnet/common/host.hpp"
#include "cnet/common/text.hpp"

using namespace cnet::common;

TEST(Text, JoinSplitTrim) {
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({}, ","), "");
  EXPECT_EQ(split("a,,b,"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split("x:y", ':'), (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(split("").empty());
  EXPECT_EQ(split_fields("a,,b,"), (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_EQ(split_fields(""), (std::vector<std::string>{""}));
  EXPECT_EQ(split_fields("x:y", ':'), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(trim(" \t a b \r\n"), "a b");
  EXPECT_EQ(trim("   "), "");
  EXPECT_TRUE(equal_ignoring_case("TemplateName", "templatename"));
  EXPECT_FALSE(equal_ignoring_case("Gpus", "Gpu"));
}

TEST(Text, Ranges) {
  EXPECT_EQ(parse_ranges("0,1,3"), (std::vector<unsigned>{0, 1, 3}));
  EXPECT_EQ(parse_ranges("0-2,5"), (std::vector<unsigned>{0, 1, 2, 5}));
  EXPECT_EQ(parse_ranges("6817:6819", 65536, ':'), (std::vector<unsigned>{6817, 6818, 6819}));
  for (const char* bad : {"", "a", "1,,2", "3-1", "0-99999", "-1", "1 2", ",", "1-", "-", "99999999999"})
    EXPECT_FALSE(parse_ranges(bad)) << bad;
  EXPECT_FALSE(parse_ranges(":", 65536, ':')) << "iptables' ':' alone (it once aborted cnet-doctor)";
  EXPECT_FALSE(parse_ranges("0-2000", 1024)) << "more than the limit";
  EXPECT_EQ(compress_ranges({5, 0, 1, 2, 7, 8, 2}), "0-2,5,7-8");
  EXPECT_EQ(compress_ranges({}), "");
}

TEST(Text, PlainValuesOnly) {
  EXPECT_TRUE(plain_value("closest"));
  EXPECT_TRUE(plain_value("train-8gpu"));
  for (const std::string& bad : std::vector<std::string>{"", "$(id)", "`id`", "a b", "a;b", "../x/", std::string("a\0b", 3), std::string(10240, 'x'), "a\nb"})
    EXPECT_FALSE(plain_value(bad)) << bad;
}

TEST(Text, PrintableEscapesWhatATerminalOrLogWouldMisread) {
  EXPECT_EQ(printable("cn1"), "cn1");
  EXPECT_EQ(printable("a\nb\x1b[31m\"'"), "a\\x0ab\\x1b[31m\\x22\\x27");
  EXPECT_EQ(printable(std::string(300, 'x'), 4), "xxxx...");
}

TEST(Host, Names) {
  EXPECT_FALSE(hostname().empty());
  EXPECT_EQ(short_hostname().find('.'), std::string::npos);
  EXPECT_EQ(hostname().rfind(short_hostname(), 0), 0u);
  EXPECT_EQ(short_name("gpu-a07.cluster.example.org"), "gpu-a07");
  EXPECT_EQ(short_name("cn1"), "cn1");
  EXPECT_EQ(short_name("10.1.2.3"), "10.1.2.3") << "an address is not a name to shorten";
}

TEST(Host, InterfaceAddresses) {
  EXPECT_EQ(interface_address("lo"), "127.0.0.1");
  EXPECT_EQ(interface_address("no-such-if0"), "");
  EXPECT_FALSE(interface_address("").empty());
  EXPECT_EQ(interface_with_address("127.0.0.1"), "lo");
  EXPECT_EQ(interface_with_address(interface_address("lo")), "lo");
  EXPECT_EQ(interface_with_address("192.0.2.77"), "") << "TEST-NET-1: no host has it";
  EXPECT_EQ(interface_with_address("not an address"), "");
}

TEST(Text, XmlEscapedIsSafeInContentAndAttributes) {
  EXPECT_EQ(cnet::common::xml_escaped("a<b>&\"c\"\x01\td\n"), "a&lt;b&gt;&amp;&quot;c&quot;\td\n");
  EXPECT_EQ(cnet::common::xml_escaped("Tesla V100"), "Tesla V100");
}

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../scratch_dir.hpp"
#include "cnet/common/prometheus.hpp"

using namespace cnet::common;
namespace fs = std::filesystem;

TEST(Prometheus, ExpositionText) {
  std::string text = prometheus_text({{"cnet_x", "what x is", "gauge", {{{{"node", "cn1"}, {"check", "nic \"mlx5_0\"\\a\nb"}}, 2}, {{}, 0.5}}}});
  EXPECT_EQ(text,
            "# HELP cnet_x what x is\n# TYPE cnet_x gauge\n"
            "cnet_x{check=\"nic \\\"mlx5_0\\\"\\\\a\\nb\",node=\"cn1\"} 2\n"
            "cnet_x 0.5\n");
  EXPECT_NE(prometheus_text({{"cnet_y", "", "gauge", {{{}, 1e10}}}}).find("cnet_y 10000000000\n"), std::string::npos);
}

TEST(Prometheus, BadNamesAreRefused) {
  EXPECT_THROW(prometheus_text({{"9bad", "", "gauge", {}}}), std::invalid_argument);
  EXPECT_THROW(prometheus_text({{"ok", "", "gauge", {{{{"bad-label", "v"}}, 1}}}}), std::invalid_argument);
  EXPECT_THROW(prometheus_text({{"ok", "", "gauge", {{{{"__reserved", "v"}}, 1}}}}), std::invalid_argument);
}

TEST(Prometheus, TextfileIsReplacedWholeAndNamedProm) {
  cnet::testing::ScratchDir scratch;
  const fs::path& dir = scratch.path();
  std::string path = (dir / "cnet.prom").string();
  write_textfile(path, "old\n");
  write_textfile(path, "new\n");
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "new\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1) << "no temporary left behind";
  try {
    write_textfile((dir / "cnet.txt").string(), "x");
    FAIL() << "a name the collector ignores was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("must end in .prom"), std::string::npos) << e.what();
  }
  try {
    check_textfile_path((dir / "missing/cnet.prom").string());
    FAIL() << "a missing folder was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

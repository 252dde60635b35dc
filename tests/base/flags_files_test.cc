// The one flag parser and the one whole-file reader of every subcommand.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/files.h"
#include "base/flags.h"

namespace nccl_triage {
namespace {

struct Parsed {
  bool help = false;
  std::string format = "table";
  std::optional<std::string> root;
  std::vector<std::string> libs;
  std::optional<int> iters;
  std::vector<std::string> inputs;
};

Status Parse(std::vector<std::string> args, Parsed& p, bool positional = false) {
  FlagParser f;
  f.Switch({"--help", "-h"}, &p.help)
      .Choice({"--format"}, &p.format, {"table", "json"})
      .String({"--root"}, &p.root)
      .Repeated({"--nccl-lib"}, &p.libs)
      .Int({"--iters"}, &p.iters, 1, 100);
  if (positional) f.Positional(&p.inputs, 1);
  return f.Parse(args);
}

TEST(FlagParser, TakesSeparateAndInlineValues) {
  Parsed p;
  ASSERT_TRUE(Parse({"--root", "/a", "--format=json", "--iters=7", "-h"}, p).ok());
  EXPECT_EQ(*p.root, "/a");
  EXPECT_EQ(p.format, "json");
  EXPECT_EQ(*p.iters, 7);
  EXPECT_TRUE(p.help);
}

TEST(FlagParser, RepeatedFlagsAppendAndValuesMayContainEquals) {
  Parsed p;
  ASSERT_TRUE(Parse({"--nccl-lib", "/x", "--nccl-lib=/y=z"}, p).ok());
  EXPECT_EQ(p.libs, (std::vector<std::string>{"/x", "/y=z"}));
}

TEST(FlagParser, SwitchesTakeExplicitTrueOrFalse) {
  Parsed p;
  ASSERT_TRUE(Parse({"--help=false"}, p).ok());
  EXPECT_FALSE(p.help);
  EXPECT_EQ(Parse({"--help=maybe"}, p).message(), "--help: expects true or false (not 'maybe')");
}

TEST(FlagParser, SaysWhatIsWrongInOneWording) {
  Parsed p;
  EXPECT_EQ(Parse({"--bogus"}, p).message(), "unknown flag '--bogus' (try --help)");
  EXPECT_EQ(Parse({"--bogus=1"}, p).message(), "unknown flag '--bogus' (try --help)");
  EXPECT_EQ(Parse({"--root"}, p).message(), "--root needs a value");
  EXPECT_EQ(Parse({"--root="}, p).message(), "--root needs a value");
  EXPECT_EQ(Parse({"--format", "xml"}, p).message(),
            "--format: expects one of table, json (not 'xml')");
  EXPECT_EQ(Parse({"--iters", "0"}, p).message(),
            "--iters: expects an integer between 1 and 100 (not '0')");
  EXPECT_EQ(Parse({"--iters", "7x"}, p).message(),
            "--iters: expects an integer between 1 and 100 (not '7x')");
  EXPECT_EQ(Parse({"extra"}, p).message(), "unexpected argument 'extra' (try --help)");
}

// flags_fuzzer: an argument with a newline made a two-line error ("unknown flag '--root\n...'").
// What was typed is echoed with its control bytes as \xNN, so the error stays one line.
TEST(FlagParser, EchoesControlBytesEscapedSoTheErrorStaysOneLine) {
  Parsed p;
  EXPECT_EQ(Parse({"--root\nx"}, p).message(), "unknown flag '--root\\x0ax' (try --help)");
  EXPECT_EQ(Parse({"--format", "json\r\n"}, p).message(),
            "--format: expects one of table, json (not 'json\\x0d\\x0a')");
  EXPECT_EQ(Parse({"a\x1b[2Jb"}, p).message(), "unexpected argument 'a\\x1b[2Jb' (try --help)");
}

TEST(FlagParser, PositionalArgumentsOnlyWhereAccepted) {
  Parsed p;
  ASSERT_TRUE(Parse({"-", "--format", "json"}, p, /*positional=*/true).ok());
  EXPECT_EQ(p.inputs, std::vector<std::string>{"-"});
  EXPECT_EQ(Parse({"a", "b"}, p, true).message(), "more than one input given (try --help)");
}

class ReadWholeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) / ("files_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const char* name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(ReadWholeFileTest, ReadsARegularFile) {
  std::ofstream(Path("a")) << "token\n";
  auto r = ReadWholeFile(Path("a"), "token");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "token\n");
}

// An empty token file switched authentication off with only a warning; it is an error now, for
// the agent, the coordinator and `triage`, which all read the token through here.
TEST_F(ReadWholeFileTest, AnEmptyTokenFileIsAnErrorNotAnEmptyToken) {
  std::ofstream(Path("empty")) << " \r\n";
  auto r = ReadTokenFile(Path("empty"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is empty: refusing to run without authentication"),
            std::string::npos)
      << r.status().message();
  std::ofstream(Path("t")) << "s3cret \n";
  EXPECT_EQ(ReadTokenFile(Path("t")).value(), "s3cret");
}

TEST_F(ReadWholeFileTest, RefusesAFifoAtOnceInsteadOfHanging) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  auto r = ReadWholeFile(Path("fifo"), "configuration");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "the configuration file '" + Path("fifo") + "' is not a regular file");
  r = ReadWholeFile(dir_.string(), "configuration");
  EXPECT_NE(r.status().message().find("is not a regular file"), std::string::npos);
}

TEST_F(ReadWholeFileTest, ABiggerFileIsAnErrorNotATruncatedValue) {
  std::ofstream(Path("big")) << std::string(5000, 'x');
  auto r = ReadWholeFile(Path("big"), "snapshot", 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "the snapshot file '" + Path("big") + "' is larger than 4096 bytes");
  std::istringstream in(std::string(5000, 'x'));
  EXPECT_FALSE(ReadWholeStream(in, "snapshot on standard input", 4096).ok());
}

TEST_F(ReadWholeFileTest, AMissingFileNamesWhatItWasFor) {
  auto r = ReadWholeFile(Path("absent"), "CA");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("cannot open the CA file"), std::string::npos);
}

}  // namespace
}  // namespace nccl_triage

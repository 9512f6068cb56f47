//===- ConfigTest.cpp - zb-run --config (Config.h) ------------------------===//
//
// TOML and JSON settings become "--name=value" arguments; errors name the
// file, the line and the key. zb-run with a config file against the same
// flags: test/Tools/zb-run-config.test.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Config.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace zb::runner;

namespace {

bool isFlag(llvm::StringRef name) {
  return name == "steps" || name == "lr" || name == "betas" ||
         name == "lr-schedule" || name == "deterministic" ||
         name == "val-data" || name == "warmup-steps";
}

std::vector<std::string> argsOf(llvm::StringRef text, llvm::StringRef path) {
  auto args = parseConfig(text, path, isFlag);
  EXPECT_TRUE(bool(args)) << (args ? "" : llvm::toString(args.takeError()));
  return args ? *args : std::vector<std::string>{};
}

std::string errorOf(llvm::StringRef text, llvm::StringRef path) {
  auto args = parseConfig(text, path, isFlag);
  return args ? "<no error>" : llvm::toString(args.takeError());
}

TEST(ConfigTest, TomlValuesAndTables) {
  std::vector<std::string> args = argsOf(R"(# a run
steps = 30
deterministic = true
val_data = "data/val.bin"
[optimizer]
lr = 6e-4
betas = [0.9, 0.95]
lr-schedule = "cosine"
warmup_steps = 0
)",
                                         "run.toml");
  // toml++ keeps a table's keys sorted (a table is a key too).
  EXPECT_EQ(args, (std::vector<std::string>{
                      "--deterministic=true",
                      "--betas=0.90000000000000002,0.94999999999999996",
                      "--lr=0.00059999999999999995", "--lr-schedule=cosine",
                      "--warmup-steps=0", "--steps=30",
                      "--val-data=data/val.bin"}));
}

TEST(ConfigTest, JsonValues) {
  std::vector<std::string> args = argsOf(
      R"({"steps": 3, "optimizer": {"lr": 0.5, "betas": [0.5, 0.25]}})",
      "run.json");
  EXPECT_EQ(args, (std::vector<std::string>{"--betas=0.5,0.25", "--lr=0.5",
                                            "--steps=3"}));
}

TEST(ConfigTest, Errors) {
  EXPECT_EQ(errorOf("steps = 3\nfoo_bar = 1\n", "run.toml"),
            "run.toml:2: unknown setting 'foo_bar' (zb-run has no --foo-bar; "
            "see zb-run --help)");
  EXPECT_EQ(errorOf("steps = 3\n[a]\nsteps = 4\n", "run.toml"),
            "run.toml:1: 'steps' is set twice (also at run.toml:3)");
  EXPECT_EQ(errorOf("[a]\n[a.b]\nlr = 1\n", "run.toml"),
            "run.toml:2: table 'b' inside a table: zb-run's settings are one "
            "level deep");
  EXPECT_EQ(errorOf("lr = 1979-05-27\n", "run.toml"),
            "run.toml:1: 'lr' must be a string, number, boolean or an array "
            "of them");
  EXPECT_EQ(errorOf("config = \"other.toml\"\n", "run.toml"),
            "run.toml:1: 'config': a config file cannot name another");
  std::string syntax = errorOf("steps = = 3\n", "run.toml");
  EXPECT_EQ(syntax.rfind("run.toml:1:", 0), 0u) << syntax;
  EXPECT_NE(syntax.find("not TOML"), std::string::npos) << syntax;
  EXPECT_EQ(errorOf("[1, 2]", "run.json"),
            "run.json: must be a JSON object of settings");
  EXPECT_EQ(errorOf("{\"steps\": null}", "run.json"),
            "run.json: 'steps' must be a string, number, boolean or an array "
            "of them");
  std::string json = errorOf("{\"steps\": ", "run.json");
  EXPECT_EQ(json.rfind("run.json: not JSON", 0), 0u) << json;
}

} // namespace

//===- StableHLOOpTableTest.cpp - The StableHLO importer's op table -------===//
//
// The op table of lib/Frontend/StableHLO (StableHLOImporterImpl.h): which
// ops the importer knows, which are folded only, which are never folded, and
// the elementwise rows' functions of doubles.
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

using namespace zb::frontend::stablehlo_import;

namespace {

/// Every op the importer knows (docs/frontends.md, "Supported ops").
const char *const kKnown[] = {
    "stablehlo.constant", "func.call", "stablehlo.while", "stablehlo.iota",
    "stablehlo.add", "stablehlo.subtract", "stablehlo.multiply",
    "stablehlo.divide", "stablehlo.maximum", "stablehlo.minimum",
    "stablehlo.power", "stablehlo.negate", "stablehlo.exponential",
    "stablehlo.exponential_minus_one", "stablehlo.log",
    "stablehlo.log_plus_one", "stablehlo.tanh", "stablehlo.sqrt",
    "stablehlo.rsqrt", "stablehlo.logistic", "chlo.erf", "chlo.erfc",
    "chlo.square", "stablehlo.abs", "stablehlo.is_finite", "stablehlo.sign",
    "stablehlo.compare", "stablehlo.select", "stablehlo.convert",
    "stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.transpose",
    "stablehlo.slice", "stablehlo.concatenate", "stablehlo.dot_general",
    "stablehlo.reduce", "stablehlo.gather", "stablehlo.and", "stablehlo.or",
    "stablehlo.xor", "stablehlo.not", "stablehlo.clamp",
    "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice",
    "stablehlo.cosine", "stablehlo.sine", "stablehlo.floor", "stablehlo.ceil",
    "stablehlo.remainder", "stablehlo.reverse"};

TEST(StableHLOOpTable, KnownOps) {
  for (const char *name : kKnown) {
    const OpDef *def = opTable().lookup(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->name, name);
    // Every row imports the op somehow.
    EXPECT_TRUE(def->onData || def->fold || def->control) << name;
  }
  EXPECT_EQ(opTable().lookup("stablehlo.cholesky"), nullptr);
  EXPECT_EQ(opTable().lookup("stablehlo.sort"), nullptr);
  EXPECT_EQ(opTable().lookup("stablehlo.return"), nullptr);
}

TEST(StableHLOOpTable, FoldOnlyAndNeverFolded) {
  for (const char *name :
       {"stablehlo.iota", "stablehlo.cosine", "stablehlo.sine",
        "stablehlo.floor", "stablehlo.ceil", "stablehlo.remainder",
        "stablehlo.reverse"}) {
    const OpDef *def = opTable().lookup(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->onData, nullptr) << name;
    EXPECT_NE(def->fold, nullptr) << name;
  }
  // stablehlo.constant has no operands: always the fold.
  EXPECT_EQ(opTable().lookup("stablehlo.constant")->fold,
            &Importer::importConstant);
  const OpDef *dot = opTable().lookup("stablehlo.dot_general");
  EXPECT_EQ(dot->fold, nullptr);
  EXPECT_EQ(dot->onData, &Importer::importDotGeneral);
  for (const char *name : {"func.call", "stablehlo.while"}) {
    const OpDef *def = opTable().lookup(name);
    EXPECT_NE(def->control, nullptr) << name;
    EXPECT_EQ(def->onData, nullptr) << name;
    EXPECT_EQ(def->fold, nullptr) << name;
  }
  EXPECT_FALSE(opTable().lookup("stablehlo.reduce")->severalResults.empty());
  EXPECT_TRUE(opTable().lookup("stablehlo.gather")->severalResults.empty());
}

TEST(StableHLOOpTable, ElementwiseFunctions) {
  auto scalar = [](const char *name) {
    return opTable().lookup(name)->scalar;
  };
  std::vector<double> two = {7.0, 2.0};
  EXPECT_EQ(scalar("stablehlo.add")(two), 9.0);
  EXPECT_EQ(scalar("stablehlo.subtract")(two), 5.0);
  EXPECT_EQ(scalar("stablehlo.divide")(two), 3.5);
  EXPECT_EQ(scalar("stablehlo.minimum")(two), 2.0);
  EXPECT_EQ(scalar("stablehlo.remainder")(two), 1.0);
  EXPECT_EQ(scalar("stablehlo.and")(two), 2.0);
  EXPECT_EQ(scalar("stablehlo.xor")(two), 5.0);
  std::vector<double> three = {0.0, 2.0, 3.0};
  EXPECT_EQ(scalar("stablehlo.select")(three), 3.0);
  std::vector<double> clamp = {-1.0, 5.0, 1.0}; // clamp(min, x, max)
  EXPECT_EQ(scalar("stablehlo.clamp")(clamp), 1.0);
  std::vector<double> one = {0.25};
  EXPECT_EQ(scalar("stablehlo.rsqrt")(one), 2.0);
  EXPECT_EQ(scalar("stablehlo.log_plus_one")(one), std::log1p(0.25));
  // Folds the importer does not have ("cannot fold" on constants) and ops
  // with their own fold (divide of integers, not, compare).
  for (const char *name : {"chlo.erfc", "stablehlo.sign",
                           "stablehlo.is_finite", "stablehlo.not",
                           "stablehlo.compare"})
    EXPECT_EQ(scalar(name), nullptr) << name;
  EXPECT_EQ(opTable().lookup("stablehlo.divide")->fold, &Importer::foldDivide);
  // The zb ops on data: arithmetic and the binary booleans.
  EXPECT_NE(opTable().lookup("stablehlo.tanh")->build, nullptr);
  EXPECT_NE(opTable().lookup("stablehlo.and")->build, nullptr);
  EXPECT_EQ(opTable().lookup("stablehlo.compare")->build, nullptr);
}

} // namespace

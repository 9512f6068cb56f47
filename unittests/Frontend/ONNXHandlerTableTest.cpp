//===- ONNXHandlerTableTest.cpp - The ONNX importer's dispatch tables -----===//
//
// The op handler table (op type -> handler by opset version) and the fold
// table of lib/Frontend/ONNX (ONNXImporterImpl.h): which handler a model of a
// given opset gets, and which ops fold.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "gtest/gtest.h"

using namespace zb::frontend::onnx_import;

namespace {

OpHandlerTable defaultTable() {
  OpHandlerTable table;
  populateElementwiseHandlers(table);
  populateMatMulHandlers(table);
  populateReductionHandlers(table);
  populateShapeHandlers(table);
  populateConstantHandlers(table);
  return table;
}

TEST(ONNXHandlerTable, SoftmaxBySinceVersion) {
  OpHandlerTable table = defaultTable();
  // ONNX Softmax changed at opset 13 (flattening -> per-axis, default axis
  // 1 -> -1).
  EXPECT_EQ(table.lookup("Softmax", 11), &ONNXImporter::softmaxBefore13);
  EXPECT_EQ(table.lookup("Softmax", 12), &ONNXImporter::softmaxBefore13);
  EXPECT_EQ(table.lookup("Softmax", 13), &ONNXImporter::softmax);
  EXPECT_EQ(table.lookup("Softmax", 17), &ONNXImporter::softmax);
  // An opset older than every handler gets none (the importer then names
  // the opset it supports), not the oldest one with other semantics.
  EXPECT_EQ(table.lookup("Softmax", 0), nullptr);
  EXPECT_EQ(table.lookup("Gelu", 19), nullptr);
  EXPECT_EQ(table.firstOpset("Gelu"), 20);
  EXPECT_EQ(table.lookup("Gelu", 20), &ONNXImporter::gelu);
  EXPECT_EQ(table.firstOpset("NoSuchOp"), -1);
}

TEST(ONNXHandlerTable, EntriesOrderedBySinceVersion) {
  // Rows may be added in any order.
  OpHandlerTable table;
  table.add({{"Op", 13, &ONNXImporter::softmax},
             {"Op", 1, &ONNXImporter::softmaxBefore13},
             {"Op", 18, &ONNXImporter::identity}});
  EXPECT_EQ(table.lookup("Op", 12), &ONNXImporter::softmaxBefore13);
  EXPECT_EQ(table.lookup("Op", 17), &ONNXImporter::softmax);
  EXPECT_EQ(table.lookup("Op", 18), &ONNXImporter::identity);
}

TEST(ONNXHandlerTable, SharedAndMissingHandlers) {
  OpHandlerTable table = defaultTable();
  for (const char *op : {"Reshape", "Unsqueeze", "Squeeze", "Flatten"})
    EXPECT_EQ(table.lookup(op, 17), &ONNXImporter::reshape) << op;
  EXPECT_EQ(table.lookup("MatMul", 17), &ONNXImporter::matmul);
  EXPECT_EQ(table.lookup("Constant", 17), &ONNXImporter::constant);
  EXPECT_EQ(table.lookup("Softplus", 17), nullptr);
  // Fold-only ops have no handler: only constants reach them.
  EXPECT_EQ(table.lookup("Range", 17), nullptr);
}

TEST(ONNXFoldTable, FoldRules) {
  const FoldRule *range = findFoldRule("Range");
  ASSERT_NE(range, nullptr);
  EXPECT_TRUE(range->foldOnly);
  EXPECT_EQ(range->minInputs, 3u);
  EXPECT_EQ(range->fold, &ONNXImporter::foldRange);

  const FoldRule *add = findFoldRule("Add");
  ASSERT_NE(add, nullptr);
  EXPECT_FALSE(add->foldOnly);
  EXPECT_EQ(add->minInputs, 2u);

  const FoldRule *max = findFoldRule("Max"); // variadic
  ASSERT_NE(max, nullptr);
  EXPECT_EQ(max->minInputs, 1u);

  EXPECT_EQ(findFoldRule("MatMul"), nullptr);
  EXPECT_EQ(findFoldRule("Constant"), nullptr);
}

} // namespace

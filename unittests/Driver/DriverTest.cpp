//===- DriverTest.cpp - lib/Driver: options, phases, compile() ------------===//
//
// Compiles a small zb-dialect MLP for 2 ranks and checks the artifacts
// against numbers computed here: the size and value range of params.bin, the
// arguments of every rank in plan.json against its parameter placement, and
// the bubble rates of schedule.json / plan.json against lib/Schedule's
// simulate() of the problem rebuilt from plan.json's stage costs.
//
//===----------------------------------------------------------------------===//
#include "zb/Driver/Driver.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace zb;
using namespace zb::driver;

namespace {

/// Three matmuls with a parameter each and a squared-error loss; one
/// microbatch is 8 samples of 4 features.
constexpr const char *kModel = R"mlir(
func.func @main(%x: tensor<8x4xf32> {zb.name = "x"},
                %w1: tensor<4x6xf32> {zb.param, zb.name = "w1"},
                %w2: tensor<6x5xf32> {zb.param, zb.name = "w2"},
                %w3: tensor<5x3xf32> {zb.param, zb.name = "w3"}) -> tensor<f32> {
  %h1 = zb.matmul %x, %w1 : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  %a1 = zb.tanh %h1 : tensor<8x6xf32>
  %h2 = zb.matmul %a1, %w2 : (tensor<8x6xf32>, tensor<6x5xf32>) -> tensor<8x5xf32>
  %a2 = zb.tanh %h2 : tensor<8x5xf32>
  %y = zb.matmul %a2, %w3 : (tensor<8x5xf32>, tensor<5x3xf32>) -> tensor<8x3xf32>
  %q = zb.mul %y, %y : tensor<8x3xf32>
  %l = zb.reduce_sum %q axes [0, 1] : tensor<8x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
)mlir";

/// Parameter shapes of kModel, in model order.
const std::vector<std::pair<std::string, std::vector<int64_t>>> kParams = {
    {"w1", {4, 6}}, {"w2", {6, 5}}, {"w3", {5, 3}}};

/// A fresh directory with model.mlir = kModel, removed at the end.
class DriverTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("zb-driver-test", dir));
    modelPath = path("model.mlir");
    std::error_code ec;
    llvm::raw_fd_ostream os(modelPath, ec);
    ASSERT_FALSE(ec);
    os << kModel;
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  std::string path(llvm::StringRef name) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  CompileOptions options() const {
    CompileOptions o;
    o.inputFile = modelPath;
    o.outputDir = path("out");
    o.numRanks = 2;
    o.microbatches = 4;
    o.schedule = zb::sched::ScheduleKind::ZBH1;
    o.jobs = 1; // the test machine is shared
    return o;
  }
  /// Compiles; collects the progress lines and error diagnostics.
  mlir::LogicalResult run(const CompileOptions &o) {
    CompileCallbacks callbacks;
    callbacks.progress = [&](llvm::StringRef m) {
      progress.push_back(m.str());
    };
    callbacks.diagnostic = [&](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
        errors.push_back(d.str());
    };
    return compile(o, callbacks);
  }
  llvm::json::Value readJSON(llvm::StringRef name) const {
    auto buffer = llvm::MemoryBuffer::getFile(path(name));
    EXPECT_TRUE(bool(buffer)) << name.str();
    if (!buffer)
      return nullptr;
    llvm::Expected<llvm::json::Value> value =
        llvm::json::parse((*buffer)->getBuffer());
    EXPECT_TRUE(bool(value)) << name.str();
    if (!value) {
      llvm::consumeError(value.takeError());
      return nullptr;
    }
    return std::move(*value);
  }

  llvm::SmallString<128> dir;
  std::string modelPath;
  std::vector<std::string> progress, errors;
};

/// The problem zb-compile scheduled, rebuilt from plan.json's stages.
sched::Problem problemOfPlan(const llvm::json::Object &plan) {
  sched::Problem p;
  p.numRanks = *plan.getInteger("num_ranks");
  p.numChunks = *plan.getInteger("num_chunks");
  p.numMicrobatches = *plan.getInteger("num_microbatches");
  for (const llvm::json::Value &v : *plan.getArray("stages")) {
    const llvm::json::Object &s = *v.getAsObject();
    p.costF.push_back(*s.getNumber("t_f"));
    p.costB.push_back(*s.getNumber("t_b"));
    p.costW.push_back(*s.getNumber("t_w"));
    p.costComm.push_back(*s.getNumber("t_comm"));
    p.memB.push_back(*s.getNumber("m_b"));
    p.memW.push_back(*s.getNumber("m_w"));
  }
  return p;
}

TEST(DriverOptions, Validation) {
  auto message = [](CompileOptions o) {
    llvm::Error e = validateOptions(o);
    return e ? llvm::toString(std::move(e)) : std::string("ok");
  };
  CompileOptions o;
  EXPECT_EQ(message(o), "ok");
  o.numRanks = 0;
  EXPECT_EQ(message(o), "--stages must be >= 1, got 0");
  o = CompileOptions();
  o.virtualStages = -1;
  EXPECT_EQ(message(o), "--virtual-stages must be >= 1, got -1");
  o = CompileOptions();
  o.microbatches = 0;
  EXPECT_EQ(message(o), "--microbatches must be >= 1, got 0");
  // --optimizer is an enum; its text is parsed (and refused) with the flags.
  o = CompileOptions();
  llvm::Error parsed = parseTextOptions(o, "cpu", "adam", "post-validation");
  EXPECT_EQ(parsed ? llvm::toString(std::move(parsed)) : std::string("ok"),
            "--optimizer must be sgd or adamw, got 'adam'");
  // --schedule too.
  o = CompileOptions();
  parsed = parseTextOptions(o, "cpu", "sgd", "none", "fp32", "2f2b");
  EXPECT_EQ(parsed ? llvm::toString(std::move(parsed)) : std::string("ok"),
            "unknown --schedule '2f2b'");
  o = CompileOptions();
  o.optLevel = 4;
  EXPECT_EQ(message(o), "--opt-level must be 0, 1, 2 or 3, got 4");
}

TEST_F(DriverTest, InvalidOptionIsOneDiagnosticAndWritesNothing) {
  CompileOptions o = options();
  o.numRanks = 0;
  EXPECT_TRUE(mlir::failed(run(o)));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "--stages must be >= 1, got 0");
  EXPECT_FALSE(llvm::sys::fs::exists(o.outputDir));
}

TEST_F(DriverTest, FrontHalfErrorIsReported) {
  CompileOptions o = options();
  o.microbatches = 1; // ZB-H1 needs m >= p
  EXPECT_TRUE(mlir::failed(run(o)));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "zb-schedule: zb-h1 needs at least p=2 microbatches, got m=1");
}

TEST_F(DriverTest, MissingModel) {
  CompileOptions o = options();
  o.inputFile = path("nonexistent.mlir");
  EXPECT_TRUE(mlir::failed(run(o)));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("nonexistent.mlir"), std::string::npos);
}

TEST_F(DriverTest, PhasesWithoutCodegen) {
  std::unique_ptr<mlir::MLIRContext> context = createContext();
  mlir::OwningOpRef<mlir::ModuleOp> module = parseModel(kModel, context.get());
  ASSERT_TRUE(module);
  CompileOptions o = options();
  ASSERT_TRUE(mlir::succeeded(runFrontHalf(*module, o)));
  mlir::FailureOr<LoweredPipeline> pipeline = readPipeline(*module, o);
  ASSERT_TRUE(mlir::succeeded(pipeline));
  EXPECT_EQ(pipeline->numRanks(), 2);
  EXPECT_EQ(pipeline->numMicrobatches, 4);
  ASSERT_EQ(pipeline->info.params.size(), kParams.size());
  ASSERT_EQ(pipeline->rankArgs.size(), 2u);
  // The last stage's rank returns the loss, the first one does not.
  EXPECT_EQ(pipeline->rankArgs[1].back().kind, "loss");
  EXPECT_NE(pipeline->rankArgs[0].back().kind, "loss");

  llvm::Expected<std::vector<Prediction>> predictions =
      predictBubbleRates(*pipeline, o);
  ASSERT_TRUE(bool(predictions)) << llvm::toString(predictions.takeError());
  std::vector<std::string> names;
  for (const Prediction &p : *predictions)
    names.push_back(p.schedule);
  EXPECT_EQ(names, (std::vector<std::string>{"1f1b", "zb-h1"}));
  llvm::Expected<sched::Schedule> zbh1 =
      sched::buildSchedule(pipeline->problem, "zb-h1");
  ASSERT_TRUE(bool(zbh1)) << llvm::toString(zbh1.takeError());
  EXPECT_EQ((*predictions)[1].simulation.bubbleRate,
            sched::simulate(pipeline->problem, *zbh1).bubbleRate);
}

TEST_F(DriverTest, CompileTwoRanks) {
  CompileOptions o = options();
  o.initSeed = 3;
  ASSERT_TRUE(mlir::succeeded(run(o)));
  EXPECT_TRUE(errors.empty());
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.front(), "importing " + modelPath);
  for (llvm::StringRef file :
       {"plan.json", "params.bin", "rank0.so", "rank1.so", "pipeline.mlir",
        "schedule.json", "schedule.svg"})
    EXPECT_TRUE(llvm::sys::fs::exists(path(("out/" + file).str())))
        << file.str();
  EXPECT_FALSE(llvm::sys::fs::exists(path("out/rank0.o")));

  // params.bin: every parameter's elements as f32, in model order, each in
  // the initialisation's range +-1/sqrt(fan_in).
  auto params = llvm::MemoryBuffer::getFile(path("out/params.bin"));
  ASSERT_TRUE(bool(params));
  int64_t numFloats = 0;
  for (const auto &[name, shape] : kParams)
    numFloats += shape[0] * shape[1];
  ASSERT_EQ((*params)->getBufferSize(), size_t(numFloats * 4));
  const float *values =
      reinterpret_cast<const float *>((*params)->getBufferStart());
  for (const auto &[name, shape] : kParams) {
    double bound = 1 / std::sqrt(double(shape[1]));
    for (int64_t i = 0; i < shape[0] * shape[1]; ++i, ++values)
      EXPECT_LE(std::abs(*values), bound) << name;
  }

  llvm::json::Value planValue = readJSON("out/plan.json");
  const llvm::json::Object &plan = *planValue.getAsObject();
  EXPECT_EQ(plan.getString("format"), "zb-plan");
  EXPECT_EQ(plan.getInteger("num_ranks"), 2);
  EXPECT_EQ(plan.getInteger("num_microbatches"), 4);
  EXPECT_EQ(plan.getInteger("microbatch_size"), 8);

  // params: names and offsets (sum of the sizes before, x 4 bytes); which
  // rank holds each parameter.
  const llvm::json::Array &planParams = *plan.getArray("params");
  ASSERT_EQ(planParams.size(), kParams.size());
  std::map<int64_t, int64_t> rankOfParam;
  int64_t offset = 0;
  for (auto [i, v] : llvm::enumerate(planParams)) {
    const llvm::json::Object &p = *v.getAsObject();
    EXPECT_EQ(p.getString("name"), kParams[i].first);
    EXPECT_EQ(p.getInteger("offset_bytes"), offset);
    offset += kParams[i].second[0] * kParams[i].second[1] * 4;
    rankOfParam[i] = *p.getInteger("rank");
  }
  int64_t inputRank =
      *(*plan.getArray("inputs"))[0].getAsObject()->getInteger("rank");

  // ranks: params, then their grads, then the inputs, then the loss (last
  // stage only); every parameter on exactly the rank plan.json places it.
  const llvm::json::Array &ranks = *plan.getArray("ranks");
  ASSERT_EQ(ranks.size(), 2u);
  for (auto [r, v] : llvm::enumerate(ranks)) {
    const llvm::json::Object &rank = *v.getAsObject();
    EXPECT_EQ(rank.getInteger("rank"), int64_t(r));
    EXPECT_EQ(rank.getString("library"), "rank" + std::to_string(r) + ".so");
    std::vector<std::string> kinds;
    std::vector<int64_t> paramArgs, gradArgs;
    for (const llvm::json::Value &a : *rank.getArray("args")) {
      const llvm::json::Object &arg = *a.getAsObject();
      kinds.push_back(arg.getString("kind")->str());
      if (kinds.back() == "param")
        paramArgs.push_back(arg.getInteger("index").value_or(-1));
      if (kinds.back() == "grad")
        gradArgs.push_back(arg.getInteger("index").value_or(-1));
    }
    std::vector<int64_t> expected;
    for (auto [p, pr] : rankOfParam)
      if (pr == int64_t(r))
        expected.push_back(p);
    EXPECT_EQ(paramArgs, expected) << "rank " << r;
    EXPECT_EQ(gradArgs, expected) << "rank " << r;
    std::vector<std::string> expectedKinds(expected.size(), "param");
    expectedKinds.insert(expectedKinds.end(), expected.size(), "grad");
    if (inputRank == int64_t(r))
      expectedKinds.push_back("input");
    if (r == 1)
      expectedKinds.push_back("loss");
    EXPECT_EQ(kinds, expectedKinds) << "rank " << r;
  }

  // schedule.json and plan.json's prediction: lib/Schedule's ZB-H1 on the
  // problem of plan.json's stage costs.
  sched::Problem problem = problemOfPlan(plan);
  llvm::Expected<sched::Schedule> zbh1 = sched::buildSchedule(problem, "zb-h1");
  ASSERT_TRUE(bool(zbh1)) << llvm::toString(zbh1.takeError());
  double bubbleRate = sched::simulate(problem, *zbh1).bubbleRate;
  EXPECT_GT(bubbleRate, 0);
  llvm::json::Value scheduleValue = readJSON("out/schedule.json");
  EXPECT_DOUBLE_EQ(*scheduleValue.getAsObject()->getNumber("bubble_rate"),
                   bubbleRate);
  const llvm::json::Object &predicted =
      *plan.getObject("predicted")->getObject("zb-h1");
  EXPECT_DOUBLE_EQ(*predicted.getNumber("bubble_rate"), bubbleRate);
}

TEST_F(DriverTest, WriteParams) {
  std::unique_ptr<mlir::MLIRContext> context = createContext();
  mlir::Builder b(context.get());
  PipelineInfo info;
  info.params.push_back(
      {"a", 1, mlir::RankedTensorType::get({2, 3}, b.getF32Type()), {0}});
  info.params.push_back(
      {"b", 2, mlir::RankedTensorType::get({4}, b.getF32Type()), {1}});
  auto bytes = [&](uint64_t seed, mlir::DictionaryAttr values) {
    std::string file = path("params.bin");
    llvm::Error error = writeParams(file, info, values, seed);
    if (error)
      return "error: " + llvm::toString(std::move(error));
    auto buffer = llvm::MemoryBuffer::getFile(file);
    return buffer ? (*buffer)->getBuffer().str() : std::string();
  };
  // Initialised: 10 floats, deterministic in the seed.
  std::string seed5 = bytes(5, {});
  EXPECT_EQ(seed5.size(), 40u);
  EXPECT_EQ(bytes(5, {}), seed5);
  EXPECT_NE(bytes(6, {}), seed5);

  // Stored values are written as they are.
  std::vector<float> a{1, 2, 3, 4, 5, 6}, bv{-1, -2, -3, -4};
  auto dense = [&](const ModelValueInfo &p, llvm::ArrayRef<float> v) {
    return b.getNamedAttr(p.name, mlir::DenseElementsAttr::get(p.type, v));
  };
  mlir::DictionaryAttr values = b.getDictionaryAttr(
      {dense(info.params[0], a), dense(info.params[1], bv)});
  std::vector<float> expected = a;
  expected.insert(expected.end(), bv.begin(), bv.end());
  EXPECT_EQ(bytes(0, values),
            std::string(reinterpret_cast<const char *>(expected.data()),
                        expected.size() * sizeof(float)));

  // Errors name the parameter.
  EXPECT_EQ(bytes(0, b.getDictionaryAttr({dense(info.params[0], a)})),
            "error: no value of type tensor<4xf32> for parameter 'b' in "
            "zb.param_values");
  info.params[1].type = mlir::RankedTensorType::get({4}, b.getF16Type());
  EXPECT_EQ(bytes(0, {}), "error: parameter 'b' is not float32");
}

} // namespace

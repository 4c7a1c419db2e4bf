//===- SymbolicPlanTest.cpp - Plans over named dims -----------------------===//
//
// A hand-written plan with two dims, `n` (1..8) and `past` (0..4): input x
// is [n], input mask is [past + n], and a kernel written here doubles x into
// output y ([n]) over a grid that follows n. Checks the encoding of the
// dims and bindings, the learning of the dims from the inputs' shapes with
// its errors, the plan written for given values, and runs on the host
// backend at several values, a refused run leaving the model usable.
//
//===----------------------------------------------------------------------===//

#include "TestArtifacts.h"
#include "kiln/runtime/ArtifactDims.h"
#include "kiln/runtime/ArtifactFormat.h"
#include "kiln/runtime/Model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

const char *kDoubleSource = R"cuda(
extern "C" __global__ void twice(const float *x, const float *mask, float *y,
                                 long long kd_n, long long kd_past) {
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < kd_n;
       i += (long long)gridDim.x * blockDim.x)
    y[i] = 2.0f * x[i];
}
)cuda";

/// The plan at the top of the ranges: n = 8, past = 4.
Artifact symbolicArtifact() {
  Artifact a;
  a.kilnVersion = "0.1.0-test";
  a.arch = "sm_90a";
  a.modelHash = "d1m5";
  a.cudaSource = kDoubleSource;
  a.kernelNames = {"twice"};
  a.buffers.push_back(makeBuffer(BufferKind::Input, "x", {8}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Input, "mask", {12}, 1));
  a.buffers.push_back(makeBuffer(BufferKind::Output, "y", {8}, 0));
  a.inputs = {0, 1};
  a.outputs = {2};
  a.steps.push_back(Step::ofLaunch(makeLaunch(0, 1, 4, {0, 1, 2})));
  a.symbolic.dims = {{"n", 1, 8}, {"past", 0, 4}};
  SizeFormula total{{SizeTerm{1, {0}}, SizeTerm{1, {1}}}};
  a.symbolic.bindings = {
      sizeBinding(SizeField::BufferDim, 0, 0, dimFormula(0)),
      sizeBinding(SizeField::BufferDim, 1, 0, total),
      sizeBinding(SizeField::BufferDim, 2, 0, dimFormula(0)),
  };
  // Two threads of each block of 4 would do: one block per four elements.
  SizeBinding grid = sizeBinding(SizeField::LaunchGrid, 0, 0, dimFormula(0));
  grid.divisor = 4;
  grid.lowest = 1;
  grid.highest = 2;
  a.symbolic.bindings.push_back(grid);
  return a;
}

TEST(SymbolicPlan, SerializesDimsAndBindings) {
  Artifact a = symbolicArtifact();
  std::string error;
  ASSERT_TRUE(validateArtifact(a, error)) << error;
  Artifact back;
  ASSERT_TRUE(roundTrip(a, back, error)) << error;
  ASSERT_EQ(back.symbolic.dims.size(), 2u);
  EXPECT_EQ(back.symbolic.dims[1].name, "past");
  EXPECT_EQ(back.symbolic.dims[1].max, 4);
  ASSERT_EQ(back.symbolic.bindings.size(), 4u);
  EXPECT_EQ(sizeText(back.symbolic.bindings[1].formula, back.symbolic.dims),
            "n + past");
  EXPECT_EQ(back.symbolic.bindings[3].divisor, 4);
  EXPECT_EQ(back.symbolic.bindings[3].highest, 2);
}

TEST(SymbolicPlan, ValidationRefusesBadDimsAndBindings) {
  auto expectInvalid = [](Artifact a, const std::string &needle) {
    std::string error;
    EXPECT_FALSE(validateArtifact(a, error)) << needle;
    EXPECT_NE(error.find(needle), std::string::npos) << error;
  };
  Artifact a = symbolicArtifact();
  a.symbolic.dims[1].min = 5;
  expectInvalid(a, "dim 'past': range 5..4 is empty or negative");
  a = symbolicArtifact();
  a.symbolic.dims[1].name = "n";
  expectInvalid(a, "dim 'n' is named twice");
  a = symbolicArtifact();
  a.symbolic.bindings[0].formula.terms[0].dims[0] = 2;
  expectInvalid(a, "size binding 0: dim index 2 out of range");
  a = symbolicArtifact();
  a.symbolic.bindings[0].axis = 1;
  expectInvalid(a, "size binding 0: its field, target or axis is out of range");
  a = symbolicArtifact();
  a.symbolic.bindings[3].field = SizeField::MatmulField;
  expectInvalid(a, "size binding 3: its field, target or axis is out of range");
  a = symbolicArtifact();
  a.symbolic.bindings[3].divisor = 0;
  expectInvalid(a, "size binding 3: divisor below 1");
  a = symbolicArtifact();
  a.steps[0].launch.dimsRead = 0b10; // past, not n
  expectInvalid(a, "size binding 3: the grid of step 0 follows dim 'n', which "
                   "the launch's dims read omit");
}

TEST(SymbolicPlan, LearnsDimsFromInputShapes) {
  Artifact a = symbolicArtifact();
  std::vector<int64_t> values;
  std::string error;
  // n from x; past from mask's past + n.
  ASSERT_TRUE(bindDims(a, {{3}, {5}}, values, error)) << error;
  EXPECT_EQ(values, (std::vector<int64_t>{3, 2}));
  ASSERT_TRUE(bindDims(a, {{1}, {1}}, values, error)) << error;
  EXPECT_EQ(values, (std::vector<int64_t>{1, 0}));

  EXPECT_FALSE(bindDims(a, {{9}, {9}}, values, error));
  EXPECT_EQ(error, "dim sizes: 'n' is 9 (from input 'x' dim 0), outside its "
                   "range 1..8");
  EXPECT_FALSE(bindDims(a, {{3}, {9}}, values, error));
  EXPECT_EQ(error, "dim sizes: 'past' is 6 (from input 'mask' dim 0), outside "
                   "its range 0..4");
  EXPECT_FALSE(bindDims(a, {{3}, {2}}, values, error));
  EXPECT_EQ(error, "dim sizes: 'past' is -1 (from input 'mask' dim 0), "
                   "outside its range 0..4");
  EXPECT_FALSE(bindDims(a, {{3, 1}, {5}}, values, error));
  EXPECT_EQ(error, "dim sizes: input 'x' has rank 2, expected 1");
  EXPECT_FALSE(bindDims(a, {{3}}, values, error));
  EXPECT_EQ(error, "dim sizes: 1 input shapes for 2 inputs");
}

TEST(SymbolicPlan, NamesTheSizeAnInputDisagreesWith) {
  // Two inputs of [n]: the second disagrees with what the first says.
  Artifact a = symbolicArtifact();
  a.symbolic.bindings[1].formula = dimFormula(0);
  std::vector<int64_t> values;
  std::string error;
  EXPECT_FALSE(bindDims(a, {{3}, {4}}, values, error));
  EXPECT_EQ(error, "dim sizes: no input's shape gives 'past'");
  a.symbolic.dims.pop_back();
  EXPECT_FALSE(bindDims(a, {{3}, {4}}, values, error));
  EXPECT_EQ(error, "dim sizes: input 'mask' dim 0 is 4, but its size 'n' is 3 "
                   "with n = 3 (from input 'x' dim 0)");
}

TEST(SymbolicPlan, WritesThePlanForTheValues) {
  Artifact a = symbolicArtifact();
  Artifact shaped;
  std::string error;
  ASSERT_TRUE(instantiatePlan(a, {5, 1}, shaped, error)) << error;
  EXPECT_EQ(shaped.buffers[0].shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(shaped.buffers[1].shape, (std::vector<int64_t>{6}));
  EXPECT_EQ(shaped.buffers[1].bytes, 6 * sizeof(float));
  EXPECT_EQ(shaped.steps[0].launch.grid[0], 2u);
  ASSERT_TRUE(instantiatePlan(a, {1, 0}, shaped, error)) << error;
  EXPECT_EQ(shaped.steps[0].launch.grid[0], 1u);
  EXPECT_TRUE(shaped.cudaSource.empty()) << "kernels are not copied";
  // A formula that outgrows the storage planned for the top of the ranges
  // (a corrupt artifact) is refused, not run.
  a.symbolic.bindings[0].formula.terms[0].coefficient = 2;
  EXPECT_FALSE(instantiatePlan(a, {5, 0}, shaped, error));
  EXPECT_EQ(error, "dim sizes: buffer 'x' outgrows its planned storage at "
                   "these dims");
}

/// symbolicArtifact with a second launch that runs only while n <= 2:
/// clamp(3 - n, 0, 1).
static Artifact guardedArtifact() {
  Artifact a = symbolicArtifact();
  a.steps.push_back(a.steps[0]);
  a.steps[1].launch.block[0] = 8;
  SizeBinding runs =
      sizeBinding(SizeField::StepRuns, 1, 0,
                  SizeFormula{{SizeTerm{3, {}}, SizeTerm{-1, {0}}}});
  runs.lowest = 0;
  runs.highest = 1;
  a.symbolic.bindings.push_back(runs);
  return a;
}

TEST(SymbolicPlan, LeavesOutTheStepsThatDoNotRunAtTheDims) {
  Artifact a = guardedArtifact();
  std::string error;
  ASSERT_TRUE(validateArtifact(a, error)) << error;
  Artifact shaped;
  ASSERT_TRUE(instantiatePlan(a, {2, 0}, shaped, error)) << error;
  ASSERT_EQ(shaped.steps.size(), 2u);
  EXPECT_EQ(shaped.steps[0].launch.args.size(), 3u);
  EXPECT_EQ(shaped.steps[1].launch.block[0], 8u);
  ASSERT_TRUE(instantiatePlan(a, {3, 0}, shaped, error)) << error;
  ASSERT_EQ(shaped.steps.size(), 1u);
  EXPECT_EQ(shaped.steps[0].launch.block[0], 4u);
  EXPECT_EQ(shaped.steps[0].launch.args.size(), 3u);
  // The grid binding of step 0 still lands on it when step 1 is left out,
  // and the encoding keeps the field.
  EXPECT_EQ(shaped.steps[0].launch.grid[0], 1u);
  Artifact back;
  ASSERT_TRUE(roundTrip(a, back, error)) << error;
  EXPECT_EQ(back.symbolic.bindings.back().field, SizeField::StepRuns);
  // Only a step index, at axis 0.
  a.symbolic.bindings.back().target = 2;
  EXPECT_FALSE(validateArtifact(a, error));
  EXPECT_NE(error.find("its field, target or axis is out of range"),
            std::string::npos)
      << error;
}

// A plan written again for new dims in place (a decoding loop's next
// length) is the plan written afresh for them, byte for byte: where the
// same steps run only the bound fields change, and where the guard flips
// (n = 2 to 3 and back) it is written from scratch.
TEST(SymbolicPlan, WritingAPlanAgainInPlaceEqualsWritingItAfresh) {
  Artifact a = guardedArtifact();
  std::string error;
  ASSERT_TRUE(validateArtifact(a, error)) << error;
  std::vector<std::vector<int64_t>> sequence = {{1, 0}, {2, 1}, {3, 0}, {5, 1},
                                                {4, 1}, {2, 0}, {1, 1}};
  Artifact reused;
  ASSERT_TRUE(instantiatePlan(a, sequence[0], reused, error)) << error;
  for (size_t i = 1; i < sequence.size(); ++i) {
    SCOPED_TRACE("n " + std::to_string(sequence[i][0]));
    ASSERT_TRUE(
        reinstantiatePlan(a, sequence[i - 1], sequence[i], reused, error))
        << error;
    Artifact fresh;
    ASSERT_TRUE(instantiatePlan(a, sequence[i], fresh, error)) << error;
    EXPECT_EQ(serializeArtifact(reused), serializeArtifact(fresh));
  }
  // negative_: dims whose sizes outgrow the storage (a corrupt formula) are
  // refused, and leave nothing that a later call could take for a plan.
  a.symbolic.bindings[0].formula.terms[0].coefficient = 2;
  EXPECT_FALSE(reinstantiatePlan(a, {1, 1}, {5, 1}, reused, error));
  EXPECT_EQ(error, "dim sizes: buffer 'x' outgrows its planned storage at "
                   "these dims");
  EXPECT_TRUE(reused.steps.empty() && reused.buffers.empty());
}

/// Runs the plan on the host backend, which compiles its kernel.
using SymbolicHostRun = PrivateCacheSuite;

TEST_F(SymbolicHostRun, RunsAtEachValueAndStaysUsableAfterARefusal) {
  std::unique_ptr<Model> model;
  Status s = Model::create(symbolicArtifact(), Backend::Host, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  ASSERT_EQ(model->dims().size(), 2u);
  for (int64_t n : {1, 5, 8}) {
    std::vector<int64_t> dims;
    ASSERT_TRUE(model->bindDims({{n}, {n + 2}}, dims).isOk());
    EXPECT_EQ(model->outputShape(0, dims), (std::vector<int64_t>{n}));
    std::vector<float> x(n), mask(n + 2, 0.0f), y(n, -1.0f);
    for (int64_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(i) + 0.25f;
    const void *in[] = {x.data(), mask.data()};
    void *out[] = {y.data()};
    s = model->run(dims, in, out, Memory::Host);
    ASSERT_TRUE(s.isOk()) << s.message;
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(y[i], 2.0f * x[i]) << "n = " << n << ", i = " << i;
  }
  // Refused: dims outside their ranges, the wrong number of dims, and a run
  // without dims. Each says why, and the next run works.
  std::vector<float> x(8, 1.0f), mask(12, 0.0f), y(8);
  const void *in[] = {x.data(), mask.data()};
  void *out[] = {y.data()};
  s = model->run({9, 0}, in, out, Memory::Host);
  EXPECT_EQ(s.message, "dim sizes: 'n' is 9, outside its range 1..8");
  s = model->run({3}, in, out, Memory::Host);
  EXPECT_NE(s.message.find("the model has symbolic dims (n 1..8, past 0..4)"),
            std::string::npos)
      << s.message;
  s = model->run(in, out, Memory::Host);
  EXPECT_FALSE(s.isOk());
  s = model->run({2, 4}, in, out, Memory::Host);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(y[0], 2.0f);
  EXPECT_EQ(y[1], 2.0f);
}

// A model keeps the plans of the eight dims its runs used last: a ninth
// dims' plan takes the place of the least recently used (n = 2 here), not
// of the smallest dims (n = 1, which the run before used again: a prompt
// length that interleaved requests keep coming back to). Every run's values
// are its own dims'.
TEST_F(SymbolicHostRun, KeepsThePlansOfTheDimsUsedLast) {
  std::unique_ptr<Model> model;
  Status s = Model::create(symbolicArtifact(), Backend::Host, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  auto runAt = [&](int64_t n) {
    std::vector<float> x(n), mask(n, 0.0f), y(8, -1.0f);
    for (int64_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(i * n) - 3.0f;
    const void *in[] = {x.data(), mask.data()};
    void *out[] = {y.data()};
    Status s = model->run({n, 0}, in, out, Memory::Host);
    ASSERT_TRUE(s.isOk()) << s.message;
    for (int64_t i = 0; i < 8; ++i)
      EXPECT_EQ(y[i], i < n ? 2.0f * x[i] : -1.0f) << "n " << n << " i " << i;
  };
  for (int64_t n = 1; n <= 8; ++n)
    ASSERT_NO_FATAL_FAILURE(runAt(n));
  for (int64_t n = 1; n <= 8; ++n)
    EXPECT_TRUE(model->keepsPlanFor({n, 0})) << n;
  ASSERT_NO_FATAL_FAILURE(runAt(1));
  // past = 1: a ninth dims.
  std::vector<float> x(3, 1.0f), mask(4, 0.0f), y(8, -1.0f);
  const void *in[] = {x.data(), mask.data()};
  void *out[] = {y.data()};
  s = model->run({3, 1}, in, out, Memory::Host);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(y[2], 2.0f);
  EXPECT_TRUE(model->keepsPlanFor({3, 1}));
  EXPECT_TRUE(model->keepsPlanFor({1, 0}));
  EXPECT_FALSE(model->keepsPlanFor({2, 0}));
  // n = 2 again: written again (into n = 3's storage, the oldest now).
  ASSERT_NO_FATAL_FAILURE(runAt(2));
  EXPECT_FALSE(model->keepsPlanFor({3, 0}));
  ASSERT_NO_FATAL_FAILURE(runAt(3));
}

TEST_F(SymbolicHostRun, APlanThatCannotBeWrittenLeavesTheOthersRunning) {
  // The mask's size, n + past, with two more terms of a corrupt artifact
  // that cancel until their product overflows: at past = 1 from n = 7.
  // Validation does not evaluate formulas, so only that run's plan fails.
  Artifact a = symbolicArtifact();
  const int64_t c = INT64_MAX / 6;
  SizeFormula &mask = a.symbolic.bindings[1].formula;
  mask.terms.push_back(SizeTerm{-c, {1, 0}});
  mask.terms.push_back(SizeTerm{c, {1, 0}});
  std::string error;
  ASSERT_TRUE(validateArtifact(a, error)) << error;
  std::unique_ptr<Model> model;
  Status s = Model::create(std::move(a), Backend::Host, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  auto runAt = [&](int64_t n, int64_t past) {
    std::vector<float> x(n), maskIn(n + past, 0.0f), y(8, -1.0f);
    for (int64_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(i * n) + 1.0f;
    const void *in[] = {x.data(), maskIn.data()};
    void *out[] = {y.data()};
    Status s = model->run({n, past}, in, out, Memory::Host);
    ASSERT_TRUE(s.isOk()) << s.message;
    for (int64_t i = 0; i < 8; ++i)
      EXPECT_EQ(y[i], i < n ? 2.0f * x[i] : -1.0f) << "n " << n << " i " << i;
  };
  for (int64_t n = 1; n <= 8; ++n)
    ASSERT_NO_FATAL_FAILURE(runAt(n, 0));
  // A ninth dims whose plan overflows: refused by name. The least recently
  // used plan (n = 1, held by no run) gave its storage to the attempt and
  // is gone; nothing is kept for the refused dims.
  std::vector<float> x(7, 1.0f), maskIn(8, 0.0f), y(8, -1.0f);
  const void *in[] = {x.data(), maskIn.data()};
  void *out[] = {y.data()};
  s = model->run({7, 1}, in, out, Memory::Host);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.message, "dim sizes: a size of the plan overflows");
  EXPECT_FALSE(model->keepsPlanFor({7, 1}));
  EXPECT_FALSE(model->keepsPlanFor({1, 0}));
  for (int64_t n = 2; n <= 8; ++n)
    EXPECT_TRUE(model->keepsPlanFor({n, 0})) << n;
  // The others still run right; n = 1 is written again, and so is a past
  // of 1 where the product fits.
  ASSERT_NO_FATAL_FAILURE(runAt(2, 0));
  ASSERT_NO_FATAL_FAILURE(runAt(8, 0));
  ASSERT_NO_FATAL_FAILURE(runAt(1, 0));
  ASSERT_NO_FATAL_FAILURE(runAt(6, 1));
  EXPECT_TRUE(model->keepsPlanFor({6, 1}));
}

TEST_F(SymbolicHostRun, AStaticModelTakesNoDims) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(
      Model::create(makeCopyArtifact({2}), Backend::Host, model).isOk());
  std::vector<float> x(2), y(2);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  Status s = model->run({3}, in, out, Memory::Host);
  EXPECT_EQ(s.message, "the model has no symbolic dims, but the run gives 1");
  EXPECT_TRUE(model->run(in, out, Memory::Host).isOk());
}

TEST(SymbolicPlan, AnOverflowingSizeIsRefused) {
  Artifact a = symbolicArtifact();
  a.symbolic.bindings[0].formula.terms[0].coefficient = INT64_MAX;
  Artifact shaped;
  std::string error;
  EXPECT_FALSE(instantiatePlan(a, {2, 0}, shaped, error));
  EXPECT_EQ(error, "dim sizes: a size of the plan overflows");
}

TEST_F(SymbolicHostRun, CheckingModeSizesStoragePerRun) {
  // In the checking mode each buffer is allocated at its size for the run's
  // dims, so a kernel that reads past n (here: x[n]) is caught.
  const char *overread = R"cuda(
extern "C" __global__ void twice(const float *x, const float *mask, float *y,
                                 long long kd_n, long long kd_past) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    y[0] = x[kd_n];
}
)cuda";
  Artifact a = symbolicArtifact();
  a.cudaSource = overread;
  HostOptions options;
  options.checking = true;
  std::unique_ptr<Model> model;
  ASSERT_TRUE(
      Model::create(std::move(a), Backend::Host, model, options).isOk());
  std::vector<float> x(3, 1.0f), mask(3, 0.0f), y(3);
  const void *in[] = {x.data(), mask.data()};
  void *out[] = {y.data()};
  EXPECT_DEATH(model->run({3, 0}, in, out, Memory::Host).isOk(),
               "AddressSanitizer");
}

} // namespace

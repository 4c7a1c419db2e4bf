//===- InterpreterTest.cpp - the interpreter against hand results ---------===//
//
// Each test parses a small function, runs it, and compares with values worked
// out by hand or with the op's textbook formula written out in the test.
//
//===----------------------------------------------------------------------===//

#include "kiln/Interpreter/Interpreter.h"

#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

using namespace mlir;
using namespace kiln;

namespace {

/// Parses and runs functions named `main`, recording every diagnostic.
class InterpreterTest : public ::testing::Test {
protected:
  InterpreterTest()
      : handler(&context, [this](Diagnostic &diag) {
          diagnostics.push_back(diag.str());
          return success();
        }) {
    context.loadDialect<KilnDialect, func::FuncDialect>();
  }

  /// Parses `source` and runs its `@main` on `inputs`.
  FailureOr<SmallVector<HostTensor>> run(StringRef source,
                                         ArrayRef<HostTensor> inputs) {
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module) {
      ADD_FAILURE() << "cannot parse:\n"
                    << source.str() << "\n"
                    << allDiagnostics();
      return failure();
    }
    auto main = module->lookupSymbol<func::FuncOp>("main");
    if (!main) {
      ADD_FAILURE() << "no @main";
      return failure();
    }
    return interpretFunction(main, inputs);
  }

  /// Runs `source` and expects success with no diagnostic.
  SmallVector<HostTensor> runOk(StringRef source, ArrayRef<HostTensor> inputs) {
    FailureOr<SmallVector<HostTensor>> results = run(source, inputs);
    EXPECT_TRUE(succeeded(results)) << allDiagnostics();
    EXPECT_TRUE(diagnostics.empty()) << allDiagnostics();
    if (failed(results))
      return {};
    return std::move(*results);
  }

  /// A tensor from float values; the test fails if it cannot be built.
  HostTensor floats(Type type, ArrayRef<int64_t> shape,
                    ArrayRef<double> values) {
    FailureOr<HostTensor> tensor = HostTensor::fromDoubles(type, shape, values);
    EXPECT_TRUE(succeeded(tensor));
    return succeeded(tensor) ? std::move(*tensor) : HostTensor();
  }

  /// A tensor from integer values; the test fails if it cannot be built.
  HostTensor ints(Type type, ArrayRef<int64_t> shape,
                  ArrayRef<int64_t> values) {
    FailureOr<HostTensor> tensor = HostTensor::fromInts(type, shape, values);
    EXPECT_TRUE(succeeded(tensor));
    return succeeded(tensor) ? std::move(*tensor) : HostTensor();
  }

  /// A tensor from unsigned values, stored with setFromUnsigned.
  HostTensor unsigneds(Type type, ArrayRef<int64_t> shape,
                       ArrayRef<uint64_t> values) {
    FailureOr<HostTensor> tensor = HostTensor::allocate(type, shape);
    EXPECT_TRUE(succeeded(tensor));
    if (failed(tensor))
      return HostTensor();
    EXPECT_EQ(tensor->numElements(), static_cast<int64_t>(values.size()));
    for (auto [index, value] : llvm::enumerate(values))
      tensor->setFromUnsigned(index, value);
    return std::move(*tensor);
  }

  /// Every diagnostic so far, one per line.
  std::string allDiagnostics() const {
    std::string text;
    for (const std::string &message : diagnostics)
      text += message + "\n";
    return text;
  }

  /// True when some diagnostic contains `fragment`.
  bool hasDiagnostic(StringRef fragment) const {
    return llvm::any_of(diagnostics, [&](const std::string &message) {
      return StringRef(message).contains(fragment);
    });
  }

  /// f32.
  Type f32() { return Float32Type::get(&context); }
  /// f16.
  Type f16() { return Float16Type::get(&context); }
  /// bf16.
  Type bf16() { return BFloat16Type::get(&context); }
  /// i64.
  Type i64() { return IntegerType::get(&context, 64); }
  /// i32.
  Type i32() { return IntegerType::get(&context, 32); }
  /// i16.
  Type i16() { return IntegerType::get(&context, 16); }
  /// i8.
  Type i8() { return IntegerType::get(&context, 8); }
  /// f64.
  Type f64() { return Float64Type::get(&context); }
  /// ui64, ui32, ui16 or ui8.
  Type ui(unsigned width) {
    return IntegerType::get(&context, width, IntegerType::Unsigned);
  }
  /// i1.
  Type i1() { return IntegerType::get(&context, 1); }

  /// Holds the kiln and func dialects.
  MLIRContext context;
  /// Every diagnostic emitted so far, as text.
  std::vector<std::string> diagnostics;
  /// Records diagnostics instead of printing them.
  ScopedDiagnosticHandler handler;
  /// The module of the last run; results outlive it, the context does not.
  OwningOpRef<ModuleOp> module;
};

} // namespace

/// Expects `tensor` to have `shape` and, element by element, `values`.
static void expectValues(const HostTensor &tensor, ArrayRef<int64_t> shape,
                         ArrayRef<double> values, double tolerance = 0.0) {
  EXPECT_EQ(ArrayRef<int64_t>(tensor.shape), shape);
  ASSERT_EQ(tensor.numElements(), static_cast<int64_t>(values.size()));
  for (auto [index, expected] : llvm::enumerate(values))
    EXPECT_NEAR(tensor.getAsDouble(index), expected, tolerance)
        << "at element " << index;
}

/// Expects an integer tensor of `shape` holding `values`.
static void expectInts(const HostTensor &tensor, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> values) {
  EXPECT_EQ(ArrayRef<int64_t>(tensor.shape), shape);
  ASSERT_EQ(tensor.numElements(), static_cast<int64_t>(values.size()));
  for (auto [index, expected] : llvm::enumerate(values))
    EXPECT_EQ(tensor.getAsInt(index), expected) << "at element " << index;
}

/// Expects an unsigned integer tensor of `shape` holding `values`.
static void expectUnsigned(const HostTensor &tensor, ArrayRef<int64_t> shape,
                           ArrayRef<uint64_t> values) {
  EXPECT_EQ(ArrayRef<int64_t>(tensor.shape), shape);
  ASSERT_EQ(tensor.numElements(), static_cast<int64_t>(values.size()));
  for (auto [index, expected] : llvm::enumerate(values))
    EXPECT_EQ(static_cast<uint64_t>(tensor.getAsInt(index)), expected)
        << "at element " << index;
}

TEST_F(InterpreterTest, AddBroadcastsTrailingDims) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
      %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {2, 3}, {1, 2, 3, 4, 5, 6}),
                                floats(f32(), {3}, {10, 20, 30})});
  ASSERT_EQ(results.size(), 1u);
  expectValues(results[0], {2, 3}, {11, 22, 33, 14, 25, 36});
}

TEST_F(InterpreterTest, SubBroadcastsBothOperands) {
  // A column minus a row: every pair.
  StringRef source = R"mlir(
    func.func @main(%a: tensor<2x1xf32>, %b: tensor<1x3xf32>) -> tensor<2x3xf32> {
      %0 = kiln.sub %a, %b : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {2, 1}, {10, 20}),
                                floats(f32(), {1, 3}, {1, 2, 3})});
  ASSERT_EQ(results.size(), 1u);
  expectValues(results[0], {2, 3}, {9, 8, 7, 19, 18, 17});
}

TEST_F(InterpreterTest, IntegerDivTruncatesAndNeverTraps) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<6xi32>, %b: tensor<6xi32>) -> tensor<6xi32> {
      %0 = kiln.div %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
      return %0 : tensor<6xi32>
    })mlir";
  auto results = runOk(source, {ints(i32(), {6}, {7, -7, 7, -7, 5, INT32_MIN}),
                                ints(i32(), {6}, {2, 2, -2, -2, 0, -1})});
  ASSERT_EQ(results.size(), 1u);
  // Division by zero gives 0; INT32_MIN / -1 wraps back to INT32_MIN.
  expectInts(results[0], {6}, {3, -3, -3, 3, 0, INT32_MIN});
}

TEST_F(InterpreterTest, IntegerArithmeticWraps) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<2xi8>, %b: tensor<2xi8>) -> (tensor<2xi8>, tensor<2xi8>) {
      %0 = kiln.add %a, %b : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>
      %1 = kiln.mul %a, %b : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>
      return %0, %1 : tensor<2xi8>, tensor<2xi8>
    })mlir";
  auto results =
      runOk(source, {ints(i8(), {2}, {127, -128}), ints(i8(), {2}, {1, 2})});
  ASSERT_EQ(results.size(), 2u);
  expectInts(results[0], {2}, {-128, -126});
  expectInts(results[1], {2}, {127, 0});
}

TEST_F(InterpreterTest, MatmulBroadcastsBatchDims) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<2x2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2x2xf32> {
      %0 = kiln.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x2xf32>) -> tensor<2x2x2xf32>
      return %0 : tensor<2x2x2xf32>
    })mlir";
  auto results = runOk(
      source, {floats(f32(), {2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2}),
               floats(f32(), {3, 2}, {1, 0, 0, 1, 1, 1})});
  ASSERT_EQ(results.size(), 1u);
  expectValues(results[0], {2, 2, 2}, {4, 5, 10, 11, 0, 1, 4, 4});
}

TEST_F(InterpreterTest, MatmulTransposeFlags) {
  // The operands of MatmulBroadcastsBatchDims' first batch, stored transposed;
  // the rhs also carries a batch dim of 1 that broadcasts against none.
  StringRef source = R"mlir(
    func.func @main(%a: tensor<3x2xf32>, %b: tensor<1x2x3xf32>) -> tensor<1x2x2xf32> {
      %0 = kiln.matmul %a, %b {transpose_lhs = true, transpose_rhs = true}
          : (tensor<3x2xf32>, tensor<1x2x3xf32>) -> tensor<1x2x2xf32>
      return %0 : tensor<1x2x2xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {3, 2}, {1, 4, 2, 5, 3, 6}),
                                floats(f32(), {1, 2, 3}, {1, 0, 1, 0, 1, 1})});
  ASSERT_EQ(results.size(), 1u);
  expectValues(results[0], {1, 2, 2}, {4, 5, 10, 11});
}

TEST_F(InterpreterTest, MatmulBroadcastsBatchDimsOfBothOperands) {
  // lhs batch 2x1, rhs batch 3: result batch 2x3; each lhs matrix is a scalar
  // multiple of the identity, so each result is a scaled rhs matrix.
  StringRef source = R"mlir(
    func.func @main(%a: tensor<2x1x2x2xi64>, %b: tensor<3x2x1xi64>) -> tensor<2x3x2x1xi64> {
      %0 = kiln.matmul %a, %b : (tensor<2x1x2x2xi64>, tensor<3x2x1xi64>) -> tensor<2x3x2x1xi64>
      return %0 : tensor<2x3x2x1xi64>
    })mlir";
  auto results =
      runOk(source, {ints(i64(), {2, 1, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2}),
                     ints(i64(), {3, 2, 1}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(results.size(), 1u);
  expectInts(results[0], {2, 3, 2, 1}, {1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12});
}

TEST_F(InterpreterTest, SoftmaxMatchesFormulaAndSumsToOne) {
  std::vector<double> input = {1, 2, 3, 0, 0, 0, -1, 5, 1000};
  StringRef source = R"mlir(
    func.func @main(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
      %0 = kiln.softmax %x {axis = 1 : i64} : tensor<3x3xf32>
      return %0 : tensor<3x3xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {3, 3}, input)});
  ASSERT_EQ(results.size(), 1u);
  const HostTensor &result = results[0];
  for (int64_t row = 0; row < 3; ++row) {
    double sum = 0.0, denominator = 0.0;
    for (int64_t col = 0; col < 3; ++col) {
      sum += result.getAsDouble(row * 3 + col);
      denominator += std::exp(input[row * 3 + col] - input[row * 3 + 2]);
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
    for (int64_t col = 0; col < 3; ++col)
      EXPECT_NEAR(result.getAsDouble(row * 3 + col),
                  std::exp(input[row * 3 + col] - input[row * 3 + 2]) /
                      denominator,
                  1e-7);
  }
  // The large row would overflow exp without the max shift.
  EXPECT_NEAR(result.getAsDouble(8), 1.0, 1e-7);
  EXPECT_FALSE(std::isnan(result.getAsDouble(6)));
}

TEST_F(InterpreterTest, SoftmaxAlongLeadingAxis) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
      %0 = kiln.softmax %x {axis = 0 : i64} : tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {2, 2}, {0, 1, 0, 3})});
  ASSERT_EQ(results.size(), 1u);
  double e2 = std::exp(2.0);
  expectValues(results[0], {2, 2}, {0.5, 1 / (1 + e2), 0.5, e2 / (1 + e2)},
               1e-7);
}

TEST_F(InterpreterTest, LayerNormMatchesFormula) {
  std::vector<double> x = {1, 2, 3, 4, -2, 0, 2, 10};
  std::vector<double> scale = {1, 2, 0.5, -1};
  std::vector<double> bias = {0, 1, -1, 0.25};
  double epsilon = 1e-5;
  StringRef source = R"mlir(
    func.func @main(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
      %0 = kiln.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32}
          : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
      return %0 : tensor<2x4xf32>
    })mlir";
  auto results =
      runOk(source, {floats(f32(), {2, 4}, x), floats(f32(), {4}, scale),
                     floats(f32(), {4}, bias)});
  ASSERT_EQ(results.size(), 1u);
  std::vector<double> expected;
  for (int row = 0; row < 2; ++row) {
    double mean = 0.0, variance = 0.0;
    for (int j = 0; j < 4; ++j)
      mean += x[row * 4 + j] / 4;
    for (int j = 0; j < 4; ++j)
      variance += (x[row * 4 + j] - mean) * (x[row * 4 + j] - mean) / 4;
    // The f32 attribute holds epsilon rounded to float.
    double eps = static_cast<float>(epsilon);
    for (int j = 0; j < 4; ++j)
      expected.push_back((x[row * 4 + j] - mean) / std::sqrt(variance + eps) *
                             scale[j] +
                         bias[j]);
  }
  expectValues(results[0], {2, 4}, expected, 1e-6);
}

TEST_F(InterpreterTest, LayerNormOverTwoDimsWithoutBias) {
  // Normalized over the last two dims (axis 1); the scale of shape 2
  // broadcasts along the normalized dim of size 3.
  std::vector<double> x = {0, 1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 7};
  StringRef source = R"mlir(
    func.func @main(%x: tensor<2x3x2xf32>, %g: tensor<2xf32>) -> tensor<2x3x2xf32> {
      %0 = kiln.layer_norm %x, %g {axis = 1 : i64, epsilon = 0.0 : f32}
          : (tensor<2x3x2xf32>, tensor<2xf32>) -> tensor<2x3x2xf32>
      return %0 : tensor<2x3x2xf32>
    })mlir";
  auto results =
      runOk(source, {floats(f32(), {2, 3, 2}, x), floats(f32(), {2}, {1, 3})});
  ASSERT_EQ(results.size(), 1u);
  std::vector<double> expected;
  for (int outer = 0; outer < 2; ++outer) {
    double mean = 0.0, variance = 0.0;
    for (int j = 0; j < 6; ++j)
      mean += x[outer * 6 + j] / 6;
    for (int j = 0; j < 6; ++j)
      variance += (x[outer * 6 + j] - mean) * (x[outer * 6 + j] - mean) / 6;
    for (int j = 0; j < 6; ++j)
      expected.push_back((x[outer * 6 + j] - mean) / std::sqrt(variance) *
                         (j % 2 == 0 ? 1.0 : 3.0));
  }
  expectValues(results[0], {2, 3, 2}, expected, 1e-6);
}

TEST_F(InterpreterTest, ReduceMeanWithAndWithoutKeepdims) {
  // x[i][j][k] = 6i + 2j + k.
  std::vector<double> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  StringRef source = R"mlir(
    func.func @main(%x: tensor<2x3x2xf32>) -> (tensor<1x3x1xf32>, tensor<2x2xf32>) {
      %0 = kiln.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = true}
          : tensor<2x3x2xf32> -> tensor<1x3x1xf32>
      %1 = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = false}
          : tensor<2x3x2xf32> -> tensor<2x2xf32>
      return %0, %1 : tensor<1x3x1xf32>, tensor<2x2xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {2, 3, 2}, x)});
  ASSERT_EQ(results.size(), 2u);
  // Mean over i and k of 6i + 2j + k = 3 + 2j + 0.5.
  expectValues(results[0], {1, 3, 1}, {3.5, 5.5, 7.5}, 1e-6);
  // Mean over j of 6i + 2j + k = 6i + 2 + k.
  expectValues(results[1], {2, 2}, {2, 3, 8, 9}, 1e-6);
}

TEST_F(InterpreterTest, TransposeMovesDims) {
  std::vector<double> x;
  for (int i = 0; i < 24; ++i)
    x.push_back(i);
  StringRef source = R"mlir(
    func.func @main(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
      %0 = kiln.transpose %x {permutation = array<i64: 2, 0, 1>}
          : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
      return %0 : tensor<4x2x3xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {2, 3, 4}, x)});
  ASSERT_EQ(results.size(), 1u);
  const HostTensor &result = results[0];
  EXPECT_EQ(ArrayRef<int64_t>(result.shape), ArrayRef<int64_t>({4, 2, 3}));
  // result[k][i][j] = x[i][j][k].
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        EXPECT_EQ(result.getAsDouble(k * 6 + i * 3 + j), i * 12 + j * 4 + k);
}

TEST_F(InterpreterTest, CastRoundsToHalfPrecisionToNearestEven) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
      %h = kiln.cast %x : tensor<3xf32> -> tensor<3xf16>
      %hf = kiln.cast %h : tensor<3xf16> -> tensor<3xf32>
      %b = kiln.cast %x : tensor<3xf32> -> tensor<3xbf16>
      %bf = kiln.cast %b : tensor<3xbf16> -> tensor<3xf32>
      return %hf, %bf : tensor<3xf32>, tensor<3xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {3}, {1.0 / 3.0, 2049, 2051})});
  ASSERT_EQ(results.size(), 2u);
  // f16 keeps 10 fraction bits: 1/3 rounds down to 1365/4096; 2049 and 2051
  // are ties between multiples of 2 and go to the even significand.
  expectValues(results[0], {3}, {1365.0 / 4096.0, 2048, 2052});
  // bf16 keeps 7: 1/3 rounds up to 171/512; at 2048 the spacing is 16.
  expectValues(results[1], {3}, {171.0 / 512.0, 2048, 2048});
}

TEST_F(InterpreterTest, CastFloatToIntegerTruncatesAndSaturates) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  StringRef source = R"mlir(
    func.func @main(%x: tensor<7xf32>) -> (tensor<7xi64>, tensor<7xi8>, tensor<7xi1>) {
      %0 = kiln.cast %x : tensor<7xf32> -> tensor<7xi64>
      %1 = kiln.cast %x : tensor<7xf32> -> tensor<7xi8>
      %2 = kiln.cast %x : tensor<7xf32> -> tensor<7xi1>
      return %0, %1, %2 : tensor<7xi64>, tensor<7xi8>, tensor<7xi1>
    })mlir";
  auto results = runOk(
      source, {floats(f32(), {7}, {-1.7, -0.5, 2.9, nan, 1e30, -1e30, 300})});
  ASSERT_EQ(results.size(), 3u);
  expectInts(results[0], {7}, {-1, 0, 2, 0, INT64_MAX, INT64_MIN, 300});
  expectInts(results[1], {7}, {-1, 0, 2, 0, 127, -128, 127});
  // `x != 0`: -0.5 and NaN are true.
  expectInts(results[2], {7}, {1, 1, 1, 1, 1, 1, 1});
}

TEST_F(InterpreterTest, CastIntegerConversions) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<4xi64>) -> (tensor<4xi8>, tensor<4xi1>, tensor<4xf16>) {
      %0 = kiln.cast %x : tensor<4xi64> -> tensor<4xi8>
      %1 = kiln.cast %x : tensor<4xi64> -> tensor<4xi1>
      %2 = kiln.cast %x : tensor<4xi64> -> tensor<4xf16>
      return %0, %1, %2 : tensor<4xi8>, tensor<4xi1>, tensor<4xf16>
    })mlir";
  auto results = runOk(source, {ints(i64(), {4}, {0, 257, -129, 2049})});
  ASSERT_EQ(results.size(), 3u);
  expectInts(results[0], {4}, {0, 1, 127, 1});
  expectInts(results[1], {4}, {0, 1, 1, 1});
  expectValues(results[2], {4}, {0, 257, -129, 2048});
}

TEST_F(InterpreterTest, UnaryOps) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
      %0 = kiln.relu %x : tensor<3xf32>
      %1 = kiln.sigmoid %x : tensor<3xf32>
      %2 = kiln.neg %x : tensor<3xf32>
      %e = kiln.erf %x : tensor<3xf32>
      %t = kiln.tanh %e : tensor<3xf32>
      %s = kiln.exp %t : tensor<3xf32>
      %3 = kiln.sqrt %s : tensor<3xf32>
      return %0, %1, %2, %3 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {3}, {-2, 0, 1.5})});
  ASSERT_EQ(results.size(), 4u);
  expectValues(results[0], {3}, {0, 0, 1.5});
  expectValues(results[1], {3},
               {1 / (1 + std::exp(2.0)), 0.5, 1 / (1 + std::exp(-1.5))}, 1e-7);
  expectValues(results[2], {3}, {2, 0, -1.5});
  std::vector<double> expected;
  for (double x : {-2.0, 0.0, 1.5})
    expected.push_back(std::sqrt(std::exp(std::tanh(std::erf(x)))));
  expectValues(results[3], {3}, expected, 1e-6);
}

TEST_F(InterpreterTest, PowOfFloats) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<3xf32>, %y: tensor<f32>) -> tensor<3xf32> {
      %0 = kiln.pow %x, %y : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
      return %0 : tensor<3xf32>
    })mlir";
  auto results =
      runOk(source, {floats(f32(), {3}, {-3, 0.5, 4}), floats(f32(), {}, {2})});
  ASSERT_EQ(results.size(), 1u);
  expectValues(results[0], {3}, {9, 0.25, 16});
}

TEST_F(InterpreterTest, KernelBodyRunsOnItsOperands) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
      %k = kiln.kernel elementwise (%a, %b) {kiln.offsets = [0]}
          : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
      ^bb0(%x: tensor<4xf32>, %z: tensor<4xf32>):
        %s = kiln.add %x, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        %r = kiln.relu %s : tensor<4xf32>
        kiln.yield %r : tensor<4xf32>
      }
      %y = kiln.mul %k, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      return %y : tensor<4xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {4}, {1, 2, 3, 4}),
                                floats(f32(), {4}, {-5, -1, 0, 1})});
  ASSERT_EQ(results.size(), 1u);
  // relu(a + b) * a.
  expectValues(results[0], {4}, {0, 2, 9, 20});
}

TEST_F(InterpreterTest, DenseResourceConstant) {
  // Little-endian f32 1.0 and 2.0 after the 4-byte alignment prefix.
  StringRef source = R"mlir(
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %w = kiln.constant dense_resource<blob1> : tensor<2xf32>
      %0 = kiln.add %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }
    {-#
      dialect_resources: {
        builtin: {
          blob1: "0x040000000000803F00000040"
        }
      }
    #-})mlir";
  auto results = runOk(source, {floats(f32(), {2}, {0.5, 0.25})});
  ASSERT_EQ(results.size(), 1u);
  expectValues(results[0], {2}, {1.5, 2.25});
}

TEST_F(InterpreterTest, MalformedResourceBlobsAreDiagnostics) {
  // Six bytes of data cannot hold two f32 values.
  StringRef shortBlob = R"mlir(
    func.func @main() -> tensor<2xf32> {
      %w = kiln.constant dense_resource<blob1> : tensor<2xf32>
      return %w : tensor<2xf32>
    }
    {-#
      dialect_resources: {
        builtin: {
          blob1: "0x040000000000803F0000"
        }
      }
    #-})mlir";
  EXPECT_TRUE(failed(run(shortBlob, {})));
  EXPECT_TRUE(hasDiagnostic("dense_resource blob 'blob1' holds 6 bytes, "
                            "expected 8"))
      << allDiagnostics();
  // A resource named but never given, as in IR printed with elided blobs.
  StringRef missingBlob = R"mlir(
    func.func @main() -> tensor<2xf32> {
      %w = kiln.constant dense_resource<absent> : tensor<2xf32>
      return %w : tensor<2xf32>
    })mlir";
  EXPECT_TRUE(failed(run(missingBlob, {})));
  EXPECT_TRUE(hasDiagnostic("dense_resource blob 'absent' has no data"))
      << allDiagnostics();
}

TEST_F(InterpreterTest, KernelsWithSeveralResultsAndSharedValues) {
  // %s feeds two kernels and the return; each kernel yields two results.
  StringRef source = R"mlir(
    func.func @main(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
      %s = kiln.add %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %k:2 = kiln.kernel elementwise (%s)
          : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
      ^bb0(%x: tensor<2xf32>):
        %n = kiln.neg %x : tensor<2xf32>
        kiln.yield %n, %x : tensor<2xf32>, tensor<2xf32>
      }
      %m = kiln.kernel elementwise (%k#0, %s)
          : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
      ^bb0(%x: tensor<2xf32>, %y: tensor<2xf32>):
        %p = kiln.mul %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
        kiln.yield %p : tensor<2xf32>
      }
      return %m, %k#1, %s : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {2}, {1, -3})});
  ASSERT_EQ(results.size(), 3u);
  expectValues(results[0], {2}, {-4, -36});
  expectValues(results[1], {2}, {2, -6});
  expectValues(results[2], {2}, {2, -6});
}

TEST_F(InterpreterTest, SymbolicDimsThatInputsDisagreeOnAreADiagnostic) {
  // Both inputs are [b, s]: sizes 2x3 and 2x4 disagree on s.
  StringRef source = R"mlir(
    func.func @main(%x: tensor<?x?xf32, #kiln.dims<["b", "s"]>>,
                    %y: tensor<?x?xf32, #kiln.dims<["b", "s"]>>)
        -> tensor<?x?xf32, #kiln.dims<["b", "s"]>> {
      %0 = kiln.add %x, %y : (tensor<?x?xf32, #kiln.dims<["b", "s"]>>,
          tensor<?x?xf32, #kiln.dims<["b", "s"]>>)
          -> tensor<?x?xf32, #kiln.dims<["b", "s"]>>
      return %0 : tensor<?x?xf32, #kiln.dims<["b", "s"]>>
    })mlir";
  EXPECT_TRUE(
      failed(run(source, {floats(f32(), {2, 3}, {1, 2, 3, 4, 5, 6}),
                          floats(f32(), {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})})));
  EXPECT_TRUE(hasDiagnostic("dim sizes: input #1 dim 1 is 4, but its size 's' "
                            "is 3 with s = 3 (from input #0 dim 1)"))
      << allDiagnostics();
}

TEST_F(InterpreterTest, SymbolicDimsOutsideTheirRangeAreADiagnostic) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<?xf32, #kiln.dims<["s"]>>)
        -> tensor<?xf32, #kiln.dims<["s"]>>
        attributes {kiln.dim_ranges = {s = array<i64: 1, 2>}} {
      return %x : tensor<?xf32, #kiln.dims<["s"]>>
    })mlir";
  runOk(source, {floats(f32(), {2}, {1, 2})});
  EXPECT_TRUE(failed(run(source, {floats(f32(), {3}, {1, 2, 3})})));
  EXPECT_TRUE(hasDiagnostic("dim sizes: 's' is 3 (from input #0 dim 0), "
                            "outside its range 1..2"))
      << allDiagnostics();
}

TEST_F(InterpreterTest, DynamicDimsTakeTheInputsSizes) {
  // b and s from the input; a dim known only through a sum (past + s) is
  // solved for; kiln.sizes reads the values.
  StringRef source = R"mlir(
    func.func @main(%x: tensor<?x?x4xf32, #kiln.dims<["b", "s"]>>,
                    %kv: tensor<?xf32, #kiln.dims<["past + s"]>>)
        -> (tensor<?x?x2x2xf32, #kiln.dims<["b", "s"]>>,
            tensor<?x4xf32, #kiln.dims<["b*s"]>>, tensor<3xi64>) {
      %0 = kiln.reshape %x : tensor<?x?x4xf32, #kiln.dims<["b", "s"]>>
          -> tensor<?x?x2x2xf32, #kiln.dims<["b", "s"]>>
      %1 = kiln.reshape %x : tensor<?x?x4xf32, #kiln.dims<["b", "s"]>>
          -> tensor<?x4xf32, #kiln.dims<["b*s"]>>
      %2 = kiln.sizes ["b*s", "past", "2*past + 1"] : tensor<3xi64>
      return %0, %1, %2 : tensor<?x?x2x2xf32, #kiln.dims<["b", "s"]>>,
          tensor<?x4xf32, #kiln.dims<["b*s"]>>, tensor<3xi64>
    })mlir";
  auto results =
      runOk(source, {floats(f32(), {1, 2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}),
                     floats(f32(), {5}, {0, 0, 0, 0, 0})});
  ASSERT_EQ(results.size(), 3u);
  expectValues(results[0], {1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  expectValues(results[1], {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  expectInts(results[2], {3}, {2, 3, 7});
}

TEST_F(InterpreterTest, DenseConstantsSplatAndBool) {
  StringRef source = R"mlir(
    func.func @main() -> (tensor<2x2xf16>, tensor<3xi1>, tensor<2xi64>) {
      %0 = kiln.constant dense<0.5> : tensor<2x2xf16>
      %1 = kiln.constant dense<[true, false, true]> : tensor<3xi1>
      %2 = kiln.constant dense<[-3, 4]> : tensor<2xi64>
      return %0, %1, %2 : tensor<2x2xf16>, tensor<3xi1>, tensor<2xi64>
    })mlir";
  auto results = runOk(source, {});
  ASSERT_EQ(results.size(), 3u);
  expectValues(results[0], {2, 2}, {0.5, 0.5, 0.5, 0.5});
  expectInts(results[1], {3}, {1, 0, 1});
  expectInts(results[2], {2}, {-3, 4});
}

TEST_F(InterpreterTest, EmptyTensors) {
  // Zero-size dims run no iterations; a mean over nothing is NaN and a
  // product over an empty contraction is 0.
  StringRef source = R"mlir(
    func.func @main(%x: tensor<2x0xf32>, %y: tensor<0x3xf32>)
        -> (tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x0xf32>, tensor<0x2xf32>) {
      %0 = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true}
          : tensor<2x0xf32> -> tensor<2x1xf32>
      %1 = kiln.matmul %x, %y : (tensor<2x0xf32>, tensor<0x3xf32>) -> tensor<2x3xf32>
      %2 = kiln.softmax %x {axis = 1 : i64} : tensor<2x0xf32>
      %3 = kiln.transpose %x {permutation = array<i64: 1, 0>}
          : tensor<2x0xf32> -> tensor<0x2xf32>
      return %0, %1, %2, %3 : tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x0xf32>, tensor<0x2xf32>
    })mlir";
  auto results =
      runOk(source, {floats(f32(), {2, 0}, {}), floats(f32(), {0, 3}, {})});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(std::isnan(results[0].getAsDouble(0)));
  EXPECT_TRUE(std::isnan(results[0].getAsDouble(1)));
  expectValues(results[1], {2, 3}, {0, 0, 0, 0, 0, 0});
  expectValues(results[2], {2, 0}, {});
  expectValues(results[3], {0, 2}, {});
  FailureOr<HostTensor> back =
      HostTensor::fromElementsAttr(results[3].toDenseElementsAttr());
  ASSERT_TRUE(succeeded(back));
  EXPECT_EQ(back->numElements(), 0);
}

TEST_F(InterpreterTest, WrongInputShapeIsADiagnostic) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %0 = kiln.relu %x : tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })mlir";
  FailureOr<SmallVector<HostTensor>> results =
      run(source, {floats(f32(), {3, 2}, {1, 2, 3, 4, 5, 6})});
  EXPECT_TRUE(failed(results));
  EXPECT_TRUE(hasDiagnostic("input #0: expected shape compatible with "
                            "'tensor<2x3xf32>', got 'tensor<3x2xf32>'"))
      << allDiagnostics();
}

TEST_F(InterpreterTest, WrongInputCountAndTypeAreDiagnostics) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      return %x : tensor<2xf32>
    })mlir";
  EXPECT_TRUE(failed(run(source, {})));
  EXPECT_TRUE(hasDiagnostic("expected 1 inputs, got 0")) << allDiagnostics();
  EXPECT_TRUE(failed(run(source, {floats(f16(), {2}, {1, 2})})));
  EXPECT_TRUE(hasDiagnostic("expected element type 'f32', got 'f16'"))
      << allDiagnostics();
  // A hand-built tensor whose bytes do not match its shape.
  HostTensor broken = floats(f32(), {2}, {1, 2});
  broken.bytes.pop_back();
  EXPECT_TRUE(failed(run(source, {broken})));
  EXPECT_TRUE(hasDiagnostic("expected 8 bytes of data, got 7"))
      << allDiagnostics();
}

TEST_F(InterpreterTest, UnknownOpIsADiagnostic) {
  StringRef source = R"mlir(
    func.func private @helper(tensor<2xf32>) -> tensor<2xf32>
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = func.call @helper(%x) : (tensor<2xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    })mlir";
  FailureOr<SmallVector<HostTensor>> results =
      run(source, {floats(f32(), {2}, {1, 2})});
  EXPECT_TRUE(failed(results));
  EXPECT_TRUE(hasDiagnostic("is not supported by the reference interpreter"))
      << allDiagnostics();
}

TEST_F(InterpreterTest, OversizedTensorsAreRefused) {
  EXPECT_TRUE(failed(getCheckedNumElements({int64_t(1) << 20, 1 << 20})));
  EXPECT_TRUE(failed(getCheckedNumElements({0, int64_t(1) << 40})));
  EXPECT_TRUE(failed(getCheckedNumElements({-1})));
  EXPECT_TRUE(failed(getCheckedNumElements({INT64_MAX, INT64_MAX})));
  EXPECT_EQ(*getCheckedNumElements({2, 0, 3}), 0);
  EXPECT_EQ(*getCheckedNumElements({}), 1);
  // A broadcast that would produce 2^40 elements fails with a diagnostic.
  std::mt19937 rng(1);
  HostTensor column =
      randomTensor(RankedTensorType::get({1 << 20, 1}, f32()), rng);
  HostTensor row =
      randomTensor(RankedTensorType::get({1, 1 << 20}, f32()), rng);
  StringRef source = R"mlir(
    func.func @main(%x: tensor<1048576x1xf32>, %y: tensor<1x1048576xf32>) -> tensor<1048576x1048576xf32> {
      %0 = kiln.add %x, %y : (tensor<1048576x1xf32>, tensor<1x1048576xf32>) -> tensor<1048576x1048576xf32>
      return %0 : tensor<1048576x1048576xf32>
    })mlir";
  FailureOr<SmallVector<HostTensor>> results = run(source, {column, row});
  EXPECT_TRUE(failed(results));
  EXPECT_TRUE(hasDiagnostic("exceeds the interpreter's limit"))
      << allDiagnostics();
}

TEST_F(InterpreterTest, RandomTensorsAreInRangeAndReproducible) {
  std::mt19937 rng(42), again(42);
  for (Type type : {f32(), f16(), bf16()}) {
    auto tensorType = RankedTensorType::get({64}, type);
    HostTensor tensor = randomTensor(tensorType, rng);
    HostTensor repeat = randomTensor(tensorType, again);
    EXPECT_EQ(tensor.bytes, repeat.bytes);
    bool anyNonZero = false;
    for (int64_t i = 0; i < 64; ++i) {
      double value = tensor.getAsDouble(i);
      EXPECT_GE(value, -1.0);
      EXPECT_LT(value, 1.0);
      anyNonZero |= value != 0.0;
    }
    EXPECT_TRUE(anyNonZero);
  }
  HostTensor integers = randomTensor(RankedTensorType::get({64}, i32()), rng);
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_GE(integers.getAsInt(i), 0);
    EXPECT_LT(integers.getAsInt(i), 4);
  }
  HostTensor bools =
      randomTensor(RankedTensorType::get({ShapedType::kDynamic, 8}, i1()), rng);
  EXPECT_EQ(ArrayRef<int64_t>(bools.shape), ArrayRef<int64_t>({1, 8}));
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_TRUE(bools.getAsInt(i) == 0 || bools.getAsInt(i) == 1);
  EXPECT_TRUE(failed(
      tryRandomTensor(RankedTensorType::get({int64_t(1) << 40}, f32()), rng)));
}

TEST_F(InterpreterTest, ToDenseElementsAttrRoundTrips) {
  HostTensor tensor = floats(bf16(), {3}, {1, -2.5, 0.125});
  FailureOr<HostTensor> back =
      HostTensor::fromElementsAttr(tensor.toDenseElementsAttr());
  ASSERT_TRUE(succeeded(back));
  EXPECT_EQ(back->bytes, tensor.bytes);
  HostTensor bools = ints(i1(), {3}, {1, 0, 1});
  back = HostTensor::fromElementsAttr(bools.toDenseElementsAttr());
  ASSERT_TRUE(succeeded(back));
  EXPECT_EQ(back->bytes, bools.bytes);
}

//===----------------------------------------------------------------------===//
// Elementwise math and comparisons
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, IntegerModFollowsTheSignRuleOfItsFmod) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<8xi32>, %b: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>) {
      %0 = kiln.mod %a, %b : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
      %1 = kiln.mod %a, %b {fmod = true} : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
      return %0, %1 : tensor<8xi32>, tensor<8xi32>
    })mlir";
  auto results =
      runOk(source, {ints(i32(), {8}, {7, -7, 7, -7, 6, -6, 5, INT32_MIN}),
                     ints(i32(), {8}, {3, 3, -3, -3, 3, -3, 0, -1})});
  ASSERT_EQ(results.size(), 2u);
  // fmod = 0 is Python's %: the remainder takes the divisor's sign.
  expectInts(results[0], {8}, {1, 2, -2, -1, 0, 0, 0, 0});
  // fmod = 1 is C's %: the remainder takes the dividend's sign. A divisor of
  // zero gives 0 and INT32_MIN % -1 does not trap.
  expectInts(results[1], {8}, {1, -1, 1, -1, 0, 0, 0, 0});
}

TEST_F(InterpreterTest, FloatModIsFmod) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
      %0 = kiln.mod %a, %b {fmod = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {4}, {5.5, -5.5, 5.5, -5.5}),
                                floats(f32(), {4}, {2, 2, -2, -2})});
  ASSERT_EQ(results.size(), 1u);
  expectValues(results[0], {4}, {1.5, -1.5, 1.5, -1.5});
}

TEST_F(InterpreterTest, RoundTakesHalvesToEven) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<10xf32>) -> tensor<10xf32> {
      %0 = kiln.round %x : tensor<10xf32>
      return %0 : tensor<10xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {10},
                                       {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4,
                                        2.6, -2.6, 1e9 + 0.5})});
  ASSERT_EQ(results.size(), 1u);
  expectValues(results[0], {10}, {-2, -2, 0, 0, 2, 2, 2, 3, -3, 1e9});
  // -0.5 rounds to negative zero.
  EXPECT_TRUE(std::signbit(results[0].getAsDouble(2)));
}

TEST_F(InterpreterTest, MaxAndMinPropagateNaN) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
      %0 = kiln.max %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %1 = kiln.min %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      return %0, %1 : tensor<4xf32>, tensor<4xf32>
    })mlir";
  double nan = std::numeric_limits<double>::quiet_NaN();
  auto results = runOk(source, {floats(f32(), {4}, {nan, 1, 3, -1}),
                                floats(f32(), {4}, {1, nan, 2, 4})});
  ASSERT_EQ(results.size(), 2u);
  for (const HostTensor &result : results) {
    EXPECT_TRUE(std::isnan(result.getAsDouble(0)));
    EXPECT_TRUE(std::isnan(result.getAsDouble(1)));
  }
  EXPECT_EQ(results[0].getAsDouble(2), 3);
  EXPECT_EQ(results[0].getAsDouble(3), 4);
  EXPECT_EQ(results[1].getAsDouble(2), 2);
  EXPECT_EQ(results[1].getAsDouble(3), -1);
}

TEST_F(InterpreterTest, ClipWithMinAboveMaxGivesMax) {
  // The importer's Clip: a max with the lower bound, then a min with the
  // upper one, as numpy.clip computes it.
  StringRef source = R"mlir(
    func.func @main(%x: tensor<3xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> tensor<3xf32> {
      %0 = kiln.max %x, %lo : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
      %1 = kiln.min %0, %hi : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
      return %1 : tensor<3xf32>
    })mlir";
  auto results =
      runOk(source, {floats(f32(), {3}, {-5, 1.5, 5}), floats(f32(), {}, {2}),
                     floats(f32(), {}, {1})});
  ASSERT_EQ(results.size(), 1u);
  expectValues(results[0], {3}, {1, 1, 1});
}

TEST_F(InterpreterTest, IntegerAbsNegAndSignWrapAtTheMostNegativeValue) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi8>, tensor<4xi8>) {
      %0 = kiln.abs %x : tensor<4xi8>
      %1 = kiln.neg %x : tensor<4xi8>
      %2 = kiln.sign %x : tensor<4xi8>
      return %0, %1, %2 : tensor<4xi8>, tensor<4xi8>, tensor<4xi8>
    })mlir";
  auto results = runOk(source, {ints(i8(), {4}, {-128, -3, 0, 127})});
  ASSERT_EQ(results.size(), 3u);
  expectInts(results[0], {4}, {-128, 3, 0, 127});
  expectInts(results[1], {4}, {-128, 3, 0, -127});
  expectInts(results[2], {4}, {-1, -1, 0, 1});
}

TEST_F(InterpreterTest, ComparisonsAreFalseOnNaNAndWhereBroadcastsAllThree) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf32>, %x: tensor<2x3xi64>, %y: tensor<i64>) -> (tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi64>) {
      %lt = kiln.less %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xi1>
      %ge = kiln.greater_equal %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xi1>
      %eq = kiln.equal %lt, %ge : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
      %w = kiln.where %lt, %x, %y : (tensor<2x3xi1>, tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
      return %lt, %ge, %eq, %w : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi64>
    })mlir";
  double nan = std::numeric_limits<double>::quiet_NaN();
  auto results = runOk(source, {floats(f32(), {2, 1}, {1, nan}),
                                floats(f32(), {3}, {0, 1, 2}),
                                ints(i64(), {2, 3}, {10, 11, 12, 13, 14, 15}),
                                ints(i64(), {}, {-1})});
  ASSERT_EQ(results.size(), 4u);
  expectInts(results[0], {2, 3}, {0, 0, 1, 0, 0, 0});
  expectInts(results[1], {2, 3}, {1, 1, 0, 0, 0, 0});
  // Neither less nor greater-or-equal holds for NaN.
  expectInts(results[2], {2, 3}, {0, 0, 0, 1, 1, 1});
  expectInts(results[3], {2, 3}, {-1, -1, 12, -1, -1, -1});
}

TEST_F(InterpreterTest, LogicOnBooleans) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<4xi1>, %b: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
      %0 = kiln.and %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
      %1 = kiln.or %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
      %2 = kiln.xor %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
      %3 = kiln.not %a : tensor<4xi1>
      return %0, %1, %2, %3 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
    })mlir";
  auto results = runOk(
      source, {ints(i1(), {4}, {0, 0, 1, 1}), ints(i1(), {4}, {0, 1, 0, 1})});
  ASSERT_EQ(results.size(), 4u);
  expectInts(results[0], {4}, {0, 0, 0, 1});
  expectInts(results[1], {4}, {0, 1, 1, 1});
  expectInts(results[2], {4}, {0, 1, 1, 0});
  expectInts(results[3], {4}, {1, 1, 0, 0});
}

TEST_F(InterpreterTest, IsInfHonoursItsDetectFlagsAndIsNaN) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<4xf16>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
      %0 = kiln.is_inf %x : tensor<4xf16> -> tensor<4xi1>
      %1 = kiln.is_inf %x {detect_negative = false} : tensor<4xf16> -> tensor<4xi1>
      %2 = kiln.is_inf %x {detect_positive = false} : tensor<4xf16> -> tensor<4xi1>
      %3 = kiln.is_nan %x : tensor<4xf16> -> tensor<4xi1>
      return %0, %1, %2, %3 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
    })mlir";
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();
  auto results = runOk(source, {floats(f16(), {4}, {inf, -inf, nan, 65504})});
  ASSERT_EQ(results.size(), 4u);
  expectInts(results[0], {4}, {1, 1, 0, 0});
  expectInts(results[1], {4}, {1, 0, 0, 0});
  expectInts(results[2], {4}, {0, 1, 0, 0});
  expectInts(results[3], {4}, {0, 0, 1, 0});
}

TEST_F(InterpreterTest, GeluFormsMatchTheirFormulas) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
      %0 = kiln.gelu %x : tensor<4xf32>
      %1 = kiln.gelu %x approximate = tanh : tensor<4xf32>
      return %0, %1 : tensor<4xf32>, tensor<4xf32>
    })mlir";
  std::vector<double> xs = {-3, -0.5, 0.75, 2};
  auto results = runOk(source, {floats(f32(), {4}, xs)});
  ASSERT_EQ(results.size(), 2u);
  std::vector<double> exact, approximate;
  for (double x : xs) {
    exact.push_back(0.5 * x * (1 + std::erf(x / std::sqrt(2.0))));
    approximate.push_back(
        0.5 * x *
        (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))));
  }
  expectValues(results[0], {4}, exact, 1e-6);
  expectValues(results[1], {4}, approximate, 1e-6);
  // The two forms differ measurably at -3, so the test tells them apart.
  EXPECT_GT(std::fabs(exact[0] - approximate[0]), 1e-5);
}

TEST_F(InterpreterTest, UnaryMathOps) {
  StringRef source = R"mlir(
    func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
      %0 = kiln.reciprocal %x : tensor<3xf32>
      %1 = kiln.floor %x : tensor<3xf32>
      %2 = kiln.ceil %x : tensor<3xf32>
      %3 = kiln.softsign %x : tensor<3xf32>
      %4 = kiln.sign %x : tensor<3xf32>
      return %0, %1, %2, %3, %4 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    })mlir";
  auto results = runOk(source, {floats(f32(), {3}, {-2.5, 0.5, 4})});
  ASSERT_EQ(results.size(), 5u);
  expectValues(results[0], {3}, {-0.4, 2, 0.25}, 1e-7);
  expectValues(results[1], {3}, {-3, 0, 4});
  expectValues(results[2], {3}, {-2, 1, 4});
  expectValues(results[3], {3}, {-2.5 / 3.5, 0.5 / 1.5, 0.8}, 1e-7);
  expectValues(results[4], {3}, {-1, 1, 1});
}

//===----------------------------------------------------------------------===//
// Unsigned, int16 and float64 element types
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, Uint64OrdersDividesAndWrapsAsUnsigned) {
  // 2^64 - 1 and 2^63 read as negative int64_t values: every op here would
  // get them wrong through int64_t.
  constexpr uint64_t kMax = ~uint64_t(0), kHigh = uint64_t(1) << 63;
  StringRef source = R"mlir(
    func.func @main(%a: tensor<5xui64>, %b: tensor<5xui64>) -> (tensor<5xi1>, tensor<5xi1>, tensor<5xui64>, tensor<5xui64>, tensor<5xui64>, tensor<5xui64>, tensor<5xui64>, tensor<5xui64>) {
      %0 = kiln.greater %a, %b : (tensor<5xui64>, tensor<5xui64>) -> tensor<5xi1>
      %1 = kiln.less_equal %a, %b : (tensor<5xui64>, tensor<5xui64>) -> tensor<5xi1>
      %2 = kiln.sub %a, %b : (tensor<5xui64>, tensor<5xui64>) -> tensor<5xui64>
      %3 = kiln.div %a, %b : (tensor<5xui64>, tensor<5xui64>) -> tensor<5xui64>
      %4 = kiln.mod %a, %b : (tensor<5xui64>, tensor<5xui64>) -> tensor<5xui64>
      %5 = kiln.mod %a, %b {fmod = true} : (tensor<5xui64>, tensor<5xui64>) -> tensor<5xui64>
      %6 = kiln.max %a, %b : (tensor<5xui64>, tensor<5xui64>) -> tensor<5xui64>
      %7 = kiln.min %a, %b : (tensor<5xui64>, tensor<5xui64>) -> tensor<5xui64>
      return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<5xi1>, tensor<5xi1>, tensor<5xui64>, tensor<5xui64>, tensor<5xui64>, tensor<5xui64>, tensor<5xui64>, tensor<5xui64>
    })mlir";
  auto results =
      runOk(source, {unsigneds(ui(64), {5}, {kMax, 0, 10, kHigh, kMax}),
                     unsigneds(ui(64), {5}, {1, 1, 3, kHigh - 1, 0})});
  ASSERT_EQ(results.size(), 8u);
  expectInts(results[0], {5}, {1, 0, 1, 1, 1});
  expectInts(results[1], {5}, {0, 1, 0, 0, 0});
  // 0 - 1 wraps to 2^64 - 1.
  expectUnsigned(results[2], {5}, {kMax - 1, kMax, 7, 1, kMax});
  // A division by zero gives 0, as for signed integers.
  expectUnsigned(results[3], {5}, {kMax, 0, 3, 1, 0});
  // Both Mod forms agree on unsigned values; a remainder by zero is 0.
  expectUnsigned(results[4], {5}, {0, 0, 1, 1, 0});
  expectUnsigned(results[5], {5}, {0, 0, 1, 1, 0});
  expectUnsigned(results[6], {5}, {kMax, 1, 10, kHigh, kMax});
  expectUnsigned(results[7], {5}, {1, 0, 3, kHigh - 1, 0});
}

TEST_F(InterpreterTest, NarrowUnsignedAndInt16Wrap) {
  StringRef source = R"mlir(
    func.func @main(%a: tensor<3xui8>, %b: tensor<3xui8>, %c: tensor<2xui16>, %d: tensor<2xui32>, %e: tensor<2xi16>) -> (tensor<3xui8>, tensor<3xui8>, tensor<3xui8>, tensor<3xui8>, tensor<3xui8>, tensor<3xi1>, tensor<2xui16>, tensor<2xui32>, tensor<2xi16>, tensor<2xi16>) {
      %0 = kiln.add %a, %b : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
      %1 = kiln.sub %b, %a : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
      %2 = kiln.neg %b : tensor<3xui8>
      %3 = kiln.abs %a : tensor<3xui8>
      %4 = kiln.sign %a : tensor<3xui8>
      %5 = kiln.greater %a, %b : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xi1>
      %6 = kiln.mul %c, %c : (tensor<2xui16>, tensor<2xui16>) -> tensor<2xui16>
      %7 = kiln.div %d, %d : (tensor<2xui32>, tensor<2xui32>) -> tensor<2xui32>
      %8 = kiln.add %e, %e : (tensor<2xi16>, tensor<2xi16>) -> tensor<2xi16>
      %9 = kiln.div %e, %e : (tensor<2xi16>, tensor<2xi16>) -> tensor<2xi16>
      return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<3xui8>, tensor<3xui8>, tensor<3xui8>, tensor<3xui8>, tensor<3xui8>, tensor<3xi1>, tensor<2xui16>, tensor<2xui32>, tensor<2xi16>, tensor<2xi16>
    })mlir";
  auto results = runOk(source, {unsigneds(ui(8), {3}, {255, 200, 0}),
                                unsigneds(ui(8), {3}, {1, 100, 1}),
                                unsigneds(ui(16), {2}, {65535, 300}),
                                unsigneds(ui(32), {2}, {4294967295u, 0}),
                                ints(i16(), {2}, {-32768, 20000})});
  ASSERT_EQ(results.size(), 10u);
  expectUnsigned(results[0], {3}, {0, 44, 1});
  expectUnsigned(results[1], {3}, {2, 156, 1});
  expectUnsigned(results[2], {3}, {255, 156, 255});
  // A ui8 of 200 is no negative number.
  expectUnsigned(results[3], {3}, {255, 200, 0});
  expectUnsigned(results[4], {3}, {1, 1, 0});
  expectInts(results[5], {3}, {1, 1, 0});
  // 65535^2 = 2^32 - 2^17 + 1, and 300^2 = 90000, modulo 2^16.
  expectUnsigned(results[6], {2}, {1, 24464});
  // 2^32 - 1 divides as itself (no -1 special case); 0 / 0 is 0.
  expectUnsigned(results[7], {2}, {1, 0});
  expectInts(results[8], {2}, {0, -25536});
  expectInts(results[9], {2}, {1, 1});
}

TEST_F(InterpreterTest, CastsOfUnsignedAndDoubleValues) {
  constexpr uint64_t kMax = ~uint64_t(0);
  double nan = std::numeric_limits<double>::quiet_NaN();
  StringRef source = R"mlir(
    func.func @main(%u: tensor<3xui64>, %x: tensor<6xf64>, %i: tensor<2xi8>) -> (tensor<3xf32>, tensor<3xf64>, tensor<3xi64>, tensor<3xui8>, tensor<6xui8>, tensor<6xui32>, tensor<6xi16>, tensor<6xui64>, tensor<2xui64>, tensor<6xf32>) {
      %0 = kiln.cast %u : tensor<3xui64> -> tensor<3xf32>
      %1 = kiln.cast %u : tensor<3xui64> -> tensor<3xf64>
      %2 = kiln.cast %u : tensor<3xui64> -> tensor<3xi64>
      %3 = kiln.cast %u : tensor<3xui64> -> tensor<3xui8>
      %4 = kiln.cast %x : tensor<6xf64> -> tensor<6xui8>
      %5 = kiln.cast %x : tensor<6xf64> -> tensor<6xui32>
      %6 = kiln.cast %x : tensor<6xf64> -> tensor<6xi16>
      %7 = kiln.cast %x : tensor<6xf64> -> tensor<6xui64>
      %8 = kiln.cast %i : tensor<2xi8> -> tensor<2xui64>
      %9 = kiln.cast %x : tensor<6xf64> -> tensor<6xf32>
      return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<3xf32>, tensor<3xf64>, tensor<3xi64>, tensor<3xui8>, tensor<6xui8>, tensor<6xui32>, tensor<6xi16>, tensor<6xui64>, tensor<2xui64>, tensor<6xf32>
    })mlir";
  auto results = runOk(
      source, {unsigneds(ui(64), {3}, {kMax, uint64_t(1) << 63, 300}),
               floats(f64(), {6}, {-1.5, 300.7, nan, 1e30, 4294967295.9, 2.5}),
               ints(i8(), {2}, {-1, 5})});
  ASSERT_EQ(results.size(), 10u);
  // A large ui64 converts as the unsigned value, not as -1.
  expectValues(results[0], {3},
               {std::ldexp(1.0, 64), std::ldexp(1.0, 63), 300});
  expectValues(results[1], {3},
               {std::ldexp(1.0, 64), std::ldexp(1.0, 63), 300});
  // Integer to integer wraps modulo 2^width.
  expectInts(results[2], {3}, {-1, INT64_MIN, 300});
  expectUnsigned(results[3], {3}, {255, 0, 44});
  // Float to unsigned truncates toward zero and saturates: a negative value
  // gives 0, NaN gives 0.
  expectUnsigned(results[4], {6}, {0, 255, 0, 255, 255, 2});
  expectUnsigned(results[5], {6}, {0, 300, 0, 4294967295u, 4294967295u, 2});
  expectInts(results[6], {6}, {-1, 300, 0, 32767, 32767, 2});
  expectUnsigned(results[7], {6}, {0, 300, 0, kMax, 4294967295u, 2});
  expectUnsigned(results[8], {2}, {kMax, 5});
  // Double to float rounds once; NaN stays NaN.
  double rounded[] = {-1.5,  static_cast<float>(300.7),        nan,
                      1e30f, static_cast<float>(4294967295.9), 2.5};
  for (int64_t i = 0; i < 6; ++i)
    if (i == 2)
      EXPECT_TRUE(std::isnan(results[9].getAsDouble(i)));
    else
      EXPECT_EQ(results[9].getAsDouble(i), rounded[i]) << "at element " << i;
}

TEST_F(InterpreterTest, Uint64ReductionsArgAndTopKOrderAsUnsigned) {
  constexpr uint64_t kMax = ~uint64_t(0);
  StringRef source = R"mlir(
    func.func @main(%u: tensor<4xui64>) -> (tensor<1xui64>, tensor<1xui64>, tensor<i64>, tensor<i64>, tensor<2xi64>, tensor<4xui64>) {
      %0 = kiln.reduce_max %u {axes = array<i64: 0>, keepdims = true} : tensor<4xui64> -> tensor<1xui64>
      %1 = kiln.reduce_min %u {axes = array<i64: 0>, keepdims = true} : tensor<4xui64> -> tensor<1xui64>
      %2 = kiln.arg_max %u {axis = 0 : i64, keepdims = false, select_last_index = false} : tensor<4xui64> -> tensor<i64>
      %3 = kiln.arg_min %u {axis = 0 : i64, keepdims = false, select_last_index = false} : tensor<4xui64> -> tensor<i64>
      %4 = kiln.top_k %u {axis = 0 : i64, k = 2 : i64, largest = true} : tensor<4xui64> -> tensor<2xi64>
      %5 = kiln.cumsum %u {axis = 0 : i64, exclusive = false, reverse = false} : tensor<4xui64>
      return %0, %1, %2, %3, %4, %5 : tensor<1xui64>, tensor<1xui64>, tensor<i64>, tensor<i64>, tensor<2xi64>, tensor<4xui64>
    })mlir";
  auto results =
      runOk(source, {unsigneds(ui(64), {4}, {5, kMax, 1, uint64_t(1) << 63})});
  ASSERT_EQ(results.size(), 6u);
  expectUnsigned(results[0], {1}, {kMax});
  expectUnsigned(results[1], {1}, {1});
  expectInts(results[2], {}, {1});
  expectInts(results[3], {}, {2});
  expectInts(results[4], {2}, {1, 3});
  // 5 + (2^64 - 1) wraps to 4.
  expectUnsigned(results[5], {4}, {5, 4, 5, (uint64_t(1) << 63) + 5});
}

TEST_F(InterpreterTest, DoubleMathKeepsDoublePrecision) {
  // 1 + 2^-40 is exact in double and rounds to 1 in float; exp(1) in double
  // is the double libm value.
  StringRef source = R"mlir(
    func.func @main(%a: tensor<1xf64>, %b: tensor<1xf64>) -> (tensor<1xf64>, tensor<1xf64>, tensor<1xf64>) {
      %0 = kiln.add %a, %b : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
      %1 = kiln.sub %0, %a : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
      %2 = kiln.exp %a : tensor<1xf64>
      %3 = kiln.reduce_sum %0 {axes = array<i64: 0>, keepdims = true} : tensor<1xf64> -> tensor<1xf64>
      return %1, %2, %3 : tensor<1xf64>, tensor<1xf64>, tensor<1xf64>
    })mlir";
  auto results = runOk(source, {floats(f64(), {1}, {1.0}),
                                floats(f64(), {1}, {std::ldexp(1.0, -40)})});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].getAsDouble(0), std::ldexp(1.0, -40));
  EXPECT_EQ(results[1].getAsDouble(0), std::exp(1.0));
  EXPECT_EQ(results[2].getAsDouble(0), 1.0 + std::ldexp(1.0, -40));
}

TEST_F(InterpreterTest, NewElementTypesAllocateRandomizeAndRoundTrip) {
  std::mt19937 rng(7);
  for (Type type : {f64(), i16(), ui(8), ui(16), ui(32), ui(64)}) {
    HostTensor tensor = randomTensor(RankedTensorType::get({32}, type), rng);
    EXPECT_EQ(tensor.bytes.size(),
              32u * static_cast<size_t>(getHostElementByteWidth(type)));
    bool anyNonZero = false;
    for (int64_t i = 0; i < 32; ++i) {
      double value = tensor.getAsDouble(i);
      EXPECT_GE(value, isa<FloatType>(type) ? -1.0 : 0.0);
      EXPECT_LT(value, isa<FloatType>(type) ? 1.0 : 4.0);
      anyNonZero |= value != 0.0;
    }
    EXPECT_TRUE(anyNonZero);
    FailureOr<HostTensor> back =
        HostTensor::fromElementsAttr(tensor.toDenseElementsAttr());
    ASSERT_TRUE(succeeded(back));
    EXPECT_EQ(back->bytes, tensor.bytes);
  }
  EXPECT_EQ(getHostElementByteWidth(f64()), 8);
  EXPECT_EQ(getHostElementByteWidth(ui(16)), 2);
  // Signed 16 and 64-bit types that Kiln does not use stay unsupported.
  EXPECT_EQ(getHostElementByteWidth(
                IntegerType::get(&context, 16, IntegerType::Signed)),
            0);
  // float8 and the 4-bit integers take a byte each; the FNUZ float8 types
  // stay unsupported.
  EXPECT_EQ(getHostElementByteWidth(Float8E4M3FNType::get(&context)), 1);
  EXPECT_EQ(getHostElementByteWidth(IntegerType::get(&context, 4)), 1);
  EXPECT_EQ(getHostElementByteWidth(Float8E4M3FNUZType::get(&context)), 0);
  std::string text;
  llvm::raw_string_ostream os(text);
  unsigneds(ui(64), {2}, {~uint64_t(0), 1}).print(os);
  EXPECT_EQ(text, "tensor<2xui64> [18446744073709551615, 1]");
}

TEST_F(InterpreterTest, RefusesTooFewOperandsByTheOpsDeclaredCount) {
  // The fewest operands come from ODS (attention takes query, key and
  // value): a caller with fewer gets an error, never a read past the list.
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @main(%q: tensor<1x1x2x4xf32>, %k: tensor<1x1x3x4xf32>,
                    %v: tensor<1x1x3x4xf32>) -> tensor<1x1x2x4xf32> {
      %a = kiln.attention %q, %k, %v {scale = 0.5 : f32}
          : (tensor<1x1x2x4xf32>, tensor<1x1x3x4xf32>, tensor<1x1x3x4xf32>)
          -> tensor<1x1x2x4xf32>
      return %a : tensor<1x1x2x4xf32>
    })mlir",
                                       &context);
  ASSERT_TRUE(module) << allDiagnostics();
  Operation *attention = nullptr;
  module->walk([&](Operation *op) {
    if (op->getName().getStringRef() == "kiln.attention")
      attention = op;
  });
  ASSERT_NE(attention, nullptr);
  Type f32 = Float32Type::get(&context);
  HostTensor q = floats(f32, {1, 1, 2, 4}, std::vector<double>(8, 0.5));
  HostTensor k = floats(f32, {1, 1, 3, 4}, std::vector<double>(12, 0.25));
  EXPECT_TRUE(failed(evaluateOp(attention, {&q, &k})));
  EXPECT_NE(allDiagnostics().find("expected at least 3 operands, got 2"),
            std::string::npos)
      << allDiagnostics();
}

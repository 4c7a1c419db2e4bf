//===- StridedViewTest.cpp - layout views against the interpreter ---------===//
//
// Each test's kernel reads an input through layout ops. Where stridedViewOf
// finds strides, the reference interpreter runs the function on an input
// holding each element's own flat index, and every output element must be
// the index the strides give; where the ops are not a strided view, it must
// say so.
//
//===----------------------------------------------------------------------===//

#include "StridedView.h"

#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Interpreter/Interpreter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace mlir;
using namespace kiln;

namespace {

class StridedViewTest : public ::testing::Test {
protected:
  StridedViewTest() { context.loadDialect<KilnDialect, func::FuncDialect>(); }

  /// `body` (ops over %x, ending in `kiln.yield`) as one kernel of @main
  /// taking `input` and returning `result`.
  void parse(StringRef input, StringRef result, StringRef body) {
    std::string source =
        ("func.func @main(%a: " + input + ") -> " + result +
         " {\n  %r = kiln.kernel elementwise (%a) : (" + input + ") -> " +
         result + " {\n  ^bb0(%x: " + input + "):\n" + body +
         "  }\n  return %r : " + result + "\n}\n")
            .str();
    module = parseSourceString<ModuleOp>(source, &context);
    ASSERT_TRUE(module) << source;
  }

  /// The kernel's yielded value.
  Value yielded() {
    Value value;
    module->walk([&](YieldOp yield) { value = yield.getOperand(0); });
    return value;
  }

  /// Checks `view` against the interpreter element by element.
  void expectMatchesInterpreter(const StridedView &view) {
    auto main = module->lookupSymbol<func::FuncOp>("main");
    auto inputType = cast<RankedTensorType>(main.getArgumentTypes()[0]);
    std::vector<double> iota(inputType.getNumElements());
    std::iota(iota.begin(), iota.end(), 0.0);
    FailureOr<HostTensor> input = HostTensor::fromDoubles(
        inputType.getElementType(), inputType.getShape(), iota);
    ASSERT_TRUE(succeeded(input));
    FailureOr<SmallVector<HostTensor>> results =
        interpretFunction(main, {*input});
    ASSERT_TRUE(succeeded(results));
    const HostTensor &result = (*results)[0];
    int64_t offset = *view.offset.getConstant();
    for (int64_t i = 0; i < result.numElements(); ++i) {
      int64_t rest = i, expected = offset;
      for (size_t d = view.shape.size(); d-- > 0;) {
        int64_t extent = *view.shape[d].getConstant();
        expected += rest % extent * *view.strides[d].getConstant();
        rest /= extent;
      }
      ASSERT_EQ(result.getAsDouble(i), static_cast<double>(expected))
          << "element " << i;
    }
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(StridedViewTest, AnInputIsContiguous) {
  parse("tensor<2x3xf32>", "tensor<2x3xf32>",
        "  kiln.yield %x : tensor<2x3xf32>\n");
  std::optional<StridedView> view = stridedViewOf(yielded());
  ASSERT_TRUE(view);
  EXPECT_EQ(view->input, 0u);
  EXPECT_EQ(*view->strides[0].getConstant(), 3);
  expectMatchesInterpreter(*view);
}

// GPT-2's head split: the key third of a packed projection, its heads
// split and moved before the sequence.
TEST_F(StridedViewTest, PackedProjectionHeadSplit) {
  parse("tensor<2x5x24xf32>", "tensor<2x2x5x4xf32>",
        "  %s = kiln.slice %x {starts = array<i64: 0, 0, 8>, strides = "
        "array<i64: 1, 1, 1>} : tensor<2x5x24xf32> -> tensor<2x5x8xf32>\n"
        "  %h = kiln.reshape %s : tensor<2x5x8xf32> -> tensor<2x5x2x4xf32>\n"
        "  %t = kiln.transpose %h {permutation = array<i64: 0, 2, 1, 3>} : "
        "tensor<2x5x2x4xf32> -> tensor<2x2x5x4xf32>\n"
        "  kiln.yield %t : tensor<2x2x5x4xf32>\n");
  std::optional<StridedView> view = stridedViewOf(yielded());
  ASSERT_TRUE(view);
  EXPECT_EQ(*view->offset.getConstant(), 8);
  EXPECT_EQ(*view->strides[0].getConstant(), 120);
  EXPECT_EQ(*view->strides[1].getConstant(), 4);
  EXPECT_EQ(*view->strides[2].getConstant(), 24);
  EXPECT_EQ(*view->strides[3].getConstant(), 1);
  expectMatchesInterpreter(*view);
}

// A stepped slice stays a view through reshapes that keep each row whole
// or merge rows whose stride continues the column stride, and through size
// 1 dims on either side.
TEST_F(StridedViewTest, SteppedSliceThroughReshapes) {
  parse("tensor<3x8xf32>", "tensor<2x1x6xf32>",
        "  %s = kiln.slice %x {starts = array<i64: 0, 1>, strides = "
        "array<i64: 1, 2>} : tensor<3x8xf32> -> tensor<3x4xf32>\n"
        "  %o = kiln.reshape %s : tensor<3x4xf32> -> tensor<3x1x4xf32>\n"
        "  %f = kiln.reshape %o : tensor<3x1x4xf32> -> tensor<12xf32>\n"
        "  %r = kiln.reshape %f : tensor<12xf32> -> tensor<2x1x6xf32>\n"
        "  kiln.yield %r : tensor<2x1x6xf32>\n");
  std::optional<StridedView> view = stridedViewOf(yielded());
  ASSERT_TRUE(view);
  EXPECT_EQ(*view->strides[2].getConstant(), 2);
  expectMatchesInterpreter(*view);
}

// A reversed slice (negative step) and an expand of a size-1 dim (stride
// 0), then a transpose.
TEST_F(StridedViewTest, ReversedSliceAndExpand) {
  parse("tensor<1x4x3xf32>", "tensor<3x2x4xf32>",
        "  %s = kiln.slice %x {starts = array<i64: 0, 3, 0>, strides = "
        "array<i64: 1, -1, 1>} : tensor<1x4x3xf32> -> tensor<1x4x3xf32>\n"
        "  %e = kiln.expand %s : tensor<1x4x3xf32> -> tensor<2x4x3xf32>\n"
        "  %t = kiln.transpose %e {permutation = array<i64: 2, 0, 1>} : "
        "tensor<2x4x3xf32> -> tensor<3x2x4xf32>\n"
        "  kiln.yield %t : tensor<3x2x4xf32>\n");
  std::optional<StridedView> view = stridedViewOf(yielded());
  ASSERT_TRUE(view);
  EXPECT_EQ(*view->strides[1].getConstant(), 0);
  EXPECT_EQ(*view->strides[2].getConstant(), -3);
  expectMatchesInterpreter(*view);
}

TEST_F(StridedViewTest, negative_ReshapeOfATransposeIsNoView) {
  parse("tensor<4x6xf32>", "tensor<24xf32>",
        "  %t = kiln.transpose %x {permutation = array<i64: 1, 0>} : "
        "tensor<4x6xf32> -> tensor<6x4xf32>\n"
        "  %r = kiln.reshape %t : tensor<6x4xf32> -> tensor<24xf32>\n"
        "  kiln.yield %r : tensor<24xf32>\n");
  EXPECT_FALSE(stridedViewOf(yielded()));
}

TEST_F(StridedViewTest, negative_MergingABroadcastDimIsNoView) {
  parse("tensor<2x1x4xf32>", "tensor<6x4xf32>",
        "  %e = kiln.expand %x : tensor<2x1x4xf32> -> tensor<2x3x4xf32>\n"
        "  %r = kiln.reshape %e : tensor<2x3x4xf32> -> tensor<6x4xf32>\n"
        "  kiln.yield %r : tensor<6x4xf32>\n");
  EXPECT_FALSE(stridedViewOf(yielded()));
}

TEST_F(StridedViewTest, negative_ArithmeticIsNoView) {
  parse("tensor<2x4xf32>", "tensor<4x2xf32>",
        "  %n = kiln.neg %x : tensor<2x4xf32>\n"
        "  %t = kiln.transpose %n {permutation = array<i64: 1, 0>} : "
        "tensor<2x4xf32> -> tensor<4x2xf32>\n"
        "  kiln.yield %t : tensor<4x2xf32>\n");
  EXPECT_FALSE(stridedViewOf(yielded()));
}

} // namespace

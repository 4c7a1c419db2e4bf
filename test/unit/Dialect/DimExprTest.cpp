//===- DimExprTest.cpp - symbolic sizes and tensor types over them --------===//
//
// DimExpr's arithmetic against values worked out by hand, its canonical text
// (which makes equal sizes equal types), and the #kiln.dims encoding's
// checks.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/DimExpr.h"

#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace kiln;

namespace {

DimExpr parsed(llvm::StringRef text) {
  std::string error;
  std::optional<DimExpr> e = DimExpr::parse(text, error);
  EXPECT_TRUE(e.has_value()) << text.str() << ": " << error;
  return e.value_or(DimExpr());
}

std::optional<int64_t> at(const DimExpr &e, int64_t batch, int64_t sequence) {
  return e.evaluate([&](llvm::StringRef name) -> std::optional<int64_t> {
    if (name == "batch")
      return batch;
    if (name == "sequence")
      return sequence;
    return std::nullopt;
  });
}

TEST(DimExprTest, CanonicalTextIsTheSameForEqualSizes) {
  EXPECT_EQ(parsed("sequence*batch*2").str(), "2*batch*sequence");
  EXPECT_EQ(parsed("(batch + 1) * (batch - 1)").str(), "batch*batch - 1");
  EXPECT_EQ(parsed("past+sequence").str(), parsed("sequence + past").str());
  EXPECT_EQ(parsed("batch - batch").str(), "0");
  EXPECT_EQ(parsed("-batch + 3").str(), "-batch + 3");
  EXPECT_EQ(parsed("12").getConstant(), 12);
  EXPECT_EQ(parsed("[seq-len]").getSymbol(), "seq-len");
  // A name that would not parse back as one name keeps its brackets.
  EXPECT_EQ(parsed("[seq-len] * 2").str(), "2*[seq-len]");
  EXPECT_EQ(parsed(parsed("[seq-len]*2 + x.0").str()),
            parsed("2*[seq-len] + x.0"));
}

TEST(DimExprTest, ArithmeticMatchesTheValues) {
  DimExpr b = DimExpr::symbol("batch"), s = DimExpr::symbol("sequence");
  DimExpr bs = *DimExpr::mul(b, s);
  DimExpr sum = *DimExpr::add(bs, DimExpr::constant(7));
  EXPECT_EQ(at(sum, 3, 5), 22);
  EXPECT_EQ(at(*DimExpr::sub(sum, bs), 3, 5), 7);
  // Exact division: a Reshape's -1 ([b*s*768] / 768 and / b).
  DimExpr all = *DimExpr::mul(bs, DimExpr::constant(768));
  EXPECT_EQ(*DimExpr::divExact(all, DimExpr::constant(768)), bs);
  EXPECT_EQ(*DimExpr::divExact(all, b),
            *DimExpr::mul(s, DimExpr::constant(768)));
  // By a polynomial of several terms: a KV cache's total length.
  DimExpr total = parsed("8*past + 8*sequence");
  EXPECT_EQ(
      DimExpr::divExact(parsed("32*batch*past + 32*batch*sequence"), total),
      parsed("4*batch"));
  EXPECT_EQ(DimExpr::divExact(parsed("(past + sequence) * (past + sequence)"),
                              parsed("past + sequence")),
            parsed("past + sequence"));
  EXPECT_FALSE(DimExpr::divExact(parsed("past*past + 1"), parsed("past + 1")));
  // Not a polynomial for every value: refused.
  EXPECT_FALSE(DimExpr::divExact(s, DimExpr::constant(2)));
  EXPECT_FALSE(DimExpr::divExact(sum, b));
  EXPECT_FALSE(DimExpr::divExact(bs, *DimExpr::add(b, s)));
  // A name without a value.
  EXPECT_FALSE(parsed("past + 1")
                   .evaluate([](llvm::StringRef) -> std::optional<int64_t> {
                     return std::nullopt;
                   }));
}

TEST(DimExprTest, OverflowIsRefused) {
  DimExpr big = DimExpr::constant(INT64_MAX);
  EXPECT_FALSE(DimExpr::add(big, DimExpr::constant(1)));
  EXPECT_FALSE(DimExpr::mul(*DimExpr::mul(big, DimExpr::symbol("batch")),
                            DimExpr::constant(2)));
  EXPECT_FALSE(at(*DimExpr::mul(big, DimExpr::symbol("batch")), 2, 1));
  std::string error;
  EXPECT_FALSE(DimExpr::parse("99999999999999999999 * batch", error));
  EXPECT_NE(error.find("not a 64-bit integer"), std::string::npos) << error;
}

TEST(DimExprTest, MalformedTextIsAnError) {
  for (const char *text : {"", "batch +", "(batch", "batch )", "2 * * 3", "[",
                           "[]", "batch sequence"}) {
    std::string error;
    EXPECT_FALSE(DimExpr::parse(text, error)) << text;
    EXPECT_FALSE(error.empty()) << text;
  }
}

TEST(DimExprTest, BoundsOverRanges) {
  auto ranges =
      [](llvm::StringRef name) -> std::optional<std::pair<int64_t, int64_t>> {
    if (name == "batch")
      return std::make_pair(int64_t(1), int64_t(8));
    if (name == "sequence")
      return std::make_pair(int64_t(2), int64_t(512));
    return std::nullopt;
  };
  auto bounds = parsed("batch*sequence + 1").bounds(ranges);
  ASSERT_TRUE(bounds);
  EXPECT_EQ(bounds->first, 3);
  EXPECT_EQ(bounds->second, 4097);
  bounds = parsed("512 - sequence").bounds(ranges);
  ASSERT_TRUE(bounds);
  EXPECT_EQ(bounds->first, 0);
  EXPECT_EQ(bounds->second, 510);
  EXPECT_FALSE(parsed("past").bounds(ranges));
}

TEST(DimExprTest, SubstituteKeepsTheUnknownNames) {
  auto pinned = [](llvm::StringRef name) -> std::optional<int64_t> {
    if (name == "batch")
      return 4;
    return std::nullopt;
  };
  EXPECT_EQ(parsed("batch*sequence + batch").substitute(pinned)->str(),
            "4*sequence + 4");
}

class SymbolicTypeTest : public ::testing::Test {
protected:
  SymbolicTypeTest() { context.loadDialect<KilnDialect>(); }
  mlir::MLIRContext context;
};

TEST_F(SymbolicTypeTest, TypesRoundTripTheirSizes) {
  mlir::Type f32 = mlir::Float32Type::get(&context);
  SymbolicShape sizes{parsed("batch"), DimExpr::constant(12),
                      parsed("sequence*batch")};
  mlir::RankedTensorType type = symbolicTensorType(sizes, f32);
  EXPECT_EQ(type.getShape()[1], 12);
  EXPECT_TRUE(type.isDynamicDim(0));
  std::optional<SymbolicShape> back = symbolicShapeOf(type);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, sizes);
  // Equal sizes written differently give one type.
  EXPECT_EQ(type, symbolicTensorType({parsed("batch"), DimExpr::constant(12),
                                      parsed("batch * sequence")},
                                     f32));
  // All-constant sizes: a static type with no encoding.
  mlir::RankedTensorType fixed =
      symbolicTensorType({DimExpr::constant(2), DimExpr::constant(3)}, f32);
  EXPECT_TRUE(fixed.hasStaticShape());
  EXPECT_FALSE(fixed.getEncoding());
  EXPECT_EQ(shapeText(type), "batchx12x(batch*sequence)");
}

TEST_F(SymbolicTypeTest, EncodingIsChecked) {
  std::vector<std::string> errors;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    errors.push_back(d.str());
    return mlir::success();
  });
  auto parseType = [&](llvm::StringRef text) {
    return mlir::parseType(text, &context);
  };
  EXPECT_TRUE(parseType("tensor<?x4xf32, #kiln.dims<[\"batch\"]>>"));
  EXPECT_FALSE(parseType("tensor<?x?xf32, #kiln.dims<[\"batch\"]>>"));
  EXPECT_FALSE(parseType("tensor<?xf32, #kiln.dims<[\"sequence*batch\"]>>"));
  EXPECT_FALSE(parseType("tensor<?xf32, #kiln.dims<[\"4\"]>>"));
  EXPECT_FALSE(parseType("tensor<?xf32, #kiln.dims<[\"batch +\"]>>"));
  std::string all;
  for (const std::string &e : errors)
    all += e + "\n";
  EXPECT_NE(all.find("has 1 sizes for 2 dynamic dims"), std::string::npos)
      << all;
  EXPECT_NE(all.find("is not in canonical form ('batch*sequence')"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("is a constant; make the dim static"), std::string::npos)
      << all;
}

} // namespace

//===- ConvertLoop.cpp - Loop, unrolled at compile time -------------------===//
//
// Kiln compiles static graphs, so a Loop is unrolled: its trip count and
// condition must fold to constants (as in Range's function body, where they
// come from constant bounds). Each iteration imports the body with its inputs
// bound to the iteration number, the condition and the carried values; the
// body's own names are unbound again afterwards so that the outer graph sees
// its own values. Scan outputs are stacked along a new first axis.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"

#include "kiln/Dialect/Kiln/ShapeInference.h"

using namespace mlir;

namespace kiln {

namespace {

/// More iterations than this are refused rather than unrolled.
constexpr int64_t kMaxUnrolledIterations = 4096;

struct LoopConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  /// The single boolean of a constant, or failure.
  FailureOr<bool> constantCondition(Value value) {
    auto ints = importer.constantInts(value);
    if (failed(ints) || ints->size() != 1)
      return failure();
    return ints->front() != 0;
  }

  LogicalResult convert() {
    const onnx::AttributeProto *bodyAttr = findAttribute(node, "body");
    if (!bodyAttr || !bodyAttr->has_g())
      return error() << "missing the body graph";
    const onnx::GraphProto &body = bodyAttr->g();
    int carried = node.input_size() - 2;
    if (carried < 0 || body.input_size() != carried + 2 ||
        body.output_size() < carried + 1)
      return error() << "body signature does not match the node's "
                     << node.input_size() << " inputs";
    int scans = body.output_size() - 1 - carried;

    Value count = importer.input(node, 0);
    if (!count)
      return error() << "a loop without a trip count cannot be unrolled";
    auto ints = importer.constantInts(count);
    if (failed(ints) || ints->size() != 1)
      return error() << "the trip count must be known at compile time "
                        "(Kiln unrolls loops)";
    int64_t trips = ints->front();
    bool running = true;
    if (Value cond = importer.input(node, 1)) {
      auto given = constantCondition(cond);
      if (failed(given))
        return error() << "the condition must be known at compile time "
                          "(Kiln unrolls loops)";
      running = *given;
    }
    if (trips > kMaxUnrolledIterations)
      return error() << "unrolls at most " << kMaxUnrolledIterations
                     << " iterations, the trip count is " << trips;

    SmallVector<Value> state;
    for (int k = 0; k < carried; ++k) {
      auto value = required(k + 2);
      if (failed(value))
        return failure();
      state.push_back(*value);
    }
    // Names the body binds, to restore after each iteration.
    SmallVector<std::string> bodyNames;
    for (const onnx::ValueInfoProto &in : body.input())
      bodyNames.push_back(in.name());
    for (const onnx::NodeProto &inner : body.node())
      for (const std::string &out : inner.output())
        bodyNames.push_back(out);

    SmallVector<SmallVector<Value>> scanned(scans);
    Value condition = importer.scalar(loc, b.getI1Type(), 1.0);
    for (int64_t i = 0; i < trips && running; ++i) {
      SmallVector<Value> saved;
      for (const std::string &name : bodyNames)
        saved.push_back(importer.lookupValue(name));
      importer.bindValue(body.input(0).name(),
                         importer.scalar(loc, b.getI64Type(), double(i)));
      importer.bindValue(body.input(1).name(), condition);
      for (int k = 0; k < carried; ++k)
        importer.bindValue(body.input(k + 2).name(), state[k]);
      for (const onnx::NodeProto &inner : body.node())
        if (failed(convertNode(importer, inner)))
          return failure();
      SmallVector<Value> results;
      for (const onnx::ValueInfoProto &out : body.output()) {
        Value value = importer.lookupValue(out.name());
        if (!value)
          return error() << "body output '" << out.name()
                         << "' is not produced";
        results.push_back(value);
      }
      for (auto [name, value] : llvm::zip(bodyNames, saved))
        importer.bindValue(name, value);
      auto next = constantCondition(results[0]);
      if (failed(next))
        return error() << "the body's condition must be known at compile "
                          "time (Kiln unrolls loops)";
      running = *next;
      condition = results[0];
      for (int k = 0; k < carried; ++k)
        state[k] = results[k + 1];
      for (int k = 0; k < scans; ++k)
        scanned[k].push_back(results[1 + carried + k]);
    }

    for (int k = 0; k < carried; ++k)
      if (failed(output(state[k], k)))
        return failure();
    for (int k = 0; k < scans; ++k) {
      if (scanned[k].empty())
        return error() << "a scan output of a loop that runs no iteration "
                          "has no known shape";
      SmallVector<Value> rows;
      SmallVector<RankedTensorType> types;
      for (Value v : scanned[k]) {
        SmallVector<int64_t> shape{1};
        llvm::append_range(shape, typeOf(v).getShape());
        rows.push_back(reshape(v, shape));
        types.push_back(typeOf(rows.back()));
      }
      if (rows.size() == 1) {
        if (failed(output(rows[0], carried + k)))
          return failure();
        continue;
      }
      auto type = inferConcatType(loc, types, 0);
      if (failed(type) ||
          failed(output(ConcatOp::create(b, loc, *type, rows, 0), carried + k)))
        return failure();
    }
    return success();
  }
};

} // namespace

ArrayRef<OpConversion> getLoopConversions() {
  static const OpConversion table[] = {
      {"", "Loop", convertWith<LoopConverter, &LoopConverter::convert>},
  };
  return table;
}

} // namespace kiln

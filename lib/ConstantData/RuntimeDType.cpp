//===- RuntimeDType.cpp - MLIR element types <-> runtime dtypes -----------===//

#include "kiln/ConstantData/RuntimeDType.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace kiln {

FailureOr<rt::DType> toRuntimeDType(Type t, std::optional<Location> loc) {
  if (t.isF64())
    return rt::DType::F64;
  if (t.isF32())
    return rt::DType::F32;
  if (t.isF16())
    return rt::DType::F16;
  if (t.isBF16())
    return rt::DType::BF16;
  if (t.isSignlessInteger(64))
    return rt::DType::I64;
  if (t.isSignlessInteger(32))
    return rt::DType::I32;
  if (t.isSignlessInteger(16))
    return rt::DType::I16;
  if (t.isSignlessInteger(8))
    return rt::DType::I8;
  if (t.isUnsignedInteger(64))
    return rt::DType::U64;
  if (t.isUnsignedInteger(32))
    return rt::DType::U32;
  if (t.isUnsignedInteger(16))
    return rt::DType::U16;
  if (t.isUnsignedInteger(8))
    return rt::DType::U8;
  if (t.isSignlessInteger(1))
    return rt::DType::Bool;
  if (t.isSignlessInteger(4))
    return rt::DType::I4;
  if (t.isUnsignedInteger(4))
    return rt::DType::U4;
  if (isa<Float8E4M3FNType>(t))
    return rt::DType::F8E4M3FN;
  if (isa<Float8E5M2Type>(t))
    return rt::DType::F8E5M2;
  return emitOptionalError(loc, "unsupported element type ", t);
}

Type fromRuntimeDType(MLIRContext *context, rt::DType dtype) {
  Builder b(context);
  switch (dtype) {
  case rt::DType::F32:
    return b.getF32Type();
  case rt::DType::F16:
    return b.getF16Type();
  case rt::DType::BF16:
    return b.getBF16Type();
  case rt::DType::I64:
    return b.getI64Type();
  case rt::DType::I32:
    return b.getI32Type();
  case rt::DType::I8:
    return b.getI8Type();
  case rt::DType::Bool:
    return b.getI1Type();
  case rt::DType::F64:
    return b.getF64Type();
  case rt::DType::I16:
    return b.getI16Type();
  case rt::DType::U8:
    return IntegerType::get(context, 8, IntegerType::Unsigned);
  case rt::DType::U16:
    return IntegerType::get(context, 16, IntegerType::Unsigned);
  case rt::DType::U32:
    return IntegerType::get(context, 32, IntegerType::Unsigned);
  case rt::DType::U64:
    return IntegerType::get(context, 64, IntegerType::Unsigned);
  case rt::DType::I4:
    return IntegerType::get(context, 4);
  case rt::DType::U4:
    return IntegerType::get(context, 4, IntegerType::Unsigned);
  case rt::DType::F8E4M3FN:
    return Float8E4M3FNType::get(context);
  case rt::DType::F8E5M2:
    return Float8E5M2Type::get(context);
  }
  return {};
}

} // namespace kiln

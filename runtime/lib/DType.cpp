//===- DType.cpp - Element types of Kiln buffers --------------------------===//

#include "kiln/runtime/DType.h"

using namespace kiln::rt;

size_t kiln::rt::dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::I64:
  case DType::U64:
  case DType::F64:
    return 8;
  case DType::I8:
  case DType::U8:
  case DType::Bool:
  case DType::I4:
  case DType::U4:
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    return 1;
  }
  return 0;
}

const char *kiln::rt::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float32";
  case DType::F16:
    return "float16";
  case DType::BF16:
    return "bfloat16";
  case DType::I64:
    return "int64";
  case DType::I32:
    return "int32";
  case DType::I8:
    return "int8";
  case DType::Bool:
    return "bool";
  case DType::F64:
    return "float64";
  case DType::I16:
    return "int16";
  case DType::U8:
    return "uint8";
  case DType::U16:
    return "uint16";
  case DType::U32:
    return "uint32";
  case DType::U64:
    return "uint64";
  case DType::I4:
    return "int4";
  case DType::U4:
    return "uint4";
  case DType::F8E4M3FN:
    return "float8e4m3fn";
  case DType::F8E5M2:
    return "float8e5m2";
  }
  return "invalid";
}

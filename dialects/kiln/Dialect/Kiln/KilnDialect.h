//===- KilnDialect.h - the kiln dialect -------------------------*- C++ -*-===//

#ifndef KILN_DIALECT_KILN_KILNDIALECT_H
#define KILN_DIALECT_KILN_KILNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "kiln/Dialect/Kiln/KilnDialect.h.inc"

#endif // KILN_DIALECT_KILN_KILNDIALECT_H

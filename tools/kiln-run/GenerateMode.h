//===- GenerateMode.h - kiln-run --generate ---------------------*- C++ -*-===//

#ifndef KILN_TOOLS_KILN_RUN_GENERATEMODE_H
#define KILN_TOOLS_KILN_RUN_GENERATEMODE_H

#include "kiln/runtime/Model.h"

/// Whether --generate was given.
bool generateRequested();

/// Decodes --generate tokens after --prompt with `model` and prints them;
/// returns the exit code.
int runGenerate(kiln::rt::Model &model);

#endif // KILN_TOOLS_KILN_RUN_GENERATEMODE_H

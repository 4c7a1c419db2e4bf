#!/usr/bin/env python3
"""Checks the compiler's library graph: no cycle, and includes that follow it.

  check_layers.py [SOURCE_DIR]

Reads each Kiln library's LINK_LIBS from its CMakeLists.txt and the
`#include "kiln/..."` lines of its sources and public headers. Fails when a
library links itself through others (a cycle), when a file includes a header
of a library its own does not link (directly or through others), or when
one of the named rules of docs/architecture.md is broken (the passes and the
CUDA target work on constant data without the interpreter).
"""
import glob
import os
import re
import sys

# Library -> (its source folder, its public header folder under include/).
LIBRARIES = {
    "KilnDialect": ("dialects/kiln/Dialect/Kiln", None),
    "KilnConstantData": ("lib/ConstantData", "kiln/ConstantData"),
    "KilnKernelConfig": ("lib/KernelConfig", "kiln/KernelConfig"),
    "KilnAnalysis": ("lib/Analysis", "kiln/Analysis"),
    "KilnInterpreter": ("lib/Interpreter", "kiln/Interpreter"),
    "KilnTransforms": ("lib/Transforms", "kiln/Transforms"),
    "KilnTargetCUDA": ("lib/Target/CUDA", "kiln/Target/CUDA"),
    "KilnImporterONNX": ("lib/Importer/ONNX", "kiln/Importer/ONNX"),
    "KilnCompiler": ("lib/Compiler", "kiln/Compiler"),
}
# Include prefixes of libraries outside this table.
OTHER_HEADERS = {"kiln/Dialect/Kiln": "KilnDialect",
                 "kiln/runtime": "kiln_runtime",
                 "kiln/kiln_model.h": "kiln_runtime"}
# Links that must not exist, directly or through others.
FORBIDDEN = [("KilnTransforms", "KilnInterpreter"),
             ("KilnTargetCUDA", "KilnInterpreter"),
             ("KilnConstantData", "KilnDialect")]


def links_of(root, folder):
    text = open(os.path.join(root, folder, "CMakeLists.txt")).read()
    match = re.search(r"LINK_LIBS PUBLIC(.*?)\)", text, re.S)
    names = match.group(1).split() if match else []
    return {n for n in names if n.startswith("Kiln") or n == "kiln_runtime"}


def closure(graph, name):
    seen, stack = set(), list(graph.get(name, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(graph.get(node, ()))
    return seen


def owner(include):
    for library, (_, headers) in LIBRARIES.items():
        if headers and include.startswith(headers + "/"):
            return library
    for prefix, library in OTHER_HEADERS.items():
        if include.startswith(prefix):
            return library
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    graph = {name: links_of(root, folder)
             for name, (folder, _) in LIBRARIES.items()}
    errors = []
    for name in graph:
        if name in closure(graph, name):
            errors.append(f"{name} links itself through its dependencies")
    for name, (folder, headers) in LIBRARIES.items():
        files = glob.glob(os.path.join(root, folder, "*.cpp"))
        files += glob.glob(os.path.join(root, folder, "*.h"))
        if headers:
            files += glob.glob(os.path.join(root, "include", headers, "*.h"))
        reachable = closure(graph, name) | {name}
        for path in sorted(files):
            for include in re.findall(r'#include "(kiln/[^"]+)"',
                                      open(path).read()):
                library = owner(include)
                if library and library not in reachable:
                    errors.append(f"{os.path.relpath(path, root)} includes "
                                  f"{include} of {library}, which {name} "
                                  f"does not link")
    for name, banned in FORBIDDEN:
        if banned in closure(graph, name):
            errors.append(f"{name} links {banned}")
    for error in errors:
        print("error:", error)
    if not errors:
        print(f"ok: {len(graph)} libraries, no cycle, includes follow links")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

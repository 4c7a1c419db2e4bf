# -*- Python -*-
# Lit configuration of Kiln's regression tests.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
# Keep NVRTC and host caches inside the build tree during tests.
config.environment["KILN_CACHE_DIR"] = os.path.join(config.kiln_obj_root, "test", "cache")
corpus = os.environ.get(
    "KILN_CORPUS_DIR", os.path.join(config.kiln_src_root, "..", "shared", "corpus"))
config.environment["KILN_CORPUS_DIR"] = corpus
config.substitutions.append(("%corpus", corpus))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%kiln_src", config.kiln_src_root))
config.substitutions.append(("%kiln_obj", config.kiln_obj_root))

llvm_config.with_system_environment(["HOME", "PATH"])
llvm_config.use_default_substitutions()
tool_dirs = [config.kiln_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["kiln-opt", "kilnc", "kiln-run", "kiln-jit-example", "kiln-generate-example", "not", "count", "split-file"], tool_dirs)

# NVRTC needs no GPU: it is present wherever the CUDA toolkit is.
config.available_features.add("nvrtc")
if shutil.which("nvidia-smi") and os.system("nvidia-smi -L > /dev/null 2>&1") == 0:
    config.available_features.add("cuda-device")
if os.path.isdir(corpus):
    config.available_features.add("corpus")
# nvdisasm (the CUDA toolkit's, or PyPI's nvidia-cuda-nvdisasm) reads SASS
# without a GPU: scripts/kernel_sass.py.
if subprocess.run([config.python_executable,
                   os.path.join(config.kiln_src_root, "scripts", "kernel_sass.py"),
                   "--which"], capture_output=True).returncode == 0:
    config.available_features.add("nvdisasm")

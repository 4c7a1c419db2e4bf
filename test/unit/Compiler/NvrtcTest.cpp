//===- NvrtcTest.cpp - one NVRTC compile for the cubin and the PTX --------===//
//
// compileCuda reads the portable PTX off the sm_90a compile when that is
// the same program: the result must equal what NVRTC makes for compute_90
// itself. Sources that issue sm_90a's own instructions take a compile of
// their own, with or without the wgmma products' text to predict it.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Nvrtc.h"
#include "kiln/Target/CUDA/TensorCores.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstdlib>

using namespace kiln;

namespace {

constexpr const char *kPlainKernel = R"cuda(
#include <cuda_fp16.h>
extern "C" __global__ void scale(const __half *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __half2float(in[i]) * 0.5f + __expf(out[i]);
}
)cuda";

/// NVRTC's PTX for `arch`, compiled on its own.
std::string ptxFromNvrtc(const std::string &source, const std::string &arch,
                         const std::string &include) {
  nvrtcProgram program;
  EXPECT_EQ(nvrtcCreateProgram(&program, source.c_str(), "kiln_kernels.cu", 0,
                               nullptr, nullptr),
            NVRTC_SUCCESS);
  std::string archOpt = "--gpu-architecture=" + arch;
  std::string includeOpt = "-I" + include;
  const char *options[] = {archOpt.c_str(), "--std=c++17", "-default-device",
                           includeOpt.c_str()};
  EXPECT_EQ(nvrtcCompileProgram(program, 4, options), NVRTC_SUCCESS);
  size_t size = 0;
  nvrtcGetPTXSize(program, &size);
  std::string ptx(size, '\0');
  nvrtcGetPTX(program, ptx.data());
  nvrtcDestroyProgram(&program);
  return ptx;
}

mlir::FailureOr<CompiledCuda> compileFresh(mlir::MLIRContext &context,
                                           const std::string &source) {
  char dir[] = "/tmp/kiln-nvrtc-XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  setenv("KILN_CACHE_DIR", dir, 1);
  return compileCuda(mlir::UnknownLoc::get(&context), source, "sm_90a");
}

TEST(Nvrtc, PortablePtxReadOffTheCubinCompileEqualsCompute90s) {
  mlir::MLIRContext context;
  std::string source = cudaTensorCorePrelude() + kPlainKernel;
  auto compiled = compileFresh(context, source);
  ASSERT_TRUE(succeeded(compiled));
  EXPECT_FALSE(compiled->cubin.empty());
  EXPECT_NE(compiled->ptx.find("\n.target sm_90\n"), std::string::npos);
  EXPECT_EQ(compiled->ptx,
            ptxFromNvrtc(source, "compute_90", KILN_TEST_CUDA_INCLUDE_DIR));
  // A real architecture without the suffix: its own PTX is the portable one.
  auto plain = compileCuda(mlir::UnknownLoc::get(&context), source, "sm_90");
  ASSERT_TRUE(succeeded(plain));
  EXPECT_EQ(plain->ptx, compiled->ptx);
}

TEST(Nvrtc, ArchSpecificInstructionsWithoutProductsTakeTheirOwnCompile) {
  // wgmma's fence and commit, but no wgmma product (the text the compiler
  // looks for to compile both at once): the sm_90a PTX has wgmma, so the
  // portable PTX is compiled after it, without them.
  mlir::MLIRContext context;
  std::string source = cudaTensorCorePrelude() + R"cuda(
extern "C" __global__ void fences(float *out) {
  kiln_wgmma_fence();
  kiln_wgmma_commit();
  kiln_wgmma_wait<0>();
  out[threadIdx.x] = 1.0f;
}
)cuda";
  auto compiled = compileFresh(context, source);
  ASSERT_TRUE(succeeded(compiled));
  EXPECT_FALSE(compiled->cubin.empty());
  EXPECT_EQ(compiled->ptx.find("wgmma"), std::string::npos);
  EXPECT_EQ(compiled->ptx,
            ptxFromNvrtc(source, "compute_90", KILN_TEST_CUDA_INCLUDE_DIR));
}

TEST(Nvrtc, ErrorsOfEitherCompileCarryTheLog) {
  mlir::MLIRContext context;
  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    message = d.str();
    return mlir::success();
  });
  auto compiled = compileFresh(
      context, std::string("extern \"C\" __global__ void broken() { "
                           "undeclared_name(); }\n"));
  EXPECT_TRUE(failed(compiled));
  EXPECT_NE(message.find("NVRTC failed to compile the generated CUDA"),
            std::string::npos);
  EXPECT_NE(message.find("undeclared_name"), std::string::npos) << message;
}

} // namespace

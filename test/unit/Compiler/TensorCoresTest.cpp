//===- TensorCoresTest.cpp - the inline PTX of tensor-core instructions ---===//
//
// NVRTC compiles TensorCores.h's functions for sm_90a (so ptxas accepts
// their PTX), and the PTX of a kernel calling each one issues the
// instruction the host backend emulates under that name.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CUDA/TensorCores.h"
#include "kiln/Compiler/Nvrtc.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace kiln;

namespace {

constexpr const char *kKernel = R"cuda(
extern "C" __global__ void tensor_cores(const float *in, float *out) {
  __shared__ __align__(16) unsigned short tile[4][8][8];
  int lane = threadIdx.x;
  kiln_cp_async_16(&tile[lane / 8][lane % 8][0], in + lane * 4, 16);
  kiln_cp_async_commit();
  kiln_cp_async_wait<0>();
  __syncthreads();
  unsigned a[4], at[4], b2[2], b2t[2], b1[1], b1t[1];
  kiln_ldmatrix_x4(a, &tile[lane / 8][lane % 8][0]);
  kiln_ldmatrix_x4_trans(at, &tile[lane / 8][lane % 8][0]);
  kiln_ldmatrix_x2(b2, &tile[(lane / 8) % 2][lane % 8][0]);
  kiln_ldmatrix_x2_trans(b2t, &tile[(lane / 8) % 2][lane % 8][0]);
  kiln_ldmatrix_x1(b1, &tile[0][lane % 8][0]);
  kiln_ldmatrix_x1_trans(b1t, &tile[0][lane % 8][0]);
  unsigned b[2] = {b2[0] ^ b1[0], b2t[1] ^ b1t[0]};
  float c[4] = {0, 0, 0, 0}, d[4], e[4];
  kiln_mma_m16n8k16_f16(d, a, b, c);
  kiln_mma_m16n8k16_bf16(e, at, b2, d);
  unsigned ta[4], tb[2];
  for (int i = 0; i < 4; ++i) ta[i] = kiln_to_tf32(in[lane + i]);
  for (int i = 0; i < 2; ++i) tb[i] = kiln_to_tf32(in[lane + 4 + i]);
  kiln_mma_m16n8k8_tf32(d, ta, tb, e);
  for (int i = 0; i < 4; ++i) out[lane * 4 + i] = kiln_exp2_ftz(d[i]);
}
)cuda";

TEST(TensorCores, InlinePtxCompilesForSm90AndIssuesEachInstruction) {
  char dir[] = "/tmp/kiln-tensor-cores-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("KILN_CACHE_DIR", dir, 1);
  mlir::MLIRContext context;
  std::string source = cudaTensorCorePrelude() + kKernel;
  auto compiled =
      compileCuda(mlir::UnknownLoc::get(&context), source, "sm_90a");
  ASSERT_TRUE(succeeded(compiled));
  EXPECT_FALSE(compiled->cubin.empty());
  for (const char *instruction :
       {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        "cvt.rna.tf32.f32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
        "cp.async.cg.shared.global", "cp.async.commit_group",
        "cp.async.wait_group 0", "ex2.approx.ftz.f32"})
    EXPECT_NE(compiled->ptx.find(instruction), std::string::npos)
        << instruction;
  ASSERT_EQ(compiled->resources.size(), 1u);
  EXPECT_EQ(compiled->resources[0].spillStoreBytes, 0);
}

TEST(TensorCores, WgmmaFunctionsCompileAndFallBackInPortablePtx) {
  // The sm_90a text issues the instruction with the layout's trans-b; the
  // cubin (which kernel_sass.py reads for HGMMA in attention-sass.test)
  // builds, and the portable PTX issues mma.sync instead.
  std::string k = cudaWgmmaFunction(64, false, false),
              t = cudaWgmmaFunction(32, true, true);
  EXPECT_NE(k.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "),
            std::string::npos);
  EXPECT_NE(k.find("%36, p, 1, 1, 0;"), std::string::npos) << k;
  EXPECT_NE(t.find("wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "),
            std::string::npos);
  EXPECT_NE(t.find("%20, p, 1, 1, 1;"), std::string::npos) << t;
  EXPECT_EQ(wgmmaFunctionName(32, true, true), "kiln_wgmma_m64n32k16_bf16_t");
  char dir[] = "/tmp/kiln-wgmma-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("KILN_CACHE_DIR", dir, 1);
  mlir::MLIRContext context;
  // Twice: the guard keeps a second definition out.
  std::string source = cudaTensorCorePrelude() + k + k + t + R"cuda(
extern "C" __global__ void products(const float *in, float *out) {
  __shared__ __align__(16) unsigned short tile[2048];
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) tile[i] = i;
  kiln_fence_proxy_async();
  __syncthreads();
  unsigned a[4] = {threadIdx.x, 1u, 2u, 3u};
  float d[8][4], e[4][4];
  kiln_wgmma_fence();
  kiln_wgmma_m64n64k16_f16_k(d, a, kiln_wgmma_desc(tile, 128u, 256u), 0);
  kiln_wgmma_m64n32k16_bf16_t(e, a, kiln_wgmma_desc(tile, 512u, 128u), 0);
  kiln_wgmma_commit();
  kiln_wgmma_wait<0>();
  kiln_wgmma_hold(d);
  for (int i = 0; i < 32; ++i) out[threadIdx.x * 48 + i] = d[i / 4][i % 4];
  for (int i = 0; i < 16; ++i) out[threadIdx.x * 48 + 32 + i] = e[i / 4][i % 4];
}
)cuda";
  auto compiled =
      compileCuda(mlir::UnknownLoc::get(&context), source, "sm_90a");
  ASSERT_TRUE(succeeded(compiled));
  EXPECT_FALSE(compiled->cubin.empty());
  EXPECT_EQ(compiled->ptx.find("wgmma"), std::string::npos);
  EXPECT_NE(compiled->ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16"),
            std::string::npos);
  EXPECT_NE(compiled->ptx.find("fence.proxy.async.shared::cta"),
            std::string::npos);
}

TEST(TensorCores, TensorCopiesAndSharedAWgmmaCompileForHopper) {
  // A kernel with every Hopper copy and mbarrier function and a wgmma with
  // A in shared memory under swizzled descriptors: sm_90a's cubin builds
  // (ptxas accepts the PTX), and the portable PTX (compute_90, which has
  // tensor copies and mbarriers but not wgmma) computes the product by
  // mma.sync.
  std::string ss = cudaWgmmaFunction(64, false, true, /*aShared=*/true);
  EXPECT_NE(ss.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "),
            std::string::npos);
  EXPECT_NE(ss.find("%32, %33, p, 1, 1, 0, 1;"), std::string::npos) << ss;
  EXPECT_EQ(wgmmaFunctionName(64, false, true, true),
            "kiln_wgmma_m64n64k16_f16_ss_t");
  char dir[] = "/tmp/kiln-tma-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("KILN_CACHE_DIR", dir, 1);
  mlir::MLIRContext context;
  std::string source = cudaTensorCorePrelude() + ss + R"cuda(
extern "C" __global__ void copies(const __grid_constant__ kiln_tensor_map a,
                                  const __grid_constant__ kiln_tensor_map b, float *out) {
  __shared__ __align__(1024) unsigned short tile_a[64 * 64], tile_b[64 * 64];
  __shared__ __align__(8) unsigned long long bar;
  if (threadIdx.x == 0) {
    kiln_prefetch_tensor_map(a);
    kiln_mbarrier_init(&bar, 1);
    kiln_fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    kiln_mbarrier_arrive_expect_tx(&bar, 2 * 8192);
    kiln_tma_load_2d(tile_a, a, 0, 0, &bar);
    kiln_tma_load_3d(tile_b, b, 0, 0, blockIdx.x, &bar);
  }
  kiln_mbarrier_wait(&bar, 0);
  float d[8][4];
  kiln_wgmma_fence();
  kiln_wgmma_m64n64k16_f16_ss_t(d, kiln_wgmma_desc_swizzled(tile_a, 16, 1024, 128),
                                kiln_wgmma_desc_swizzled(tile_b, 8192, 1024, 128), 0);
  kiln_wgmma_commit();
  kiln_wgmma_wait<0>();
  kiln_wgmma_hold(d);
  __syncthreads();
  if (threadIdx.x == 0) kiln_mbarrier_arrive(&bar);
  for (int i = 0; i < 32; ++i) out[threadIdx.x * 32 + i] = d[i / 4][i % 4];
}
)cuda";
  auto compiled =
      compileCuda(mlir::UnknownLoc::get(&context), source, "sm_90a");
  ASSERT_TRUE(succeeded(compiled));
  EXPECT_FALSE(compiled->cubin.empty());
  for (const char *instruction :
       {"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
        "complete_tx::bytes",
        "cp.async.bulk.tensor.3d.", "mbarrier.init.shared::cta.b64",
        "mbarrier.arrive.expect_tx.shared::cta.b64",
        "mbarrier.try_wait.parity.shared::cta.b64",
        "fence.mbarrier_init.release.cluster", "prefetch.tensormap"})
    EXPECT_NE(compiled->ptx.find(instruction), std::string::npos)
        << instruction;
  EXPECT_EQ(compiled->ptx.find("wgmma"), std::string::npos);
  EXPECT_NE(compiled->ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16"),
            std::string::npos);
}

TEST(TensorCores, Float8WgmmaCompilesForHopperAndFallsBackToWidenedMma) {
  // The .e4m3 form takes both operands from shared memory and no
  // transposes (the ISA has none for 8-bit operands): the sm_90a cubin
  // builds (ptxas accepts it), and the portable PTX widens the bytes to f16
  // for mma.sync.
  std::string f8 = cudaWgmmaE4M3Function(128);
  EXPECT_NE(f8.find("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "),
            std::string::npos);
  EXPECT_NE(f8.find("%64, %65, p, 1, 1;"), std::string::npos) << f8;
  EXPECT_NE(f8.find("kiln_host_wgmma::issueSharedE4M3<128>"),
            std::string::npos);
  EXPECT_EQ(wgmmaE4M3FunctionName(128), "kiln_wgmma_m64n128k32_e4m3_ss");
  char dir[] = "/tmp/kiln-wgmma-f8-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("KILN_CACHE_DIR", dir, 1);
  mlir::MLIRContext context;
  std::string source = cudaTensorCorePrelude() + f8 + f8 + R"cuda(
extern "C" __global__ void products(const float *in, float *out) {
  __shared__ __align__(1024) unsigned char tile_a[64 * 128], tile_b[128 * 128];
  for (int i = threadIdx.x; i < 64 * 128; i += blockDim.x) tile_a[i] = (unsigned char)i;
  for (int i = threadIdx.x; i < 128 * 128; i += blockDim.x) tile_b[i] = (unsigned char)(3 * i);
  kiln_fence_proxy_async();
  __syncthreads();
  float d[16][4];
  kiln_wgmma_fence();
  for (int kk = 0; kk < 4; ++kk)
    kiln_wgmma_m64n128k32_e4m3_ss(d, kiln_wgmma_desc_swizzled(tile_a + 32 * kk, 16, 1024, 128),
                                  kiln_wgmma_desc_swizzled(tile_b + 32 * kk, 16, 1024, 128), kk);
  kiln_wgmma_commit();
  kiln_wgmma_wait<0>();
  kiln_wgmma_hold(d);
  for (int i = 0; i < 64; ++i) out[threadIdx.x * 64 + i] = d[i / 4][i % 4];
}
)cuda";
  auto compiled =
      compileCuda(mlir::UnknownLoc::get(&context), source, "sm_90a");
  ASSERT_TRUE(succeeded(compiled));
  EXPECT_FALSE(compiled->cubin.empty());
  EXPECT_EQ(compiled->ptx.find("wgmma"), std::string::npos);
  EXPECT_NE(compiled->ptx.find("cvt.rn.f16x2.e4m3x2"), std::string::npos);
  EXPECT_NE(compiled->ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16"),
            std::string::npos);
}

TEST(TensorCores, IntegerWgmmaCompilesForHopperAndFallsBackToMma) {
  // The .s32 forms of .u8 and .s8 take scale-d alone (no scale
  // immediates): the sm_90a cubin builds, and the portable PTX issues
  // mma.sync of the same types.
  std::string uu = cudaWgmmaInt8Function(128, true, true),
              su = cudaWgmmaInt8Function(8, false, true);
  EXPECT_NE(uu.find("wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.u8 "),
            std::string::npos);
  EXPECT_NE(uu.find("%64, %65, p;"), std::string::npos) << uu;
  EXPECT_NE(su.find("wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.u8 "),
            std::string::npos);
  EXPECT_NE(su.find("%4, %5, p;"), std::string::npos) << su;
  EXPECT_EQ(wgmmaInt8FunctionName(8, false, true),
            "kiln_wgmma_m64n8k32_s8u8_ss");
  char dir[] = "/tmp/kiln-wgmma-int8-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("KILN_CACHE_DIR", dir, 1);
  mlir::MLIRContext context;
  std::string source = cudaTensorCorePrelude() + uu + su + R"cuda(
extern "C" __global__ void products(const float *in, float *out) {
  __shared__ __align__(1024) unsigned char tile_a[64 * 128], tile_b[128 * 128];
  for (int i = threadIdx.x; i < 64 * 128; i += blockDim.x) tile_a[i] = (unsigned char)i;
  for (int i = threadIdx.x; i < 128 * 128; i += blockDim.x) tile_b[i] = (unsigned char)(3 * i);
  kiln_fence_proxy_async();
  __syncthreads();
  int d[16][4], e[1][4];
  kiln_wgmma_fence();
  for (int kk = 0; kk < 4; ++kk) {
    const kiln_smem_desc a = kiln_wgmma_desc_swizzled(tile_a + 32 * kk, 16, 1024, 128);
    kiln_wgmma_m64n128k32_u8u8_ss(d, a, kiln_wgmma_desc_swizzled(tile_b + 32 * kk, 16, 1024, 128), kk);
    kiln_wgmma_m64n8k32_s8u8_ss(e, a, kiln_wgmma_desc(tile_b, 128, 128), kk);
  }
  kiln_wgmma_commit();
  kiln_wgmma_wait<0>();
  kiln_wgmma_hold(d);
  kiln_wgmma_hold(e);
  for (int i = 0; i < 64; ++i) out[threadIdx.x * 68 + i] = (float)d[i / 4][i % 4];
  for (int i = 0; i < 4; ++i) out[threadIdx.x * 68 + 64 + i] = (float)e[0][i];
}
)cuda";
  auto compiled =
      compileCuda(mlir::UnknownLoc::get(&context), source, "sm_90a");
  ASSERT_TRUE(succeeded(compiled));
  EXPECT_FALSE(compiled->cubin.empty());
  EXPECT_EQ(compiled->ptx.find("wgmma"), std::string::npos);
  EXPECT_NE(
      compiled->ptx.find("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32"),
      std::string::npos);
  EXPECT_NE(
      compiled->ptx.find("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32"),
      std::string::npos);
}

} // namespace

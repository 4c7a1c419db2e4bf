//===- FakeCublasLt.cpp - A host stand-in for libcublasLt -----------------===//
//
// Implements the cuBLASLt entry points the runtime resolves with the
// documented column-major semantics, in float32 on host memory (device
// pointers from the fake driver are host pointers):
//   D_i = alpha * op(A_i) * op(B_i) + beta * C_i,
// each matrix column-major with its layout's rows, cols and leading
// dimension, and batch i at `i * stride` elements. The tests compare the
// runtime's row-major plan against a row-major reference through it, which
// checks the operand swap, transposes, leading dimensions and batch strides.
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <vector>

namespace {
using LtStatus = int;
constexpr LtStatus kOk = 0, kInvalid = 7, kNotSupported = 15;

struct Layout {
  int type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct Desc {
  int32_t transA = 0, transB = 0;
  /// CUBLASLT_EPILOGUE_*: 1 none, 2 ReLU, 4 bias, 6 ReLU+bias, 32 GELU,
  /// 36 GELU+bias.
  uint32_t epilogue = 1;
  const float *bias = nullptr;
};
struct HeuristicResult {
  uint64_t algo[8];
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};
int handleMarker = 0;
int preferenceMarker = 0;

/// cudaDataType's CUDA_R_32F and CUDA_R_16F, the types the stand-in
/// multiplies, and CUDA_R_8F_E4M3, whose A and B it multiplies into a
/// CUDA_R_32F D where cuBLAS's A is transposed and its B is not (the FP8
/// kernels' TN form).
constexpr int kR32F = 0, kR16F = 2, kR8FE4M3 = 28;

/// The float of float8 E4M3FN `bits` (a sign, 4 exponent bits biased by
/// 7, 3 mantissa bits; no infinities, S.1111.111 NaN).
float floatOfE4M3(uint8_t bits) {
  int exponent = (bits >> 3) & 15, mantissa = bits & 7;
  float magnitude = exponent == 15 && mantissa == 7 ? NAN
                    : exponent == 0
                        ? std::ldexp(float(mantissa), -9)
                        : std::ldexp(float(8 + mantissa), exponent - 10);
  return bits & 0x80 ? -magnitude : magnitude;
}

/// The `elements` float8 E4M3FN values at `bytes` as floats.
std::vector<float> floatsOfE4M3(const void *bytes, uint64_t elements) {
  std::vector<float> floats(elements);
  for (uint64_t i = 0; i < elements; ++i)
    floats[i] = floatOfE4M3(static_cast<const uint8_t *>(bytes)[i]);
  return floats;
}

/// The elements a batched layout spans.
uint64_t spanOf(const Layout &l) {
  return uint64_t(l.batch - 1) * uint64_t(l.stride) + uint64_t(l.ld) * l.cols;
}

template <class T>
void matmul(const Desc &op, const Layout &la, const Layout &lb,
            const Layout &lc, float al, float be, const void *a, const void *b,
            void *d);

/// The fake driver's function `name` (KILN_CUDA_DRIVER, or libcuda.so.1
/// when that is the fake), or null when no fake driver is loaded.
void *fakeDriverFunction(const char *name) {
  const char *driver = std::getenv("KILN_CUDA_DRIVER");
  void *handle = dlopen(driver && *driver ? driver : "libcuda.so.1",
                        RTLD_NOW | RTLD_NOLOAD);
  return handle ? dlsym(handle, name) : nullptr;
}

/// Does `op` on `stream` through the fake driver, so that a stream capture
/// records it; directly when no fake driver is loaded.
void dispatch(void *stream, std::function<void()> op) {
  using EnqueueFn = void (*)(void *, std::function<void()> *);
  static auto enqueue =
      reinterpret_cast<EnqueueFn>(fakeDriverFunction("fakeCudaEnqueue"));
  if (enqueue)
    enqueue(stream, new std::function<void()>(std::move(op)));
  else
    op();
}

/// The algorithms the stand-in offers, best first by the heuristic, and
/// what a call of each costs in the fake driver's device time: the
/// heuristic's first is not the fastest, so a runtime that times them
/// picks 43.
constexpr uint64_t kFirstAlgo = 42;
constexpr double kAlgoMs[] = {0.003, 0.001, 0.002};

/// Tells the fake driver that algorithm `algo` ran.
void ran(uint64_t algo) {
  using RanFn = void (*)(int, double);
  static auto report =
      reinterpret_cast<RanFn>(fakeDriverFunction("fakeCudaMatmulRan"));
  if (report)
    report(static_cast<int>(algo), kAlgoMs[algo - kFirstAlgo]);
}
} // namespace

extern "C" {

LtStatus cublasLtCreate(void **handle) {
  *handle = &handleMarker;
  return kOk;
}
LtStatus cublasLtDestroy(void *) { return kOk; }
const char *cublasLtGetStatusString(LtStatus) { return "FAKE_STATUS"; }
LtStatus cublasLtMatmulDescCreate(void **desc, int computeType, int scaleType) {
  if (computeType != 68 || scaleType != 0)
    return kNotSupported;
  *desc = new Desc();
  return kOk;
}
LtStatus cublasLtMatmulDescDestroy(void *desc) {
  delete static_cast<Desc *>(desc);
  return kOk;
}
LtStatus cublasLtMatmulDescSetAttribute(void *desc, int attr, const void *buf,
                                        size_t size) {
  Desc *d = static_cast<Desc *>(desc);
  if (attr == 8) { // BIAS_POINTER
    if (size != sizeof(d->bias))
      return kInvalid;
    std::memcpy(&d->bias, buf, size);
    return kOk;
  }
  if (size != sizeof(int32_t))
    return kInvalid;
  if (attr == 3)
    std::memcpy(&d->transA, buf, size);
  else if (attr == 4)
    std::memcpy(&d->transB, buf, size);
  else if (attr == 7) { // EPILOGUE
    std::memcpy(&d->epilogue, buf, size);
    uint32_t e = d->epilogue;
    if (e != 1 && e != 2 && e != 4 && e != 6 && e != 32 && e != 36)
      return kNotSupported;
  } else
    return kNotSupported;
  return kOk;
}
LtStatus cublasLtMatrixLayoutCreate(void **layout, int type, uint64_t rows,
                                    uint64_t cols, int64_t ld) {
  // Column-major: the leading dimension covers at least the rows.
  if (ld < static_cast<int64_t>(rows))
    return kInvalid;
  *layout = new Layout{type, rows, cols, ld};
  return kOk;
}
LtStatus cublasLtMatrixLayoutDestroy(void *layout) {
  delete static_cast<Layout *>(layout);
  return kOk;
}
LtStatus cublasLtMatrixLayoutSetAttribute(void *layout, int attr,
                                          const void *buf, size_t size) {
  Layout *l = static_cast<Layout *>(layout);
  if (attr == 5 && size == sizeof(int32_t))
    std::memcpy(&l->batch, buf, size);
  else if (attr == 6 && size == sizeof(int64_t))
    std::memcpy(&l->stride, buf, size);
  else
    return kInvalid;
  return kOk;
}
LtStatus cublasLtMatmulPreferenceCreate(void **pref) {
  *pref = &preferenceMarker;
  return kOk;
}
LtStatus cublasLtMatmulPreferenceDestroy(void *) { return kOk; }
LtStatus cublasLtMatmulPreferenceSetAttribute(void *, int attr, const void *,
                                              size_t size) {
  bool ok = (attr == 1 && size == 8) || (attr >= 5 && attr <= 8 && size == 4);
  return ok ? kOk : kInvalid;
}

/// Returns the (rows x cols) shape of op(layout).
static void opShape(const Layout &l, int32_t trans, uint64_t &rows,
                    uint64_t &cols) {
  rows = trans ? l.cols : l.rows;
  cols = trans ? l.rows : l.cols;
}

/// Whether the heuristic offers nothing for float8 operands (as a cuBLASLt
/// without FP8 kernels for the GPU would), for the fallback tests; tests
/// set it through dlsym.
__attribute__((visibility("default"))) int kiln_fake_no_float8_algorithms = 0;

LtStatus cublasLtMatmulAlgoGetHeuristic(void *, void *desc, void *a, void *b,
                                        void *c, void *d, void *, int requested,
                                        HeuristicResult *results,
                                        int *returned) {
  const Desc &op = *static_cast<Desc *>(desc);
  const Layout &la = *static_cast<Layout *>(a), &lb = *static_cast<Layout *>(b),
               &lc = *static_cast<Layout *>(c);
  uint64_t ar, ac, br, bc;
  opShape(la, op.transA, ar, ac);
  opShape(lb, op.transB, br, bc);
  bool float8 = la.type == kR8FE4M3 && lb.type == kR8FE4M3 &&
                lc.type == kR32F && op.transA && !op.transB;
  if (float8 && kiln_fake_no_float8_algorithms) {
    *returned = 0;
    return kOk;
  }
  if (requested < 1 || c != d || ac != br || lc.rows != ar || lc.cols != bc ||
      la.batch != lc.batch || lb.batch != lc.batch ||
      (!float8 && ((la.type != kR32F && la.type != kR16F) ||
                   lb.type != la.type || lc.type != la.type)))
    return kInvalid;
  int count = requested < 3 ? requested : 3;
  for (int i = 0; i < count; ++i) {
    std::memset(&results[i], 0, sizeof(HeuristicResult));
    results[i].algo[0] = kFirstAlgo + i;
  }
  *returned = count;
  return kOk;
}

/// Matmuls still to fail on purpose (CUBLAS_STATUS_EXECUTION_FAILED), for
/// the fault tests; tests set it through dlsym.
__attribute__((visibility("default"))) int kiln_fake_failing_matmuls = 0;

LtStatus cublasLtMatmul(void *, void *desc, const void *alpha, const void *a,
                        void *aDesc, const void *b, void *bDesc,
                        const void *beta, const void *c, void *cDesc, void *d,
                        void *dDesc, const void *algo, void *, size_t,
                        void *stream) {
  if (kiln_fake_failing_matmuls > 0) {
    --kiln_fake_failing_matmuls;
    return 13; // CUBLAS_STATUS_EXECUTION_FAILED
  }
  uint64_t id = algo ? static_cast<const uint64_t *>(algo)[0] : 0;
  if (id < kFirstAlgo || id > kFirstAlgo + 2 || c != d || cDesc != dDesc)
    return kInvalid;
  // Copies of the descriptors and scalars, as cuBLASLt reads them at the
  // call: a captured matmul keeps what it was called with.
  Desc op = *static_cast<Desc *>(desc);
  Layout la = *static_cast<Layout *>(aDesc), lb = *static_cast<Layout *>(bDesc),
         lc = *static_cast<Layout *>(cDesc);
  float al = *static_cast<const float *>(alpha);
  float be = *static_cast<const float *>(beta);
  dispatch(stream, [=] {
    if (lc.type == kR16F)
      matmul<_Float16>(op, la, lb, lc, al, be, a, b, d);
    else if (la.type == kR8FE4M3)
      matmul<float>(op, la, lb, lc, al, be, floatsOfE4M3(a, spanOf(la)).data(),
                    floatsOfE4M3(b, spanOf(lb)).data(), d);
    else
      matmul<float>(op, la, lb, lc, al, be, a, b, d);
    ran(id);
  });
  return kOk;
}

} // extern "C"

namespace {
/// D = al * op(A) * op(B) + be * D, column-major, batched by the layouts,
/// over elements of type T (float or _Float16), in fp32.
template <class T>
void matmul(const Desc &op, const Layout &la, const Layout &lb,
            const Layout &lc, float al, float be, const void *a, const void *b,
            void *d) {
  uint64_t m, k, k2, n;
  opShape(la, op.transA, m, k);
  opShape(lb, op.transB, k2, n);
  auto *A = static_cast<const T *>(a);
  auto *B = static_cast<const T *>(b);
  auto *C = static_cast<T *>(d);
  auto *bias = reinterpret_cast<const T *>(op.bias);
  for (int32_t batch = 0; batch < lc.batch; ++batch) {
    const T *Ai = A + batch * la.stride;
    const T *Bi = B + batch * lb.stride;
    T *Ci = C + batch * lc.stride;
    std::vector<float> result(m * n);
    for (uint64_t i = 0; i < m; ++i)
      for (uint64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (uint64_t p = 0; p < k; ++p) {
          float x = static_cast<float>(op.transA ? Ai[p + i * la.ld]
                                                 : Ai[i + p * la.ld]);
          float y = static_cast<float>(op.transB ? Bi[j + p * lb.ld]
                                                 : Bi[p + j * lb.ld]);
          acc += x * y;
        }
        result[i + j * m] = acc;
      }
    for (uint64_t i = 0; i < m; ++i)
      for (uint64_t j = 0; j < n; ++j) {
        T &out = Ci[i + j * lc.ld];
        // As in BLAS, C is not read when beta is zero.
        float x = al * result[i + j * m] +
                  (be == 0 ? 0.0f : be * static_cast<float>(out));
        // The bias runs along D's rows (column-major), then the activation.
        if (op.epilogue & 4)
          x += static_cast<float>(bias[i]);
        if (op.epilogue & 2)
          x = x > 0 ? x : 0;
        if (op.epilogue & 32)
          x = 0.5f * x *
              (1 + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
        out = static_cast<T>(x);
      }
  }
}
} // namespace

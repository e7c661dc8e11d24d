// projection_gemm_cublas.cpp: the projection GEMM through cuBLASLt (see projection_gemm.h).
//
// Row-major out[t][r] = sum_c x[t][c] w[r][c] + b[r] is, column-major, C = op(A) B with A = w seen
// as [hidden, rows] (transposed: [rows, hidden]), B = x seen as [hidden, tokens], C [rows, tokens]
// with ldc = out_ld: the bias is per row of C, which is what CUBLASLT_EPILOGUE_BIAS adds (in fp32,
// before the one rounding to the output dtype). Compute type CUBLAS_COMPUTE_32F: fp32
// accumulation of exact 16-bit products, in an order cuBLAS chooses (tensor cores, split-K).
//
// One cuBLASLt handle per device, made on first use and kept for the process. The workspace is
// stream-ordered (cudaMallocAsync / cudaFreeAsync on the call's stream), so calls on concurrent
// streams never share it and the call stays capturable in a CUDA graph.
#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "projection_gemm.h"

namespace kvc::kernels::detail {
namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

std::string lt_error(cublasStatus_t s, const char* what) {
  return std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s));
}

// The current device's handle; "" or what failed.
std::string device_handle(cublasLtHandle_t* out) {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess)
    return std::string("cudaGetDevice: ") + cudaGetErrorString(e);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(device);
  if (it == handles.end()) {
    cublasLtHandle_t handle = nullptr;
    if (cublasStatus_t s = cublasLtCreate(&handle); s != CUBLAS_STATUS_SUCCESS) return lt_error(s, "cublasLtCreate");
    it = handles.emplace(device, handle).first;
  }
  *out = it->second;
  return {};
}

// Owns the cuBLASLt descriptors of one call.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~Descriptors() {
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// The largest power of two (up to 256) that divides the address.
std::uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

#define KVC_LT(call)                                                                                  \
  do {                                                                                                \
    if (cublasStatus_t kvc_s = (call); kvc_s != CUBLAS_STATUS_SUCCESS) return lt_error(kvc_s, #call); \
  } while (0)

}  // namespace

std::string cublas_gemm(const GemmOperands& g, cudaStream_t stream) {
  if (g.tokens == 0 || g.rows == 0) return {};
  if (g.x_fp16 != g.w_fp16 || g.x_fp16 != g.out_fp16)
    return "cuBLAS GEMM needs x, the weights and the output in one dtype";
  cublasLtHandle_t handle = nullptr;
  if (std::string e = device_handle(&handle); !e.empty()) return e;
  const cudaDataType_t type = g.x_fp16 ? CUDA_R_16F : CUDA_R_16BF;
  Descriptors d;
  KVC_LT(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  KVC_LT(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
  KVC_LT(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof plain));
  if (g.bias != nullptr) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const void* bias = g.bias;
    KVC_LT(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    KVC_LT(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    KVC_LT(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof type));
  }
  KVC_LT(cublasLtMatrixLayoutCreate(&d.a, type, static_cast<std::uint64_t>(g.hidden),
                                    static_cast<std::uint64_t>(g.rows), g.hidden));
  KVC_LT(cublasLtMatrixLayoutCreate(&d.b, type, static_cast<std::uint64_t>(g.hidden),
                                    static_cast<std::uint64_t>(g.tokens), g.hidden));
  KVC_LT(cublasLtMatrixLayoutCreate(&d.c, type, static_cast<std::uint64_t>(g.rows),
                                    static_cast<std::uint64_t>(g.tokens), g.out_ld));
  KVC_LT(cublasLtMatmulPreferenceCreate(&d.preference));
  const std::uint64_t workspace = kWorkspaceBytes;
  KVC_LT(cublasLtMatmulPreferenceSetAttribute(d.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                              sizeof workspace));
  // The heuristic assumes 256-byte aligned operands unless told otherwise; a per-layer GEMM writes
  // at a column offset and reads a weight at a row offset, so state what the pointers really are.
  const std::uint32_t alignments[] = {alignment_of(g.w), alignment_of(g.x), alignment_of(g.out), alignment_of(g.out)};
  const cublasLtMatmulPreferenceAttributes_t alignment_attributes[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    KVC_LT(cublasLtMatmulPreferenceSetAttribute(d.preference, alignment_attributes[i], &alignments[i],
                                                sizeof alignments[i]));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  KVC_LT(cublasLtMatmulAlgoGetHeuristic(handle, d.op, d.a, d.b, d.c, d.c, d.preference, 1, &heuristic, &found));
  if (found == 0) return "cuBLASLt has no algorithm for this GEMM";
  void* scratch = nullptr;
  const std::size_t scratch_bytes = heuristic.workspaceSize;
  if (scratch_bytes > 0)
    if (cudaError_t e = cudaMallocAsync(&scratch, scratch_bytes, stream); e != cudaSuccess)
      return std::string("cudaMallocAsync of the cuBLASLt workspace: ") + cudaGetErrorString(e);
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t s = cublasLtMatmul(handle, d.op, &alpha, g.w, d.a, g.x, d.b, &beta, g.out, d.c, g.out, d.c,
                                          &heuristic.algo, scratch, scratch_bytes, stream);
  if (scratch != nullptr) cudaFreeAsync(scratch, stream);
  if (s != CUBLAS_STATUS_SUCCESS) return lt_error(s, "cublasLtMatmul");
  return {};
}

}  // namespace kvc::kernels::detail

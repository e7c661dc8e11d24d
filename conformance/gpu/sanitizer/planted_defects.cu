// planted_defects.cu: kvc_sanitizer_planted, test-only kernels with one defect each, so that the
// compute-sanitizer entries can show every tool they rely on finds what it is for.
//
//   kvc_sanitizer_planted oob-write          memcheck:  a global write one element past an allocation
//   kvc_sanitizer_planted leak               memcheck:  a device allocation never freed (--leak-check full)
//   kvc_sanitizer_planted shared-race        racecheck: threads of two warps read each other's shared
//                                            memory writes with no barrier between
//   kvc_sanitizer_planted uninit-read        initcheck: a global read of memory never written
//   kvc_sanitizer_planted divergent-barrier  synccheck: __syncthreads reached by half of a warp's
//                                            threads (on the H200, synccheck reports this as
//                                            "Divergent thread(s) in warp"; a barrier reached by
//                                            one warp of two is not reported there)
//
// Without a sanitizer each runs to completion and exits 0 (the defects corrupt nothing the
// program looks at): a reported error can only come from the tool. Exit 2 for a usage error,
// 3 for a CUDA error.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

namespace {

constexpr int kElements = 64;

__global__ void write_one_past(int* a, int n) {
  const int t = static_cast<int>(threadIdx.x);
  if (t <= n) a[t] = t;  // t == n is one element past the end
}

__global__ void read_neighbour_warp_without_barrier(int* out) {
  __shared__ volatile int s[kElements];
  const int t = static_cast<int>(threadIdx.x);
  s[t] = t;
  out[t] = s[(t + 32) % kElements];  // written by the other warp; no __syncthreads in between
}

__global__ void copy(const int* in, int* out) {
  const int t = static_cast<int>(threadIdx.x);
  out[t] = in[t];
}

// Half of every warp skips the barrier and exits. Measured on the H200 (CUDA 13.0): the kernel
// completes without a sanitizer, and synccheck reports "Barrier error detected. Divergent
// thread(s) in warp"; the earlier form (one warp of two at the barrier) was not reported.
__global__ void barrier_in_divergent_branch(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  if (t % 2 != 0) __syncthreads();  // the even lanes of every warp never arrive
  out[t] = t;
}

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s oob-write|leak|shared-race|uninit-read|divergent-barrier\n", argv[0]);
    return 2;
  }
  const char* defect = argv[1];
  bool known = false;
  for (const char* d : {"oob-write", "leak", "shared-race", "uninit-read", "divergent-barrier"})
    known = known || std::strcmp(defect, d) == 0;
  if (!known) {
    std::fprintf(stderr, "unknown defect '%s'\n", defect);
    return 2;
  }
  int* a = nullptr;
  int* out = nullptr;
  if (!ok(cudaMalloc(&a, kElements * sizeof(int)), "cudaMalloc") ||
      !ok(cudaMalloc(&out, kElements * sizeof(int)), "cudaMalloc") ||
      !ok(cudaMemset(out, 0, kElements * sizeof(int)), "cudaMemset"))
    return 3;
  bool free_a = true;
  if (std::strcmp(defect, "oob-write") == 0) {
    // The allocation is rounded up by the runtime, so the stray write lands in memory the program
    // owns and nothing crashes: only memcheck, which knows the requested size, can tell.
    if (!ok(cudaMemset(a, 0, kElements * sizeof(int)), "cudaMemset")) return 3;
    write_one_past<<<1, kElements + 1>>>(a, kElements);
  } else if (std::strcmp(defect, "leak") == 0) {
    if (!ok(cudaMemset(a, 0, kElements * sizeof(int)), "cudaMemset")) return 3;
    copy<<<1, kElements>>>(a, out);
    free_a = false;
  } else if (std::strcmp(defect, "shared-race") == 0) {
    read_neighbour_warp_without_barrier<<<1, kElements>>>(out);
  } else if (std::strcmp(defect, "uninit-read") == 0) {
    copy<<<1, kElements>>>(a, out);  // `a` was never written
  } else {                           // divergent-barrier
    barrier_in_divergent_branch<<<1, kElements>>>(out);
  }
  if (!ok(cudaGetLastError(), "kernel launch") || !ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return 3;
  if (free_a) cudaFree(a);
  cudaFree(out);
  cudaDeviceReset();  // the leak check reports what the context still holds when it is destroyed
  std::printf("planted defect '%s' ran\n", defect);
  return 0;
}

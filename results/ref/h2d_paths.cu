// h2d_paths: the 1 B copy between pinned memory and GPU 0 made the ways
// copy_latency.cu (the CUDA runtime) and qbench (the driver through cudarc)
// make it, interleaved in one process, so that whatever moves a whole
// process's figures (results/h200/smallmsg/h200-copy-latency-api.txt: each process's
// copies settle at one of two levels) moves every way alike and the
// differences between the ways are left.
//
// Ways (host clock around one copy and its wait, as both tools time it):
//   runtime          cudaHostAlloc default, cudaMemcpyAsync, cudaStreamSynchronize (copy_latency)
//   runtime-mapped   the same from cudaHostAlloc mapped | portable memory
//   runtime-query    runtime, waiting by polling cudaStreamQuery
//   driver           cuMemHostAlloc portable | devicemap, cuMemcpyHtoDAsync / cuMemcpyDtoHAsync,
//                    cuStreamSynchronize (qbench copy)
//   driver-bind      driver with cuCtxGetCurrent before the copy and before the wait, as cudarc's
//                    bind_to_thread does before each of qbench's calls
// Each way in blocks of 100 copies, the ways in turn, 40 blocks each, after
// 50 warm-up copies; prints each way's median (us), H2D then D2H. The byte
// copied is checked after each block. Every CUDA call's status is checked.
//
// Build: nvcc -O2 -std=c++17 -arch=sm_90 -o h2d_paths results/ref/h2d_paths.cu -lcuda
// Exit status: 0 right, 1 a wrong byte, 3 a CUDA error.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                       \
    do {                                                                                            \
        cudaError_t e_ = (x);                                                                       \
        if (e_ != cudaSuccess) {                                                                    \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(3);                                                                           \
        }                                                                                           \
    } while (0)
#define CU(x)                                                                        \
    do {                                                                             \
        CUresult r_ = (x);                                                           \
        if (r_ != CUDA_SUCCESS) {                                                    \
            std::fprintf(stderr, "%s:%d: %s: CUresult %d\n", __FILE__, __LINE__, #x, \
                         (int)r_);                                                   \
            std::exit(3);                                                            \
        }                                                                            \
    } while (0)

namespace {

enum Way { Runtime, RuntimeMapped, RuntimeQuery, Driver, DriverBind, Ways };
const char* kNames[Ways] = {"runtime", "runtime-mapped", "runtime-query", "driver", "driver-bind"};
constexpr size_t kBytes = 16u << 20;  // both tools' largest latency size
constexpr int kBlock = 100, kBlocks = 40, kWarmup = 50;

struct Bench {
    CUcontext ctx = nullptr;
    cudaStream_t s = nullptr;
    char* gpu = nullptr;
    char* host[Ways] = {};  // each way's own pinned buffer

    Bench() {
        CK(cudaSetDevice(0));
        CK(cudaFree(0));
        CU(cuCtxGetCurrent(&ctx));
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CK(cudaMalloc(&gpu, kBytes));
        for (int w = 0; w < Ways; w++) {
            if (w == Driver || w == DriverBind) {
                void* p = nullptr;
                CU(cuMemHostAlloc(&p, kBytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
                host[w] = (char*)p;
            } else {
                CK(cudaHostAlloc(&host[w], kBytes, w == RuntimeMapped ? cudaHostAllocMapped | cudaHostAllocPortable
                                                                     : cudaHostAllocDefault));
            }
            std::memset(host[w], 1, kBytes);
        }
    }

    // One copy of one byte and its wait, the host clock around both (us).
    double one(int w, bool to_gpu) {
        const CUstream cs = (CUstream)s;
        char* h = host[w];
        const auto t0 = std::chrono::steady_clock::now();
        if (w == Driver || w == DriverBind) {
            CUcontext cur;
            if (w == DriverBind) {
                CU(cuCtxGetCurrent(&cur));
                if (cur != ctx) CU(cuCtxSetCurrent(ctx));
            }
            if (to_gpu)
                CU(cuMemcpyHtoDAsync((CUdeviceptr)gpu, h, 1, cs));
            else
                CU(cuMemcpyDtoHAsync(h, (CUdeviceptr)gpu, 1, cs));
            if (w == DriverBind) {
                CU(cuCtxGetCurrent(&cur));
                if (cur != ctx) CU(cuCtxSetCurrent(ctx));
            }
            CU(cuStreamSynchronize(cs));
        } else {
            CK(cudaMemcpyAsync(to_gpu ? gpu : h, to_gpu ? h : gpu, 1, to_gpu ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s));
            if (w == RuntimeQuery) {
                cudaError_t e;
                while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
                }
                CK(e);
            } else {
                CK(cudaStreamSynchronize(s));
            }
        }
        return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    }

    // Whether the last copy of way w moved its byte: `want` at the far end.
    bool landed(int w, bool to_gpu, char want) {
        char got = 0;
        if (to_gpu)
            CK(cudaMemcpy(&got, gpu, 1, cudaMemcpyDeviceToHost));
        else
            got = *(volatile char*)host[w];
        return got == want;
    }
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main() {
    Bench b;
    int wrong = 0;
    for (bool to_gpu : {true, false}) {
        std::vector<std::vector<double>> t(Ways);
        for (int w = 0; w < Ways; w++)
            for (int i = 0; i < kWarmup; i++) b.one(w, to_gpu);
        for (int blk = 0; blk < kBlocks; blk++) {
            for (int w = 0; w < Ways; w++) {
                // A fresh byte each block: the source gets it, the far end is poisoned.
                const char want = (char)(2 + (blk * Ways + w) % 250);
                if (to_gpu) {
                    b.host[w][0] = want;
                    CK(cudaMemset(b.gpu, 0, 1));
                } else {
                    CK(cudaMemset(b.gpu, want, 1));
                    b.host[w][0] = 0;
                }
                CK(cudaDeviceSynchronize());
                for (int i = 0; i < kBlock; i++) t[w].push_back(b.one(w, to_gpu));
                if (!b.landed(w, to_gpu, want)) wrong++;
            }
        }
        std::printf("%s", to_gpu ? "h2d" : " | d2h");
        for (int w = 0; w < Ways; w++) std::printf(" %s %.2f", kNames[w], median(t[w]));
    }
    std::printf("\n");
    if (wrong) {
        std::fprintf(stderr, "h2d_paths: %d blocks left a wrong byte\n", wrong);
        return 1;
    }
    return 0;
}

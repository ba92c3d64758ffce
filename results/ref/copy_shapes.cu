// How the shape of a streaming kernel sets its share of the copy engine's
// device copy on one GPU: 16-byte vectors, VPT of them a thread, blocks of
// B threads, one tile (B * VPT vectors) a block and no loop (as PyTorch's
// vectorized elementwise kernels), against cudaMemcpyAsync on the same
// bytes in the same process; plus kernels/copy.cu's qb_copy as
// src/gpu/kernels.rs launches it, and a float32 x2 (PyTorch's mul, out of place)
// of the best shape. Every copy is checked word for word after timing.
// Build: nvcc -O3 -arch=sm_90 -DQB_VECTORS=1 -o copy_shapes copy_shapes.cu (QB_VECTORS: src/gpu/kernels.rs)
// Usage: ./copy_shapes [GiB per buffer, default 8] > copy-shapes.json
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../kernels/copy.cu"

#define CK(x)                                                                           \
    do {                                                                                \
        cudaError_t e = (x);                                                            \
        if (e != cudaSuccess) {                                                         \
            std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            std::exit(1);                                                               \
        }                                                                               \
    } while (0)

template <int VPT>
__global__ void shape_copy(uint4* __restrict__ dst, const uint4* __restrict__ src, u64 n) {
    const u64 base = (u64)blockIdx.x * blockDim.x * VPT + threadIdx.x;
    uint4 v[VPT];
    if (base + (VPT - 1) * (u64)blockDim.x < n) {
#pragma unroll
        for (int k = 0; k < VPT; k++) v[k] = src[base + k * (u64)blockDim.x];
#pragma unroll
        for (int k = 0; k < VPT; k++) dst[base + k * (u64)blockDim.x] = v[k];
    } else {
        for (int k = 0; k < VPT; k++)
            if (base + k * (u64)blockDim.x < n) dst[base + k * (u64)blockDim.x] = src[base + k * (u64)blockDim.x];
    }
}

template <int VPT>
__global__ void shape_mul2(float4* __restrict__ dst, const float4* __restrict__ src, u64 n) {
    const u64 base = (u64)blockIdx.x * blockDim.x * VPT + threadIdx.x;
    float4 v[VPT];
    if (base + (VPT - 1) * (u64)blockDim.x < n) {
#pragma unroll
        for (int k = 0; k < VPT; k++) v[k] = src[base + k * (u64)blockDim.x];
#pragma unroll
        for (int k = 0; k < VPT; k++) {
            float4 a = v[k];
            a.x *= 2.f, a.y *= 2.f, a.z *= 2.f, a.w *= 2.f;
            dst[base + k * (u64)blockDim.x] = a;
        }
    }
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Median ms of 5 runs of f, after one warm-up.
template <typename F>
static float timed(F f) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    f();
    std::vector<float> ms;
    for (int r = 0; r < 5; r++) {
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float t;
        CK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
    }
    CK(cudaGetLastError());
    return median(ms);
}

int main(int argc, char** argv) {
    const u64 gib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 8;
    const u64 bytes = gib << 30, n = bytes / 16;
    uint4 *src, *dst;
    u64* wrong;
    CK(cudaMalloc(&src, bytes));
    CK(cudaMalloc(&dst, bytes));
    CK(cudaMalloc(&wrong, 8));
    qb_fill<<<4096, 256>>>((unsigned char*)src, bytes, 7, 0);
    CK(cudaDeviceSynchronize());
    auto check = [&]() {
        CK(cudaMemset(wrong, 0, 8));
        qb_check<<<4096, 256>>>((const unsigned char*)dst, bytes, 7, wrong);
        u64 w;
        CK(cudaMemcpy(&w, wrong, 8, cudaMemcpyDeviceToHost));
        CK(cudaMemset(dst, 0, bytes));
        return w;
    };
    const double gb = 2.0 * bytes / 1e9;  // read + write
    std::printf("{\"gib_per_buffer\": %llu, \"rows\": [\n", gib);
    bool first = true;
    auto row = [&](const char* name, int vpt, int block, float ms, float ce_ms, long long w) {
        std::printf("%s  {\"kernel\": \"%s\", \"vectors_per_thread\": %d, \"block\": %d, \"ms\": %.4f, "
                    "\"gb_per_s\": %.1f, \"ce_gb_per_s\": %.1f, \"of_ce\": %.4f, \"wrong_words\": %lld}",
                    first ? "" : ",\n", name, vpt, block, ms, gb / (ms / 1e3), gb / (ce_ms / 1e3), ce_ms / ms, w);
        first = false;
        std::fflush(stdout);
    };
    auto ce = [&]() { return timed([&] { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); }); };
    for (int round = 0; round < 3; round++) {
        float c = ce();
        row("cudaMemcpyAsync", 0, 0, c, c, (long long)check());
        auto shape = [&](auto kernel, int vpt, int block) {
            const u64 blocks = (n + (u64)block * vpt - 1) / ((u64)block * vpt);
            float c0 = ce();
            float ms = timed([&] { kernel<<<(unsigned)blocks, block>>>(dst, src, n); });
            row("shape_copy", vpt, block, ms, c0, (long long)check());
        };
        for (int block : {128, 256, 512}) {
            shape(shape_copy<1>, 1, block);
            shape(shape_copy<2>, 2, block);
            shape(shape_copy<4>, 4, block);
            shape(shape_copy<8>, 8, block);
        }
        {
            const u64 blocks = std::min<u64>((n + 128 * QB_VECTORS - 1) / (128 * QB_VECTORS), (1ull << 31) - 1);
            float c0 = ce();
            float ms = timed([&] { qb_copy<<<(unsigned)blocks, 128>>>(dst, src, bytes); });
            row("qb_copy", QB_VECTORS, 128, ms, c0, (long long)check());
        }
        for (int block : {128, 256}) {
            const u64 blocks = (n + (u64)block * 2 - 1) / ((u64)block * 2);
            float c0 = ce();
            float ms = timed([&] { shape_mul2<2><<<(unsigned)blocks, block>>>((float4*)dst, (const float4*)src, n); });
            row("float_mul2", 2, block, ms, c0, -1);
            CK(cudaMemset(dst, 0, bytes));
        }
    }
    std::printf("\n]}\n");
    return 0;
}

// What the kernel harnesses of results/ref (kernels_bench.cu, h4k_variants.cu)
// check and time qbench's kernels with: CK for every CUDA call, plain
// one-pair-a-thread reference kernels, random data and a word-by-word
// comparison. Included after the kernel file (kernels/statevec.cu or its
// baseline), whose Ops, u64 and SQRT1_2 these use.
#pragma once
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                       \
    do {                                                                                            \
        cudaError_t e_ = (x);                                                                       \
        if (e_ != cudaSuccess) {                                                                    \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                           \
        }                                                                                           \
    } while (0)

// ---- reference kernels: one pair (or element) a thread, nothing clever ----

template <typename A>
__global__ void ref_h(A* a, u64 pairs, unsigned q) {
    typedef typename Ops<A>::R R;
    const R c = (R)SQRT1_2;
    for (u64 k = blockIdx.x * (u64)blockDim.x + threadIdx.x; k < pairs; k += (u64)gridDim.x * blockDim.x) {
        const u64 low = (1ULL << q) - 1, i = ((k & ~low) << 1) | (k & low), j = i + low + 1;
        const A x = a[i], y = a[j];
        A s, d;
        s.x = c * (x.x + y.x);
        s.y = c * (x.y + y.y);
        d.x = c * (x.x - y.x);
        d.y = c * (x.y - y.y);
        a[i] = s;
        a[j] = d;
    }
}

template <typename A>
__global__ void ref_combine(A* a, const A* p, u64 n, int one) {
    typedef typename Ops<A>::R R;
    const R c = (R)SQRT1_2, s = one ? (R)-1 : (R)1;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        A r;
        r.x = c * (p[i].x + s * a[i].x);
        r.y = c * (p[i].y + s * a[i].y);
        a[i] = r;
    }
}

// Values in (-1, 1) from a hash of the index: never zero, never NaN.
__global__ void fill_random(float* f, u64 n, u64 seed) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 z = (i + 1) * 0x9e3779b97f4a7c15ULL + seed;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        f[i] = ((float)(z >> 40) + 0.5f) / (float)(1 << 24) * 2.0f - 1.0f;
    }
}

__global__ void count_diff(const uint4* a, const uint4* b, u64 n, unsigned long long* wrong) {
    unsigned long long local = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const uint4 x = a[i], y = b[i];
        local += (x.x != y.x) | (x.y != y.y) | (x.z != y.z) | (x.w != y.w);
    }
    if (local) atomicAdd(wrong, local);
}

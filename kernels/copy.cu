// Kernels of `qbench copy`, compiled at run time with NVRTC: the SM copy,
// the fill and check of the seeded data (the formula of
// src/workload/copy/buffer.rs: change them together), and the hold kernel
// that keeps a stream waiting until every timed copy is queued, so that
// launch overhead is not timed (as nvbandwidth's spin kernel does).
// Buffers handed to qb_copy start on a 16-byte boundary (device allocations
// and pinned host pages always do).

typedef unsigned long long u64;

__device__ __forceinline__ u64 mix(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Word i of the data seeded with `seed`; byte k of the buffer is byte k % 8
// (little-endian) of word k / 8.
__device__ __forceinline__ u64 word(u64 seed, u64 i) { return mix(seed + i * 0x9e3779b97f4a7c15ULL); }

// dst[0..bytes) = src[0..bytes) in 16-byte vectors: tiles of blockDim.x *
// QB_VECTORS vectors (src/gpu/kernels.rs, VECTORS), block b taking tiles b,
// b + gridDim.x, ... (any grid is correct; src/gpu/kernels.rs gives each
// block one tile), each thread loading its vectors, a block apart, before
// storing them, so that a warp's accesses are 512 contiguous bytes. The
// block after the last whole tile copies the rest: whole vectors, then the
// last bytes % 16 bytes.
#ifndef QB_VECTORS
#error "define QB_VECTORS, the 16-byte vectors a thread takes (src/gpu/kernels.rs, VECTORS)"
#endif
extern "C" __global__ void qb_copy(uint4* __restrict__ dst, const uint4* __restrict__ src, u64 bytes) {
    const u64 n = bytes / 16;
    const u64 tile = (u64)blockDim.x * QB_VECTORS;
    u64 t = blockIdx.x;
    for (; (t + 1) * tile <= n; t += gridDim.x) {
        const u64 i = t * tile + threadIdx.x;
        uint4 v[QB_VECTORS];
#pragma unroll
        for (int u = 0; u < QB_VECTORS; u++) v[u] = src[i + u * blockDim.x];
        asm volatile("" ::: "memory");  // all loads before the first store (statevec.cu)
#pragma unroll
        for (int u = 0; u < QB_VECTORS; u++) dst[i + u * blockDim.x] = v[u];
    }
    if (t * tile > n) return;  // another block's turn for the rest
    for (u64 i = t * tile + threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
    const u64 tail = bytes - n * 16;
    if (threadIdx.x < tail)
        ((unsigned char*)dst)[n * 16 + threadIdx.x] = ((const unsigned char*)src)[n * 16 + threadIdx.x];
}

// Writes the seeded data, or its bitwise complement (`invert`: the poison,
// which differs from the data in every byte).
extern "C" __global__ void qb_fill(unsigned char* buf, u64 bytes, u64 seed, int invert) {
    const u64 n = bytes / 8;
    const u64 flip = invert ? ~0ULL : 0ULL;
    u64* w = (u64*)buf;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        w[i] = word(seed, i) ^ flip;
    if (blockIdx.x == 0 && threadIdx.x == 0 && n * 8 < bytes) {
        const u64 v = word(seed, n) ^ flip;
        for (u64 k = n * 8; k < bytes; k++) buf[k] = (unsigned char)(v >> (8 * (k - n * 8)));
    }
}

// Adds to *wrong the number of 8-byte words (the last one possibly partial)
// that differ from the seeded data.
extern "C" __global__ void qb_check(const unsigned char* buf, u64 bytes, u64 seed, u64* wrong) {
    const u64 n = bytes / 8;
    const u64* w = (const u64*)buf;
    u64 local = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        if (w[i] != word(seed, i)) local++;
    if (blockIdx.x == 0 && threadIdx.x == 0 && n * 8 < bytes) {
        const u64 v = word(seed, n);
        bool bad = false;
        for (u64 k = n * 8; k < bytes; k++) bad |= buf[k] != (unsigned char)(v >> (8 * (k - n * 8)));
        local += bad;
    }
    if (local) atomicAdd(wrong, local);
}

__device__ __forceinline__ u64 now_ns() {
    u64 t;
#ifdef __CUDA_ARCH__
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
#else
    t = 0;  // a host compiler's build of this file (results/ref/emulate.cpp)
#endif
    return t;
}

// Spins until the host sets flag[0], or gives up after timeout_ns and
// says so in flag[1]. One thread; the flag lives in mapped pinned memory.
extern "C" __global__ void qb_hold(volatile unsigned* flag, u64 timeout_ns) {
    const u64 start = now_ns();
    while (flag[0] == 0u) {
        if (now_ns() - start > timeout_ns) {
            flag[1] = 1u;
            __threadfence_system();
            return;
        }
    }
}

// One thread follows `loads` links of a chain of 8-byte addresses, each
// load waiting for the one before and fetched again from memory, never
// from the GPU's caches (ld.global.cv), so that each is one round trip to
// where the chain lives; writes where it ended, which the host checks.
extern "C" __global__ void qb_chase(const u64* start, u64 loads, u64* end) {
    const u64* p = start;
    for (u64 i = 0; i < loads; i++) {
        u64 next;
#ifdef __CUDA_ARCH__
        asm volatile("ld.global.cv.u64 %0, [%1];" : "=l"(next) : "l"(p));
#else
        next = *(volatile const u64*)p;
#endif
        p = (const u64*)next;
    }
    *end = (u64)p;
}

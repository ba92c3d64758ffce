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

// dst[0..bytes) = src[0..bytes): 16-byte vector loads and stores in a
// grid-stride loop, four in flight per thread; the last bytes % 16 bytes by
// the first threads of block 0.
extern "C" __global__ void qb_copy(uint4* __restrict__ dst, const uint4* __restrict__ src, u64 bytes) {
    const u64 n = bytes / 16;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = src[i];
        uint4 b = src[i + stride];
        uint4 c = src[i + 2 * stride];
        uint4 d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
    const u64 tail = bytes - n * 16;
    if (blockIdx.x == 0 && threadIdx.x < tail)
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
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
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

// H at the qubit whose partners are 4 KiB apart (q = 8 double, q = 9
// single), where qbench's sv_h reads two 256-byte runs 4 KiB apart in each
// warp and an H200 streams it at 0.95 of its copy engine, against a dozen
// other ways of doing the same gate, each checked bit for bit against a
// one-pair-a-thread kernel, then timed against cudaMemcpyAsync on the same
// 16 GiB (median of 5 launches, 3 rounds): docs/kernels-roofline.md says
// what they showed and why qbench runs that qubit through sv_h_4k.
//   warp16-*        one warp per 8 KiB pair group, 16 vectors a lane (in order, lo/hi alternating; blocks of 128, 64, 32)
//   tile512x1       a block of 512 per group, one vector a thread, a __syncthreads
//   tile512-pairbar the same with each pair of warps meeting at its own named barrier
//   tile1024-pairbar9, tile256-pairbar7  the same for partners 8 KiB and 2 KiB apart
//   pair64          a block of 64: one warp of each half of a group
//   tile512-general the same, as qbench ran it before sv_h_4k: right for any grid and partner distance
//   tile512-min     the same as tile512-pairbar with the block size and the distance constants
//   tile512-min-*   the same with checks: -guard the block index against the last group before
//                   the load, -clamp the block index clamped to it, -after the block's size
//                   after the load, -clamp-after both
//   prod-sv_h_4k, prod-sv_h   qbench's two kernels from kernels/statevec.cu, as qbench launches them
//   bulk-sS-tT-xX   S groups in flight a block by the Hopper bulk copy (cp.async.bulk) into shared
//                   memory, blocks of T threads, X blocks a multiprocessor, each looping over groups
//   tile256x2, tile128x4        a group per block of 256 or 128 threads, 2 or 4 vectors a thread
//   x-nc, x-paired, x-nc-paired, x-plain   tile512-min with its load through ld.global.nc, with
//                   partner warps adjacent, both, neither
//   multi2, multi4  a block of 512 for 2 or 4 adjacent groups, one vector of each a thread, one barrier
//   loop-xK         K persistent blocks of 512 a multiprocessor looping over groups, the next group's
//                   vector loaded before this one's barrier, two shared buffers alternating
//   prod-sv_h also at partners 2 KiB and 8 KiB apart, where qbench runs it
// Build and run (the GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90 -DQB_VECTORS=1 -o h4k results/ref/h4k_variants.cu && ./h4k [PREFIX...]
//   (with prefixes, only the variants whose names start with one of them)
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <functional>
#include <string>
#include "../../kernels/statevec.cu"
#include "bench_common.cuh"

// W: one warp per group of 2^(qv+1) vectors (NW = 2^(qv+1)/32 vectors a lane), contiguous 512 B per load.
// order 0: all loads in index order; 1: lo/hi alternating.
template <typename A, int NW, int ORDER>
__global__ void h_warpgroup(A* amp, u64 n) {
    typedef typename Ops<A>::V V; typedef typename Ops<A>::R R;
    V* vec = (V*)amp;
    const u64 nv = n / Ops<A>::E, group = 32 * NW;
    const u64 w = (blockIdx.x * (u64)blockDim.x + threadIdx.x) >> 5;
    const unsigned lane = threadIdx.x & 31;
    if ((w + 1) * group > nv) return;
    V v[NW];
    V* base = vec + w * group + lane;
    if (ORDER == 0) {
#pragma unroll
        for (int u = 0; u < NW; u++) v[u] = ld(base + 32 * u);
    } else {
#pragma unroll
        for (int u = 0; u < NW / 2; u++) { v[u] = ld(base + 32 * u); v[u + NW / 2] = ld(base + 32 * (u + NW / 2)); }
    }
    QB_LOADS_BEFORE_STORES();
    const R c = (R)1;
#pragma unroll
    for (int u = 0; u < NW / 2; u++) {
        const V a = v[u], b = v[u + NW / 2];
        st(base + 32 * u, mix(a, b, c));
        st(base + 32 * (u + NW / 2), mix(a, b, -c));
    }
}

// T: tile kernel, block B threads x NV vectors, tile 2^(qv+1) vectors, no trailing sync.
template <typename A, int NV>
__global__ void h_tile(A* amp, u64 n, unsigned qv) {
    typedef typename Ops<A>::V V; typedef typename Ops<A>::R R;
    extern __shared__ uint4 shm[];
    V* sh = (V*)shm; V* vec = (V*)amp;
    const u64 m = 1ULL << qv, tile = (u64)blockDim.x * NV;
    const u64 i0 = blockIdx.x * tile;
    V v[NV];
#pragma unroll
    for (int u = 0; u < NV; u++) v[u] = ld(vec + i0 + threadIdx.x + u * blockDim.x);
#pragma unroll
    for (int u = 0; u < NV; u++) sh[threadIdx.x + u * blockDim.x] = v[u];
    __syncthreads();
#pragma unroll
    for (int u = 0; u < NV; u++) {
        const u64 j = threadIdx.x + u * blockDim.x;
        st(vec + i0 + j, mix(sh[j ^ m], v[u], (j & m) ? (R)-1 : (R)1));
    }
}

// T2: tile of 2^(qv+1) vectors in a block of 2^(qv+1)/NV threads... warps w and w ^ (2^qv / 32) meet at a named barrier.
template <typename A>
__global__ void h_tile_pairbar(A* amp, u64 n, unsigned qv) {
    typedef typename Ops<A>::V V; typedef typename Ops<A>::R R;
    extern __shared__ uint4 shm[];
    V* sh = (V*)shm; V* vec = (V*)amp;
    const u64 m = 1ULL << qv;
    const u64 i0 = blockIdx.x * (u64)blockDim.x;
    const unsigned w = threadIdx.x >> 5, mw = (unsigned)(m >> 5);
    const V v = ld(vec + i0 + threadIdx.x);
    sh[threadIdx.x] = v;
    const unsigned id = w & ~mw;  // both warps of a pair name the same barrier (0..15; no __syncthreads here)
    asm volatile("bar.sync %0, 64;" ::"r"(id) : "memory");
    const u64 j = threadIdx.x;
    st(vec + i0 + j, mix(sh[j ^ m], v, (j & m) ? (R)-1 : (R)1));
}
// T3: block of 64 threads = one warp pair (w, w + 2^qv/32) of a 2^(qv+1)-vector group; blocks in group order.
template <typename A>
__global__ void h_pair64(A* amp, u64 n, unsigned qv) {
    typedef typename Ops<A>::V V; typedef typename Ops<A>::R R;
    __shared__ V sh[64];
    V* vec = (V*)amp;
    const u64 m = 1ULL << qv, per = m >> 5;       // warp pairs per group
    const u64 g = blockIdx.x / per, r = blockIdx.x % per;
    const unsigned hi = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u64 i = g * 2 * m + r * 32 + hi * m + lane;
    const V v = ld(vec + i);
    sh[threadIdx.x] = v;
    __syncthreads();
    st(vec + i, mix(sh[threadIdx.x ^ 32], v, hi ? (R)-1 : (R)1));
}

// G: the kernel qbench ran at this qubit before sv_h_4k, right for any grid
// and for partners 2^5 to 2^9 vectors apart: its checks and index
// arithmetic come before each block's one load (one tile a block, as
// launched here, takes the first branch).
template <typename A>
__device__ __forceinline__ bool tile_fits(unsigned q) {
    if (Ops<A>::E == 2 && q == 0) return false;
    const unsigned qv = q - (Ops<A>::E == 2 ? 1 : 0);
    return qv >= 5 && qv <= 9 && blockDim.x == (2u << qv);
}

// One pair group's tile at vector t * blockDim.x, given this thread's
// vector v of it; `again`: the block's threads use sh once more after this.
template <typename A>
__device__ __forceinline__ void tile_step(typename Ops<A>::V* vec, typename Ops<A>::V* sh, u64 t,
                                          typename Ops<A>::V v, unsigned q, bool again) {
    typedef typename Ops<A>::R R;
    const unsigned j = threadIdx.x, m = 1u << (q - (Ops<A>::E == 2 ? 1 : 0));
    const unsigned id = (j >> 5) & ~(m >> 5);  // the pair's barrier: < 16 with blocks of ≤ 1024
    sh[j] = v;
    QB_PAIR_BARRIER(id, 64);
    // |0> half: (v + p)/√2; |1> half: (p − v)/√2
    st(vec + t * blockDim.x + j, mix(sh[j ^ m], v, (j & m) ? (R)-1 : (R)1));
    if (again) QB_PAIR_BARRIER(id, 64);  // the partner has read sh[j]
}

template <typename A>
__global__ void hadamard_tile_kernel(A* __restrict__ amp, u64 n, unsigned q) {
    typedef typename Ops<A>::V V;
    extern __shared__ uint4 qb_shared[];
    V* sh = (V*)qb_shared;
    V* vec = (V*)amp;
    const u64 tile = blockDim.x, nv = n / Ops<A>::E;
    // One tile a block, as qbench launches it: the load goes out first and
    // the checks run while it is in flight. Each block does one load and one
    // store a thread, so what comes before its load lengthens every block's
    // life: with the loop's bookkeeping first, the kernel ran at 0.95 of the
    // copy engine, not 0.97.
    if ((u64)gridDim.x * tile == nv) {
        const V v = ld(vec + blockIdx.x * tile + threadIdx.x);
        if (tile_fits<A>(q)) {
            tile_step<A>(vec, sh, blockIdx.x, v, q, false);
            return;
        }
    } else if (tile_fits<A>(q)) {
        // Any other grid: tiles b, b + gridDim.x, ...; the loop's bounds are
        // the block's, so both warps of a pair meet every barrier.
        u64 t = blockIdx.x;
        for (; (t + 1) * tile <= nv; t += gridDim.x)
            tile_step<A>(vec, sh, t, ld(vec + t * tile + threadIdx.x), q, (t + gridDim.x + 1) * tile <= nv);
        if (t * tile < nv) hadamard_pairs(amp, t * tile * Ops<A>::E / 2 + threadIdx.x, n / 2, blockDim.x, q);
        return;
    }
    hadamard_pairs<A>(amp, blockIdx.x * (u64)blockDim.x + threadIdx.x, n / 2, (u64)gridDim.x * blockDim.x, q);
}

// M: one block of 512 per 8 KiB group as tile512-pairbar, the block size and
// the partner distance compile-time constants; CHECK says what else comes
// with the load: 0 nothing but its address; 1 a bounds check on the block
// index before it; 2 the block index clamped to the last group; 3 the check
// of the block's size after it (a compiler barrier keeps it there); 4 both
// 2 and 3 (3: qbench's sv_h_4k before its barrier took the block's size
// instead).
template <typename A, int CHECK>
__global__ void __launch_bounds__(512) h_tile_min(A* amp, unsigned last) {
    typedef typename Ops<A>::V V; typedef typename Ops<A>::R R;
    __shared__ V sh[512];
    if (CHECK == 1 && blockIdx.x > last) return;
    const unsigned b = CHECK == 2 || CHECK == 4 ? min(blockIdx.x, last) : blockIdx.x;
    V* p = (V*)amp + (u64)b * 512 + threadIdx.x;
    const V v = ld(p);
    if (CHECK >= 3) {
        QB_LOADS_BEFORE_STORES();
        if (blockDim.x != 512) return;
    }
    sh[threadIdx.x] = v;
    QB_PAIR_BARRIER((threadIdx.x >> 5) & ~8u, 64);
    st(p, mix(sh[threadIdx.x ^ 256], v, (threadIdx.x & 256) ? (R)-1 : (R)1));
}

// X: tile512-min (nothing before the load) with NC: the load through the
// non-coherent path (ld.global.nc, as the copy kernels' loads are; each
// amplitude is read once, before the same thread writes it, so nothing
// the kernel writes is read through it), and/or PAIRED: the partner warps
// adjacent (warp 2k takes part k of the |0> half, warp 2k + 1 part k of
// the |1> half) instead of 8 warps apart.
template <typename A, bool NC, bool PAIRED>
__global__ void __launch_bounds__(512) h_tile_x(A* amp) {
    typedef typename Ops<A>::V V; typedef typename Ops<A>::R R;
    __shared__ V sh[512];
    const unsigned t = threadIdx.x, w = t >> 5;
    const unsigned j = PAIRED ? (((w >> 1) | ((w & 1) << 3)) << 5) | (t & 31) : t;
    V* p = (V*)amp + (u64)blockIdx.x * 512 + j;
    const V v = NC ? __ldg(p) : ld(p);
    sh[j] = v;
    QB_PAIR_BARRIER(PAIRED ? (w >> 1) : (w & ~8u), 64);
    st(p, mix(sh[j ^ 256], v, (j & 256) ? (R)-1 : (R)1));
}

// N: one block of 512 for NG adjacent 8 KiB groups: each thread loads one
// vector of each (NG loads in flight), then one pair barrier for all NG.
template <typename A, int NG>
__global__ void __launch_bounds__(512) h_tile_multi(A* amp) {
    typedef typename Ops<A>::V V; typedef typename Ops<A>::R R;
    __shared__ V sh[NG * 512];
    const unsigned j = threadIdx.x;
    V* p = (V*)amp + (u64)blockIdx.x * (NG * 512) + j;
    V v[NG];
#pragma unroll
    for (int g = 0; g < NG; g++) v[g] = ld(p + g * 512);
#pragma unroll
    for (int g = 0; g < NG; g++) sh[g * 512 + j] = v[g];
    QB_PAIR_BARRIER((j >> 5) & ~8u, 64);
#pragma unroll
    for (int g = 0; g < NG; g++) st(p + g * 512, mix(sh[g * 512 + (j ^ 256)], v[g], (j & 256) ? (R)-1 : (R)1));
}

// P: persistent blocks of 512 looping over groups b, b + gridDim.x, ...;
// the next group's vector is loaded before this group's barrier, and the
// two shared buffers alternate, so one pair barrier a group suffices (a
// warp writes a buffer again only after its partner has met the barrier
// that follows its read of it).
template <typename A>
__global__ void __launch_bounds__(512) h_tile_loop(A* amp, unsigned groups) {
    typedef typename Ops<A>::V V; typedef typename Ops<A>::R R;
    __shared__ V sh[2][512];
    const unsigned j = threadIdx.x, id = (j >> 5) & ~8u;
    const R sign = (j & 256) ? (R)-1 : (R)1;
    V* base = (V*)amp + j;
    unsigned g = blockIdx.x;
    V v = ld(base + (u64)g * 512);
    for (unsigned k = 0;; k++) {
        const unsigned next = g + gridDim.x;
        V w = v;
        if (next < groups) w = ld(base + (u64)next * 512);
        sh[k & 1][j] = v;
        QB_PAIR_BARRIER(id, 64);
        st(base + (u64)g * 512, mix(sh[k & 1][j ^ 256], v, sign));
        if (next >= groups) break;
        g = next;
        v = w;
    }
}

// B: the Hopper bulk copy (cp.async.bulk, TMA without a tensor map) brings
// each 8 KiB group into shared memory, S groups in flight a block, blocks
// of T threads looping over groups b, b + gridDim.x, ...; the threads read
// the pair from shared memory and store the result to global memory.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void bulk_get(void* dst, const void* src, unsigned bytes, u64* bar) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void bulk_wait(u64* bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
    } while (!done);
}
template <typename A, int S, int T>
__global__ void __launch_bounds__(T) h_bulk(A* amp, u64 groups) {
    typedef typename Ops<A>::V V; typedef typename Ops<A>::R R;
    extern __shared__ uint4 shm[];
    __shared__ u64 bar[S];
    V* buf = (V*)shm; V* vec = (V*)amp;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bar[s])) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (int s = 0; s < S; s++) {
            const u64 g = blockIdx.x + (u64)s * gridDim.x;
            if (g < groups) bulk_get(buf + s * 512, vec + g * 512, 8192, &bar[s]);
        }
    }
    __syncthreads();
    unsigned k = 0;
    for (u64 g = blockIdx.x; g < groups; g += gridDim.x, k++) {
        const unsigned s = k % S;
        bulk_wait(&bar[s], (k / S) & 1);
        const V* b = buf + s * 512;
#pragma unroll
        for (unsigned j = threadIdx.x; j < 512; j += T) st(vec + g * 512 + j, mix(b[j ^ 256], b[j], (j & 256) ? (R)-1 : (R)1));
        __syncthreads();
        const u64 next = g + (u64)S * gridDim.x;
        if (threadIdx.x == 0 && next < groups) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            bulk_get(buf + s * 512, vec + next * 512, 8192, &bar[s]);
        }
    }
}

template <typename F> double med(cudaStream_t s, F&& run) {
    cudaEvent_t e[12]; for (auto& x : e) CK(cudaEventCreate(&x));
    run();
    for (int i = 0; i < 5; i++) { CK(cudaEventRecord(e[2*i], s)); run(); CK(cudaEventRecord(e[2*i+1], s)); }
    CK(cudaGetLastError()); CK(cudaStreamSynchronize(s));
    std::vector<double> t; for (int i = 0; i < 5; i++) { float ms; CK(cudaEventElapsedTime(&ms, e[2*i], e[2*i+1])); t.push_back(ms); }
    for (auto& x : e) cudaEventDestroy(x);
    std::sort(t.begin(), t.end()); return t[2] * 1e-3;
}

static std::vector<std::string> only;  // name prefixes from the command line; empty: every variant

template <typename A> void run(const char* name, unsigned L) {
    const u64 n = 1ULL << L, chunk = n * sizeof(A);
    const unsigned E = Ops<A>::E, qoff = E == 2 ? 1 : 0;
    char *st, *xb, *rf; CK(cudaMalloc(&st, chunk)); CK(cudaMalloc(&xb, chunk)); CK(cudaMalloc(&rf, chunk));
    unsigned long long* dw; CK(cudaMalloc(&dw, 8));
    fill_random<<<132 * 64, 128>>>((float*)st, chunk / 4, 1); CK(cudaDeviceSynchronize());
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const u64 nv = n / E;
    int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaFuncSetAttribute(h_bulk<A, 8, 256>, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 8192));
    struct Var { const char* name; int qv; std::function<void(cudaStream_t)> f; };
    std::vector<Var> vars;
    for (int qv : {7, 8, 9}) {
        vars.push_back({"prod-sv_h", qv, [=](cudaStream_t ss) { unsigned qq = qv + qoff; u64 p = n / 2; if (E == 1) sv_h_double<<<(unsigned)(nv / 128), 128, 0, ss>>>((C2*)st, p, qq); else sv_h_single<<<(unsigned)(nv / 128), 128, 0, ss>>>((C1*)st, p, qq); }});
    }
    // qv = 8 variants: group 512 vectors.
    vars.push_back({"warp16-inorder", 8, [=](cudaStream_t ss) { h_warpgroup<A, 16, 0><<<(unsigned)(nv / 16 / 128), 128, 0, ss>>>((A*)st, n); }});
    vars.push_back({"warp16-alt", 8, [=](cudaStream_t ss) { h_warpgroup<A, 16, 1><<<(unsigned)(nv / 16 / 128), 128, 0, ss>>>((A*)st, n); }});
    vars.push_back({"warp16-b64", 8, [=](cudaStream_t ss) { h_warpgroup<A, 16, 0><<<(unsigned)(nv / 16 / 64), 64, 0, ss>>>((A*)st, n); }});
    vars.push_back({"warp16-b32", 8, [=](cudaStream_t ss) { h_warpgroup<A, 16, 0><<<(unsigned)(nv / 16 / 32), 32, 0, ss>>>((A*)st, n); }});
    vars.push_back({"tile512x1", 8, [=](cudaStream_t ss) { h_tile<A, 1><<<(unsigned)(nv / 512), 512, 512 * 16, ss>>>((A*)st, n, 8); }});
    vars.push_back({"tile512-pairbar", 8, [=](cudaStream_t ss) { h_tile_pairbar<A><<<(unsigned)(nv / 512), 512, 512 * 16, ss>>>((A*)st, n, 8); }});
    vars.push_back({"tile1024-pairbar9", 9, [=](cudaStream_t ss) { h_tile_pairbar<A><<<(unsigned)(nv / 1024), 1024, 1024 * 16, ss>>>((A*)st, n, 9); }});
    vars.push_back({"tile256-pairbar7", 7, [=](cudaStream_t ss) { h_tile_pairbar<A><<<(unsigned)(nv / 256), 256, 256 * 16, ss>>>((A*)st, n, 7); }});
    vars.push_back({"pair64", 8, [=](cudaStream_t ss) { h_pair64<A><<<(unsigned)(nv / 64), 64, 0, ss>>>((A*)st, n, 8); }});
    vars.push_back({"tile512-general", 8, [=](cudaStream_t ss) { hadamard_tile_kernel<A><<<(unsigned)(nv / 512), 512, 512 * 16, ss>>>((A*)st, n, 8 + qoff); }});
    vars.push_back({"prod-sv_h_4k", 8, [=](cudaStream_t ss) { const unsigned g = (unsigned)(nv / QB_GROUP); if (E == 1) sv_h_4k_double<<<g, QB_GROUP, 0, ss>>>((C2*)st); else sv_h_4k_single<<<g, QB_GROUP, 0, ss>>>((C1*)st); }});
    vars.push_back({"tile256x2", 8, [=](cudaStream_t ss) { h_tile<A, 2><<<(unsigned)(nv / 512), 256, 512 * 16, ss>>>((A*)st, n, 8); }});
    vars.push_back({"tile128x4", 8, [=](cudaStream_t ss) { h_tile<A, 4><<<(unsigned)(nv / 512), 128, 512 * 16, ss>>>((A*)st, n, 8); }});
    const char* checks[] = {"tile512-min", "tile512-min-guard", "tile512-min-clamp", "tile512-min-after", "tile512-min-clamp-after"};
    const unsigned last = (unsigned)(nv / 512 - 1);
    vars.push_back({checks[0], 8, [=](cudaStream_t ss) { h_tile_min<A, 0><<<last + 1, 512, 0, ss>>>((A*)st, last); }});
    vars.push_back({checks[1], 8, [=](cudaStream_t ss) { h_tile_min<A, 1><<<last + 1, 512, 0, ss>>>((A*)st, last); }});
    vars.push_back({checks[2], 8, [=](cudaStream_t ss) { h_tile_min<A, 2><<<last + 1, 512, 0, ss>>>((A*)st, last); }});
    vars.push_back({checks[3], 8, [=](cudaStream_t ss) { h_tile_min<A, 3><<<last + 1, 512, 0, ss>>>((A*)st, last); }});
    vars.push_back({checks[4], 8, [=](cudaStream_t ss) { h_tile_min<A, 4><<<last + 1, 512, 0, ss>>>((A*)st, last); }});
    vars.push_back({"x-nc", 8, [=](cudaStream_t ss) { h_tile_x<A, true, false><<<(unsigned)(nv / 512), 512, 0, ss>>>((A*)st); }});
    vars.push_back({"x-paired", 8, [=](cudaStream_t ss) { h_tile_x<A, false, true><<<(unsigned)(nv / 512), 512, 0, ss>>>((A*)st); }});
    vars.push_back({"x-nc-paired", 8, [=](cudaStream_t ss) { h_tile_x<A, true, true><<<(unsigned)(nv / 512), 512, 0, ss>>>((A*)st); }});
    vars.push_back({"x-plain", 8, [=](cudaStream_t ss) { h_tile_x<A, false, false><<<(unsigned)(nv / 512), 512, 0, ss>>>((A*)st); }});
    vars.push_back({"multi2", 8, [=](cudaStream_t ss) { h_tile_multi<A, 2><<<(unsigned)(nv / 1024), 512, 0, ss>>>((A*)st); }});
    vars.push_back({"multi4", 8, [=](cudaStream_t ss) { h_tile_multi<A, 4><<<(unsigned)(nv / 2048), 512, 0, ss>>>((A*)st); }});
    for (int x : {2, 3, 4}) {
        static const char* ln[] = {"", "", "loop-x2", "loop-x3", "loop-x4"};
        vars.push_back({ln[x], 8, [=](cudaStream_t ss) { h_tile_loop<A><<<sms * x, 512, 0, ss>>>((A*)st, (unsigned)(nv / 512)); }});
    }
    vars.push_back({"bulk-s4-t256-x4", 8, [=](cudaStream_t ss) { h_bulk<A, 4, 256><<<sms * 4, 256, 4 * 8192, ss>>>((A*)st, nv / 512); }});
    vars.push_back({"bulk-s2-t256-x8", 8, [=](cudaStream_t ss) { h_bulk<A, 2, 256><<<sms * 8, 256, 2 * 8192, ss>>>((A*)st, nv / 512); }});
    vars.push_back({"bulk-s5-t512-x4", 8, [=](cudaStream_t ss) { h_bulk<A, 5, 512><<<sms * 4, 512, 5 * 8192, ss>>>((A*)st, nv / 512); }});
    vars.push_back({"bulk-s3-t128-x8", 8, [=](cudaStream_t ss) { h_bulk<A, 3, 128><<<sms * 8, 128, 3 * 8192, ss>>>((A*)st, nv / 512); }});
    vars.push_back({"bulk-s8-t256-x2", 8, [=](cudaStream_t ss) { h_bulk<A, 8, 256><<<sms * 2, 256, 8 * 8192, ss>>>((A*)st, nv / 512); }});
    if (!only.empty()) {
        std::vector<Var> kept;
        for (auto& v : vars)
            for (auto& o : only)
                if (std::string(v.name).rfind(o, 0) == 0) { kept.push_back(v); break; }
        vars = kept;
    }
    // correctness
    for (auto& v : vars) {
        const unsigned q = v.qv + qoff;
        CK(cudaMemcpy(rf, st, chunk, cudaMemcpyDeviceToDevice));
        ref_h<A><<<132 * 64, 128>>>((A*)rf, n / 2, q);
        v.f(0); CK(cudaGetLastError());
        CK(cudaMemset(dw, 0, 8)); count_diff<<<132 * 64, 128>>>((uint4*)st, (uint4*)rf, chunk / 16, dw);
        unsigned long long w; CK(cudaMemcpy(&w, dw, 8, cudaMemcpyDeviceToHost));
        if (w) printf("WRONG %s %s qv=%d: %llu\n", name, v.name, v.qv, w);
    }
    std::vector<std::vector<double>> r(vars.size());
    for (int round = 0; round < 3; round++) {
        const double ce = med(s, [&] { CK(cudaMemcpyAsync(xb, st, chunk, cudaMemcpyDeviceToDevice, s)); });
        for (size_t i = 0; i < vars.size(); i++) r[i].push_back(ce / med(s, [&] { vars[i].f(s); }));
    }
    for (size_t i = 0; i < vars.size(); i++) {
        auto x = r[i]; std::sort(x.begin(), x.end());
        printf("%s 2^%u qv=%d %-16s of_copy %.3f [%.3f, %.3f]\n", name, L, vars[i].qv, vars[i].name, x[1], x[0], x[2]);
    }
    cudaFree(st); cudaFree(xb); cudaFree(rf); cudaFree(dw);
}
int main(int argc, char** argv) {
    for (int i = 1; i < argc; i++) only.push_back(argv[i]);
    run<C2>("double", 30);
    run<C1>("single", 31);
    return 0;
}

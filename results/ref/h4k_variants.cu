// H at the qubit whose partners are 4 KiB apart (q = 8 double, q = 9
// single), where qbench's sv_h reads two 256-byte runs 4 KiB apart in each
// warp and an H200 streams it at 0.95 of its copy engine, against a dozen
// other ways of doing the same gate, each checked bit for bit against a
// one-pair-a-thread kernel, then timed against cudaMemcpyAsync on the same
// 16 GiB (median of 5 launches, 3 rounds): docs/kernels-roofline.md says
// what they showed and why qbench runs that qubit through sv_h_tile.
//   warp16-*        one warp per 8 KiB pair group, 16 vectors a lane (in order, lo/hi alternating; blocks of 128, 64, 32)
//   tile512x1       a block of 512 per group, one vector a thread, a __syncthreads
//   tile512-pairbar the same with each pair of warps meeting at its own named barrier (qbench's sv_h_tile, bare)
//   tile1024-pairbar9, tile256-pairbar7  the same for partners 8 KiB and 2 KiB apart
//   pair64          a block of 64: one warp of each half of a group
//   prod-sv_h_tile, prod-sv_h   qbench's two kernels from kernels/statevec.cu, as qbench launches them
//   tile-loadfirst  sv_h_tile's body with its load issued before the checks
//   tile256x2, tile128x4        a group per block of 256 or 128 threads, 2 or 4 vectors a thread
//   prod-sv_h also at partners 2 KiB and 8 KiB apart, where qbench runs it
// Build and run (the GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90 -DQB_VECTORS=1 -o h4k results/ref/h4k_variants.cu && ./h4k
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <functional>
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

__device__ __forceinline__ double2 ld_now(const double2* p) { double2 v; asm volatile("ld.global.v2.f64 {%0,%1}, [%2];" : "=d"(v.x), "=d"(v.y) : "l"(p)); return v; }
__device__ __forceinline__ float4 ld_now(const float4* p) { float4 v; asm volatile("ld.global.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p)); return v; }
template <typename A>
__global__ void h_tile_lf(A* amp, u64 n, unsigned q) {
    typedef typename Ops<A>::V V;
    extern __shared__ uint4 qb_shared[];
    V* sh = (V*)qb_shared; V* vec = (V*)amp;
    const u64 tile = blockDim.x, nv = n / Ops<A>::E;
    if ((u64)gridDim.x * tile == nv) {
        const V v = ld_now(vec + blockIdx.x * tile + threadIdx.x);
        if (tile_fits<A>(q)) { tile_step<A>(vec, sh, blockIdx.x, v, q, false); return; }
    }
    hadamard_tile<A>(amp, n, q);
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

template <typename A> void run(const char* name, unsigned L) {
    const u64 n = 1ULL << L, chunk = n * sizeof(A);
    const unsigned E = Ops<A>::E, qoff = E == 2 ? 1 : 0;
    char *st, *xb, *rf; CK(cudaMalloc(&st, chunk)); CK(cudaMalloc(&xb, chunk)); CK(cudaMalloc(&rf, chunk));
    unsigned long long* dw; CK(cudaMalloc(&dw, 8));
    fill_random<<<132 * 64, 128>>>((float*)st, chunk / 4, 1); CK(cudaDeviceSynchronize());
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const u64 nv = n / E;
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
    vars.push_back({"prod-sv_h_tile", 8, [=](cudaStream_t ss) { unsigned qq = 8 + qoff; if (E == 1) sv_h_tile_double<<<(unsigned)(nv / 512), 512, 512 * 16, ss>>>((C2*)st, n, qq); else sv_h_tile_single<<<(unsigned)(nv / 512), 512, 512 * 16, ss>>>((C1*)st, n, qq); }});
    vars.push_back({"tile-loadfirst", 8, [=](cudaStream_t ss) { unsigned qq = 8 + qoff; h_tile_lf<A><<<(unsigned)(nv / 512), 512, 512 * 16, ss>>>((A*)st, n, qq); }});
    vars.push_back({"tile256x2", 8, [=](cudaStream_t ss) { h_tile<A, 2><<<(unsigned)(nv / 512), 256, 512 * 16, ss>>>((A*)st, n, 8); }});
    vars.push_back({"tile128x4", 8, [=](cudaStream_t ss) { h_tile<A, 4><<<(unsigned)(nv / 512), 128, 512 * 16, ss>>>((A*)st, n, 8); }});
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
int main() { run<C2>("double", 30); run<C1>("single", 31); return 0; }

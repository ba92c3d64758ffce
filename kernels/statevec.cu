// State-vector kernels of `qbench exchange`, compiled at run time with
// NVRTC: the product state written and checked from two tables
// (src/workload/exchange/state.rs), the Hadamard gate on a local qubit, the
// combine step of a gate on a global qubit, and a 16-byte copy used to push
// amplitudes into a peer GPU's memory over NVLink.
// Indices are 64-bit: one chunk can hold 2^32 amplitudes and more.
//
// The gate, combine and copy kernels stream the chunk at the memory roofline
// (docs/kernels-roofline.md): every access is a 16-byte vector (one
// complex<double>, or two complex<float>), a warp's accesses are 512
// contiguous bytes, and each thread issues all its loads before its first
// store. The work is cut into tiles of blockDim.x * QB_VECTORS vectors
// (vector pairs, for H on a far qubit): block b takes tiles b,
// b + gridDim.x, ... so that any grid is correct, and the launch
// (src/gpu/kernels.rs, streaming) gives each block one tile, so that the
// hardware hands out small tiles to whichever multiprocessor is free and no
// block is left running alone at the end. The last, partial tile, which
// only registers smaller than one tile have, is done element by element.

typedef unsigned long long u64;

struct __align__(8) C1 { float x, y; };    // complex<float>, 8 bytes
struct __align__(16) C2 { double x, y; };  // complex<double>, 16 bytes

#define SQRT1_2 0.70710678118654752440

// 16-byte vectors (pairs of them, for H on a far qubit) each thread takes
// in a full tile: src/gpu/kernels.rs passes its VECTORS, and launches a
// thread for each QB_VECTORS. One a thread, in many small blocks, streams
// fastest on an H200 (results/ref/copy_shapes.cu).
#ifndef QB_VECTORS
#error "define QB_VECTORS, the 16-byte vectors a thread takes (src/gpu/kernels.rs, VECTORS)"
#endif

// R: the real type; V: the 16-byte vector; E: amplitudes per vector.
template <typename A> struct Ops;
template <> struct Ops<C1> {
    typedef float R;
    typedef float4 V;
    enum { E = 2 };
};
template <> struct Ops<C2> {
    typedef double R;
    typedef double2 V;
    enum { E = 1 };
};

template <typename A>
__device__ __forceinline__ A make(double x, double y) {
    A a;
    a.x = (typename Ops<A>::R)x;
    a.y = (typename Ops<A>::R)y;
    return a;
}

// The streamed accesses. With QB_STREAMING, loads and stores carry the
// evict-first hint (ld.global.cs / st.global.cs): every byte is touched once.
#ifdef QB_STREAMING
template <typename V> __device__ __forceinline__ V ld(const V* p) { return __ldcs(p); }
template <typename V> __device__ __forceinline__ void st(V* p, V v) { __stcs(p, v); }
#else
template <typename V> __device__ __forceinline__ V ld(const V* p) { return *p; }
template <typename V> __device__ __forceinline__ void st(V* p, V v) { *p = v; }
#endif

// Between a thread's loads and its stores, so that all the loads are in
// flight before the first store, which waits a whole round trip for its
// own: the front end may not move memory accesses across it. A guard: with
// plain loads the SASS is the same without it. ptxas can still reorder what
// it knows does not alias, and did, putting a store of combine ahead of its
// last loads when they were ld.global.nc (from __restrict__).
#define QB_LOADS_BEFORE_STORES() asm volatile("" ::: "memory")

// (x + s * y) / √2, per component; s is +1 or −1.
__device__ __forceinline__ C1 mix(C1 x, C1 y, float s) {
    const float c = (float)SQRT1_2;
    C1 r;
    r.x = c * (x.x + s * y.x);
    r.y = c * (x.y + s * y.y);
    return r;
}
__device__ __forceinline__ C2 mix(C2 x, C2 y, double s) {
    const double c = SQRT1_2;
    C2 r;
    r.x = c * (x.x + s * y.x);
    r.y = c * (x.y + s * y.y);
    return r;
}
__device__ __forceinline__ float4 mix(float4 x, float4 y, float s) {
    const float c = (float)SQRT1_2;
    return make_float4(c * (x.x + s * y.x), c * (x.y + s * y.y), c * (x.z + s * y.z), c * (x.w + s * y.w));
}
__device__ __forceinline__ double2 mix(double2 x, double2 y, double s) {
    const double c = SQRT1_2;
    return make_double2(c * (x.x + s * y.x), c * (x.y + s * y.y));
}

// amplitude(g) = lo[g mod 2^split] * hi[g >> split], in double.
__device__ __forceinline__ double2 expected(u64 g, const double2* lo, const double2* hi, unsigned split) {
    double2 a = lo[g & ((1ULL << split) - 1)], b = hi[g >> split];
    return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

template <typename A>
__device__ void init(A* amp, u64 n, u64 base, const double2* lo, const double2* hi, unsigned split) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        double2 e = expected(base + i, lo, hi, split);
        amp[i] = make<A>(e.x, e.y);
    }
}

// Counts amplitudes whose distance to the expected one exceeds rel × |expected|.
template <typename A>
__device__ void check(const A* amp, u64 n, u64 base, const double2* lo, const double2* hi, unsigned split, double rel,
                      u64* wrong) {
    u64 local = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        double2 e = expected(base + i, lo, hi, split);
        double dx = (double)amp[i].x - e.x, dy = (double)amp[i].y - e.y;
        double err2 = dx * dx + dy * dy, lim2 = rel * rel * (e.x * e.x + e.y * e.y);
        if (!(err2 <= lim2)) local++;  // NaN counts as wrong
    }
    if (local) atomicAdd(wrong, local);
}

// H on qubit q for pairs k, k + step, ... below k1 (pair k: amplitudes i
// and i + 2^q, i being k with a 0 bit inserted at q), one pair at a time:
// a partial tile, or a kernel called for qubits it has no tiles for.
template <typename A>
__device__ void hadamard_pairs(A* amp, u64 k, u64 k1, u64 step, unsigned q) {
    const u64 low = (1ULL << q) - 1;
    for (; k < k1; k += step) {
        const u64 i = ((k & ~low) << 1) | (k & low);
        const A a = amp[i], b = amp[i + low + 1];
        amp[i] = mix(a, b, 1);
        amp[i + low + 1] = mix(a, b, -1);
    }
}

// H on qubit q < 5 (pairs within 32 vectors): a full tile's vectors are
// loaded contiguously, lane by lane, and each lane gets its partner's by a
// shuffle from lane ^ 2^q (complex<double>) or, for complex<float>, from
// lane ^ 2^(q-1), or from its own vector when q = 0.
__device__ __forceinline__ float shfl(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ double shfl(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }

// The new value of vector v, number i, under H on qubit q < 5.
__device__ __forceinline__ double2 h_lane(double2 v, u64 i, unsigned q) {
    const int m = 1 << q;
    const double2 p = make_double2(shfl(v.x, m), shfl(v.y, m));
    // |0> half: (v + p)/√2; |1> half: (p − v)/√2
    return mix(p, v, ((i >> q) & 1) ? -1.0 : 1.0);
}
__device__ __forceinline__ float4 h_lane(float4 v, u64 i, unsigned q) {
    const float c = (float)SQRT1_2;
    if (q == 0)  // the pair is this vector: (a, b) -> ((a + b)/√2, (a − b)/√2)
        return make_float4(c * (v.x + v.z), c * (v.y + v.w), c * (v.x - v.z), c * (v.y - v.w));
    const int m = 1 << (q - 1);
    const float4 p = make_float4(shfl(v.x, m), shfl(v.y, m), shfl(v.z, m), shfl(v.w, m));
    return mix(p, v, ((i >> (q - 1)) & 1) ? -1.0f : 1.0f);
}

template <typename A>
__device__ void hadamard_near(A* amp, u64 n, unsigned q) {
    typedef typename Ops<A>::V V;
    enum { NV = QB_VECTORS };
    V* vec = (V*)amp;
    const u64 tile = (u64)blockDim.x * NV, nv = n / Ops<A>::E;
    // Whole tiles: every lane of every warp takes part in each shuffle.
    u64 t = blockIdx.x;
    for (; (t + 1) * tile <= nv; t += gridDim.x) {
        const u64 i0 = t * tile + threadIdx.x;
        V v[NV];
#pragma unroll
        for (int u = 0; u < NV; u++) v[u] = ld(vec + i0 + u * blockDim.x);
        QB_LOADS_BEFORE_STORES();
#pragma unroll
        for (int u = 0; u < NV; u++) st(vec + i0 + u * blockDim.x, h_lane(v[u], i0 + u * blockDim.x, q));
    }
    // The partial tile, if this block's turn: a tile holds whole pairs
    // (QB_VECTORS * blockDim.x ≥ 32 vectors ≥ 2^(q+1) amplitudes), so the
    // rest is pairs from the tile's first amplitude / 2 to n / 2.
    if (t * tile < nv) hadamard_pairs(amp, t * tile * Ops<A>::E / 2 + threadIdx.x, n / 2, blockDim.x, q);
}

// H on qubit q ≥ 5 (each half of a pair in runs of ≥ 16 vectors): pairs of
// vectors (j, j + 2^(q - log2 E)), QB_VECTORS pairs a thread, all loads
// before the stores; a warp reads two runs of 512 bytes.
template <typename A>
__device__ void hadamard_far(A* amp, u64 pairs, unsigned q) {
    typedef typename Ops<A>::V V;
    enum { NP = QB_VECTORS };
    V* vec = (V*)amp;
    const unsigned qv = q - (Ops<A>::E == 2 ? 1 : 0);  // the qubit's bit in a vector's index
    const u64 low = (1ULL << qv) - 1, half = 1ULL << qv;
    const u64 tile = (u64)blockDim.x * NP, np = pairs / Ops<A>::E;
    u64 t = blockIdx.x;
    for (; (t + 1) * tile <= np; t += gridDim.x) {
        const u64 k0 = t * tile + threadIdx.x;
        V a[NP], b[NP];
        u64 j[NP];
#pragma unroll
        for (int u = 0; u < NP; u++) {
            const u64 k = k0 + u * blockDim.x;
            j[u] = ((k & ~low) << 1) | (k & low);
            a[u] = ld(vec + j[u]);
            b[u] = ld(vec + j[u] + half);
        }
        QB_LOADS_BEFORE_STORES();
#pragma unroll
        for (int u = 0; u < NP; u++) {
            st(vec + j[u], mix(a[u], b[u], 1));
            st(vec + j[u] + half, mix(a[u], b[u], -1));
        }
    }
    if (t * tile < np) hadamard_pairs(amp, t * tile * Ops<A>::E + threadIdx.x, pairs, blockDim.x, q);
}

// H on a global qubit, after the exchange: this rank holds the |0> (one = 0)
// or |1> (one = 1) amplitudes of each pair and `peer` holds the other.
// Two streams read, one written; QB_VECTORS vectors a thread. No
// __restrict__: with it the peer loads become ld.global.nc, which ptxas
// scheduled after the first store.
template <typename A>
__device__ void combine(A* amp, const A* peer, u64 n, int one) {
    typedef typename Ops<A>::V V;
    typedef typename Ops<A>::R R;
    enum { NV = QB_VECTORS };
    V* va = (V*)amp;
    const V* vp = (const V*)peer;
    // |0>: (a + p)/√2;  |1>: (p − a)/√2
    const R sign = one ? (R)-1 : (R)1;
    const u64 nv = n / Ops<A>::E, tile = (u64)blockDim.x * NV;
    u64 t = blockIdx.x;
    for (; (t + 1) * tile <= nv; t += gridDim.x) {
        const u64 i0 = t * tile + threadIdx.x;
        V a[NV], p[NV];
#pragma unroll
        for (int u = 0; u < NV; u++) {
            a[u] = ld(va + i0 + u * blockDim.x);
            p[u] = ld(vp + i0 + u * blockDim.x);
        }
        QB_LOADS_BEFORE_STORES();
#pragma unroll
        for (int u = 0; u < NV; u++) st(va + i0 + u * blockDim.x, mix(p[u], a[u], sign));
    }
    if (t * tile < nv)
        for (u64 i = t * tile * Ops<A>::E + threadIdx.x; i < n; i += blockDim.x) amp[i] = mix(peer[i], amp[i], sign);
}

// Each H kernel is right for every qubit, fast for its own: sv_h_warp for
// q < 5, which qbench launches with a thread for each QB_VECTORS vectors,
// and sv_h for q >= 5, a thread for each QB_VECTORS vector pairs
// (src/transport/amplitudes/gpu/mod.rs, local_h). The other qubits go pair by pair, which keeps each kernel's
// registers those of its own path.
#define QB_SV(NAME, A)                                                                                         \
    extern "C" __global__ void sv_init_##NAME(A* amp, u64 n, u64 base, const double2* lo, const double2* hi,    \
                                              unsigned split) {                                                \
        init<A>(amp, n, base, lo, hi, split);                                                                  \
    }                                                                                                          \
    extern "C" __global__ void sv_check_##NAME(const A* amp, u64 n, u64 base, const double2* lo,               \
                                               const double2* hi, unsigned split, double rel, u64* wrong) {     \
        check<A>(amp, n, base, lo, hi, split, rel, wrong);                                                     \
    }                                                                                                          \
    extern "C" __global__ void sv_h_##NAME(A* __restrict__ amp, u64 pairs, unsigned q) {                       \
        if (q >= 5)                                                                                            \
            hadamard_far<A>(amp, pairs, q);                                                                    \
        else                                                                                                   \
            hadamard_pairs<A>(amp, blockIdx.x * (u64)blockDim.x + threadIdx.x, pairs,                          \
                              (u64)gridDim.x * blockDim.x, q);                                                 \
    }                                                                                                          \
    extern "C" __global__ void sv_h_warp_##NAME(A* __restrict__ amp, u64 n, unsigned q) {                      \
        if (q < 5)                                                                                             \
            hadamard_near<A>(amp, n, q);                                                                       \
        else                                                                                                   \
            hadamard_pairs<A>(amp, blockIdx.x * (u64)blockDim.x + threadIdx.x, n / 2,                          \
                              (u64)gridDim.x * blockDim.x, q);                                                 \
    }                                                                                                          \
    extern "C" __global__ void sv_combine_##NAME(A* amp, const A* peer, u64 n, int one) {                     \
        combine<A>(amp, peer, n, one);                                                                         \
    }

QB_SV(single, C1)
QB_SV(double, C2)

// dst[i] = src[i] for n 16-byte words; dst may be a peer GPU's memory.
// Tiles of QB_VECTORS words a thread, loads before stores, as above.
extern "C" __global__ void sv_copy16(uint4* __restrict__ dst, const uint4* __restrict__ src, u64 n) {
    const u64 tile = (u64)blockDim.x * QB_VECTORS;
    u64 t = blockIdx.x;
    for (; (t + 1) * tile <= n; t += gridDim.x) {
        const u64 i = t * tile + threadIdx.x;
        uint4 v[QB_VECTORS];
#pragma unroll
        for (int u = 0; u < QB_VECTORS; u++) v[u] = ld(src + i + u * blockDim.x);
        QB_LOADS_BEFORE_STORES();
#pragma unroll
        for (int u = 0; u < QB_VECTORS; u++) st(dst + i + u * blockDim.x, v[u]);
    }
    if (t * tile < n)
        for (u64 i = t * tile + threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

// State-vector kernels of `qbench exchange`, compiled at run time with
// NVRTC: the product state written and checked from two tables
// (src/statevec/state.rs), the Hadamard gate on a local qubit, the combine
// step of a gate on a global qubit, the other gates of circuits (a one-qubit
// unitary, a phase, swaps of amplitude pairs), the packing of a half to
// send, and a 16-byte copy used to push amplitudes into a peer GPU's memory
// over NVLink.
// Indices are 64-bit: one chunk can hold 2^32 amplitudes and more.
//
// The gate, combine and copy kernels stream the chunk at the memory roofline
// (docs/kernels-roofline.md): every access is a 16-byte vector (one
// complex<double>, or two complex<float>), a warp's accesses are 512
// contiguous bytes (two runs of 256 for H on a far qubit), and each thread
// issues all its loads before its first store. The work is cut into tiles
// of blockDim.x * QB_VECTORS vectors: block b takes tiles b,
// b + gridDim.x, ... so that any grid is correct, and the launch
// (src/gpu/kernels.rs, streaming) gives each block one tile, so that the
// hardware hands out small tiles to whichever multiprocessor is free and no
// block is left running alone at the end. The last, partial tile, which
// only registers smaller than one tile have, is done element by element.

typedef unsigned long long u64;

struct __align__(8) C1 { float x, y; };    // complex<float>, 8 bytes
struct __align__(16) C2 { double x, y; };  // complex<double>, 16 bytes

#define SQRT1_2 0.70710678118654752440

// 16-byte vectors each thread takes in a full tile: src/gpu/kernels.rs passes its VECTORS, and launches a
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

// Counts amplitudes whose distance to the expected one exceeds rel times
// the larger of |expected| and `floor` (floor2 = floor²).
template <typename A>
__device__ void check(const A* amp, u64 n, u64 base, const double2* lo, const double2* hi, unsigned split, double rel,
                      double floor2, u64* wrong) {
    u64 local = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        double2 e = expected(base + i, lo, hi, split);
        double dx = (double)amp[i].x - e.x, dy = (double)amp[i].y - e.y;
        double err2 = dx * dx + dy * dy, lim2 = rel * rel * fmax(e.x * e.x + e.y * e.y, floor2);
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

// H on qubit q ≥ 4 (complex<double>) or ≥ 5 (complex<float>), whose
// partners are 2^qv ≥ 16 vectors apart: each warp takes 16 vector pairs,
// lanes 0-15 their |0> vectors (256 contiguous bytes) and lanes 16-31
// their |1> vectors, one vector a lane (QB_VECTORS a thread, a warp apart),
// and a shuffle from lane ^ 16 brings each lane its partner. Each thread
// loads and stores what a copy's would.
__device__ __forceinline__ double2 shfl16(double2 v) { return make_double2(shfl(v.x, 16), shfl(v.y, 16)); }
__device__ __forceinline__ float4 shfl16(float4 v) {
    return make_float4(shfl(v.x, 16), shfl(v.y, 16), shfl(v.z, 16), shfl(v.w, 16));
}

template <typename A>
__device__ void hadamard_split(A* amp, u64 pairs, unsigned q) {
    typedef typename Ops<A>::V V;
    typedef typename Ops<A>::R R;
    enum { NV = QB_VECTORS };
    V* vec = (V*)amp;
    const unsigned qv = q - (Ops<A>::E == 2 ? 1 : 0);
    const u64 low = (1ULL << qv) - 1, half = 1ULL << qv;
    const unsigned lane = threadIdx.x & 31, upper = lane >> 4;
    // A tile: blockDim.x * QB_VECTORS vectors, half as many pairs.
    const u64 tile = (u64)blockDim.x * NV / 2, np = pairs / Ops<A>::E;
    u64 t = blockIdx.x;
    for (; (t + 1) * tile <= np; t += gridDim.x) {
        V v[NV];
        u64 j[NV];
#pragma unroll
        for (int u = 0; u < NV; u++) {
            const unsigned s = u * blockDim.x + threadIdx.x;     // this vector's slot in the tile
            const u64 k = t * tile + (s >> 5) * 16 + (s & 15);  // its pair
            j[u] = (((k & ~low) << 1) | (k & low)) + (upper ? half : 0);
            v[u] = ld(vec + j[u]);
        }
        QB_LOADS_BEFORE_STORES();
#pragma unroll
        for (int u = 0; u < NV; u++) {
            const V p = shfl16(v[u]);
            // |0>: (v + p)/√2, p the |1> vector; |1>: (p − v)/√2, p the |0> vector
            st(vec + j[u], upper ? mix(p, v[u], (R)-1) : mix(v[u], p, (R)1));
        }
    }
    if (t * tile < np) hadamard_pairs(amp, t * tile * Ops<A>::E + threadIdx.x, pairs, blockDim.x, q);
}

// sv_h_4k's barrier: the warps that hold each other's partners meet at
// named barrier `id`, `threads` threads (results/ref/emulate.cpp has its own).
#ifndef QB_PAIR_BARRIER
#define QB_PAIR_BARRIER(id, threads) asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory")
#endif

// H on the qubit whose partners are 4 KiB apart (q = 8 complex<double>,
// q = 9 complex<float>: SLOW_PARTNER_BYTES in src/statevec/layout.rs), where
// sv_h's warps, each reading two 256-byte runs 4 KiB apart, stream at 0.95
// of the copy engine on an H200. One block of 512 threads for each 8 KiB
// pair group, read contiguously as a copy reads: each thread loads one
// vector, leaves it in shared memory and takes its partner's, 256 vectors
// on, after a barrier that only the two warps holding partners meet, then
// stores its own new value. Each block does one load and one store a
// thread, so whatever comes before the load lengthens every block's life:
// the block size and the distance are constants, and nothing but the
// address comes before the load. It ran at 0.971 of the copy engine where
// a kernel right for any grid and qubit, with its checks and index
// arithmetic ahead of the load, ran at 0.960-0.964; a check of the block
// index or of the block's size, or a clamp of the index, ahead of the
// load cost 0.002-0.005 (docs/kernels-roofline.md). So the launch must be
// exactly one block of 512 for each group (src/gpu/kernels.rs,
// pair_groups). In a block of another size the partner warp may not
// exist: each warp then passes a barrier of its own 32 threads and writes
// amplitudes that the data check reports wrong, rather than wait forever.
#define QB_GROUP 512u
template <typename A>
__device__ __forceinline__ void hadamard_4k(A* amp) {
    typedef typename Ops<A>::V V;
    typedef typename Ops<A>::R R;
    __shared__ V sh[QB_GROUP];
    const unsigned j = threadIdx.x, half = QB_GROUP / 2;
    V* p = (V*)amp + (u64)blockIdx.x * QB_GROUP + j;
    const V v = ld(p);
    sh[j] = v;
    // warps w and w + 8 name barrier w mod 8
    QB_PAIR_BARRIER((j >> 5) & ~(half >> 5), blockDim.x == QB_GROUP ? 64 : 32);
    // |0> half: (v + p)/√2; |1> half: (p − v)/√2
    st(p, mix(sh[j ^ half], v, (j & half) ? (R)-1 : (R)1));
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

// The gates of circuits other than H, and the packing of a half to send:
// a thread an amplitude (or a pair), grid-stride, each touching only the
// amplitudes its gate changes. An index with a 0 inserted at every set bit
// of `fixed` (lowest first) walks the amplitudes whose bits there are
// given: ORing in the wanted bits picks them.
__device__ __forceinline__ u64 spread(u64 k, u64 fixed) {
    for (u64 m = fixed; m; m &= m - 1) {
        const u64 b = m & (~m + 1);
        k = ((k & ~(b - 1)) << 1) | (k & (b - 1));
    }
    return k;
}

// a × (fx + i fy), in the amplitude's precision.
template <typename A>
__device__ __forceinline__ A cmul(A a, double fx, double fy) {
    typedef typename Ops<A>::R R;
    const R x = (R)fx, y = (R)fy;
    A r;
    r.x = a.x * x - a.y * y;
    r.y = a.x * y + a.y * x;
    return r;
}

template <typename A>
__device__ __forceinline__ A cadd(A a, A b) {
    a.x += b.x;
    a.y += b.y;
    return a;
}

#define QB_EACH(k, count) for (u64 k = blockIdx.x * (u64)blockDim.x + threadIdx.x; k < (count); k += (u64)gridDim.x * blockDim.x)

// A one-qubit unitary on local qubit q: |0> -> m00|0> + m10|1>.
template <typename A>
__device__ void unitary(A* amp, u64 pairs, unsigned q, const double* m) {
    const u64 bit = 1ULL << q;
    QB_EACH(k, pairs) {
        const u64 i0 = spread(k, bit), i1 = i0 | bit;
        const A a = amp[i0], b = amp[i1];
        amp[i0] = cadd(cmul(a, m[0], m[1]), cmul(b, m[2], m[3]));
        amp[i1] = cadd(cmul(a, m[4], m[5]), cmul(b, m[6], m[7]));
    }
}

// The amplitudes whose bits `ones` are set, times (px + i py).
template <typename A>
__device__ void phase_ones(A* amp, u64 count, u64 ones, double px, double py) {
    QB_EACH(k, count) {
        const u64 i = spread(k, ones) | ones;
        amp[i] = cmul(amp[i], px, py);
    }
}

// Amplitudes i and i ^ flip swapped, i having bits `ones` set and `zeros` clear.
template <typename A>
__device__ void swap_pairs(A* amp, u64 count, u64 ones, u64 zeros, u64 flip) {
    QB_EACH(k, count) {
        const u64 i = spread(k, ones | zeros) | ones, j = i ^ flip;
        const A a = amp[i];
        amp[i] = amp[j];
        amp[j] = a;
    }
}

// The half whose bit `bit` is `value`, in order, to buf (pack) or from it (unpack).
template <typename A>
__device__ void pack_half(A* buf, const A* amp, u64 half, unsigned bit, int value) {
    QB_EACH(k, half) buf[k] = amp[spread(k, 1ULL << bit) | ((u64)value << bit)];
}
template <typename A>
__device__ void unpack_half(A* amp, const A* buf, u64 half, unsigned bit, int value) {
    QB_EACH(k, half) amp[spread(k, 1ULL << bit) | ((u64)value << bit)] = buf[k];
}

// amp = own × amp + received × peer.
template <typename A>
__device__ void mix_in(A* amp, const A* peer, u64 n, double ox, double oy, double rx, double ry) {
    QB_EACH(i, n) amp[i] = cadd(cmul(amp[i], ox, oy), cmul(peer[i], rx, ry));
}

// sv_h_warp and sv_h are right for every qubit and any launch, fast for
// their own (src/transport/amplitudes/gpu/mod.rs, local_h, launches them):
// sv_h_warp for q < 5 and sv_h for q ≥ 5, a thread for each QB_VECTORS
// vectors; the other qubits go pair by pair, which keeps each kernel's
// registers those of its own path. sv_h_4k does the qubit whose partners are
// 4 KiB apart, on its own launch only.
#define QB_SV(NAME, A)                                                                                         \
    extern "C" __global__ void sv_init_##NAME(A* amp, u64 n, u64 base, const double2* lo, const double2* hi,    \
                                              unsigned split) {                                                \
        init<A>(amp, n, base, lo, hi, split);                                                                  \
    }                                                                                                          \
    extern "C" __global__ void sv_check_##NAME(const A* amp, u64 n, u64 base, const double2* lo,               \
                                               const double2* hi, unsigned split, double rel, double floor2,    \
                                               u64* wrong) {                                                    \
        check<A>(amp, n, base, lo, hi, split, rel, floor2, wrong);                                             \
    }                                                                                                          \
    extern "C" __global__ void sv_h_##NAME(A* __restrict__ amp, u64 pairs, unsigned q) {                       \
        if (q >= (Ops<A>::E == 2 ? 5u : 4u))                                                                   \
            hadamard_split<A>(amp, pairs, q);                                                                  \
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
    extern "C" __global__ void __launch_bounds__(QB_GROUP) sv_h_4k_##NAME(A* __restrict__ amp) {               \
        hadamard_4k<A>(amp);                                                                                   \
    }                                                                                                          \
    extern "C" __global__ void sv_combine_##NAME(A* amp, const A* peer, u64 n, int one) {                     \
        combine<A>(amp, peer, n, one);                                                                         \
    }                                                                                                          \
    extern "C" __global__ void sv_u_##NAME(A* amp, u64 pairs, unsigned q, double m00x, double m00y, double m01x, \
                                           double m01y, double m10x, double m10y, double m11x, double m11y) {   \
        const double m[8] = {m00x, m00y, m01x, m01y, m10x, m10y, m11x, m11y};                                   \
        unitary<A>(amp, pairs, q, m);                                                                          \
    }                                                                                                          \
    extern "C" __global__ void sv_phase_##NAME(A* amp, u64 count, u64 ones, double px, double py) {            \
        phase_ones<A>(amp, count, ones, px, py);                                                                   \
    }                                                                                                          \
    extern "C" __global__ void sv_pairs_##NAME(A* amp, u64 count, u64 ones, u64 zeros, u64 flip) {             \
        swap_pairs<A>(amp, count, ones, zeros, flip);                                                              \
    }                                                                                                          \
    extern "C" __global__ void sv_pack_##NAME(A* buf, const A* amp, u64 half, unsigned bit, int value) {       \
        pack_half<A>(buf, amp, half, bit, value);                                                                  \
    }                                                                                                          \
    extern "C" __global__ void sv_unpack_##NAME(A* amp, const A* buf, u64 half, unsigned bit, int value) {     \
        unpack_half<A>(amp, buf, half, bit, value);                                                                \
    }                                                                                                          \
    extern "C" __global__ void sv_mix_##NAME(A* amp, const A* peer, u64 n, double ox, double oy, double rx,    \
                                             double ry) {                                                      \
        mix_in<A>(amp, peer, n, ox, oy, rx, ry);                                                               \
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

// State-vector kernels of `qbench exchange`, compiled at run time with
// NVRTC: the product state written and checked from two tables
// (src/workload/exchange/state.rs), the Hadamard gate on a local qubit, the
// combine step of a gate on a global qubit, and a 16-byte copy used to push
// amplitudes into a peer GPU's memory over NVLink.
// Indices are 64-bit: one chunk can hold 2^32 amplitudes and more.

typedef unsigned long long u64;

struct C1 { float x, y; };    // complex<float>, 8 bytes
struct C2 { double x, y; };   // complex<double>, 16 bytes

#define SQRT1_2 0.70710678118654752440

template <typename A> struct Ops;
template <> struct Ops<C1> {
    typedef float R;
};
template <> struct Ops<C2> {
    typedef double R;
};

template <typename A>
__device__ __forceinline__ A make(double x, double y) {
    A a;
    a.x = (typename Ops<A>::R)x;
    a.y = (typename Ops<A>::R)y;
    return a;
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

// H on local qubit q: pairs (i, i + 2^q) with bit q of i clear. Each thread
// takes UNROLL pairs a grid stride apart, loading all before storing, so
// that enough bytes are in flight to saturate HBM.
#define UNROLL 4
template <typename A>
__device__ void hadamard(A* amp, u64 pairs, unsigned q) {
    typedef typename Ops<A>::R R;
    const u64 low = (1ULL << q) - 1, stride = (u64)gridDim.x * blockDim.x;
    for (u64 k0 = blockIdx.x * (u64)blockDim.x + threadIdx.x; k0 < pairs; k0 += stride * UNROLL) {
        A a[UNROLL], b[UNROLL];
        u64 idx[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            u64 k = k0 + u * stride;
            idx[u] = ((k & ~low) << 1) | (k & low);
            if (k < pairs) {
                a[u] = amp[idx[u]];
                b[u] = amp[idx[u] + low + 1];
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            if (k0 + u * stride < pairs) {
                A s, d;
                s.x = (R)SQRT1_2 * (a[u].x + b[u].x);
                s.y = (R)SQRT1_2 * (a[u].y + b[u].y);
                d.x = (R)SQRT1_2 * (a[u].x - b[u].x);
                d.y = (R)SQRT1_2 * (a[u].y - b[u].y);
                amp[idx[u]] = s;
                amp[idx[u] + low + 1] = d;
            }
        }
    }
}

// H on local qubit q < 5, whose pairs lie within a warp: each thread loads
// contiguous amplitudes (fully coalesced) and gets its partner's value from
// lane ^ 2^q by shuffle. n is a multiple of 32 * UNROLL and every warp runs
// whole iterations, so all lanes take part in each shuffle.
__device__ __forceinline__ float shfl(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ double shfl(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }

template <typename A>
__device__ void hadamard_warp(A* amp, u64 n, unsigned q) {
    typedef typename Ops<A>::R R;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const int m = 1 << q;
    for (u64 i0 = blockIdx.x * (u64)blockDim.x + threadIdx.x; i0 < n; i0 += stride * UNROLL) {
        A v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            u64 i = i0 + u * stride;
            if (i < n) v[u] = amp[i];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            u64 i = i0 + u * stride;
            A p, r;
            p.x = shfl(v[u].x, m);
            p.y = shfl(v[u].y, m);
            // |0> half: (v + p)/√2; |1> half: (p − v)/√2
            R sign = ((i >> q) & 1) ? (R)-1 : (R)1;
            r.x = (R)SQRT1_2 * (p.x + sign * v[u].x);
            r.y = (R)SQRT1_2 * (p.y + sign * v[u].y);
            if (i < n) amp[i] = r;
        }
    }
}

// H on a global qubit, after the exchange: this rank holds the |0> (one = 0)
// or |1> (one = 1) amplitudes of each pair and `peer` holds the other.
template <typename A>
__device__ void combine(A* amp, const A* peer, u64 n, int one) {
    typedef typename Ops<A>::R R;
    const R sign = one ? (R)-1 : (R)1;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        A a = amp[i], p = peer[i], r;
        // |0>: (a + p)/√2;  |1>: (p − a)/√2
        r.x = (R)SQRT1_2 * (p.x + sign * a.x);
        r.y = (R)SQRT1_2 * (p.y + sign * a.y);
        amp[i] = r;
    }
}

#define QB_SV(NAME, A)                                                                                         \
    extern "C" __global__ void sv_init_##NAME(A* amp, u64 n, u64 base, const double2* lo, const double2* hi,    \
                                              unsigned split) {                                                \
        init<A>(amp, n, base, lo, hi, split);                                                                  \
    }                                                                                                          \
    extern "C" __global__ void sv_check_##NAME(const A* amp, u64 n, u64 base, const double2* lo,               \
                                               const double2* hi, unsigned split, double rel, u64* wrong) {     \
        check<A>(amp, n, base, lo, hi, split, rel, wrong);                                                     \
    }                                                                                                          \
    extern "C" __global__ void sv_h_##NAME(A* amp, u64 pairs, unsigned q) { hadamard<A>(amp, pairs, q); }      \
    extern "C" __global__ void sv_h_warp_##NAME(A* amp, u64 n, unsigned q) { hadamard_warp<A>(amp, n, q); }   \
    extern "C" __global__ void sv_combine_##NAME(A* amp, const A* peer, u64 n, int one) {                     \
        combine<A>(amp, peer, n, one);                                                                         \
    }

QB_SV(single, C1)
QB_SV(double, C2)

// dst[i] = src[i] for n 16-byte words; dst may be a peer GPU's memory.
extern "C" __global__ void sv_copy16(uint4* dst, const uint4* src, u64 n) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

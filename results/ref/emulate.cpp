// Runs kernels/statevec.cu and kernels/copy.cu on the CPU, one std::thread
// per CUDA thread (a block's threads at once, warps meeting at each shuffle),
// and compares every kernel's output with a plain loop's, at every qubit of
// small registers and on several grids and block sizes: the tiles, the
// partial tile and the pair-by-pair paths, and the circuits' kernels,
// without a GPU.
//
//     g++ -std=c++20 -O1 -pthread -ffp-contract=off -DQB_VECTORS=1 -o /tmp/emulate results/ref/emulate.cpp && /tmp/emulate
//
// QB_VECTORS is src/gpu/kernels.rs's VECTORS; other values test the kernels' other shapes.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

struct Dim { unsigned x = 1, y = 1, z = 1; };
static thread_local Dim threadIdx, blockIdx;
static Dim blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __align__(n) alignas(n)
#define __launch_bounds__(n)
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
template <typename T> T __ldcs(const T* p) { return *p; }
template <typename T> void __stcs(T* p, T v) { *p = v; }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

// sv_h_4k's pair barriers: 16 named barriers a block, of 64 threads or of
// 32. Its shared memory is a static of the kernel's, one for all the
// block's threads (blocks run one at a time).
static thread_local std::unique_ptr<std::barrier<>>* pair_barriers;
static thread_local std::unique_ptr<std::barrier<>>* warp_barriers;
#define QB_PAIR_BARRIER(id, threads) ((threads) == 64 ? pair_barriers : warp_barriers)[id]->arrive_and_wait()
#define __shared__ static

// A warp: its 32 threads meet twice at each shuffle.
struct Warp {
    std::barrier<> bar{32};
    unsigned long long slot[32];
};
static thread_local Warp* warp;
static thread_local int lane;
template <typename T> T shuffle_xor(T v, int m) {
    static_assert(sizeof(T) <= 8);
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    warp->slot[lane] = bits;
    warp->bar.arrive_and_wait();
    bits = warp->slot[lane ^ m];
    warp->bar.arrive_and_wait();
    T r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
}
inline float __shfl_xor_sync(unsigned, float v, int m) { return shuffle_xor(v, m); }
inline double __shfl_xor_sync(unsigned, double v, int m) { return shuffle_xor(v, m); }

#include "../../kernels/statevec.cu"
namespace copy_cu {
#define mix copy_mix
#define u64 copy_u64
#include "../../kernels/copy.cu"
#undef mix
#undef u64
}  // namespace copy_cu

// Runs `body` as a grid of `grid` blocks of `block` threads (block a multiple of 32).
static void launch(unsigned grid, unsigned block, const std::function<void()>& body) {
    gridDim.x = grid;
    blockDim.x = block;
    for (unsigned b = 0; b < grid; b++) {
        std::vector<std::unique_ptr<Warp>> warps;
        for (unsigned w = 0; w < block / 32; w++) warps.push_back(std::make_unique<Warp>());
        std::vector<std::unique_ptr<std::barrier<>>> bars, warp_bars;
        for (int i = 0; i < 16; i++) bars.push_back(std::make_unique<std::barrier<>>(64));
        for (int i = 0; i < 16; i++) warp_bars.push_back(std::make_unique<std::barrier<>>(32));
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; t++)
            threads.emplace_back([&, t] {
                blockIdx.x = b;
                threadIdx.x = t;
                warp = warps[t / 32].get();
                pair_barriers = bars.data();
                warp_barriers = warp_bars.data();
                lane = t % 32;
                body();
            });
        for (auto& t : threads) t.join();
    }
}

static int failures = 0;
template <typename T> static void expect_same(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
    if (std::memcmp(got.data(), want.data(), want.size() * sizeof(T)) != 0) {
        failures++;
        std::printf("FAIL %s\n", what);
    }
}

// H on qubit q by the textbook loop.
template <typename A> static void h_ref(std::vector<A>& v, unsigned q) {
    typedef typename Ops<A>::R R;
    const R c = (R)SQRT1_2;
    for (size_t i = 0; i < v.size(); i++)
        if (!(i >> q & 1)) {
            A a = v[i], b = v[i + (1ull << q)];
            v[i] = {c * (a.x + b.x), c * (a.y + b.y)};
            v[i + (1ull << q)] = {c * (a.x - b.x), c * (a.y - b.y)};
        }
}

template <typename A> static std::vector<A> random_state(size_t n, std::mt19937_64& rng) {
    std::normal_distribution<double> d;
    std::vector<A> v(n);
    for (auto& a : v) a = {(typename Ops<A>::R)d(rng), (typename Ops<A>::R)d(rng)};
    return v;
}

static unsigned blocks_for(unsigned long long threads, unsigned block) {
    return (unsigned)std::max(1ull, (threads + block - 1) / block);
}

// src/gpu/kernels.rs, streaming: a thread for each QB_VECTORS vectors.
static unsigned streaming(unsigned long long vectors, unsigned block) {
    return blocks_for((vectors + QB_VECTORS - 1) / QB_VECTORS, block);
}

template <typename A>
static void test_precision(const char* name, void (*h)(A*, u64, unsigned), void (*hw)(A*, u64, unsigned),
                           void (*h4k)(A*), void (*comb)(A*, const A*, u64, int)) {
    std::mt19937_64 rng(7);
    char what[160];
    for (unsigned L = 2; L <= 12; L++) {
        const u64 n = 1ull << L;
        for (unsigned block : {32u, 64u, 128u, 256u}) {
            // qbench's grids (src/transport/amplitudes/gpu/mod.rs), then one block and three.
            const u64 E = Ops<A>::E;
            for (int g = 0; g < 3; g++) {
                for (unsigned q = 0; q < L; q++) {
                    const auto start = random_state<A>(n, rng);
                    auto want = start;
                    h_ref(want, q);
                    auto got = start;
                    const unsigned gh = g == 0 ? streaming((n + E - 1) / E, block) : g == 1 ? 1 : 3;
                    launch(gh, block, [&] { h(got.data(), n / 2, q); });
                    std::snprintf(what, sizeof what, "sv_h_%s n=2^%u q=%u block=%u grid=%u", name, L, q, block, gh);
                    expect_same(got, want, what);
                    got = start;
                    const unsigned gw = g == 0 ? streaming(n / E, block) : g == 1 ? 1 : 3;
                    launch(gw, block, [&] { hw(got.data(), n, q); });
                    std::snprintf(what, sizeof what, "sv_h_warp_%s n=2^%u q=%u block=%u grid=%u", name, L, q, block, gw);
                    expect_same(got, want, what);
                }
                for (int one = 0; one < 2; one++) {
                    const auto amp = random_state<A>(n, rng), peer = random_state<A>(n, rng);
                    typedef typename Ops<A>::R R;
                    const R c = (R)SQRT1_2, s = one ? (R)-1 : (R)1;
                    auto want = amp;
                    for (u64 i = 0; i < n; i++)
                        want[i] = {c * (peer[i].x + s * amp[i].x), c * (peer[i].y + s * amp[i].y)};
                    auto got = amp;
                    const unsigned gc = g == 0 ? streaming((n + E - 1) / E, block) : g == 1 ? 1 : 3;
                    launch(gc, block, [&] { comb(got.data(), peer.data(), n, one); });
                    std::snprintf(what, sizeof what, "sv_combine_%s n=2^%u one=%d block=%u grid=%u", name, L, one, block, gc);
                    expect_same(got, want, what);
                }
            }
        }
    }
    // sv_h_4k at the qubit whose partners are 4 KiB apart, on its own
    // launch (src/gpu/kernels.rs, pair_groups), then in blocks of the wrong
    // size, which must not wait at the barriers and must leave wrong
    // amplitudes for the data check to find.
    const u64 E = Ops<A>::E, group = QB_GROUP;
    const unsigned q = E == 2 ? 9 : 8;
    for (unsigned L = q + 1; L <= 12; L++) {
        const u64 n = 1ull << L, groups = n / E / group;
        const auto start = random_state<A>(n, rng);
        auto want = start;
        h_ref(want, q);
        auto got = start;
        launch((unsigned)groups, group, [&] { h4k(got.data()); });
        std::snprintf(what, sizeof what, "sv_h_4k_%s n=2^%u q=%u groups=%llu", name, L, q, groups);
        expect_same(got, want, what);
        got = start;
        launch((unsigned)groups, group / 2, [&] { h4k(got.data()); });
        if (std::memcmp(got.data(), want.data(), n * sizeof(A)) == 0) {
            failures++;
            std::printf("FAIL sv_h_4k_%s n=2^%u: blocks of %llu gave the right amplitudes\n", name, L, group / 2);
        }
    }
}

// The circuits' kernels against plain loops written with the same
// arithmetic (bit for bit), at every qubit and pair of qubits of small
// registers, on qbench's grid (a thread an item, src/gpu/kernels.rs grid)
// and on one and three blocks.
template <typename A>
static void test_circuit_kernels(const char* name, void (*u)(A*, u64, unsigned, double, double, double, double, double,
                                                             double, double, double),
                                 void (*ph)(A*, u64, u64, double, double), void (*pr)(A*, u64, u64, u64, u64),
                                 void (*pk)(A*, const A*, u64, unsigned, int), void (*upk)(A*, const A*, u64, unsigned, int),
                                 void (*mx)(A*, const A*, u64, double, double, double, double)) {
    std::mt19937_64 rng(11);
    char what[160];
    const double m[8] = {0.6, 0.1, -0.2, 0.7, 0.3, -0.5, 0.8, 0.05};
    auto mul = [](A a, double fx, double fy) { return cmul(a, fx, fy); };
    for (unsigned L = 2; L <= 9; L++) {
        const u64 n = 1ull << L;
        for (unsigned block : {32u, 128u}) {
            for (int g = 0; g < 3; g++) {
                auto grid = [&](u64 items) { return g == 0 ? blocks_for(items, block) : g == 1 ? 1u : 3u; };
                for (unsigned q = 0; q < L; q++) {
                    const auto start = random_state<A>(n, rng);
                    auto want = start;
                    for (u64 i = 0; i < n; i++)
                        if (!(i >> q & 1)) {
                            const A a = start[i], b = start[i | 1ull << q];
                            want[i] = cadd(mul(a, m[0], m[1]), mul(b, m[2], m[3]));
                            want[i | 1ull << q] = cadd(mul(a, m[4], m[5]), mul(b, m[6], m[7]));
                        }
                    auto got = start;
                    launch(grid(n / 2), block, [&] { u(got.data(), n / 2, q, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]); });
                    std::snprintf(what, sizeof what, "sv_u_%s n=2^%u q=%u block=%u", name, L, q, block);
                    expect_same(got, want, what);
                    for (int value = 0; value < 2; value++) {
                        std::vector<A> buf(n / 2), want_buf;
                        for (u64 i = 0; i < n; i++)
                            if ((i >> q & 1) == (u64)value) want_buf.push_back(start[i]);
                        launch(grid(n / 2), block, [&] { pk(buf.data(), start.data(), n / 2, q, value); });
                        std::snprintf(what, sizeof what, "sv_pack_%s n=2^%u bit=%u value=%d", name, L, q, value);
                        expect_same(buf, want_buf, what);
                        const auto other = random_state<A>(n / 2, rng);
                        auto want_un = start;
                        for (u64 i = 0, k = 0; i < n; i++)
                            if ((i >> q & 1) == (u64)value) want_un[i] = other[k++];
                        auto un = start;
                        launch(grid(n / 2), block, [&] { upk(un.data(), other.data(), n / 2, q, value); });
                        std::snprintf(what, sizeof what, "sv_unpack_%s n=2^%u bit=%u value=%d", name, L, q, value);
                        expect_same(un, want_un, what);
                    }
                    for (unsigned r = 0; r < L; r++) {
                        // A phase on the amplitudes whose bits q and r are set (one bit when r == q).
                        const u64 ones = 1ull << q | 1ull << r;
                        auto wp = start;
                        for (u64 i = 0; i < n; i++)
                            if ((i & ones) == ones) wp[i] = mul(start[i], 0.28, -0.96);
                        auto gp = start;
                        const u64 count = n >> __builtin_popcountll(ones);
                        launch(grid(count), block, [&] { ph(gp.data(), count, ones, 0.28, -0.96); });
                        std::snprintf(what, sizeof what, "sv_phase_%s n=2^%u ones=%llx", name, L, ones);
                        expect_same(gp, wp, what);
                        if (r == q) continue;
                        // SWAP(q, r), and CNOT with control r and target q.
                        for (int swap = 0; swap < 2; swap++) {
                            const u64 on = swap ? 1ull << q : 1ull << r, off = swap ? 1ull << r : 1ull << q;
                            const u64 flip = swap ? (1ull << q | 1ull << r) : 1ull << q;
                            auto ws = start;
                            for (u64 i = 0; i < n; i++)
                                if ((i & on) == on && (i & off) == 0) std::swap(ws[i], ws[i ^ flip]);
                            auto gs = start;
                            launch(grid(n / 4), block, [&] { pr(gs.data(), n / 4, on, off, flip); });
                            std::snprintf(what, sizeof what, "sv_pairs_%s n=2^%u %s %u %u", name, L, swap ? "swap" : "cx", q, r);
                            expect_same(gs, ws, what);
                        }
                    }
                }
                const auto amp = random_state<A>(n, rng), peer = random_state<A>(n, rng);
                auto want = amp;
                for (u64 i = 0; i < n; i++) want[i] = cadd(mul(amp[i], 0.6, 0.0), mul(peer[i], 0.0, -0.8));
                auto got = amp;
                launch(grid(n), block, [&] { mx(got.data(), peer.data(), n, 0.6, 0.0, 0.0, -0.8); });
                std::snprintf(what, sizeof what, "sv_mix_%s n=2^%u block=%u", name, L, block);
                expect_same(got, want, what);
            }
        }
    }
}

static void test_copies() {
    std::mt19937_64 rng(9);
    char what[160];
    for (u64 bytes : {0ull, 1ull, 15ull, 16ull, 17ull, 1000ull, 4096ull, 16384ull, 16385ull, 40000ull, 65536ull + 7}) {
        for (unsigned block : {32u, 128u, 256u}) {
            for (int g = 0; g < 3; g++) {
                std::vector<uint4> src(bytes / 16 + 2), dst(bytes / 16 + 2), want;
                for (auto& w : src) w = {(unsigned)rng(), (unsigned)rng(), (unsigned)rng(), (unsigned)rng()};
                for (auto& w : dst) w = {~0u, ~0u, ~0u, ~0u};
                want = dst;
                std::memcpy(want.data(), src.data(), bytes);
                const unsigned gq = g == 0 ? streaming((bytes + 15) / 16, block) : g == 1 ? 1 : 3;
                launch(gq, block, [&] { copy_cu::qb_copy(dst.data(), src.data(), bytes); });
                std::snprintf(what, sizeof what, "qb_copy bytes=%llu block=%u grid=%u", bytes, block, gq);
                expect_same(dst, want, what);
                if (bytes % 16 == 0) {
                    for (auto& w : dst) w = {~0u, ~0u, ~0u, ~0u};
                    const unsigned gs = g == 0 ? streaming(bytes / 16, block) : g == 1 ? 1 : 3;
                    launch(gs, block, [&] { sv_copy16(dst.data(), src.data(), bytes / 16); });
                    std::snprintf(what, sizeof what, "sv_copy16 words=%llu block=%u grid=%u", bytes / 16, block, gs);
                    expect_same(dst, want, what);
                }
            }
        }
    }
}

int main() {
    test_precision<C1>("single", sv_h_single, sv_h_warp_single, sv_h_4k_single, sv_combine_single);
    test_precision<C2>("double", sv_h_double, sv_h_warp_double, sv_h_4k_double, sv_combine_double);
    test_circuit_kernels<C1>("single", sv_u_single, sv_phase_single, sv_pairs_single, sv_pack_single,
                             sv_unpack_single, sv_mix_single);
    test_circuit_kernels<C2>("double", sv_u_double, sv_phase_double, sv_pairs_double, sv_pack_double,
                             sv_unpack_double, sv_mix_double);
    test_copies();
    std::printf(failures ? "%d failed\n" : "every kernel matched\n", failures);
    return failures != 0;
}

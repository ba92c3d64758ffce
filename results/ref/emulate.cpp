// Runs kernels/statevec.cu and kernels/copy.cu on the CPU, one std::thread
// per CUDA thread (a block's threads at once, warps meeting at each shuffle),
// and compares every kernel's output with a plain loop's, at every qubit of
// small registers and on several grids and block sizes: the tiles, the
// partial tile and the pair-by-pair paths, without a GPU.
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
    test_copies();
    std::printf(failures ? "%d failed\n" : "every kernel matched\n", failures);
    return failures != 0;
}

// Times qbench's streaming kernels, compiled from the very files qbench's
// NVRTC compiles (kernels/statevec.cu, kernels/copy.cu), against the copy
// engine's device copy (cudaMemcpyAsync device to device) in the same
// process: the H gate at every qubit, the global gate's combine (two
// streams read, one written), the swap's placement (half a chunk, by the
// copy engine as qbench does and by sv_copy16), and the SM copies qb_copy
// and sv_copy16 on a whole chunk. Each figure is the median of 5 timed
// launches after one warm-up, in 3 rounds; each round times the copy
// engine first, and every ratio is to that round's copy. Before timing,
// every kernel's output is compared bit for bit with a plain one-pair-a-
// thread kernel's, at every qubit and on every grid shape timed.
//
// Build (the GPU machine's nvcc; -arch=sm_90 gives the same SASS as
// qbench's NVRTC cubin, docs/kernels-roofline.md):
//   nvcc -O3 -std=c++17 -arch=sm_90 -DQB_VECTORS=1 -o bench results/ref/kernels_bench.cu
//   (QB_VECTORS: src/gpu/kernels.rs's VECTORS, the 16-byte vectors a thread takes)
//   ... -DQB_STREAMING            the same kernels with evict-first loads and stores
//   ... -DQB_VECTORS=4            4 vectors a thread instead of 1, launched to match
//   ... -DQB_BASELINE             the kernels before (results/ref/baseline/), with their launch shapes
// Run:
//   ./bench [-o out.json] [--grids tiles,tiles256,wave,sm16] [--qubits all|edges|LO-HI] [--verify 0|1] double:30 single:31
// At the qubit whose partners are 4 KiB apart, H runs as qbench runs it (sv_h_4k, on its own
// launch whatever the grid below) and, as
// the row "h_split", through sv_h, which qbench uses for the other qubits from 5 up.
// Grids (qbench's kernels loop over tiles, so each is correct):
//   tiles  one tile a block, as qbench's src/gpu/kernels.rs grid() launches them
//   tiles256  the same with blocks of 256 threads, not 128
//   wave   a persistent grid: multiprocessors x resident blocks, each looping over tiles
//   sm16   at most 16 blocks a multiprocessor, the old grid() cap
// The baseline build has one grid, its own ("old").
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifdef QB_BASELINE
#include "baseline/statevec.cu"
#include "baseline/copy.cu"
static const char* BUILD = "baseline";
#define QB_GROUP 512u  // sv_h_4k's block; the baseline has no such kernel
#else
#include "../../kernels/statevec.cu"
#include "../../kernels/copy.cu"
#if defined(QB_STREAMING)
static const char* BUILD = "streaming";
#elif QB_VECTORS != 1
static const char* BUILD = "wide";
#else
static const char* BUILD = "qbench";
#endif
#endif

#include "bench_common.cuh"

static const unsigned BLOCK = 128;  // src/gpu/kernels.rs, BLOCK
static int sms = 0;

static unsigned plain_grid(u64 threads) {
    return (unsigned)std::min<u64>(std::max<u64>(1, (threads + BLOCK - 1) / BLOCK), (u64)sms * 64);
}

// ---- launch shapes ----

// Threads a block under grid shape `g`.
static unsigned block_of(const std::string& g) { return g == "tiles256" ? 256 : BLOCK; }

// Blocks for `threads` threads under grid shape `g` for kernel `f`.
static unsigned blocks(const std::string& g, u64 threads, const void* f) {
    const unsigned b = block_of(g);
    const u64 want = std::max<u64>(1, (threads + b - 1) / b);
    if (g == "tiles" || g == "tiles256") return (unsigned)std::min<u64>(want, (1ULL << 31) - 1);
    if (g == "wave") {
        int per = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, f, b, 0));
        return (unsigned)std::min<u64>(want, (u64)sms * per);
    }
    // sm16, and the baseline's own ("old"): src/gpu/kernels.rs before these kernels.
    return (unsigned)std::min<u64>(want, (u64)sms * 16);
}

// One precision's kernels, as the runtime's launch handles.
struct Kernels {
    const void *h, *hw, *ht, *comb;  // ht: sv_h_4k (none in the baseline)
};

// Qubits timed (--qubits LO-HI), where given.
static int q_lo = -1, q_hi = -1;

// The qubit's bit in a 16-byte vector's index, if its partners are 4 KiB
// apart (src/transport/amplitudes/gpu/mod.rs, local_h: sv_h_4k), else -1.
static int tile_qv(unsigned q, u64 e) {
    const int qv = (int)q - (e == 2 ? 1 : 0);
    return qv >= 0 && (16ULL << qv) == 4096 ? qv : -1;
}

// The threads qbench asks for (src/gpu/kernels.rs, streaming: a thread
// for each QB_VECTORS 16-byte vectors), in elements of each kernel's
// (gate and combine: vectors, or amplitudes for the baseline; 16-byte
// words; bytes for qb_copy); the baseline's, before these kernels, where
// they differ.
#ifdef QB_BASELINE
static const bool BY_VECTOR = false;
static const u64 GATE_PER_THREAD = 4, COMBINE_PER_THREAD = 1, COPY16_PER_THREAD = 1, QBCOPY_PER_THREAD = 64;
#else
static const bool BY_VECTOR = true;
static const u64 GATE_PER_THREAD = QB_VECTORS, COMBINE_PER_THREAD = QB_VECTORS, COPY16_PER_THREAD = QB_VECTORS,
                 QBCOPY_PER_THREAD = 16 * QB_VECTORS;
#endif

static void launch(const void* f, u64 threads, const std::string& grid, cudaStream_t s, void** args) {
    CK(cudaLaunchKernel(f, dim3(blocks(grid, threads, f)), dim3(block_of(grid)), args, 0, s));
}

// qbench's launches of each kernel, on a grid shape.
struct Launcher {
    Kernels k;
    std::string grid;
    u64 n;  // amplitudes
    u64 e;  // amplitudes a 16-byte vector holds
    // Elements of the gate and combine kernels: vectors, or the baseline's amplitudes.
    u64 elems(u64 amps) const { return BY_VECTOR ? (amps + e - 1) / e : amps; }
    // H as local_h launches it; `split`: sv_h even where sv_h_4k would run.
    void h(void* amp, unsigned q, cudaStream_t s, bool split = false) const {
        if (q < 5 && n >= 32 * 4) {  // local_h: sv_h_warp
            u64 nn = n;
            void* args[] = {&amp, &nn, &q};
            launch(k.hw, elems(n) / GATE_PER_THREAD, grid, s, args);
            return;
        }
        const int qv = tile_qv(q, e);
        if (k.ht && !split && qv >= 0 && (2ULL << qv) <= elems(n)) {  // sv_h_4k: a block a pair group
            void* args[] = {&amp};
            CK(cudaLaunchKernel(k.ht, dim3((unsigned)(elems(n) / QB_GROUP)), dim3(QB_GROUP), args, 0, s));
            return;
        }
        u64 pairs = n / 2;
        void* args[] = {&amp, &pairs, &q};
#ifdef QB_BASELINE
        launch(k.h, (elems(pairs) + GATE_PER_THREAD - 1) / GATE_PER_THREAD, grid, s, args);  // on amplitude pairs
#else
        launch(k.h, elems(n) / GATE_PER_THREAD, grid, s, args);  // sv_h: a thread for each QB_VECTORS vectors
#endif
    }
    void combine(void* amp, const void* peer, int one, cudaStream_t s) const {
        u64 nn = n;
        void* args[] = {&amp, &peer, &nn, &one};
        launch(k.comb, (elems(n) + COMBINE_PER_THREAD - 1) / COMBINE_PER_THREAD, grid, s, args);
    }
    void copy16(void* dst, const void* src, u64 bytes, cudaStream_t s) const {
        u64 words = bytes / 16;
        void* args[] = {&dst, &src, &words};
        launch((const void*)sv_copy16, (words + COPY16_PER_THREAD - 1) / COPY16_PER_THREAD, grid, s, args);
    }
    void qbcopy(void* dst, const void* src, u64 bytes, cudaStream_t s) const {
        // src/workload/copy/device.rs.
        void* args[] = {&dst, &src, &bytes};
        launch((const void*)qb_copy, (bytes + QBCOPY_PER_THREAD - 1) / QBCOPY_PER_THREAD, grid, s, args);
    }
};

// ---- timing ----

struct Timer {
    cudaStream_t s;
    std::vector<cudaEvent_t> ev;
    explicit Timer(cudaStream_t st) : s(st), ev(12) {
        for (auto& e : ev) CK(cudaEventCreate(&e));
    }
    // Median seconds of 5 timed runs after one warm-up.
    template <typename F> double median(F&& run) {
        run();
        for (int i = 0; i < 5; i++) {
            CK(cudaEventRecord(ev[2 * i], s));
            run();
            CK(cudaEventRecord(ev[2 * i + 1], s));
        }
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(s));
        std::vector<double> t;
        for (int i = 0; i < 5; i++) {
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
            t.push_back(ms * 1e-3);
        }
        std::sort(t.begin(), t.end());
        return t[2];
    }
};

struct Row {
    std::string precision, kernel, grid;
    unsigned log2n;
    int q;  // -1: not a gate
    u64 bytes;
    int round;
    double seconds, gbps, copy_gbps;
};

static std::vector<Row> rows;
static FILE* json = nullptr;
static int failures = 0;

static void emit(const Row& r) {
    rows.push_back(r);
    if (json)
        std::fprintf(json,
                     "%s{\"build\":\"%s\",\"precision\":\"%s\",\"log2_amplitudes\":%u,\"kernel\":\"%s\",\"grid\":\"%s\","
                     "\"qubit\":%d,\"bytes\":%llu,\"round\":%d,\"median_s\":%.9g,\"gbps\":%.3f,\"copy_gbps\":%.3f,"
                     "\"of_copy\":%.5f}",
                     rows.size() > 1 ? ",\n" : "", BUILD, r.precision.c_str(), r.log2n, r.kernel.c_str(),
                     r.grid.c_str(), r.q, (unsigned long long)r.bytes, r.round, r.seconds, r.gbps, r.copy_gbps,
                     r.gbps / r.copy_gbps);
    if (json) std::fflush(json);  // a run cut off keeps its rows
}

static void verify(const char* what, const void* got, const void* want, u64 bytes, unsigned long long* dwrong) {
    CK(cudaMemset(dwrong, 0, 8));
    count_diff<<<plain_grid(bytes / 16), BLOCK>>>((const uint4*)got, (const uint4*)want, bytes / 16, dwrong);
    CK(cudaGetLastError());
    unsigned long long wrong = 0;
    CK(cudaMemcpy(&wrong, dwrong, 8, cudaMemcpyDeviceToHost));
    if (wrong) {
        failures++;
        std::printf("WRONG %s: %llu of %llu 16-byte words differ from the reference\n", what, wrong,
                    (unsigned long long)(bytes / 16));
    }
}

template <typename A>
static void run_precision(const char* name, unsigned L, Kernels k, const std::vector<std::string>& grids,
                          bool all_qubits, bool check) {
    const u64 n = 1ULL << L, chunk = n * sizeof(A), half = chunk / 2;
    std::printf("== %s: %s, 2^%u amplitudes, chunk %.1f GiB\n", BUILD, name, L, chunk / 1073741824.0);
    std::fflush(stdout);
    char *state, *xbuf, *ref = nullptr;
    CK(cudaMalloc(&state, chunk));
    CK(cudaMalloc(&xbuf, chunk));
    if (check) CK(cudaMalloc(&ref, chunk));
    unsigned long long* dwrong;
    CK(cudaMalloc(&dwrong, 8));
    fill_random<<<plain_grid(chunk / 4), BLOCK>>>((float*)state, chunk / 4, 1);
    fill_random<<<plain_grid(chunk / 4), BLOCK>>>((float*)xbuf, chunk / 4, 2);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Timer timer(s);

    std::vector<int> qs;
    for (unsigned q = 0; q < L; q++)
        if (q_lo >= 0 ? (int)q >= q_lo && (int)q <= q_hi : all_qubits || q <= 6 || q == L / 2 || q + 2 >= L)
            qs.push_back((int)q);

    // Every kernel against the reference, on every grid, before any timing.
    if (check) {
        char what[200];
        for (const auto& g : grids) {
            const Launcher run{k, g, n, 16 / sizeof(A)};
            for (int q : qs) {
                CK(cudaMemcpy(ref, state, chunk, cudaMemcpyDeviceToDevice));
                ref_h<A><<<plain_grid(n / 2), BLOCK>>>((A*)ref, n / 2, q);
                run.h(state, q, 0);
                CK(cudaGetLastError());
                std::snprintf(what, sizeof what, "%s H q=%d grid=%s", name, q, g.c_str());
                verify(what, state, ref, chunk, dwrong);
                if (k.ht && tile_qv(q, 16 / sizeof(A)) >= 0) {
                    CK(cudaMemcpy(ref, state, chunk, cudaMemcpyDeviceToDevice));
                    ref_h<A><<<plain_grid(n / 2), BLOCK>>>((A*)ref, n / 2, q);
                    run.h(state, q, 0, true);
                    CK(cudaGetLastError());
                    std::snprintf(what, sizeof what, "%s H (sv_h) q=%d grid=%s", name, q, g.c_str());
                    verify(what, state, ref, chunk, dwrong);
                }
            }
            for (int one = 0; one < 2; one++) {
                CK(cudaMemcpy(ref, state, chunk, cudaMemcpyDeviceToDevice));
                ref_combine<A><<<plain_grid(n), BLOCK>>>((A*)ref, (const A*)xbuf, n, one);
                run.combine(state, xbuf, one, 0);
                CK(cudaGetLastError());
                std::snprintf(what, sizeof what, "%s combine one=%d grid=%s", name, one, g.c_str());
                verify(what, state, ref, chunk, dwrong);
            }
            CK(cudaMemset(ref, 0xA5, chunk));
            run.qbcopy(ref, state, chunk, 0);
            std::snprintf(what, sizeof what, "%s qb_copy grid=%s", name, g.c_str());
            verify(what, ref, state, chunk, dwrong);
            CK(cudaMemset(ref, 0x5A, chunk));
            run.copy16(ref, state, chunk, 0);
            std::snprintf(what, sizeof what, "%s sv_copy16 grid=%s", name, g.c_str());
            verify(what, ref, state, chunk, dwrong);
        }
        CK(cudaDeviceSynchronize());
        CK(cudaFree(ref));
        std::printf("   checked every kernel on %zu grid(s), %zu qubits: %s\n", grids.size(), qs.size(),
                    failures ? "WRONG RESULTS" : "all bit-identical to the reference");
    }

    for (int round = 0; round < 3; round++) {
        // The copy engine first: the round's reference.
        const double ce = timer.median([&] { CK(cudaMemcpyAsync(xbuf, state, chunk, cudaMemcpyDeviceToDevice, s)); });
        const double copy_gbps = 2.0 * chunk / ce / 1e9;
        emit({name, "ce_copy", "ce", L, -1, 2 * chunk, round, ce, copy_gbps, copy_gbps});
        const double place =
            timer.median([&] { CK(cudaMemcpyAsync(state + half, xbuf, half, cudaMemcpyDeviceToDevice, s)); });
        emit({name, "place_ce", "ce", L, -1, chunk, round, place, chunk / place / 1e9, copy_gbps});
        for (const auto& g : grids) {
            const Launcher run{k, g, n, 16 / sizeof(A)};
            for (int q : qs) {
                const double t = timer.median([&] { run.h(state, q, s); });
                emit({name, "h", g, L, q, 2 * chunk, round, t, 2.0 * chunk / t / 1e9, copy_gbps});
                if (k.ht && tile_qv(q, 16 / sizeof(A)) >= 0) {
                    const double ts = timer.median([&] { run.h(state, q, s, true); });
                    emit({name, "h_split", g, L, q, 2 * chunk, round, ts, 2.0 * chunk / ts / 1e9, copy_gbps});
                }
            }
            const double c = timer.median([&] { run.combine(state, xbuf, round & 1, s); });
            emit({name, "combine", g, L, -1, 3 * chunk, round, c, 3.0 * chunk / c / 1e9, copy_gbps});
            const double p = timer.median([&] { run.copy16(state + half, xbuf, half, s); });
            emit({name, "place_sv_copy16", g, L, -1, chunk, round, p, chunk / p / 1e9, copy_gbps});
            const double qc = timer.median([&] { run.qbcopy(xbuf, state, chunk, s); });
            emit({name, "qb_copy", g, L, -1, 2 * chunk, round, qc, 2.0 * chunk / qc / 1e9, copy_gbps});
            const double c16 = timer.median([&] { run.copy16(xbuf, state, chunk, s); });
            emit({name, "sv_copy16", g, L, -1, 2 * chunk, round, c16, 2.0 * chunk / c16 / 1e9, copy_gbps});
        }
        std::printf("   round %d: copy engine %.0f GB/s\n", round + 1, copy_gbps);
        std::fflush(stdout);
    }
    CK(cudaStreamDestroy(s));
    CK(cudaFree(state));
    CK(cudaFree(xbuf));
    CK(cudaFree(dwrong));
}

// Median over rounds of one figure's of_copy, with its min and max.
static void table(const std::string& precision, unsigned L, const std::vector<std::string>& grids) {
    auto stat = [&](const std::string& kernel, const std::string& grid, int q, double* lo, double* hi) {
        std::vector<double> v;
        for (const auto& r : rows)
            if (r.precision == precision && r.log2n == L && r.kernel == kernel && r.grid == grid && r.q == q)
                v.push_back(r.gbps / r.copy_gbps);
        if (v.empty()) return -1.0;
        std::sort(v.begin(), v.end());
        *lo = v.front();
        *hi = v.back();
        return v[v.size() / 2];
    };
    std::printf("-- %s %s 2^%u: of the copy engine's device copy (median of 3 rounds [min, max])\n", BUILD,
                precision.c_str(), L);
    std::printf("%-18s", "kernel");
    for (const auto& g : grids) std::printf(" %24s", g.c_str());
    std::printf("\n");
    std::vector<std::pair<std::string, int>> keys;
    for (const auto& r : rows)
        if (r.precision == precision && r.log2n == L && r.grid != "ce" &&
            std::find(keys.begin(), keys.end(), std::make_pair(r.kernel, r.q)) == keys.end())
            keys.push_back({r.kernel, r.q});
    for (const auto& key : keys) {
        std::string label = key.first;
        if (key.second >= 0) label += " q=" + std::to_string(key.second);
        std::printf("%-18s", label.c_str());
        for (const auto& g : grids) {
            double lo = 0, hi = 0;
            const double m = stat(key.first, g, key.second, &lo, &hi);
            if (m < 0)
                std::printf(" %24s", "-");
            else
                std::printf("      %.3f [%.3f, %.3f]", m, lo, hi);
        }
        std::printf("\n");
    }
    double lo = 0, hi = 0;
    std::printf("%-18s       %.3f [%.3f, %.3f]\n", "place_ce", stat("place_ce", "ce", -1, &lo, &hi), lo, hi);
}

int main(int argc, char** argv) {
    std::vector<std::string> grids = {"tiles", "tiles256", "wave", "sm16"};
    bool all_qubits = true, check = true;
    std::vector<std::pair<std::string, unsigned>> sizes;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "-o" && i + 1 < argc) {
            json = std::fopen(argv[++i], "w");
            if (!json) return std::perror("-o"), 2;
            std::fprintf(json, "[\n");
        } else if (a == "--grids" && i + 1 < argc) {
            grids.clear();
            std::string g = argv[++i];
            for (size_t p = 0; p <= g.size();) {
                size_t c = g.find(',', p);
                if (c == std::string::npos) c = g.size();
                grids.push_back(g.substr(p, c - p));
                p = c + 1;
            }
        } else if (a == "--qubits" && i + 1 < argc) {
            const std::string v = argv[++i];
            all_qubits = v == "all";
            if (v.find('-') != std::string::npos) {
                q_lo = std::atoi(v.c_str());
                q_hi = std::atoi(v.c_str() + v.find('-') + 1);
            }
        } else if (a == "--verify" && i + 1 < argc) {
            check = std::atoi(argv[++i]) != 0;
        } else if (a.find(':') != std::string::npos) {
            sizes.push_back({a.substr(0, a.find(':')), (unsigned)std::atoi(a.c_str() + a.find(':') + 1)});
        } else {
            std::fprintf(stderr, "usage: %s [-o out.json] [--grids tiles,tiles256,wave,sm16] [--qubits all|edges|LO-HI] "
                                 "[--verify 0|1] double:30 single:31 ...\n", argv[0]);
            return 2;
        }
    }
#ifdef QB_BASELINE
    grids = {"old"};
#endif
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    sms = prop.multiProcessorCount;
    std::printf("%s, %d multiprocessors, %.0f MiB of L2, compute capability %d.%d; build %s\n", prop.name, sms,
                prop.l2CacheSize / 1048576.0, prop.major, prop.minor, BUILD);
#ifdef QB_BASELINE
    const void *tile_single = nullptr, *tile_double = nullptr;
#else
    const void *tile_single = (const void*)sv_h_4k_single, *tile_double = (const void*)sv_h_4k_double;
#endif
    const Kernels single = {(const void*)sv_h_single, (const void*)sv_h_warp_single, tile_single,
                            (const void*)sv_combine_single};
    const Kernels dbl = {(const void*)sv_h_double, (const void*)sv_h_warp_double, tile_double,
                         (const void*)sv_combine_double};
    for (const auto& sz : sizes) {
        if (sz.first == "single")
            run_precision<C1>("single", sz.second, single, grids, all_qubits, check);
        else if (sz.first == "double")
            run_precision<C2>("double", sz.second, dbl, grids, all_qubits, check);
        else
            return std::fprintf(stderr, "unknown precision %s\n", sz.first.c_str()), 2;
    }
    if (json) std::fprintf(json, "\n]\n"), std::fclose(json);
    for (const auto& sz : sizes) table(sz.first, sz.second, grids);
    if (failures) std::printf("%d kernel results were WRONG\n", failures);
    return failures ? 1 : 0;
}

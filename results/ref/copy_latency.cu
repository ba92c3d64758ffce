// copy_latency: the reference for `qbench copy --test latency_*`, written
// with nothing but the CUDA runtime so that its figures carry no qbench
// bookkeeping.
//
// For each direction and each size (1 B .. 16 MiB in powers of two):
//   host pass:   N times { t0 = steady_clock; one copy; cudaStreamSynchronize;
//                t1 = steady_clock }, after W warm-up copies; min / median /
//                p99 / max of t1 - t0 in microseconds.
//   device pass: a separate loop of N { event; one copy; event;
//                cudaEventSynchronize }, the event-to-event times, so that the
//                events never sit inside the host-timed loop.
// Directions (qbench's test in brackets):
//   h2d           cudaMemcpyAsync pinned host -> GPU 0          [latency_h2d]
//   d2h           cudaMemcpyAsync GPU 0 -> pinned host          [latency_d2h]
//   peer          cudaMemcpyAsync GPU 0 -> GPU 1 on GPU 0's stream,
//                 peer access enabled (needs two GPUs)          [latency_peer]
//   mapped_read   copy kernel on GPU 0 reading mapped pinned host memory
//                 into GPU 0's memory                           [latency_mapped_read]
//   mapped_write  copy kernel on GPU 0 writing mapped pinned host memory
//                 from GPU 0's memory                           [latency_mapped_write]
// The copy kernel moves 16-byte words in a grid-stride loop, four loads in
// flight per thread (the last bytes % 16 one byte per thread), with 256
// threads per block. Its grid is
// qbench's launch shape by default (one block per 16 KiB, at most 16 per
// SM: one block up to 16 KiB), or one block at every size with
// --mapped-blocks 1.
//
// Every size is checked: the destination is poisoned, one copy is made and
// every byte compared with the source; then poisoned again before the timed
// loops and compared again after them. Every CUDA call's status is checked.
//
// Build: nvcc -O2 -std=c++17 -gencode=arch=compute_90,code=sm_90
//            -o copy_latency results/ref/copy_latency.cu -lcuda  (one line)
// Run:   copy_latency OUT.json [-n ITERS] [-w WARMUP] [--tests a,b,...]
//                     [--max BYTES] [--mapped-blocks auto|N]
//                     [--sched auto|spin|yield|blocking]
//                     [--wait sync|query] [--host-alloc default|mapped]
//                     [--api runtime|driver|generic] [--streams-before K]
// Three switches find where a difference to qbench comes from: --wait query
// waits by polling cudaStreamQuery / cudaEventQuery (qbench's wait, which
// also watches for Ctrl-C and its timeout) instead of cudaStreamSynchronize
// / cudaEventSynchronize; --host-alloc mapped allocates H2D/D2H's pinned
// memory portable and mapped, as qbench's cuMemHostAlloc does; --api driver
// makes H2D, D2H and peer copies with the driver's cuMemcpyHtoDAsync,
// cuMemcpyDtoHAsync and cuMemcpyAsync, as qbench does, and --api generic
// all three with cuMemcpyAsync (unified addressing), instead of
// cudaMemcpyAsync; --streams-before K makes and uses K streams before the
// timed one, as qbench uses its GPU's own stream before a flow's.
// Exit status: 0 right, 1 wrong bytes, 2 bad arguments, 3 CUDA error.

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what, const char* file, int line) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "copy_latency: %s:%d: %s: %s (%s)\n", file, line, what, cudaGetErrorString(e),
                     cudaGetErrorName(e));
        std::exit(3);
    }
}
#define CK(call) check((call), #call, __FILE__, __LINE__)

constexpr int kThreads = 256;

__global__ void copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, unsigned long long bytes) {
    const unsigned long long n = bytes / 16;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    // Four loads in flight per thread before their stores, as qbench's kernel.
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
    const unsigned long long tail = bytes - n * 16;
    if (blockIdx.x == 0 && threadIdx.x < tail)
        ((unsigned char*)dst)[n * 16 + threadIdx.x] = ((const unsigned char*)src)[n * 16 + threadIdx.x];
}

// Calls `query` until it stops answering cudaErrorNotReady.
template <typename Q> cudaError_t poll(Q&& query) {
    cudaError_t e;
    while ((e = query()) == cudaErrorNotReady) {
    }
    return e;
}

struct Stats {
    size_t samples = 0;
    double min_us = 0, p50_us = 0, p99_us = 0, max_us = 0, mean_us = 0;
};

// Nearest-rank percentiles of microsecond samples.
Stats stats(std::vector<double> us) {
    Stats s;
    if (us.empty()) return s;
    std::sort(us.begin(), us.end());
    const size_t n = us.size();
    auto rank = [&](double p) {
        size_t k = (size_t)((p * n + 99.0) / 100.0);  // ceil(p * n / 100) for integral p * n
        if (k < 1) k = 1;
        if (k > n) k = n;
        return us[k - 1];
    };
    s.samples = n;
    s.min_us = us.front();
    s.max_us = us.back();
    s.p50_us = rank(50);
    s.p99_us = rank(99);
    double sum = 0;
    for (double v : us) sum += v;
    s.mean_us = sum / n;
    return s;
}

enum class Kind { H2D, D2H, Peer, MappedRead, MappedWrite };

struct Direction {
    const char* name;
    const char* qbench_test;
    const char* how;
    Kind kind;
};

const Direction kDirections[] = {
    {"h2d", "latency_h2d", "cudaMemcpyAsync pinned host -> GPU 0", Kind::H2D},
    {"d2h", "latency_d2h", "cudaMemcpyAsync GPU 0 -> pinned host", Kind::D2H},
    {"peer", "latency_peer", "cudaMemcpyAsync GPU 0 -> GPU 1 on GPU 0's stream, peer access on", Kind::Peer},
    {"mapped_read", "latency_mapped_read", "copy kernel on GPU 0: mapped pinned host -> GPU 0", Kind::MappedRead},
    {"mapped_write", "latency_mapped_write", "copy kernel on GPU 0: GPU 0 -> mapped pinned host", Kind::MappedWrite},
};

struct Options {
    std::string out;
    int iters = 1000;
    int warmup = 10;
    size_t max_bytes = 16u << 20;
    int mapped_blocks = 0;  // 0: qbench's launch shape
    std::string sched = "auto";
    bool wait_query = false;
    bool host_mapped = false;
    std::string api = "runtime";
    int streams_before = 0;
    std::vector<std::string> tests = {"h2d", "d2h", "peer", "mapped_read", "mapped_write"};
};

struct Row {
    const Direction* dir;
    size_t size;
    unsigned blocks;  // kernel directions only
    Stats host, device;
    size_t wrong_bytes;
};

unsigned char pattern(size_t i, size_t size, unsigned round) {
    return (unsigned char)((i * 131u + size * 7u + round * 29u + 1u) & 0xffu);
}

// One direction's buffers and the way to make one copy of `size` bytes.
struct Bench {
    const Direction& dir;
    const Options& opt;
    cudaStream_t stream;
    int sms;
    unsigned char* src = nullptr;   // as the copy sees it (device pointer of mapped memory)
    unsigned char* dst = nullptr;
    unsigned char* host = nullptr;  // the pinned buffer, as the CPU sees it
    bool src_is_host = false, dst_is_host = false;
    int dst_device = 0;
    std::vector<unsigned char> stage;

    Bench(const Direction& d, const Options& o, cudaStream_t s, int sm_count) : dir(d), opt(o), stream(s), sms(sm_count) {
        const size_t n = opt.max_bytes;
        stage.resize(n);
        unsigned char* gpu0 = nullptr;
        CK(cudaSetDevice(0));
        CK(cudaMalloc(&gpu0, n));
        switch (dir.kind) {
        case Kind::H2D:
            CK(cudaHostAlloc(&host, n, opt.host_mapped ? cudaHostAllocMapped | cudaHostAllocPortable : cudaHostAllocDefault));
            src = host, dst = gpu0, src_is_host = true;
            break;
        case Kind::D2H:
            CK(cudaHostAlloc(&host, n, opt.host_mapped ? cudaHostAllocMapped | cudaHostAllocPortable : cudaHostAllocDefault));
            src = gpu0, dst = host, dst_is_host = true;
            break;
        case Kind::Peer: {
            unsigned char* gpu1 = nullptr;
            CK(cudaSetDevice(1));
            CK(cudaMalloc(&gpu1, n));
            CK(cudaSetDevice(0));
            src = gpu0, dst = gpu1, dst_device = 1;
            break;
        }
        case Kind::MappedRead:
        case Kind::MappedWrite: {
            CK(cudaHostAlloc(&host, n, cudaHostAllocMapped | cudaHostAllocPortable));
            unsigned char* mapped = nullptr;
            CK(cudaHostGetDevicePointer((void**)&mapped, host, 0));
            if (dir.kind == Kind::MappedRead)
                src = mapped, dst = gpu0, src_is_host = true;
            else
                src = gpu0, dst = mapped, dst_is_host = true;
            break;
        }
        }
        gpu0_ = gpu0;
    }

    ~Bench() {
        cudaSetDevice(0);
        if (host) CK(cudaFreeHost(host));
        if (dir.kind == Kind::Peer) {
            CK(cudaSetDevice(1));
            CK(cudaFree(dst));
            CK(cudaSetDevice(0));
        }
        CK(cudaFree(gpu0_));
    }

    unsigned blocks(size_t size) const {
        if (opt.mapped_blocks > 0) return (unsigned)opt.mapped_blocks;
        // qbench: grid(ceil(bytes / 64) elements), 256 threads, 1 .. 16 blocks per SM.
        const size_t elems = (size + 63) / 64;
        size_t b = (elems + kThreads - 1) / kThreads;
        return (unsigned)std::max<size_t>(1, std::min<size_t>(b, (size_t)sms * 16));
    }

    // Issues one copy; returns its status without waiting.
    cudaError_t issue(size_t size) const {
        if (opt.api != "runtime" && dir.kind != Kind::MappedRead && dir.kind != Kind::MappedWrite) {
            const CUstream s = (CUstream)stream;
            const CUdeviceptr d = (CUdeviceptr)dst, sd = (CUdeviceptr)src;
            const bool generic = opt.api == "generic";
            const CUresult r = dir.kind == Kind::H2D && !generic   ? cuMemcpyHtoDAsync(d, src, size, s)
                               : dir.kind == Kind::D2H && !generic ? cuMemcpyDtoHAsync(dst, sd, size, s)
                                                                   : cuMemcpyAsync(d, sd, size, s);
            return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown;
        }
        switch (dir.kind) {
        case Kind::H2D:
            return cudaMemcpyAsync(dst, src, size, cudaMemcpyHostToDevice, stream);
        case Kind::D2H:
            return cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToHost, stream);
        case Kind::Peer:
            return cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToDevice, stream);
        case Kind::MappedRead:
        case Kind::MappedWrite:
            copy_kernel<<<blocks(size), kThreads, 0, stream>>>((uint4*)dst, (const uint4*)src, size);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    }

    // Writes `size` bytes of the pattern (or its complement) at `p`.
    void fill(unsigned char* p, bool p_is_host, int device, size_t size, unsigned round, bool poison) {
        unsigned char* buf = p_is_host ? host : stage.data();
        for (size_t i = 0; i < size; i++) buf[i] = pattern(i, size, round) ^ (poison ? 0xffu : 0u);
        if (!p_is_host) {
            CK(cudaSetDevice(device));
            CK(cudaMemcpy(p, stage.data(), size, cudaMemcpyHostToDevice));
            CK(cudaSetDevice(0));
        }
    }

    // Bytes of the destination that differ from the pattern.
    size_t wrong(size_t size, unsigned round) {
        CK(cudaStreamSynchronize(stream));
        const unsigned char* buf = host;
        if (!dst_is_host) {
            CK(cudaSetDevice(dst_device));
            CK(cudaMemcpy(stage.data(), dst, size, cudaMemcpyDeviceToHost));
            CK(cudaSetDevice(0));
            buf = stage.data();
        }
        size_t bad = 0;
        for (size_t i = 0; i < size; i++) bad += buf[i] != pattern(i, size, round);
        return bad;
    }

    void prepare(size_t size, unsigned round) {
        fill(src, src_is_host, 0, size, round, false);
        fill(dst, dst_is_host, dst_device, size, round, true);
        CK(cudaDeviceSynchronize());
    }

    Row measure(size_t size, cudaEvent_t start, cudaEvent_t end) {
        Row r{&dir, size, (dir.kind == Kind::MappedRead || dir.kind == Kind::MappedWrite) ? blocks(size) : 0u, {}, {}, 0};
        // One copy, checked on its own.
        prepare(size, 1);
        CK(issue(size));
        CK(cudaStreamSynchronize(stream));
        r.wrong_bytes += wrong(size, 1);
        // Fresh data and poison, then the timed loops, checked after them.
        prepare(size, 2);
        for (int i = 0; i < opt.warmup; i++) CK(issue(size));
        CK(cudaStreamSynchronize(stream));

        std::vector<double> host_us(opt.iters), dev_us(opt.iters);
        for (int i = 0; i < opt.iters; i++) {
            const auto t0 = std::chrono::steady_clock::now();
            const cudaError_t e1 = issue(size);
            const cudaError_t e2 = opt.wait_query ? poll([&] { return cudaStreamQuery(stream); }) : cudaStreamSynchronize(stream);
            const auto t1 = std::chrono::steady_clock::now();
            CK(e1);
            CK(e2);
            host_us[i] = std::chrono::duration<double, std::micro>(t1 - t0).count();
        }
        for (int i = 0; i < opt.iters; i++) {
            CK(cudaEventRecord(start, stream));
            CK(issue(size));
            CK(cudaEventRecord(end, stream));
            CK(opt.wait_query ? poll([&] { return cudaEventQuery(end); }) : cudaEventSynchronize(end));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, start, end));
            dev_us[i] = ms * 1e3;
        }
        r.wrong_bytes += wrong(size, 2);
        r.host = stats(host_us);
        r.device = stats(dev_us);
        return r;
    }

  private:
    unsigned char* gpu0_ = nullptr;
};

bool parse_size(const char* s, size_t* out) {
    char* end = nullptr;
    const double v = std::strtod(s, &end);
    if (end == s || v < 1) return false;
    double mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1024.0, end++;
    else if (*end == 'M' || *end == 'm') mul = 1024.0 * 1024, end++;
    else if (*end == 'G' || *end == 'g') mul = 1024.0 * 1024 * 1024, end++;
    if (*end) return false;
    *out = (size_t)(v * mul);
    return true;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    size_t a = 0;
    while (a <= s.size()) {
        size_t b = s.find(',', a);
        if (b == std::string::npos) b = s.size();
        if (b > a) out.push_back(s.substr(a, b - a));
        a = b + 1;
    }
    return out;
}

[[noreturn]] void usage(const char* why) {
    if (why) std::fprintf(stderr, "copy_latency: %s\n", why);
    std::fprintf(stderr,
                 "usage: copy_latency OUT.json [-n ITERS (1000)] [-w WARMUP (10)] [--tests h2d,d2h,peer,mapped_read,mapped_write]\n"
                 "                    [--max BYTES (16M)] [--mapped-blocks auto|N] [--sched auto|spin|yield|blocking]\n"
                 "                    [--wait sync|query] [--host-alloc default|mapped] [--api runtime|driver|generic]\n"
                 "                    [--streams-before K]\n");
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) usage(("missing value after " + a).c_str());
            return argv[++i];
        };
        if (a == "-h" || a == "--help") usage(nullptr);
        else if (a == "-n") o.iters = std::atoi(value());
        else if (a == "-w") o.warmup = std::atoi(value());
        else if (a == "--tests") o.tests = split(value());
        else if (a == "--max") {
            if (!parse_size(value(), &o.max_bytes)) usage("bad --max");
        } else if (a == "--mapped-blocks") {
            const std::string v = value();
            o.mapped_blocks = v == "auto" ? 0 : std::atoi(v.c_str());
            if (v != "auto" && o.mapped_blocks < 1) usage("bad --mapped-blocks");
        } else if (a == "--sched") o.sched = value();
        else if (a == "--wait") {
            const std::string v = value();
            if (v != "sync" && v != "query") usage("bad --wait");
            o.wait_query = v == "query";
        } else if (a == "--host-alloc") {
            const std::string v = value();
            if (v != "default" && v != "mapped") usage("bad --host-alloc");
            o.host_mapped = v == "mapped";
        } else if (a == "--streams-before") {
            o.streams_before = std::atoi(value());
            if (o.streams_before < 0) usage("bad --streams-before");
        } else if (a == "--api") {
            o.api = value();
            if (o.api != "runtime" && o.api != "driver" && o.api != "generic") usage("bad --api");
        } else if (!a.empty() && a[0] == '-') usage(("unknown option " + a).c_str());
        else if (o.out.empty()) o.out = a;
        else usage("more than one output file");
    }
    if (o.out.empty()) usage("no output file");
    if (o.iters < 1 || o.warmup < 0) usage("bad -n or -w");
    if (o.sched != "auto" && o.sched != "spin" && o.sched != "yield" && o.sched != "blocking") usage("bad --sched");
    for (const auto& t : o.tests) {
        bool known = false;
        for (const auto& d : kDirections) known |= t == d.name;
        if (!known) usage(("unknown test " + t).c_str());
    }
    return o;
}

void json_stats(FILE* f, const char* key, const Stats& s) {
    std::fprintf(f, "\"%s\": {\"samples\": %zu, \"min_us\": %.4f, \"p50_us\": %.4f, \"p99_us\": %.4f, \"max_us\": %.4f, \"mean_us\": %.4f}",
                 key, s.samples, s.min_us, s.p50_us, s.p99_us, s.max_us, s.mean_us);
}

std::string json_escape(const char* s) {
    std::string out;
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') out += '\\';
        if ((unsigned char)*s >= 0x20) out += *s;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse(argc, argv);

    unsigned flags = cudaDeviceMapHost;
    if (opt.sched == "spin") flags |= cudaDeviceScheduleSpin;
    else if (opt.sched == "yield") flags |= cudaDeviceScheduleYield;
    else if (opt.sched == "blocking") flags |= cudaDeviceScheduleBlockingSync;
    else flags |= cudaDeviceScheduleAuto;

    int ngpus = 0;
    CK(cudaGetDeviceCount(&ngpus));
    for (int d = 0; d < std::min(ngpus, 2); d++) {
        CK(cudaSetDevice(d));
        CK(cudaSetDeviceFlags(flags));
        CK(cudaFree(nullptr));  // create the primary context now, outside any timing
    }
    CK(cudaSetDevice(0));
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    int runtime = 0, driver = 0;
    CK(cudaRuntimeGetVersion(&runtime));
    CK(cudaDriverGetVersion(&driver));
    char bus[32] = {0};
    CK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));

    // --streams-before: streams made and used (a 1-byte memset each) before
    // the timed one, as qbench's GPU keeps a stream of its own for fills and
    // checks and makes each flow's stream after it.
    std::vector<cudaStream_t> earlier((size_t)opt.streams_before);
    void* scratch = nullptr;
    if (!earlier.empty()) CK(cudaMalloc(&scratch, 1));
    for (auto& e : earlier) {
        CK(cudaStreamCreateWithFlags(&e, cudaStreamNonBlocking));
        CK(cudaMemsetAsync(scratch, 0, 1, e));
        CK(cudaStreamSynchronize(e));
    }
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaEvent_t start, end;
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&end));

    std::vector<size_t> sizes;
    for (size_t s = 1; s <= opt.max_bytes; s *= 2) sizes.push_back(s);

    std::printf("# copy_latency: %d GPU(s), device 0 %s [%s], runtime %d, driver %d, %d copies per size after %d warm-up, sched %s, wait %s, host memory %s, api %s, %d streams before\n",
                ngpus, prop.name, bus, runtime, driver, opt.iters, opt.warmup, opt.sched.c_str(), opt.wait_query ? "query" : "sync", opt.host_mapped ? "mapped" : "default",
                opt.api.c_str(), opt.streams_before);
    std::printf("# host: steady_clock around one copy + cudaStreamSynchronize; device: events, separate pass\n");
    std::printf("# %-12s %10s %10s %10s %10s %10s %6s\n", "direction", "size", "host p50", "host min", "host p99", "dev p50", "wrong");

    std::vector<Row> rows;
    std::vector<std::pair<std::string, std::string>> skipped;
    size_t wrong_total = 0;
    for (const auto& d : kDirections) {
        if (std::find(opt.tests.begin(), opt.tests.end(), d.name) == opt.tests.end()) continue;
        if (d.kind == Kind::Peer) {
            if (ngpus < 2) {
                std::printf("# peer: skipped, needs two GPUs and %d is visible\n", ngpus);
                skipped.push_back({d.name, "needs two GPUs, " + std::to_string(ngpus) + " visible"});
                continue;
            }
            int can = 0;
            CK(cudaDeviceCanAccessPeer(&can, 0, 1));
            if (!can) {
                std::printf("# peer: skipped, GPU 0 cannot access GPU 1 directly\n");
                skipped.push_back({d.name, "GPU 0 cannot access GPU 1 (cudaDeviceCanAccessPeer = 0)"});
                continue;
            }
            const cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
            else CK(e);
        }
        Bench b(d, opt, stream, prop.multiProcessorCount);
        for (size_t s : sizes) {
            Row r = b.measure(s, start, end);
            wrong_total += r.wrong_bytes;
            std::printf("  %-12s %10zu %10.2f %10.2f %10.2f %10.2f %6zu\n", d.name, s, r.host.p50_us, r.host.min_us,
                        r.host.p99_us, r.device.p50_us, r.wrong_bytes);
            std::fflush(stdout);
            rows.push_back(r);
        }
    }

    FILE* f = std::fopen(opt.out.c_str(), "w");
    if (!f) {
        std::fprintf(stderr, "copy_latency: cannot write %s: %s\n", opt.out.c_str(), std::strerror(errno));
        return 3;
    }
    std::fprintf(f, "{\n \"schema\": \"qbench.ref.copy_latency.v1\",\n");
    std::fprintf(f, " \"tool\": \"results/ref/copy_latency.cu\",\n");
    std::fprintf(f, " \"device\": \"%s\", \"bus_id\": \"%s\", \"gpus\": %d, \"cuda_runtime\": %d, \"cuda_driver\": %d,\n",
                 json_escape(prop.name).c_str(), bus, ngpus, runtime, driver);
    std::fprintf(f, " \"iters\": %d, \"warmup\": %d, \"sched\": \"%s\", \"wait\": \"%s\", \"host_alloc\": \"%s\", \"api\": \"%s\", \"streams_before\": %d, \"max_bytes\": %zu,\n", opt.iters,
                 opt.warmup, opt.sched.c_str(), opt.wait_query ? "query" : "sync", opt.host_mapped ? "mapped" : "default",
                 opt.api.c_str(), opt.streams_before, opt.max_bytes);
    std::fprintf(f, " \"mapped_grid\": \"%s\", \"threads_per_block\": %d,\n",
                 opt.mapped_blocks ? (std::to_string(opt.mapped_blocks) + " block(s)").c_str() : "qbench (one block per 16 KiB, at most 16 per SM)",
                 kThreads);
    std::fprintf(f, " \"host_timing\": \"std::chrono::steady_clock around one copy (or kernel launch) and cudaStreamSynchronize, nothing else in the loop\",\n");
    std::fprintf(f, " \"device_timing\": \"cudaEventElapsedTime between events recorded around one copy, a separate pass\",\n");
    std::fprintf(f, " \"percentiles\": \"nearest rank\",\n");
    std::fprintf(f, " \"skipped\": [");
    for (size_t i = 0; i < skipped.size(); i++)
        std::fprintf(f, "%s{\"direction\": \"%s\", \"reason\": \"%s\"}", i ? ", " : "", skipped[i].first.c_str(),
                     json_escape(skipped[i].second.c_str()).c_str());
    std::fprintf(f, "],\n \"results\": [\n");
    for (size_t i = 0; i < rows.size(); i++) {
        const Row& r = rows[i];
        std::fprintf(f, "  {\"direction\": \"%s\", \"qbench_test\": \"%s\", \"how\": \"%s\", \"size\": %zu, ", r.dir->name,
                     r.dir->qbench_test, json_escape(r.dir->how).c_str(), r.size);
        if (r.blocks) std::fprintf(f, "\"blocks\": %u, ", r.blocks);
        json_stats(f, "host", r.host);
        std::fprintf(f, ", ");
        json_stats(f, "device", r.device);
        std::fprintf(f, ", \"wrong_bytes\": %zu}%s\n", r.wrong_bytes, i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, " ],\n \"wrong_bytes\": %zu\n}\n", wrong_total);
    if (std::fclose(f) != 0) {
        std::fprintf(stderr, "copy_latency: writing %s failed\n", opt.out.c_str());
        return 3;
    }

    CK(cudaEventDestroy(start));
    CK(cudaEventDestroy(end));
    CK(cudaStreamDestroy(stream));
    if (wrong_total) {
        std::printf("# copy_latency: %zu wrong bytes\n", wrong_total);
        return 1;
    }
    std::printf("# copy_latency: every copy right; JSON in %s\n", opt.out.c_str());
    return 0;
}

// quest_time: times single gates and the full QFT in QuEST v4 (QuEST-Kit/QuEST),
// so that qbench's model of a distributed state-vector simulator's amplitude
// exchange can be set beside the real thing on the same GPU machine.
// It is our program, not QuEST's: it calls only QuEST's public API (quest.h).
// Built by results/h200/quest/run-quest-h200.sh with QuEST's own cmake
// (-DUSER_SOURCE=results/ref/quest_time.cpp -DOUTPUT_EXE=quest_time).
//
//   quest_time QUBITS ROUNDS op...       (under mpirun -np R for a distributed Qureg)
//   ops: h:Q  t:Q  cphase:A,B  cz:C,T  cnot:C,T  swap:A,B  qft
//     cphase:A,B = applyTwoQubitPhaseShift(q, A, B, pi/4): QuEST makes B the control
//                  and A the target of a one-qubit diagonal (operations.cpp:1596-1613)
//     qft        = applyFullQuantumFourierTransform, from initClassicalState(x),
//                  checked against e^{2 pi i x j / 2^n} / sqrt(2^n) ("max_err")
//
// Each op: its start state, one untimed warm-up, then ROUNDS rounds, each from the
// start state again (untimed) and timed as syncQuESTEnv(); t0; op; syncQuESTEnv(); t1
// with std::chrono::steady_clock. Rank 0 prints one JSON line per op to stdout,
// flushed at once (a run cut short keeps the ops already done).
// QUEST_SOURCE (environment, optional) is copied into the JSON as "quest_src".

#include "quest.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

const double PI = 3.14159265358979323846;
const qreal CPHASE_ANGLE = PI / 4;

struct Op {
    std::string name;   // as given, e.g. "h:29"
    std::string kind;   // h t cphase cz cnot swap qft
    std::vector<int> q; // qubit arguments
};

[[noreturn]] void usage(const char* why) {
    if (getQuESTEnv().rank == 0)
        std::fprintf(stderr, "quest_time: %s\nusage: quest_time QUBITS ROUNDS op...\n"
                             "  ops: h:Q t:Q cphase:A,B cz:C,T cnot:C,T swap:A,B qft\n", why);
    finalizeQuESTEnv();
    std::exit(2);
}

Op parseOp(const std::string& s, int numQubits) {
    Op op{s, s, {}};
    auto colon = s.find(':');
    if (colon != std::string::npos) {
        op.kind = s.substr(0, colon);
        std::string rest = s.substr(colon + 1);
        size_t pos = 0;
        while (pos <= rest.size()) {
            size_t comma = rest.find(',', pos);
            std::string tok = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
            char* end = nullptr;
            long v = std::strtol(tok.c_str(), &end, 10);
            if (tok.empty() || *end != '\0' || v < 0 || v >= numQubits)
                usage(("bad qubit in op '" + s + "'").c_str());
            op.q.push_back(static_cast<int>(v));
            if (comma == std::string::npos) break;
            pos = comma + 1;
        }
    }
    size_t want = (op.kind == "qft") ? 0 : (op.kind == "h" || op.kind == "t") ? 1
                : (op.kind == "cphase" || op.kind == "cz" || op.kind == "cnot" || op.kind == "swap") ? 2 : 99;
    if (want == 99) usage(("unknown op '" + s + "'").c_str());
    if (op.q.size() != want) usage(("wrong number of qubits in op '" + s + "'").c_str());
    if (want == 2 && op.q[0] == op.q[1]) usage(("repeated qubit in op '" + s + "'").c_str());
    return op;
}

void applyOp(Qureg qureg, const Op& op) {
    const auto& q = op.q;
    if      (op.kind == "h")      applyHadamard(qureg, q[0]);
    else if (op.kind == "t")      applyT(qureg, q[0]);
    else if (op.kind == "cphase") applyTwoQubitPhaseShift(qureg, q[0], q[1], CPHASE_ANGLE);
    else if (op.kind == "cz")     applyControlledPauliZ(qureg, q[0], q[1]);
    else if (op.kind == "cnot")   applyControlledPauliX(qureg, q[0], q[1]);
    else if (op.kind == "swap")   applySwap(qureg, q[0], q[1]);
    else if (op.kind == "qft")    applyFullQuantumFourierTransform(qureg);
}

// the QFT's input basis state: 0x5A5A... masked to n bits
qindex qftInput(int n) {
    uint64_t x = 0x5A5A5A5A5A5A5A5AULL;
    return static_cast<qindex>(n >= 64 ? x : (x & ((uint64_t(1) << n) - 1)));
}

// max |amp - e^{2 pi i x j / 2^n}/sqrt(2^n)| over a few indices; every rank calls
// getQuregAmp with the same indices (it broadcasts from the owner rank)
double qftError(Qureg qureg, int n, qindex x) {
    uint64_t dim = uint64_t(1) << n, mask = dim - 1;
    std::vector<uint64_t> inds = {0, 1, dim - 1, dim / 2, dim / 2 + 1};
    uint64_t s = 0x9E3779B97F4A7C15ULL; // fixed seed: identical on every rank
    for (int k = 0; k < 8; k++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        inds.push_back(s & mask);
    }
    double norm = 1.0 / std::sqrt(static_cast<double>(dim)), err = 0;
    for (uint64_t j : inds) {
        uint64_t phaseNum = (static_cast<uint64_t>(x) * j) & mask; // x*j mod 2^n, exact
        double ang = 2 * PI * static_cast<double>(phaseNum) / static_cast<double>(dim);
        qcomp amp = getQuregAmp(qureg, static_cast<qindex>(j));
        double dr = static_cast<double>(std::real(amp)) - norm * std::cos(ang);
        double di = static_cast<double>(std::imag(amp)) - norm * std::sin(ang);
        err = std::max(err, std::sqrt(dr * dr + di * di));
    }
    return err;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.empty() ? 0 : (v.size() % 2) ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

} // namespace

int main(int argc, char** argv) {
    initQuESTEnv();
    QuESTEnv env = getQuESTEnv();
    if (argc < 4) usage("too few arguments");

    int numQubits = std::atoi(argv[1]);
    int rounds = std::atoi(argv[2]);
    if (numQubits < 1 || numQubits > 50) usage("QUBITS must be 1..50");
    if (rounds < 1) usage("ROUNDS must be at least 1");
    std::vector<Op> ops;
    for (int i = 3; i < argc; i++) ops.push_back(parseOp(argv[i], numQubits));

    // distribute over all processes when there are several; GPU and threads as the env has them
    int useDistrib = env.numNodes > 1;
    Qureg qureg = createCustomQureg(numQubits, 0, useDistrib, env.isGpuAccelerated, env.isMultithreaded);

    const char* src = std::getenv("QUEST_SOURCE");
    const char* prec = (FLOAT_PRECISION == 1) ? "single" : (FLOAT_PRECISION == 2) ? "double" : "quad";
    qindex x = qftInput(numQubits);

    for (const Op& op : ops) {
        bool isQft = (op.kind == "qft");
        auto reset = [&] { isQft ? initClassicalState(qureg, x) : initPlusState(qureg); };
        auto timeOnce = [&] {
            reset();
            syncQuESTEnv();
            auto t0 = std::chrono::steady_clock::now();
            applyOp(qureg, op);
            syncQuESTEnv();
            auto t1 = std::chrono::steady_clock::now();
            return std::chrono::duration<double>(t1 - t0).count();
        };

        double warm = timeOnce();
        std::vector<double> times;
        double maxErr = 0;
        for (int r = 0; r < rounds; r++) {
            times.push_back(timeOnce());
            if (isQft) maxErr = std::max(maxErr, qftError(qureg, numQubits, x));
        }

        if (env.rank != 0) continue;
        std::string line = "{\"tool\":\"quest\",\"version\":\"" + std::string(QUEST_VERSION_STRING) + "\"";
        if (src) line += ",\"quest_src\":\"" + std::string(src) + "\"";
        line += ",\"qubits\":" + std::to_string(numQubits) + ",\"ranks\":" + std::to_string(qureg.numNodes)
              + ",\"gpu\":" + (qureg.isGpuAccelerated ? "true" : "false")
              + ",\"distributed\":" + (qureg.isDistributed ? "true" : "false")
              + ",\"precision\":\"" + prec + "\",\"op\":\"" + op.name + "\"";
        char buf[64];
        if (op.kind == "cphase") { std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(CPHASE_ANGLE)); line += ",\"angle\":" + std::string(buf); }
        std::snprintf(buf, sizeof buf, "%.9g", warm);
        line += ",\"warmup_s\":" + std::string(buf) + ",\"times_s\":[";
        for (size_t i = 0; i < times.size(); i++) {
            std::snprintf(buf, sizeof buf, "%s%.9g", i ? "," : "", times[i]);
            line += buf;
        }
        std::snprintf(buf, sizeof buf, "%.9g", median(times));
        line += "],\"median_s\":" + std::string(buf);
        if (isQft) {
            std::snprintf(buf, sizeof buf, "%.3e", maxErr);
            line += ",\"qft_input\":" + std::to_string(static_cast<long long>(x)) + ",\"max_err\":" + std::string(buf);
        }
        line += "}";
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    }

    destroyQureg(qureg);
    finalizeQuESTEnv();
    return 0;
}

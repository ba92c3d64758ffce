//! The settings each simulator needs to run a plan's answer, each with the
//! rule it follows: QuEST v4's processes and memory, CUDA-Q's global index
//! bits, cuStateVec's index-bit swap layers, Qiskit Aer's cache blocking.
//! Only QuEST's can be checked against a run here (docs/CONVENTIONS.md);
//! the others say the documented rule they apply.

use super::Machine;
use crate::record::exchange::{Forecast, SimulatorSettings};
use crate::statevec::layout::Layout;
use crate::units::human_bytes;

/// The rank bits of a plan, fastest level first: within a node, then the nodes.
fn bit_groups(f: &Forecast) -> (u32, u32) {
    let ranks_bits = f.gpus.trailing_zeros();
    let node_bits = (f.gpus / f.nodes.max(1)).max(1).trailing_zeros().min(ranks_bits);
    (node_bits, ranks_bits - node_bits)
}

/// Every simulator's settings for row `f` of a plan on `m`: on host
/// ranks those of the simulators that run on CPUs (QuEST, Aer).
pub fn all(f: &Forecast, m: &Machine) -> Vec<SimulatorSettings> {
    let Ok(layout) = Layout::new(f.qubits, f.gpus, f.precision) else { return Vec::new() };
    if m.host {
        return vec![quest(f, &layout, true), aer(f, m, &layout)];
    }
    vec![quest(f, &layout, false), cudaq(f, m), custatevec(f, &layout), aer(f, m, &layout)]
}

fn quest(f: &Forecast, layout: &Layout, host: bool) -> SimulatorSettings {
    let chunk = layout.chunk_bytes();
    let (build, each) = match host {
        true => ("-DENABLE_MULTITHREADING=ON", "process"),
        false => ("-DENABLE_CUDA=ON", "GPU"),
    };
    let lines = if f.gpus == 1 {
        vec![
            format!("one process, no distribution: cmake {build} (ENABLE_DISTRIBUTION off)"),
            format!("memory per {each}: {} (the register)", human_bytes(chunk)),
        ]
    } else {
        let local = layout.local_qubits();
        let auto = if local >= 26 {
            "createQureg distributes it on its own (26 or more qubits stay local)".to_string()
        } else {
            format!(
                "only {local} qubits stay local, under the 26 at which createQureg distributes: use createForcedQureg"
            )
        };
        vec![
            format!("cmake {build} -DENABLE_DISTRIBUTION=ON; one process per {}", if host { "rank" } else { "GPU" }),
            format!("mpirun -np {} ./your_program", f.gpus),
            format!("memory per {each}: {} (its chunk and a receive buffer as large)", human_bytes(2 * chunk)),
            auto,
        ]
    };
    SimulatorSettings {
        simulator: "QuEST v4".into(),
        lines,
        rule: "QuEST v4.1: a power-of-two process count, a buffer as large as the chunk, its autodeployer's 26 local qubits (quest/src/core/autodeployer.hpp); the quest wire is its exchange, so this is the plan qbench checks".into(),
    }
}

fn cudaq(f: &Forecast, m: &Machine) -> SimulatorSettings {
    let (node, nodes) = bit_groups(f);
    let lines = if f.gpus == 1 {
        vec!["--target nvidia (one GPU: no mgpu)".into()]
    } else {
        let mut bits = vec![node.to_string()];
        if nodes > 0 {
            bits.push(nodes.to_string());
        }
        let p2p = if m.wires.iter().any(|w| w.name == "p2p-ce" || w.name == "nccl") { node } else { 0 };
        vec![
            format!("--target nvidia --target-option mgpu{}", if f.precision.bytes() == 16 { ",fp64" } else { "" }),
            format!("mpiexec -np {} ...", f.gpus),
            format!("CUDAQ_GLOBAL_INDEX_BITS={}", bits.join(",")),
            format!("CUDAQ_MGPU_P2P_DEVICE_BITS={p2p}"),
        ]
    };
    SimulatorSettings {
        simulator: "CUDA-Q nvidia-mgpu".into(),
        lines,
        rule: "CUDA-Q's nvidia target: CUDAQ_GLOBAL_INDEX_BITS lists log2 of each group of processes from the fastest link to the slowest, CUDAQ_MGPU_P2P_DEVICE_BITS the bits whose partners peer-to-peer reaches (the GPUs of a node); not checked here".into(),
    }
}

fn custatevec(f: &Forecast, layout: &Layout) -> SimulatorSettings {
    let (node, nodes) = bit_groups(f);
    let lines = if f.gpus == 1 {
        vec!["one device: no index-bit swaps".into()]
    } else {
        let mut l =
            vec![format!("nGlobalIndexBits={} nLocalIndexBits={}", layout.global_qubits, layout.local_qubits())];
        if node > 0 {
            l.push(format!(
                "within a node: {node} bit(s), custatevecMultiDeviceSwapIndexBits, CUSTATEVEC_DEVICE_NETWORK_TYPE_SWITCH (FULLMESH where GPUs link directly)"
            ));
        }
        if nodes > 0 {
            l.push(format!("across nodes: {nodes} bit(s), custatevecDistIndexBitSwapScheduler with an SVSwapWorker on the communicator"));
        }
        l
    };
    SimulatorSettings {
        simulator: "cuStateVec".into(),
        lines,
        rule: "cuStateVec's distributed index-bit swap: the global bits in layers from the fastest link out, the most-used qubits kept local (as the swap schedule here prices it); not checked here".into(),
    }
}

fn aer(f: &Forecast, m: &Machine, layout: &Layout) -> SimulatorSettings {
    let b = layout.precision.bytes();
    // sizeof(complex) · 2^(blocking_qubits + 4) below the smallest memory.
    let fit = (m.gpu_memory / b).checked_ilog2().map_or(0, |k| k.saturating_sub(4));
    let blocking = fit.min(layout.local_qubits());
    let lines = vec![
        format!(
            "AerSimulator(method='statevector', device='{}', precision='{}', blocking_enable={}, blocking_qubits={blocking})",
            if m.host { "CPU" } else { "GPU" },
            f.precision.name(),
            if f.gpus > 1 { "True" } else { "False" }
        ),
        if f.gpus > 1 { format!("mpirun -np {} python your_program.py", f.gpus) } else { "one process".into() },
    ];
    SimulatorSettings {
        simulator: "Qiskit Aer".into(),
        lines,
        rule: "Aer's multi-GPU guide: blocking_qubits such that sizeof(complex)·2^(blocking_qubits+4) stays below the smallest device memory, and no more than the qubits a process holds; not checked here".into(),
    }
}

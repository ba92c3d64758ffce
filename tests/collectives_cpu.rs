//! End-to-end runs of the collective subcommands on the cpu transport: the
//! whole pipeline (sweep, data, checks, table, JSON, CSV, exit codes) as a
//! user sees it, with no GPU.

mod common;

use common::{EVERY_TYPE_AND_OP, assert_clean, qbench, qbench_with, rows, stderr, stdout};
use qbench::dtype::{DataType, RedOp};
use qbench::record::Observer;
use qbench::record::collective::{CollectiveRun, SizeRecord, TransportKind};
use qbench::session::Session;
use qbench::units::Growth;
use qbench::workload::Job;
use qbench::workload::collective::Kind;
use qbench::workload::collective::plan::{CollectivePlan, Options};

#[test]
fn allreduce_table_on_four_host_ranks() {
    let o = qbench(&["allreduce", "--transport", "cpu", "-g", "4", "-b", "1M", "-e", "64M", "-f", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = rows(&o);
    let sizes: Vec<u64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(sizes, (0..7).map(|i| (1u64 << 20) << i).collect::<Vec<_>>());
    for r in &rows {
        assert_eq!(r.len(), 13, "{r:?}");
        assert_eq!((r[8].as_str(), r[12].as_str()), ("0", "0"), "{r:?}");
        // busbw = algbw * 2(n-1)/n = 1.5 algbw for n = 4 (two printed decimals).
        let (alg, bus): (f64, f64) = (r[6].parse().unwrap(), r[7].parse().unwrap());
        assert!((bus - 1.5 * alg).abs() <= 0.02, "{r:?}");
    }
    let text = stdout(&o);
    assert!(text.contains("# Out of bounds values : 0 OK"));
    assert_eq!(text.matches("#  Rank ").count(), 4);
}

#[test]
fn every_collective_type_and_op_checks_clean() {
    for &kind in Kind::ALL {
        let coll = kind.spec().command();
        // Three ranks, and a power of two for those that take only those (hypercube).
        for g in if kind.spec().fits(3).is_ok() { &["3", "4"][..] } else { &["2", "8"] } {
            let o = qbench(&[&[coll, "-g", g][..], &EVERY_TYPE_AND_OP].concat());
            assert!(o.status.success(), "{coll} -g {g}: {}", String::from_utf8_lossy(&o.stderr));
            let rows = rows(&o);
            assert!(!rows.is_empty());
            assert_clean(&rows, &format!("{coll} -g {g}"));
        }
    }
}

/// The sizes a sweep tells its observer before it begins (what progress
/// counts on) are those of the rows it then measures: every type and op it
/// runs, every root, every cycle.
#[test]
fn a_sweep_announces_the_rows_it_measures() {
    #[derive(Default)]
    struct Rows {
        planned: Vec<u64>,
        measured: Vec<u64>,
    }
    impl Observer<CollectiveRun> for Rows {
        fn planned(&mut self, sizes: &[u64]) {
            self.planned = sizes.to_vec();
        }
        fn part(&mut self, _run: &CollectiveRun, row: &SizeRecord) {
            self.measured.push(row.size);
        }
    }
    let session = Session::start(&[], None).unwrap();
    for (kind, root) in [(Kind::AllReduce, 0), (Kind::AllGather, 0), (Kind::Broadcast, -1)] {
        let options = Options {
            ngpus: 4,
            minbytes: 1 << 10,
            maxbytes: 16 << 10,
            step: Growth::Factor(4),
            iters: 2,
            run_cycles: 2,
            datatypes: DataType::parse("all").unwrap(),
            ops: RedOp::parse("all").unwrap(),
            root,
            ..Options::default()
        };
        let plan = CollectivePlan::new(kind, TransportKind::Cpu, options, None).unwrap();
        let mut rows = Rows::default();
        let outcome = plan.run(&session, &mut rows);
        assert!(outcome.error.is_none(), "{kind:?}: {:?}", outcome.error);
        // Sizes of 1K and up over four ranks: every row moves its sweep size.
        assert_eq!(rows.planned, rows.measured, "{kind:?}");
        assert_eq!(rows.measured.len(), outcome.record.results.len(), "{kind:?}");
    }
}

#[test]
fn a_corrupted_element_is_counted_and_fails_the_run() {
    for coll in Kind::ALL.iter().map(|k| k.spec().command()) {
        let o = qbench_with(
            &[coll, "--transport", "cpu", "-g", "2", "-b", "64K", "-e", "64K", "-r", "1"],
            &[("QBENCH_CORRUPT", "1:3")],
        );
        assert_eq!(o.status.code(), Some(1), "{coll}");
        let r = &rows(&o)[0];
        // Out-of-place #wrong, from the row's end (hypercube has no redop).
        assert_eq!(r[r.len() - 5], "1", "{coll}: {r:?}");
        assert!(stdout(&o).contains("FAILED"));
        assert!(String::from_utf8_lossy(&o.stderr).contains("wrong elements"));
    }
}

/// A fault that could never show is refused in one line before work,
/// without being announced as if it were applied, in every command that
/// takes one.
#[test]
fn a_fault_that_could_never_be_applied_is_one_line_and_exit_2() {
    // 1K of floats is 256 elements: element 256 lies past every output, rank 2 past the ranks.
    let allreduce: &[&str] = &["allreduce", "--transport", "cpu", "-g", "2", "-b", "1K", "-e", "1K", "-d", "float"];
    for (args, fault, says) in [
        (allreduce, "0:256", "element 256"),
        (allreduce, "0:1048576", "element 1048576"),
        (allreduce, "2:0", "rank 2"),
        (&["check", "--profile", "cpu"][..], "slow:3", "rank 3 but the job's ranks are 0 to 0"),
        (&["rdma", "--loopback", "-s", "4096"][..], "rdma:4096", "the largest message here is 4096 bytes"),
        (&["exchange", "--qubits", "10", "--transport", "cpu"][..], "partner", "one rank has no partner"),
    ] {
        let o = qbench_with(args, &[("QBENCH_CORRUPT", fault)]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{fault}: {err}");
        assert_eq!(err.lines().count(), 1, "{fault}: {err}");
        assert!(err.contains(says), "{fault}: {err}");
        assert!(stdout(&o).is_empty(), "{fault}: {}", stdout(&o));
    }
}

#[test]
fn json_and_csv_carry_the_same_records() {
    let dir = std::env::temp_dir().join(format!("qbench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, csv) = (dir.join("r.json"), dir.join("r.csv"));
    let o = qbench(&[
        "reducescatter",
        "--transport",
        "cpu",
        "-g",
        "2",
        "-b",
        "1K",
        "-e",
        "64K",
        "-f",
        "4",
        "-d",
        "half",
        "-o",
        "max",
        "-J",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "qbench.collective.v2");
    assert_eq!(v["collective"], "reduce_scatter");
    assert_eq!(v["config"]["nranks"], 2);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for r in results {
        assert_eq!(r["type"], "half");
        assert_eq!(r["redop"], "max");
        for side in ["out_of_place", "in_place"] {
            assert_eq!(r[side]["wrong"], 0);
            let it = &r[side]["iterations"];
            assert!(it["min"].as_f64().unwrap() <= it["median"].as_f64().unwrap());
            assert!(it["median"].as_f64().unwrap() <= it["p99"].as_f64().unwrap());
            assert!(it["p99"].as_f64().unwrap() <= it["max"].as_f64().unwrap());
            assert_eq!(it["samples"], 20);
        }
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("collective,transport,nranks,cycle,size,count,type,redop,root,placement,time_us"));
    assert_eq!(lines.len(), 1 + 2 * results.len());
    // --json prints the same document on stdout, and no table.
    let o = qbench(&["allgather", "--transport", "cpu", "-g", "2", "-b", "1K", "-e", "1K", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["results"][0]["redop"], serde_json::Value::Null);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: &[&[&str]] = &[
        &["allreduce", "--transport", "cpu", "-b", "2M", "-e", "1M"],
        &["allreduce", "--transport", "cpu", "-b", "12Q"],
        &["allreduce", "--transport", "cpu", "-d", "float128"],
        &["allreduce", "--transport", "cpu", "-o", "xor"],
        &["allreduce", "--transport", "cpu", "-g", "0"],
        &["broadcast", "--transport", "cpu", "-g", "2", "-r", "7"],
        &["allreduce", "--transport", "cpu", "-G", "1"],
        &["allreduce", "--transport", "cpu", "-f", "0"],
        &["allreduce", "--transport", "cpu", "-b", "1", "-e", "8", "-i", "0"],
        &["allreduce", "--no-such-option"],
    ];
    for args in cases {
        let o = qbench(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("qbench: "), "{args:?}: {err}");
    }
    let o = qbench_with(&["allreduce", "--transport", "cpu", "-b", "1K", "-e", "1K"], &[("QBENCH_CORRUPT", "x")]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn min_bandwidth_env_fails_a_slow_run() {
    let o = qbench_with(
        &["allreduce", "--transport", "cpu", "-g", "2", "-b", "1K", "-e", "1K"],
        &[("NCCL_TESTS_MIN_BW", "1e9")],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("# Avg bus bandwidth    : ") && stdout(&o).contains("FAILED"));
}

/// No GPU to use: no driver here, or none visible where there is one
/// (CUDA_VISIBLE_DEVICES empty hides every GPU from the driver).
#[test]
fn without_a_gpu_the_nccl_transport_says_what_is_missing() {
    let o = qbench_with(&["allreduce", "-g", "2"], &[("CUDA_VISIBLE_DEVICES", "")]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let driver = qbench::libs::Library::Driver.loadable();
    let what = if driver { "no CUDA GPU is visible" } else { "libcuda" };
    assert!(err.contains(what) && err.contains("--transport cpu"), "{err}");
    // Each command's hint names its own way to run without GPUs.
    if !driver {
        for (args, hint) in [
            (&["compare", "-b", "1M"][..], "--memory host"),
            (&["check", "--profile", "h200x8-ndr"][..], "--profile cpu"),
            (&["exchange", "--qubits", "20"][..], "--transport cpu"),
        ] {
            let o = qbench(args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
            assert!(err.contains("libcuda") && err.contains(hint), "{args:?}: {err}");
        }
    }
}

/// A build without MPI support started by a launcher refuses instead of
/// running as one of N unrelated jobs (the nccl-tests pitfall).
#[cfg(not(feature = "mpi"))]
#[test]
fn launcher_without_mpi_support_is_refused() {
    for (var, value) in
        [("OMPI_COMM_WORLD_SIZE", "4"), ("PMI_SIZE", "2"), ("SLURM_STEP_NUM_TASKS", "8"), ("PMIX_RANK", "3")]
    {
        let o = qbench_with(&["allreduce", "--transport", "cpu"], &[(var, value)]);
        assert_eq!(o.status.code(), Some(2), "{var}");
        let err = String::from_utf8_lossy(&o.stderr);
        // Rank 3 of the job is silent: the lowest rank says it, once.
        if var == "PMIX_RANK" {
            assert!(err.is_empty(), "{err}");
            continue;
        }
        assert!(err.contains("without MPI support") && err.contains("--features mpi"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1);
    }
    let o = qbench_with(&["allreduce", "--transport", "cpu", "-b", "1K", "-e", "1K"], &[("OMPI_COMM_WORLD_SIZE", "1")]);
    assert!(o.status.success());
}

#[test]
fn a_missing_argument_is_named_in_one_line() {
    for (args, want) in [(&["exchange"][..], "--qubits N (or A..B)"), (&["plot"][..], "not provided: <FILE.json>...")] {
        let o = qbench(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want) && err.lines().count() == 1, "{args:?}: {err}");
    }
}

/// NCCL_TESTS_SPLIT splits MPI processes only, as in nccl-tests: one
/// process runs its ranks as one communicator. A value nccl-tests would
/// take silently as colour 0 is one line and exit 2 here.
#[test]
fn a_split_value_that_cannot_be_read_is_one_line_and_exit_2() {
    let args = ["allreduce", "--transport", "cpu", "-g", "2", "-b", "1M", "-e", "1M"];
    let o = qbench_with(&args, &[("NCCL_TESTS_SPLIT", "MOD 2")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(rows(&o).len(), 1);
    assert!(!stdout(&o).contains("# Group "), "{}", stdout(&o));
    for (var, value) in [("NCCL_TESTS_SPLIT", "XOR 2"), ("NCCL_TESTS_SPLIT", "MOD 0"), ("NCCL_TESTS_SPLIT_MASK", "zz")]
    {
        let o = qbench_with(&args, &[(var, value)]);
        assert_eq!(o.status.code(), Some(2), "{var}={value}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("qbench: {var}={value}: ")), "{err}");
    }
}

/// The option lines of nccl-tests 2.19.6's usage text (src/common.cu), the
/// interface scripts type.
const NCCL_TESTS_USAGE: &str = include_str!("fixtures/nccl-tests/usage-2.19.6.txt");

/// A value of each nccl-tests option that the cpu transport can run.
fn cpu_value(letter: char) -> &'static str {
    match letter {
        't' | 'g' | 'm' | 'N' | 'c' | 'a' | 'z' | 'C' | 'S' | 'I' => "1",
        'b' | 'e' => "1K",
        'i' => "1M",
        'f' => "2",
        'n' => "3",
        'o' => "sum",
        'd' => "float",
        'V' => "16",
        _ => "0",
    }
}

#[test]
fn every_option_of_nccl_tests_usage_is_taken_by_its_letter_and_its_long_name() {
    let options: Vec<(char, &str)> = NCCL_TESTS_USAGE
        .lines()
        .filter_map(|l| l.strip_prefix("[-"))
        .map(|l| {
            let (letter, rest) = l.split_once(",--").unwrap();
            let long = rest.split([' ', ']']).next().unwrap();
            (letter.chars().next().unwrap(), long)
        })
        .collect();
    assert_eq!(options.len(), 32, "{options:?}");
    let json = std::env::temp_dir().join(format!("qbench-usage-{}.json", std::process::id()));
    for (letter, long) in options {
        if letter == 'h' {
            for form in ["-h", "--help"] {
                let o = qbench(&["allreduce", form]);
                assert!(o.status.success() && stdout(&o).contains("--report_cputime"), "{form}");
            }
            continue;
        }
        let value = if letter == 'J' { json.to_str().unwrap() } else { cpu_value(letter) };
        let short = format!("-{letter}");
        let long_eq = format!("--{long}={value}");
        let base = ["allreduce", "--transport", "cpu", "-b", "1K", "-e", "1K", "-n", "3", "-w", "0"];
        for args in [vec![short.as_str(), value], vec![long_eq.as_str()]] {
            let o = qbench(&[&base[..], &args].concat());
            let err = stderr(&o);
            if letter == 'x' {
                // NCCL's CTA policy: taken, and refused on host ranks in one line.
                assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
                assert!(err.contains("-x (NCCL's CTA policy) needs --transport nccl"), "{args:?}: {err}");
                continue;
            }
            assert!(o.status.success(), "{args:?}: {err}");
            assert_eq!(rows(&o).len(), 1, "{args:?}");
        }
    }
    let _ = std::fs::remove_file(&json);
}

#[test]
fn nccl_tests_modes_show_in_the_table_as_nccl_tests_prints_them() {
    let o = qbench(&[
        "allreduce",
        "--transport",
        "cpu",
        "-g",
        "2",
        "-b",
        "1K",
        "-e",
        "4K",
        "-f",
        "2",
        "-n",
        "12",
        "-z",
        "3",
        "-C",
        "1",
        "-S",
        "1",
        "-I",
        "1",
        "-K",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n")
    );
    assert!(text.contains("; summary skips first 2 iterations \n"), "{text}");
    assert!(text.contains("  cputime   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%  cputime"), "{text}");
    assert!(text.contains("      (%)   %Y-%m-%d %H:%M:%S\n"), "{text}");
    for r in rows(&o) {
        // size count type redop root, 8 figures per placement, date, time.
        assert_eq!(r.len(), 5 + 16 + 2, "{r:?}");
        let (min, max, p99): (f64, f64, f64) = (r[9].parse().unwrap(), r[10].parse().unwrap(), r[11].parse().unwrap());
        assert!(min <= p99 && p99 <= max, "{r:?}");
        assert_eq!(r[21].len(), 10, "{r:?}");
    }
    // The JSON keeps each iteration and the summary's skip.
    let o =
        qbench(&["allreduce", "--transport", "cpu", "-b", "1K", "-e", "1K", "-n", "7", "-I", "1", "-K", "3", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["results"][0]["out_of_place"]["per_iter"];
    assert_eq!((p["skipped"].as_u64(), p["times_us"].as_array().map(Vec::len)), (Some(3), Some(7)), "{p}");
    assert!(v["results"][0]["out_of_place"]["cpu_time_us"].is_null());
}

#[test]
fn nccl_tests_values_qbench_cannot_honour_are_one_line_naming_their_meaning() {
    for (args, says) in [
        (&["-y", "1"][..], "NULL stream"),
        (&["-D", "2"], "device kernels"),
        (&["-u", "3"], "misaligned GPU buffers"),
        (&["-R", "1"], "registration"),
        (&["-M", "1"], "GPU memory report"),
        (&["-x", "1"], "CTA policy"),
        (&["-K", "2"], "-K needs -I 1"),
        (&["-I", "1", "-K", "3"], "leaves none of the 3 iterations"),
        (&["-z", "4"], "0..=3"),
    ] {
        let o = qbench(&[&["allreduce", "--transport", "cpu", "-b", "1K", "-e", "1K", "-n", "3"][..], args].concat());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn nccl_tests_json_is_the_collectives_only() {
    let o = qbench(&[
        "allreduce",
        "--transport",
        "cpu",
        "-b",
        "1K",
        "-e",
        "1K",
        "-C",
        "1",
        "--format",
        "nccl-tests",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cell = &v["results"][0]["out_of_place"];
    assert!(cell["cpu_time"].as_f64().unwrap() > 0.0 && cell["time"].is_null(), "{cell}");
    assert_eq!(v["average_bus_bandwidth"]["okay"], "unchecked");
    assert!(v["results"][0].get("out_of_place_per_iter").is_none());
    let o = qbench(&["osu_bw", "--format", "nccl-tests", "-J", "/tmp/never.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("only the collectives' records have nccl-tests' JSON form"));
}

#[test]
fn hypercube_exchanges_with_rank_xor_mask_and_counts_what_each_rank_receives() {
    let o = qbench(&["hypercube", "--transport", "cpu", "-g", "4", "-b", "1M", "-e", "1M"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = &rows(&o)[0];
    // nccl-tests' hypercube_perf leaves the redop column empty: 12 fields.
    assert_eq!(r.len(), 12, "{r:?}");
    // algbw = size × (n − 1)/n over the time; busbw = algbw (nccl-tests).
    let (t, alg, bus): (f64, f64, f64) = (r[4].parse().unwrap(), r[5].parse().unwrap(), r[6].parse().unwrap());
    assert!((alg - 1048576.0 * 0.75 / 1e3 / t).abs() <= 0.01 + 0.01 * alg, "{r:?}");
    assert_eq!(alg, bus, "{r:?}");
    assert_eq!((r[7].as_str(), r[11].as_str()), ("0", "0"), "{r:?}");
    let o = qbench(&["hypercube", "--transport", "cpu", "-g", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs a power-of-two rank count, not 3"), "{}", stderr(&o));
}

/// nccl-tests' alltoallv sizes: with 4 ranks at 1K each sends 160, 336 and
/// 512 bytes to the ranks 1, 2 and 3 places on (each share rounded down to
/// 16 bytes), 1008 in all, the size column; the count column is the uniform
/// per-peer 64 floats. Spread 0 sends 256 bytes to each, 1024 in all.
#[test]
fn alltoallv_sends_by_distance_and_spread() {
    let args = ["alltoallv", "--transport", "cpu", "-g", "4", "-b", "1K", "-e", "1K", "-d", "float"];
    for (spread, size) in [(None, "1008"), (Some("0.0"), "1024"), (Some("7"), "1008")] {
        let env: Vec<(&str, &str)> = spread.map(|s| ("NCCL_TESTS_ALLTOALLV_SPREAD", s)).into_iter().collect();
        let o = qbench_with(&args, &env);
        assert!(o.status.success(), "{}", stderr(&o));
        let r = &rows(&o)[0];
        assert_eq!((r[0].as_str(), r[1].as_str(), r[8].as_str()), (size, "64", "0"), "{spread:?}: {r:?}");
    }
    let o = qbench_with(&args, &[("NCCL_TESTS_ALLTOALLV_SPREAD", "wide")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("NCCL_TESTS_ALLTOALLV_SPREAD=wide"), "{}", stderr(&o));
    let o = qbench_with(&args, &[("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", "/nonexistent/m.txt")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read NCCL_TESTS_ALLTOALLV_MATRIX_FILE=/nonexistent/m.txt"), "{}", stderr(&o));
}

/// A corrupted fp8 element is caught like any other.
#[test]
fn a_corrupted_fp8_element_is_counted() {
    for dt in ["f8e4m3", "f8e5m2"] {
        let args = ["allreduce", "--transport", "cpu", "-g", "3", "-b", "4K", "-e", "4K", "-d", dt, "-o", "avg"];
        let o = qbench_with(&args, &[("QBENCH_CORRUPT", "2:17")]);
        assert_eq!(o.status.code(), Some(1), "{dt}: {}", stderr(&o));
        assert_eq!(rows(&o)[0][8], "1", "{dt}");
    }
}

/// nccl-tests' traffic-matrix mode: cell [i][j] (scaled, rounded down to 16
/// bytes) from rank i to rank j; the size column the busiest rank's bytes,
/// the count column 0; every type checked, a corrupted element caught; -b
/// and -e must be one size that holds the busiest rank.
#[test]
fn alltoallv_follows_a_traffic_matrix() {
    let dir = std::env::temp_dir().join(format!("qbench-matrix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("traffic.txt");
    std::fs::write(&file, "0 100 200\n300 0 50\n16 32 0\n").unwrap();
    let m = file.to_str().unwrap();
    let run = |size: &[&str], env: &[(&str, &str)]| {
        let args = [&["alltoallv", "--transport", "cpu", "-g", "3"][..], size].concat();
        qbench_with(&args, &[&[("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", m)][..], env].concat())
    };
    let o = run(&["-b", "1K", "-e", "1K", "-d", "all"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = rows(&o);
    assert_eq!(table.len(), 12);
    for r in &table {
        // Rows send 96 + 192 + 0, 288 + 48 and 16 + 32 bytes: the busiest 336.
        assert_eq!((r[0].as_str(), r[1].as_str(), r[8].as_str()), ("336", "0", "0"), "{r:?}");
    }
    let o = run(&["-b", "2K", "-e", "2K"], &[("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", "4")]);
    assert_eq!(rows(&o)[0][0], "1392", "{}", stderr(&o));
    let o = run(&["-b", "1K", "-e", "1K", "-d", "float"], &[("QBENCH_CORRUPT", "2:59")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // Rank 2 receives 60 floats: element 60 on is nobody's data.
    let o = run(&["-b", "1K", "-e", "1K", "-d", "float"], &[("QBENCH_CORRUPT", "2:60")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    for (size, says) in [(&["-b", "1K", "-e", "2K"][..], "-b and -e"), (&["-b", "128", "-e", "128"], "at least 336")] {
        let o = run(size, &[]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    let o = qbench_with(
        &["alltoallv", "--transport", "cpu", "-g", "4", "-b", "1K", "-e", "1K"],
        &[("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", m)],
    );
    assert!(stderr(&o).contains("3x3, too small for 4 ranks"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

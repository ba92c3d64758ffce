//! The qbench binary: parse the command line, run the job, map the outcome
//! onto the exit codes of DESIGN.md.

use clap::Parser;
use qbench::cli::{Cli, Command};
use qbench::error::Error;

fn main() {
    // A panic is a bug, but the user still gets one line and exit 4.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("qbench: internal error: {msg}{at}");
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // One line, exit 2: clap's first line without its "error: " prefix.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid command line");
            eprintln!("qbench: {} (see qbench --help)", first.trim_start_matches("error: "));
            std::process::exit(2);
        }
        Err(e) => e.exit(),
    };
    let result =
        std::panic::catch_unwind(|| run(&cli.command)).unwrap_or_else(|_| Err(Error::Runtime("aborted".into())));
    if let Err(e) = result {
        if !(e.message().is_empty() || e.message() == "aborted") {
            eprintln!("qbench: {e}");
        }
        std::process::exit(e.exit_code());
    }
}

fn run(command: &Command) -> qbench::error::Result<()> {
    match command {
        Command::Probe(args) => qbench::probe::run(args),
        Command::Exchange(args) => qbench::workload::exchange::run(args),
        Command::Compare(args) => qbench::workload::exchange::compare::run(args),
        Command::Copy(args) => qbench::workload::copy::run(args),
        Command::Rdma(args) => qbench::rdma::run(args),
        _ => {
            let (kind, args) = command.collective().expect("every other subcommand is a collective");
            qbench::harness::run_collective(kind, args)
        }
    }
}

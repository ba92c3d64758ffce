//! The qbench binary: parse the command line, run the command, map the
//! outcome onto the exit codes (docs/ARCHITECTURE.md).

use clap::Parser;
use qbench::cli::Cli;
use qbench::error::Error;

fn main() {
    // A panic is a bug, but the user still gets one line and exit 4; under
    // MPI the whole job ends with it.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        qbench::command::panicked(&Error::Runtime(format!("internal error: {msg}{at}")));
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => end(qbench::command::before_start(Error::Usage(one_line(&e)))),
        Err(e) => e.exit(),
    };
    let ui = cli.ui();
    let result = std::panic::catch_unwind(|| qbench::command::run(cli.command, &ui))
        .unwrap_or_else(|_| Err(Error::Runtime(String::new())));
    if let Err(e) = result {
        // A plan refused before the job's world started is said once for the job.
        end(qbench::command::before_start(e));
    }
}

/// clap's message up to its usage block (the missing argument is on its
/// second line), without "error: ", in one line.
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let words: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
        .filter(|l| !l.starts_with("tip:"))
        .collect();
    // clap quotes the value given whole: a long one is cut short.
    let message = words.join(" ").split(' ').map(qbench::command::token).collect::<Vec<_>>().join(" ");
    let message = message.trim_start_matches("error: ");
    format!("{} (see qbench --help)", if message.is_empty() { "invalid command line" } else { message })
}

/// Ends the process with `e`'s exit status, after its one line (none for a
/// failure already said).
fn end(e: Error) -> ! {
    let message = e.message();
    if !message.is_empty() {
        qbench::command::say(&format!("qbench: {message}"));
    }
    std::process::exit(e.exit_code())
}

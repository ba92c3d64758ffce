//! One command from plan to exit status: the session (libraries, world),
//! the output (files created before any work), the job, the records
//! written, and the verdict on them. Every command that measures is a
//! [`Job`] run by [`measure`]; probe, show and plot read and render.

use crate::cli::Command;
use crate::error::{Error, Result};
/// A long word of the command line quoted short, for the binary's one line
/// of what clap refused.
pub use crate::input::token;
use crate::output::{Output, OutputPlan, write_stdout};
use crate::progress::{Progress, Progressive};
use crate::report::{Rows, Table};
use crate::session::Session;
use crate::ui::Ui;
/// Whole lines on stderr, for the binary.
pub use crate::ui::say;
use crate::workload::Job;
/// The panic hook's one line (and, under MPI, the end of the job), and an
/// error met before the job's world started said once for the job, for
/// the binary.
pub use crate::world::{before_start, panicked};

/// Runs a parsed command with the terminal settings of `ui`.
pub fn run(command: Command, ui: &Ui) -> Result<()> {
    match command {
        Command::Probe(a) => crate::probe::run(&a.plan(), ui),
        Command::Collective(c) => measure(&c.args.plan(c.kind)?, &c.args.out.plan(), ui),
        Command::Exchange(a) => measure(&a.plan()?, &a.out.plan(), ui),
        Command::Compare(a) => measure(&a.plan()?, &a.out.plan(), ui),
        Command::Check(a) => measure(&a.plan()?, &a.output(ui.quiet), ui),
        Command::Copy(a) if a.list => write_stdout(&crate::report::copy::list(
            &crate::workload::copy::catalogue(),
            &crate::workload::copy::FAMILIES,
            ui.width,
        )),
        Command::Copy(a) => measure(&a.plan()?, &a.out.plan(), ui),
        Command::Rdma(c) => measure(&c.args.plan()?, &c.args.out.plan(), ui),
        Command::Osu(c) => measure(&c.args.plan(c.benchmark)?, &c.args.out.plan(), ui),
        Command::Show(a) => {
            if let Some(text) = a.history.render() {
                return write_stdout(&text?);
            }
            for file in &a.files {
                let text = match crate::probe::reread(file, ui.width)? {
                    Some(report) => report,
                    None => crate::report::render_any(&crate::record::read(file)?),
                };
                write_stdout(&text)?;
            }
            Ok(())
        }
        Command::Plot(a) => {
            let plan = a.plan()?;
            let picture = crate::report::plot::draw(&plan.read()?, &plan.options)?;
            crate::output::write_picture(&plan.output, &picture)
        }
    }
}

/// Starts the session `job` needs, opens the output, runs the job with it
/// as the observer (and progress on stderr around it, as `ui` allows),
/// writes the records (partial ones too, marked so), and judges them. The
/// record is drawn as progress, printed as its table and written in every
/// format the output asks for, from its rows.
fn measure<J: Job>(job: &J, output: &OutputPlan, ui: &Ui) -> Result<()>
where
    J::Record: Progressive + Table + Rows,
{
    output.accepts(<J::Record as Rows>::KIND)?;
    output.distinct()?;
    let session = Session::start(&job.libraries(), job.without_gpus())?;
    let main = session.main();
    let mut out = match Output::open(output, main) {
        Ok(out) => out,
        Err(e) => return crate::world::conclude(session.world(), Err(e)),
    };
    // The progress line is cleared before the table's last lines.
    let outcome = job.run(&session, &mut Progress::new(&mut out, ui.progress() && main));
    let (record, error) = (outcome.record, outcome.error);
    let written = out.finish(&record);
    match error {
        Some(Error::Interrupted { signal, step }) => {
            let saved = match &written {
                Ok(Some(path)) => format!("; the records gathered so far are in {} (incomplete)", path.display()),
                _ => String::new(),
            };
            crate::world::conclude(session.world(), Err(Error::Interrupted { signal, step: step + &saved }))
        }
        Some(e) => crate::world::conclude(session.world(), Err(e)),
        None => match written {
            Err(e) => crate::world::conclude(session.world(), Err(e)),
            // Every rank judges the same records.
            Ok(_) => {
                let rank = session.world().rank();
                crate::world::verdict(session.world(), quietly(output.quiet, &record, rank, job.verdict(&record, rank)))
            }
        },
    }
}

/// Under `--quiet` (check's), the record's own lines for this rank on
/// stderr (a node's WARNs and FAILs, said once by the rank that speaks for
/// it) instead of the verdict's message: nothing when all is well.
fn quietly<R: Table>(quiet: bool, record: &R, rank: usize, verdict: Result<()>) -> Result<()> {
    if !quiet {
        return verdict;
    }
    // One write for all the lines, so that those of processes sharing a
    // terminal or a launcher's stream do not interleave mid-line.
    let text: String = record.quiet_lines(rank).iter().map(|l| format!("{l}\n")).collect();
    if !text.is_empty() {
        use std::io::Write;
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
    verdict.map_err(|e| match e {
        Error::Missing(_) => Error::Missing(String::new()),
        _ => Error::CheckFailed(String::new()),
    })
}

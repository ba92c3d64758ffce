//! One command from plan to exit status: the session (libraries, world),
//! the output (files created before any work), the workload, the records
//! written, and the verdict on them. Every command that measures goes
//! through [`execute`]; probe and plot read and render.

use crate::cli::Command;
use crate::error::{Error, Result};
use crate::fault::Fault;
use crate::output::{Output, OutputPlan, write_stdout};
use crate::progress::{Progress, Progressive};
use crate::record::Outcome;
use crate::report::{Csv, Table};
use crate::session::Session;
use crate::ui::Ui;
use serde::Serialize;

/// Runs a parsed command with the terminal settings of `ui`.
pub fn run(command: Command, ui: &Ui) -> Result<()> {
    match command {
        Command::Probe(a) => crate::probe::run(&a.plan(), ui),
        Command::Collective(c) => {
            let plan = c.args.plan(c.kind)?;
            let session = Session::start(&plan.libraries())?;
            execute(
                &session,
                ui,
                &plan.output,
                plan.fault,
                |o| crate::harness::run(&plan, &session, o),
                |r| r.verdict(),
            )
        }
        Command::Exchange(a) => {
            let plan = a.plan()?;
            let session = Session::start(&plan.libraries())?;
            execute(
                &session,
                ui,
                &plan.output,
                plan.fault,
                |o| crate::workload::exchange::run::run(&plan, &session, o),
                |r| r.verdict(),
            )
        }
        Command::Compare(a) => {
            let plan = a.plan()?;
            let session = Session::start(&plan.libraries())?;
            execute(
                &session,
                ui,
                &plan.output,
                plan.fault,
                |o| crate::workload::exchange::compare::run(&plan, &session, o),
                |r| r.verdict(),
            )
        }
        Command::Check(a) => {
            let plan = a.plan(ui.quiet)?;
            let session = Session::start(&plan.libraries())?;
            let quiet = plan.output.quiet && session.main();
            execute(
                &session,
                ui,
                &plan.output,
                None,
                |o| crate::check::run(&plan, &session, o),
                |r| {
                    let verdict = r.verdict();
                    if quiet && verdict.is_err() {
                        // One line per failure and nothing else: for Slurm.
                        for line in r.failure_lines() {
                            eprintln!("{line}");
                        }
                        return verdict.map_err(|e| match e {
                            Error::Missing(_) => Error::Missing(String::new()),
                            _ => Error::CheckFailed(String::new()),
                        });
                    }
                    verdict
                },
            )
        }
        Command::Copy(a) if a.list => write_stdout(&crate::report::copy::list(
            &crate::workload::copy::catalogue(),
            &crate::workload::copy::FAMILIES,
            ui.width,
        )),
        Command::Copy(a) => {
            let plan = a.plan()?;
            let session = Session::start(&plan.libraries())?;
            execute(
                &session,
                ui,
                &plan.output,
                plan.fault,
                |o| crate::workload::copy::run(&plan, &session, o),
                |r| r.verdict(),
            )
        }
        Command::Rdma(a) => {
            let plan = a.plan()?;
            let session = Session::start(&plan.libraries())?;
            execute(&session, ui, &a.out.plan(), plan.fault, |o| crate::rdma::run(&plan, &session, o), |r| r.verdict())
        }
        Command::Plot(a) => {
            let plan = a.plan()?;
            let picture = crate::report::plot::draw(&plan.read()?, &plan.options)?;
            crate::output::write_picture(&plan.output, &picture)
        }
    }
}

/// Opens the output, runs `work` with it as the observer (and progress on
/// stderr around it, as `ui` allows), writes the records (partial ones
/// too, marked so), and judges them.
pub fn execute<R: Progressive + Table + Csv + Serialize>(
    session: &Session,
    ui: &Ui,
    output: &OutputPlan,
    fault: Option<Fault>,
    work: impl FnOnce(&mut dyn crate::record::Observer<R>) -> Outcome<R>,
    verdict: impl FnOnce(&R) -> Result<()>,
) -> Result<()> {
    let mut out = match Output::open(output, session.main()) {
        Ok(out) => out,
        Err(e) => return crate::world::conclude(session.world(), Err(e)),
    };
    if let (Some(f), true) = (fault, session.main()) {
        eprintln!("qbench: {}", f.describe());
    }
    // The progress line is cleared before the table's last lines.
    let Outcome { record, error } = work(&mut Progress::new(&mut out, ui.progress() && session.main()));
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
            Ok(_) => crate::world::verdict(session.world(), verdict(&record)),
        },
    }
}

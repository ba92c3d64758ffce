//! Where a command's results go, decided once before any work: the table
//! on stdout as the run goes (or JSON on stdout at its end), the `-J` JSON
//! file and the `--csv` file, both created up front so that a bad path
//! fails in a second, not after the sweep. Only the job's main process
//! writes. A closed stdout (`qbench … | head`) stops the run quietly.

use crate::error::{Error, Result};
use crate::record::{Observer, Streamed};
use crate::report::{Csv, Table};
use serde::Serialize;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

/// What the command line asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutputPlan {
    /// `-J FILE` (and `check --save-baseline FILE`): the records as JSON.
    pub json_files: Vec<PathBuf>,
    /// `--csv FILE`.
    pub csv_file: Option<PathBuf>,
    /// `--json`: JSON on stdout instead of the tables.
    pub json_stdout: bool,
    /// No tables on stdout (`check --quiet`).
    pub quiet: bool,
}

/// Writes `text` to stdout; a reader that went away ends the run quietly.
pub fn write_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            crate::interrupt::stdout_closed();
            Ok(())
        }
        Err(e) => Err(Error::Runtime(format!("cannot write to stdout: {e}"))),
    }
}

/// Writes `qbench plot`'s picture to `path` and says so on stdout, or
/// writes it to stdout itself when there is no path (`-o -`).
pub fn write_picture(path: &Option<PathBuf>, picture: &crate::report::plot::Picture) -> Result<()> {
    let Some(path) = path else {
        return write_stdout(&String::from_utf8_lossy(&picture.bytes));
    };
    std::fs::write(path, &picture.bytes)
        .map_err(|e| Error::Usage(format!("cannot write the picture {}: {e}", path.display())))?;
    let s = |n: usize| if n == 1 { "" } else { "s" };
    write_stdout(&format!(
        "{}: {} series in {} panel{}\n",
        path.display(),
        picture.series,
        picture.panels,
        s(picture.panels)
    ))
}

fn create(path: &PathBuf, what: &str) -> Result<File> {
    File::create(path).map_err(|e| Error::Usage(format!("cannot create the {what} file {}: {e}", path.display())))
}

/// The open destinations of one run.
pub struct Output {
    json_stdout: bool,
    quiet: bool,
    main: bool,
    json: Vec<(PathBuf, File)>,
    csv: Option<(PathBuf, File)>,
}

impl Output {
    /// Creates the files (on the main process only).
    pub fn open(plan: &OutputPlan, main: bool) -> Result<Output> {
        let open = |p: Option<&PathBuf>, what| -> Result<Option<(PathBuf, File)>> {
            match p {
                Some(path) if main => Ok(Some((path.clone(), create(path, what)?))),
                _ => Ok(None),
            }
        };
        let json = plan.json_files.iter().map(|p| open(Some(p), "JSON")).collect::<Result<Vec<_>>>()?;
        Ok(Output {
            json_stdout: plan.json_stdout,
            quiet: plan.quiet,
            main,
            json: json.into_iter().flatten().collect(),
            csv: open(plan.csv_file.as_ref(), "CSV")?,
        })
    }

    /// Whether the tables go to stdout.
    fn tables(&self) -> bool {
        self.main && !self.json_stdout && !self.quiet
    }

    fn print(&self, text: &str) {
        if self.tables() {
            // A failing stdout other than a closed pipe shows in the final write.
            let _ = write_stdout(text);
        }
    }

    /// Ends the run's output: the table's tail, the files, JSON on stdout.
    /// Returns the JSON file's path, when one was written.
    pub fn finish<R: Table + Csv + Serialize>(&mut self, record: &R) -> Result<Option<PathBuf>> {
        if !self.main {
            return Ok(None);
        }
        if self.tables() {
            write_stdout(&record.tail())?;
        }
        let json = serde_json::to_string_pretty(record)
            .map_err(|e| Error::Runtime(format!("cannot encode the results as JSON: {e}")))?;
        let mut written = None;
        for (path, file) in &mut self.json {
            file.write_all(json.as_bytes())
                .and_then(|()| file.write_all(b"\n"))
                .map_err(|e| Error::Usage(format!("cannot write JSON results to {}: {e}", path.display())))?;
            written.get_or_insert(path.clone());
        }
        if let Some((path, file)) = &mut self.csv {
            file.write_all(&record.csv()?)
                .map_err(|e| Error::Usage(format!("cannot write CSV to {}: {e}", path.display())))?;
        }
        if self.json_stdout {
            write_stdout(&(json + "\n"))?;
        }
        Ok(written)
    }
}

impl<R: Streamed + Table> Observer<R> for Output {
    fn begin(&mut self, run: &R) {
        self.print(&run.head());
    }
    fn part(&mut self, run: &R, part: &R::Part) {
        self.print(&run.part(part));
    }
}

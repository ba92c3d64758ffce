//! Where a command's results go, decided once before any work: the table
//! on stdout as the run goes (or JSON on stdout at its end), and the files,
//! each in its format (`-J`'s JSON, `--csv`, `--prometheus`: one list of
//! exporters, `report::export`), each a temporary file beside its path
//! created up front (so that a bad path fails in a second, not after the
//! sweep) and renamed onto it when written: a file is whole or absent,
//! whoever else writes the same path. Only the job's main process writes.
//! A closed stdout (`qbench … | head`) stops the run quietly. While the run
//! goes, the record so far is kept for the interrupt watchdog, which writes
//! it (marked incomplete) when a signalled run does not stop in time.

use crate::error::{Error, Result};
use crate::record::Observer;
use crate::report::export::{Format, Record};
use crate::report::{Rows, Table};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often the record kept for the watchdog is renewed, at most.
const KEPT_EVERY: Duration = Duration::from_millis(500);

/// What the command line asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutputPlan {
    /// `-J FILE` (and `check --save-baseline FILE`): the record in
    /// `format`'s JSON.
    pub json_files: Vec<PathBuf>,
    /// `--json`: `format`'s JSON on stdout instead of the tables.
    pub json_stdout: bool,
    /// Whose JSON `-J` and `--json` write (`--format`): qbench's records or
    /// nccl-tests'.
    pub format: Format,
    /// Every other file, in its format: `--csv FILE`, `--prometheus FILE`.
    pub files: Vec<(Format, PathBuf)>,
    /// No tables on stdout (`check --quiet`).
    pub quiet: bool,
    /// Files the job writes itself (check's `--init`, its `--history`
    /// line), held apart from the others all the same.
    pub also: Vec<PathBuf>,
}

impl OutputPlan {
    /// Every file, in its format: the JSON files first.
    fn all_files(&self) -> impl Iterator<Item = (Format, &PathBuf)> {
        let json = self.json_files.iter().map(|p| (self.format, p));
        json.chain(self.files.iter().map(|(f, p)| (*f, p)))
    }

    /// Err when two outputs of the run name one file, after resolving
    /// `..` and symbolic links (and, for files that exist, by device and
    /// inode): one would overwrite the other. Checked before any work.
    pub fn distinct(&self) -> Result<()> {
        let paths: Vec<&PathBuf> = self.all_files().map(|(_, p)| p).chain(&self.also).collect();
        let keys: Vec<FileKey> = paths.iter().map(|p| FileKey::of(p)).collect();
        for (i, a) in keys.iter().enumerate() {
            if let Some(j) = keys[..i].iter().position(|b| a.same(b)) {
                let (first, second) = (paths[j].display(), paths[i].display());
                let both = if first.to_string() == second.to_string() {
                    format!("{first} is named as two outputs of one run")
                } else {
                    format!("{first} and {second} are one file, named as two outputs of one run")
                };
                return Err(Error::Usage(format!("{both}: give each its own file")));
            }
        }
        Ok(())
    }

    /// Err when records of `kind` have no form in one of the formats asked
    /// for (nccl-tests' JSON of a run that is not a collective).
    pub fn accepts(&self, kind: &str) -> Result<()> {
        self.format.exporter().accepts(kind)?;
        self.files.iter().try_for_each(|(f, _)| f.exporter().accepts(kind))
    }
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
    let mut file = Pending::create(path, "picture")?;
    file.write(&picture.bytes)?;
    file.commit()?;
    let s = |n: usize| if n == 1 { "" } else { "s" };
    write_stdout(&format!(
        "{}: {} series in {} panel{}\n",
        path.display(),
        picture.series,
        picture.panels,
        s(picture.panels)
    ))
}

/// A file being written: a temporary file beside `path`, renamed onto it
/// by [`Pending::commit`], removed if it is dropped before. A path that is
/// not a regular file (`/dev/stdout`, a FIFO) is written as it is.
struct Pending {
    path: PathBuf,
    /// None: written in place.
    temp: Option<PathBuf>,
    file: Option<File>,
    what: &'static str,
}

impl Pending {
    fn create(path: &Path, what: &'static str) -> Result<Pending> {
        let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = (!special).then(|| path.with_file_name(format!(".{name}.{}.qbench-tmp", std::process::id())));
        let file = File::create(temp.as_deref().unwrap_or(path))
            .map_err(|e| Error::Usage(format!("cannot create the {what} file {}: {e}", path.display())))?;
        Ok(Pending { path: path.to_path_buf(), temp, file: Some(file), what })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let Some(file) = self.file.as_mut() else { return Ok(()) };
        file.write_all(bytes)
            .map_err(|e| Error::Usage(format!("cannot write the {} file {}: {e}", self.what, self.path.display())))
    }

    /// Puts the whole file in place.
    fn commit(&mut self) -> Result<()> {
        let Some(mut file) = self.file.take() else { return Ok(()) };
        let placed = match &self.temp {
            Some(temp) => file.sync_all().and_then(|()| std::fs::rename(temp, &self.path)),
            None => file.flush(),
        };
        placed.map_err(|e| Error::Usage(format!("cannot write the {} file {}: {e}", self.what, self.path.display())))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let (Some(_), Some(temp)) = (self.file.take(), &self.temp) {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// The run's record as it was last kept, and where its files go: what the
/// watchdog leaves behind.
#[derive(Default)]
struct Kept {
    record: Option<serde_json::Value>,
    taken: Option<Instant>,
    /// The JSON files' paths.
    json: Vec<PathBuf>,
    /// The temporary files of every pending output, removed.
    temps: Vec<PathBuf>,
}

impl Kept {
    /// Writes the record (marked incomplete, `stopped` saying why) to each
    /// JSON path, whole, and removes the temporary files; the paths written.
    fn leave(self, stopped: &str) -> Option<String> {
        for t in &self.temps {
            let _ = std::fs::remove_file(t);
        }
        let mut record = self.record?;
        if let Some(fields) = record.as_object_mut() {
            fields.insert("complete".into(), false.into());
            fields.insert("stopped".into(), stopped.into());
            fields.insert("end_time".into(), crate::host::now().into());
        }
        let text = serde_json::to_string_pretty(&record).ok()? + "\n";
        let written: Vec<String> = self
            .json
            .iter()
            .filter(|path| {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let last = path.with_file_name(format!(".{name}.{}.qbench-last", std::process::id()));
                std::fs::write(&last, &text).and_then(|()| std::fs::rename(&last, path)).is_ok()
            })
            .map(|p| p.display().to_string())
            .collect();
        (!written.is_empty()).then(|| written.join(", "))
    }
}

/// What names a file: its path as the file system resolves it (each
/// existing part with its links followed, `..` taken after them, the parts
/// not yet there as written), and its device and inode where it exists.
struct FileKey(PathBuf, Option<(u64, u64)>);

impl FileKey {
    fn of(path: &Path) -> FileKey {
        let (at, inode) = resolved(path);
        FileKey(at, inode)
    }

    fn same(&self, other: &FileKey) -> bool {
        self.0 == other.0 || (self.1.is_some() && self.1 == other.1)
    }
}

/// Whether `a` and `b` name one file (`plot -o` over a record it reads).
pub fn same_file(a: &Path, b: &Path) -> bool {
    FileKey::of(a).same(&FileKey::of(b))
}

/// `path` resolved, and its device and inode where it exists.
fn resolved(path: &Path) -> (PathBuf, Option<(u64, u64)>) {
    use std::os::unix::fs::MetadataExt;
    use std::path::Component;
    let mut at = PathBuf::new();
    for part in std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).components() {
        match part {
            Component::ParentDir => {
                at.pop();
            }
            Component::CurDir => {}
            part => {
                at.push(part);
                if let Ok(real) = std::fs::canonicalize(&at) {
                    at = real;
                }
            }
        }
    }
    let inode = std::fs::metadata(&at).ok().map(|m| (m.dev(), m.ino()));
    (at, inode)
}

/// The open destinations of one run.
pub struct Output {
    format: Format,
    json_stdout: bool,
    quiet: bool,
    main: bool,
    /// Every file of the run with its format, the JSON files first.
    files: Vec<(Format, Pending)>,
    /// Whether the run's head was printed: a run refused before it began
    /// ends with its one-line error, no tail.
    begun: bool,
    /// What the watchdog writes if the run does not stop in time.
    kept: Arc<Mutex<Kept>>,
}

impl Output {
    /// Creates the files (on the main process only).
    pub fn open(plan: &OutputPlan, main: bool) -> Result<Output> {
        let files: Vec<(Format, Pending)> = match main {
            true => plan
                .all_files()
                .map(|(f, path)| Ok((f, Pending::create(path, f.exporter().name())?)))
                .collect::<Result<_>>()?,
            false => Vec::new(),
        };
        let kept = Arc::new(Mutex::new(Kept {
            json: files.iter().take(plan.json_files.len()).map(|(_, p)| p.path.clone()).collect(),
            temps: files.iter().filter_map(|(_, p)| p.temp.clone()).collect(),
            ..Kept::default()
        }));
        if main {
            let k = Arc::clone(&kept);
            crate::interrupt::last_words(Some(Box::new(move |stopped| {
                std::mem::take(&mut *k.lock().unwrap_or_else(PoisonError::into_inner)).leave(stopped)
            })));
        }
        Ok(Output {
            format: plan.format,
            json_stdout: plan.json_stdout,
            quiet: plan.quiet,
            main,
            files,
            begun: false,
            kept,
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
    pub fn finish<R: Table + Rows>(&mut self, record: &R) -> Result<Option<PathBuf>> {
        if !self.main {
            return Ok(None);
        }
        // From here the files are this thread's to write.
        crate::interrupt::last_words(None);
        if self.tables() && self.begun {
            write_stdout(&record.tail())?;
        }
        let mut written = None;
        for (format, file) in &mut self.files {
            file.write(&format.exporter().export(record)?)?;
            file.commit()?;
            if *format == self.format {
                written.get_or_insert(file.path.clone());
            }
        }
        if self.json_stdout {
            write_stdout(&String::from_utf8_lossy(&self.format.exporter().export(record)?))?;
        }
        Ok(written)
    }
}

impl Output {
    /// Keeps `run` for the watchdog: at its start and beginning, then at
    /// most every [`KEPT_EVERY`] as parts come.
    fn keep(&self, run: &dyn Record, part: bool) {
        let mut k = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if k.json.is_empty() || (part && k.taken.is_some_and(|t| t.elapsed() < KEPT_EVERY)) {
            return;
        }
        k.record = self.format.exporter().value(run);
        k.taken = Some(Instant::now());
    }
}

impl<R: Table + Rows> Observer<R> for Output {
    fn started(&mut self, run: &R) {
        self.keep(run, false);
    }
    /// The run's head, after a line on stderr naming the fault it injects:
    /// said once the job has found it can apply it, never before a refusal.
    fn begin(&mut self, run: &R) {
        if let (Some(fault), true) = (&run.header().fault, self.main) {
            crate::ui::say(&format!("qbench: {fault}"));
        }
        self.begun = true;
        self.keep(run, false);
        self.print(&run.head());
    }
    fn part(&mut self, run: &R, part: &R::Part) {
        self.keep(run, true);
        self.print(&run.part(part));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_leaves_the_record_so_far_whole_and_incomplete() {
        let dir = std::env::temp_dir().join(format!("qbench-kept-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (json, temp) = (dir.join("run.json"), dir.join(".run.json.tmp"));
        std::fs::write(&temp, "").unwrap();
        let kept = Kept {
            record: Some(serde_json::json!({"schema": "qbench.collective.v1", "complete": true, "results": [1, 2]})),
            taken: None,
            json: vec![json.clone()],
            temps: vec![temp.clone()],
        };
        assert_eq!(kept.leave("SIGINT at warm-up").as_deref(), Some(json.to_str().unwrap()));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!((v["complete"].as_bool(), v["stopped"].as_str()), (Some(false), Some("SIGINT at warm-up")));
        assert_eq!(v["results"], serde_json::json!([1, 2]));
        assert!(!temp.exists());
        // Nothing kept yet: the temporary files go, nothing is written.
        let nothing = Kept { temps: vec![temp.clone()], json: vec![dir.join("none.json")], ..Kept::default() };
        std::fs::write(&temp, "").unwrap();
        assert_eq!(nothing.leave("SIGTERM"), None);
        assert!(!temp.exists() && !dir.join("none.json").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}

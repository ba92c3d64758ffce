//! How qbench talks to the person at the terminal, decided once in main:
//! whether progress is drawn on stderr, and how wide stdout's terminal is
//! for the tables that wrap their free text. Pipes and files get neither:
//! their text is the same whatever the terminal. Every line qbench writes
//! on stderr goes out here, whole, in one write.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

/// The terminal settings a command runs with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ui {
    /// `--quiet`: no progress on stderr (and, for commands that judge,
    /// nothing on success).
    pub quiet: bool,
    /// Columns of the terminal that stdout is; None for a pipe or a file.
    pub width: Option<usize>,
    /// Whether stderr is a terminal, where progress is drawn.
    pub stderr_terminal: bool,
}

impl Ui {
    /// The settings of this process: `--quiet` and what stdout and stderr are.
    pub fn detect(quiet: bool) -> Ui {
        let stdout = std::io::stdout();
        let tty = stdout.is_terminal();
        let columns = std::env::var("COLUMNS").ok();
        let measured = if tty { terminal_size::terminal_size_of(&stdout).map(|(w, _)| w.0 as usize) } else { None };
        let ui =
            Ui { quiet, width: width(tty, columns.as_deref(), measured), stderr_terminal: std::io::stderr().is_terminal() };
        let _ = WIDTH.set(ui.width);
        ui
    }

    /// Whether a long run shows its progress on stderr.
    pub fn progress(&self) -> bool {
        self.stderr_terminal && !self.quiet
    }
}

/// stdout's width as [`Ui::detect`] found it, for the renderers of
/// records: set once, by the process's first detection.
static WIDTH: OnceLock<Option<usize>> = OnceLock::new();

/// The width the tables of this process fit (None: a pipe, a file, or no
/// detection made, as in the library's tests): what a record's table,
/// printed as it is measured or read back by `show`, is wrapped to.
pub fn terminal_width() -> Option<usize> {
    WIDTH.get().copied().flatten()
}

/// Writes `line` and its newline on stderr in one write, so that the lines
/// of processes sharing a terminal or a launcher's stream never splice.
/// Where stderr is a terminal the line first clears whatever a progress
/// line left on it.
pub fn say(line: &str) {
    let clear = if std::io::stderr().is_terminal() { "\r\u{1b}[2K" } else { "" };
    let _ = std::io::stderr().lock().write_all(format!("{clear}{line}\n").as_bytes());
}

/// Narrowest width text is wrapped to: below it a table is left as it is.
pub const MIN_WIDTH: usize = 40;

/// The width to fit stdout's text to: None unless stdout is a terminal;
/// then `COLUMNS` when it holds a width (as a user sets it to ask for one),
/// else the terminal's own.
pub fn width(stdout_terminal: bool, columns: Option<&str>, measured: Option<usize>) -> Option<usize> {
    if !stdout_terminal {
        return None;
    }
    columns.and_then(|c| c.trim().parse::<usize>().ok()).filter(|&w| w > 0).or(measured).map(|w| w.max(MIN_WIDTH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_and_files_keep_full_lines() {
        assert_eq!(width(false, Some("80"), Some(100)), None);
        assert_eq!(width(false, None, None), None);
    }

    #[test]
    fn a_terminal_takes_columns_then_its_own_width() {
        assert_eq!(width(true, Some("80"), Some(100)), Some(80));
        assert_eq!(width(true, None, Some(100)), Some(100));
        assert_eq!(width(true, Some("wide"), Some(120)), Some(120));
        assert_eq!(width(true, Some("0"), None), None);
        assert_eq!(width(true, Some("10"), None), Some(MIN_WIDTH));
    }

    #[test]
    fn quiet_turns_progress_off() {
        let ui = Ui { quiet: false, width: None, stderr_terminal: true };
        assert!(ui.progress());
        assert!(!Ui { quiet: true, ..ui }.progress());
        assert!(!Ui { stderr_terminal: false, ..ui }.progress());
    }
}

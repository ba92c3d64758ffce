//! Files the user names (profiles, records and baselines, circuits) read
//! with limits, so that a FIFO, a device, a directory or a file far larger
//! than its kind is one line and exit 2, never a hang or an exhausted heap;
//! and errors that quote what was read quote a short excerpt of it.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// A readiness profile: the largest built-in is a few KiB; 4 MiB is
/// hundreds of thousands of lines, far past any hand-written one.
pub const PROFILE_BYTES: u64 = 4 << 20;

/// An OpenQASM 2 circuit: 16 MiB is about a million gates (a statement is
/// 10 to 20 bytes), more than a register runs in a timed step.
pub const CIRCUIT_BYTES: u64 = 16 << 20;

/// nccl-tests' alltoallv traffic matrix: 16 MiB holds a matrix of 1024
/// ranks (qbench's most host ranks) at 15 characters a cell.
pub const MATRIX_BYTES: u64 = 16 << 20;

/// A record or baseline: the largest committed one (every type, op and
/// size of a sweep) is under 1 MiB; 256 MiB leaves room for sweeps of a
/// hundred times more rows and long per-iteration samples, while a parse
/// of it still takes seconds and a few GiB, not minutes and tens of GiB.
pub const RECORD_BYTES: u64 = 256 << 20;

/// The characters an error quotes of what it read.
pub const EXCERPT_CHARS: usize = 80;

/// The text of the regular file at `path`, `what` naming it in errors ("profile x.toml"),
/// refused when it is not a regular file or holds more than `limit` bytes.
/// The file is stat'ed before it is opened, and opened without blocking,
/// so that a FIFO or device is refused unopened (or, swapped in between,
/// unread); at most `limit + 1` bytes are read, so that a file growing
/// while it is read is still refused.
pub fn read(path: &Path, what: &str, limit: u64) -> Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: std::io::Error| Error::Usage(format!("cannot read {what}: {e}"));
    let regular = |meta: std::fs::Metadata| {
        if !meta.is_file() {
            return Err(Error::Usage(format!("cannot read {what}: not a regular file ({})", kind(&meta))));
        }
        if meta.len() > limit {
            return Err(too_large(what, &meta.len().to_string(), limit));
        }
        Ok(())
    };
    regular(std::fs::metadata(path).map_err(cannot)?)?;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(cannot)?;
    regular(file.metadata().map_err(cannot)?)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(what, &format!("more than {limit}"), limit));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::Usage(format!("cannot read {what}: not UTF-8 text (at byte {})", e.utf8_error().valid_up_to()))
    })
}

fn too_large(what: &str, size: &str, limit: u64) -> Error {
    Error::Usage(format!(
        "cannot read {what}: {size} bytes is larger than the {} MiB such a file may hold",
        limit >> 20
    ))
}

/// What a file that is not a regular file is, in a word.
pub fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// At most `chars` characters of `text`, "…" marking what was cut.
pub fn excerpt(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// A word the user gave (an argument, a variable's value, a cell of a
/// file), as an error line quotes it: whole up to twice [`EXCERPT_CHARS`]
/// (so that a word cut once is not cut again), else its first
/// [`EXCERPT_CHARS`] and its length.
pub fn token(text: &str) -> String {
    match text.chars().nth(2 * EXCERPT_CHARS) {
        None => text.to_string(),
        Some(_) => format!("{} ({} bytes)", excerpt(text, EXCERPT_CHARS), text.len()),
    }
}

/// The longest message [`bounded`] lets through.
const MESSAGE_CHARS: usize = 1000;

/// A parser's message made safe to print: every `` `…` `` or `"…"` it
/// quotes cut to [`EXCERPT_CHARS`], newlines made spaces, and the whole
/// cut to [`MESSAGE_CHARS`] should unbalanced quotes leave a long run.
pub fn bounded(msg: &str) -> String {
    let mut out = String::new();
    let mut open: Option<char> = None;
    let (mut run, mut escaped) = (0, false);
    for c in msg.chars() {
        let c = if c == '\n' || c == '\r' { ' ' } else { c };
        match open {
            Some(q) if c == q && !escaped => {
                open = None;
                out.push(c);
            }
            Some(_) => {
                escaped = c == '\\' && !escaped;
                run += 1;
                if run <= EXCERPT_CHARS {
                    out.push(c);
                } else if run == EXCERPT_CHARS + 1 {
                    out.push('…');
                }
            }
            None => {
                if c == '`' || c == '"' {
                    (open, run, escaped) = (Some(c), 0, false);
                }
                out.push(c);
            }
        }
        // A char is at most 4 bytes: past this, more than enough is kept.
        if out.len() > 4 * MESSAGE_CHARS {
            break;
        }
    }
    excerpt(&out, MESSAGE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("qbench-input-{name}-{}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn a_file_within_its_limit_is_read_whole() {
        let p = scratch("small", b"abc");
        assert_eq!(read(&p, "x", 3).unwrap(), "abc");
        let e = read(&p, "x", 2).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message().contains("3 bytes is larger"), "{}", e.message());
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn what_is_not_a_regular_file_is_refused() {
        let e = read(Path::new("/dev/zero"), "profile /dev/zero", 1 << 20).unwrap_err();
        assert_eq!(e.message(), "cannot read profile /dev/zero: not a regular file (a device)");
        let e = read(&std::env::temp_dir(), "d", 1 << 20).unwrap_err();
        assert!(e.message().ends_with("(a directory)"), "{}", e.message());
    }

    #[test]
    fn messages_quote_short_excerpts() {
        let long = "x".repeat(1000);
        let m = bounded(&format!("invalid type: string \"{long}\", expected `{long}`\nat line 1"));
        let cut = format!("{}…", "x".repeat(EXCERPT_CHARS));
        assert_eq!(m, format!("invalid type: string \"{cut}\", expected `{cut}` at line 1"));
        assert_eq!(bounded(r#"a "q\"uote" b"#), r#"a "q\"uote" b"#);
        assert_eq!(bounded(&format!("\"{long}{long}")).chars().count(), EXCERPT_CHARS + 2);
        assert_eq!(bounded(&long.repeat(2)).chars().count(), MESSAGE_CHARS + 1);
    }

    #[test]
    fn a_long_token_is_quoted_short_with_its_length() {
        assert_eq!(token("16M"), "16M");
        let once = token(&"9".repeat(1000));
        assert_eq!(token(&once), once);
        let cut = token(&"9".repeat(1 << 20));
        assert_eq!(cut, format!("{}… (1048576 bytes)", "9".repeat(EXCERPT_CHARS)));
    }

    #[test]
    fn excerpts_cut_long_text_by_characters() {
        assert_eq!(excerpt("héllo", 3), "hél…");
        assert_eq!(excerpt("hé", 3), "hé");
    }
}

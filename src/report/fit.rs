//! Text that fits stdout's terminal: tables whose widest columns wrap
//! between words, and lists whose descriptions wrap under themselves. The
//! width is [`crate::ui::Ui::width`]: None for pipes and files, which keep
//! their full lines.

use tabled::settings::Width;
use tabled::settings::peaker::Priority;

/// The width text meant to be read whole is wrapped to whatever the
/// terminal (a plan's lines, an exchange's verdict): 80 columns.
pub const READ_WIDTH: usize = 80;

/// `table`, its widest columns wrapped (between words where it can) until
/// it is at most `width` columns wide; as it is when it fits or no width is
/// given.
pub fn table(mut table: tabled::Table, width: Option<usize>) -> tabled::Table {
    if let Some(w) = width
        && table.total_width() > w
    {
        table.with(Width::wrap(w).priority(Priority::max(true)).keep_words(true));
    }
    table
}

/// `text` in lines of at most `width` characters, broken between words (a
/// longer word, such as a path, gets a line of its own).
pub fn words(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Narrowest a wrapped description gets: below it the lines stay whole.
const MIN_TEXT: usize = 20;

/// `lead` then `text`, the text wrapped to end by column `width` and its
/// further lines indented under its first; one line when no width is given.
pub fn hanging(lead: &str, text: &str, width: Option<usize>) -> String {
    let indent = lead.chars().count();
    match width {
        Some(w) if w >= indent + MIN_TEXT && indent + text.chars().count() > w => {
            format!("{lead}{}", words(text, w - indent).join(&format!("\n{}", " ".repeat(indent))))
        }
        _ => format!("{lead}{text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widest(text: &str) -> usize {
        text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
    }

    fn sample() -> tabled::Table {
        let long = "load the nvidia_peermem module (modprobe nvidia_peermem) so that NCCL can read and write GPU memory over the adapter";
        crate::report::table(
            ["CHECK", "STATUS", "FIX"].map(String::from),
            vec![
                vec!["gdr.peermem".into(), "WARN".into(), long.into()],
                vec!["gpu.count".into(), "PASS".into(), "".into()],
            ],
        )
    }

    #[test]
    fn tables_wrap_to_the_width_given_and_only_then() {
        let full = sample().to_string();
        assert!(widest(&full) > 100);
        assert_eq!(table(sample(), None).to_string(), full);
        assert_eq!(table(sample(), Some(500)).to_string(), full);
        for w in [60, 80, 100] {
            let fitted = table(sample(), Some(w)).to_string();
            assert!(widest(&fitted) <= w, "{w}:\n{fitted}");
            assert!(fitted.contains("gdr.peermem") && fitted.contains("nvidia_peermem"), "{fitted}");
        }
    }

    #[test]
    fn words_break_between_words() {
        assert_eq!(words("load the nvidia_peermem module now", 14), ["load the", "nvidia_peermem", "module now"]);
        assert!(words("", 10).is_empty());
    }

    #[test]
    fn descriptions_hang_under_themselves() {
        let text = "host to GPU through pinned memory, the copy engine of each GPU in turn";
        assert_eq!(hanging("  h2d  ", text, None), format!("  h2d  {text}"));
        let wrapped = hanging("  h2d  ", text, Some(40));
        assert!(widest(&wrapped) <= 40, "{wrapped}");
        assert!(wrapped.starts_with("  h2d  host to GPU"));
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("       ") && !l.starts_with("        ")), "{wrapped}");
        assert_eq!(wrapped.split_whitespace().collect::<Vec<_>>().join(" "), format!("h2d {text}"));
    }
}

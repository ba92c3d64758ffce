//! Text that fits stdout's terminal: tables whose widest columns are
//! narrowed and their cells wrapped between words, and lists whose
//! descriptions wrap under themselves. The width is
//! [`crate::ui::Ui::width`] (or [`crate::ui::terminal_width`]): None for
//! pipes and files, which keep their full lines.

use tabled::grid::records::vec_records::Cell;

/// The width text meant to be read whole is wrapped to whatever the
/// terminal (a plan's lines, an exchange's verdict): 80 columns.
pub const READ_WIDTH: usize = 80;

/// Narrowest a column is made while another is wider than its longest
/// word: below it words would break mid-word.
const WORD: usize = 16;

/// `table`, its widest columns narrowed until it is at most `width`
/// columns wide and each cell's lines wrapped to its column between words
/// (a word longer than the column breaks after a `/`, `-`, `_`, `:`, `.`,
/// `,` or `=` where it has one); as it is when it fits or no width is
/// given. Fitted once, so that a row's cells keep their words whole.
pub fn table(mut table: tabled::Table, width: Option<usize>) -> tabled::Table {
    let Some(w) = width else { return table };
    let total = table.total_width();
    if total <= w {
        return table;
    }
    let records = table.get_records();
    let cols = table.count_columns();
    let (mut natural, mut word) = (vec![0; cols], vec![0; cols]);
    for row in records.iter() {
        for (c, cell) in row.iter().enumerate().take(cols) {
            let text = cell.text();
            natural[c] = natural[c].max(text.lines().map(|l| l.chars().count()).max().unwrap_or(0));
            word[c] = word[c].max(text.split_whitespace().map(|x| x.chars().count()).max().unwrap_or(0));
        }
    }
    // What the borders and padding take, whatever the columns hold.
    let frame = total.saturating_sub(natural.iter().sum());
    let widths = narrowed(&natural, &word, w.saturating_sub(frame));
    let fitted: Vec<Vec<String>> =
        records.iter().map(|row| row.iter().enumerate().map(|(c, cell)| wrap(cell.text(), widths[c])).collect()).collect();
    let records = table.get_records_mut();
    for (r, row) in fitted.into_iter().enumerate() {
        for (c, text) in row.into_iter().enumerate() {
            tabled::grid::records::RecordsMut::set(records, (r, c).into(), text);
        }
    }
    table
}

/// Column widths summing to at most `budget`: the widest narrowed first,
/// none below its longest word (at most [`WORD`]) while another can give,
/// then none below 3.
fn narrowed(natural: &[usize], word: &[usize], budget: usize) -> Vec<usize> {
    let mut widths = natural.to_vec();
    for floor in [natural.iter().zip(word).map(|(&n, &w)| n.min(w.min(WORD))).collect::<Vec<_>>(), vec![3; natural.len()]]
    {
        while widths.iter().sum::<usize>() > budget {
            let Some(c) = (0..widths.len()).filter(|&c| widths[c] > floor[c]).max_by_key(|&c| (widths[c], c)) else {
                break;
            };
            widths[c] -= 1;
        }
    }
    widths
}

/// Shortest piece of a long word left at the end of a line: a shorter room
/// starts the word on the next line.
const PIECE: usize = 8;

/// Where a word too long for its column may break: after one of these.
const SEPARATORS: [char; 7] = ['/', '-', '_', ':', '.', ',', '='];

/// Each line of `text` wrapped to `width` between words; a word longer
/// than `width` broken after its last separator that fits, else at the width.
fn wrap(text: &str, width: usize) -> String {
    let width = width.max(1);
    let mut out = Vec::new();
    for line in text.lines() {
        let mut cur = String::new();
        for whole in line.split_whitespace() {
            let mut word = whole;
            loop {
                let used = cur.chars().count();
                let room = if used == 0 { width } else { width.saturating_sub(used + 1) };
                let len = word.chars().count();
                if len <= room {
                    if used > 0 {
                        cur.push(' ');
                    }
                    cur.push_str(word);
                    break;
                }
                if used > 0 && (len <= width || room < PIECE) {
                    out.push(std::mem::take(&mut cur));
                    continue;
                }
                let head = word.char_indices().nth(room).map_or(word.len(), |(i, _)| i);
                let cut = word[..head].rfind(SEPARATORS).map_or(head, |i| i + 1);
                if used > 0 {
                    cur.push(' ');
                }
                cur.push_str(&word[..cut]);
                out.push(std::mem::take(&mut cur));
                word = &word[cut..];
            }
        }
        out.push(cur);
    }
    out.join("\n")
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

/// `text` with each line wider than `width` wrapped under itself, a
/// comment's further lines starting as it does ("#  "); as it is where no
/// width is given.
pub fn lines(text: &str, width: Option<usize>) -> String {
    let Some(w) = width else { return text.to_string() };
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        if body.chars().count() <= w {
            out.push_str(line);
            continue;
        }
        let lead = &body[..body.len() - body.trim_start_matches(['#', ' ']).len()];
        let wrapped = hanging(lead, &body[lead.len()..], Some(w));
        let indent = format!("\n{}", " ".repeat(lead.chars().count()));
        out.push_str(&wrapped.replace(&indent, &format!("\n{lead}")));
        out.push_str(end);
    }
    out
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

    /// Every word of a cell stays whole where its column can hold it, a
    /// longer one breaks after a separator, and no line starts with a space.
    #[test]
    fn cells_wrap_between_words_and_long_words_at_separators() {
        let path = "/sys/kernel/mm/memory_peers/nv_mem/version (version 1.3-0)";
        let rows = vec![
            vec!["gdr.peer_memory".into(), "PASS".into(), path.into()],
            vec!["nccl.env NCCL_SOCKET_IFNAME".into(), "PASS".into(), "NCCL_SOCKET_IFNAME=ens1f0np0 (up)\nfix: none".into()],
        ];
        let fitted = table(crate::report::table(["CHECK", "STATUS", "FOUND"].map(String::from), rows), Some(50)).to_string();
        assert!(widest(&fitted) <= 50, "{fitted}");
        let cells: Vec<&str> = fitted.lines().flat_map(|l| l.split('|')).map(|c| c.strip_prefix(' ').unwrap_or(c)).collect();
        assert!(cells.iter().all(|c| c.trim().is_empty() || !c.starts_with(' ')), "a cell line starts with a space:\n{fitted}");
        for whole in ["gdr.peer_memory", "NCCL_SOCKET_IFNAME", "(version", "1.3-0)", "fix:"] {
            assert!(fitted.contains(whole), "{whole} broken:\n{fitted}");
        }
        assert!(fitted.contains("/sys/kernel/mm/") && fitted.contains("memory_peers/"), "{fitted}");
        assert_eq!(wrap("abcdefghij", 4), "abcd\nefgh\nij");
        assert_eq!(wrap("a b\n\nc", 10), "a b\n\nc");
        assert_eq!(wrap("GPU-1a2b3c4d-5e6f", 10), "GPU-\n1a2b3c4d-\n5e6f");
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

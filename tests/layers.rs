//! The layer table of docs/ARCHITECTURE.md ("The layers"), read from the
//! document and held against the source, so that the table and the code
//! cannot part. Each row names its files (`x/` the folder src/x/, `x` the
//! file src/x.rs), what they may use and what they never do:
//!
//! - every file under src/ belongs to exactly one row;
//! - every `crate::` path a file names (in its `use` lines and in its code)
//!   leads into its own row or to what its "may use" cell names: a layer
//!   (`record`), a part of one (`rdma::plan`, `report::{fit, table}`),
//!   "the leaves" or "everything"; every `super::` stays inside its layer;
//! - the words of what its "never" cell names ([`NEVER`]) appear nowhere in
//!   its code, and its "may use" cell names no layer that cell rules out.
//!
//! Comments, strings and each file's tests (`#[cfg(test)]` items) are left
//! out of the source; text in parentheses in a cell is for the reader.

use std::collections::BTreeMap;
use std::path::Path;

/// What each phrase of the "never" column rules out: words that must not
/// appear in the row's code, and the layers its "may use" cell must not
/// name whole ("anything above" rules out every row above its own).
const NEVER: [(&str, &[&str], &[&str]); 6] = [
    ("print", &["print!(", "println!", "eprint", "io::stdout", "io::stderr", "dbg!"], &[]),
    ("parse arguments", &["clap::", "use clap", "crate::cli"], &["cli"]),
    ("render", &["crate::report", "crate::output"], &["report", "output"]),
    ("measure", &["crate::workload", "crate::transport", "crate::check"], &["workload", "transport", "check"]),
    ("import a workload or check", &["crate::workload", "crate::check"], &["workload", "check"]),
    ("anything above", &[], &[]),
];

/// One row of the table.
struct Row {
    /// Its first cell as written, naming it in messages.
    label: String,
    /// The modules it holds: `cli`, `record`, `units`, ...
    modules: Vec<String>,
    /// The paths it may use from the crate's root (`["rdma", "plan"]`);
    /// None for everything.
    may: Option<Vec<Vec<String>>>,
    /// Its "may use" cell as written.
    may_text: String,
    /// The phrases of its "never" cell.
    never: Vec<String>,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The rows of the table under "## The layers" in docs/ARCHITECTURE.md.
fn table() -> Vec<Row> {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let section = doc.split("\n## The layers\n").nth(1).expect("docs/ARCHITECTURE.md has no \"## The layers\"");
    let lines: Vec<&str> =
        section.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).collect();
    assert!(lines.len() > 2 && lines[1].starts_with("|---"), "no table under \"## The layers\"");
    let cells: Vec<Vec<String>> = lines[2..]
        .iter()
        .map(|l| {
            let c: Vec<String> = l.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect();
            assert_eq!(c.len(), 3, "a row of the layer table has 3 cells: {l}");
            c
        })
        .collect();
    let modules: Vec<Vec<String>> = cells.iter().map(|c| backticked(&without_prose(&c[0]))).collect();
    let leaves = cells.iter().position(|c| c[0].starts_with("the leaves:")).expect("a row \"the leaves: ...\"");
    cells
        .iter()
        .enumerate()
        .map(|(i, c)| Row {
            label: c[0].clone(),
            modules: modules[i].clone(),
            may: may_use(&c[1], &modules[i], &modules[leaves]),
            may_text: c[1].clone(),
            never: items(&without_prose(&c[2])).into_iter().filter(|p| p != "—").collect(),
        })
        .collect()
}

/// A "may use" cell as paths from the crate's root; None for everything.
fn may_use(cell: &str, own: &[String], leaves: &[String]) -> Option<Vec<Vec<String>>> {
    let mut paths = Vec::new();
    for item in items(&without_prose(cell)) {
        let named: &[String] = match item.as_str() {
            "everything" => return None,
            "the leaves" => leaves,
            "one another" => own,
            _ if item.starts_with('`') && item.ends_with('`') => {
                let text = item.trim_matches('`').trim_end_matches('/');
                let mut at = 0;
                tree(text.as_bytes(), &mut at, &[], &mut |p, _| paths.push(p))
                    .unwrap_or_else(|_| panic!("the layer table's \"may use\" cell {cell:?}: {item} is no path"));
                continue;
            }
            _ => panic!(
                "the layer table's \"may use\" cell {cell:?} says {item:?}: name a `layer`, `a::part`, the leaves, one another or everything"
            ),
        };
        paths.extend(named.iter().map(|m| vec![m.clone()]));
    }
    Some(paths)
}

/// A cell without its parentheses.
fn without_prose(cell: &str) -> String {
    let mut depth = 0;
    cell.chars()
        .filter(|&c| {
            depth += (c == '(') as i32;
            let keep = depth == 0;
            depth -= (c == ')') as i32;
            keep
        })
        .collect()
}

/// A cell's items, split at the commas outside braces.
fn items(cell: &str) -> Vec<String> {
    let (mut out, mut item, mut depth) = (Vec::new(), String::new(), 0);
    for c in cell.chars() {
        depth += (c == '{') as i32 - (c == '}') as i32;
        if c == ',' && depth == 0 {
            out.push(std::mem::take(&mut item));
        } else {
            item.push(c);
        }
    }
    out.push(item);
    out.into_iter().map(|i| i.trim().to_string()).filter(|i| !i.is_empty()).collect()
}

/// The names in backticks, each without a trailing `/`.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(|n| n.trim_end_matches('/').to_string()).collect()
}

/// A source file under src/.
struct Source {
    /// Its path below src/.
    path: String,
    /// The module it is, from the crate's root (`["record", "collective"]`).
    module: Vec<String>,
    /// Its code: comments, strings and tests blanked, lines kept.
    code: String,
}

fn sources() -> Vec<Source> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = root().join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let path = p.strip_prefix(&src).unwrap().to_str().unwrap().to_string();
            let mut module: Vec<String> = path.trim_end_matches(".rs").split('/').map(String::from).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                module.pop();
            }
            let code = without_tests(&blank(&std::fs::read_to_string(&p).unwrap()));
            Source { path, module, code }
        })
        .collect()
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `text` with its comments, string and character literals blanked to
/// spaces (newlines kept, so lines keep their numbers).
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let end = literal_end(b, i);
        if end > i {
            for x in &mut out[i..end] {
                if *x != b'\n' {
                    *x = b' ';
                }
            }
            i = end;
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Where the comment or literal starting at `i` ends; `i` where none starts.
fn literal_end(b: &[u8], i: usize) -> usize {
    let after = |from: usize, pat: &[u8]| {
        b[from..].windows(pat.len()).position(|w| w == pat).map_or(b.len(), |p| from + p + pat.len())
    };
    let prev_ident = i > 0 && is_ident(b[i - 1]);
    match b[i] {
        b'/' if b.get(i + 1) == Some(&b'/') => b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p),
        b'/' if b.get(i + 1) == Some(&b'*') => {
            let (mut j, mut depth) = (i, 0);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        }
        b'r' | b'b' if !prev_ident => {
            let r = i + (b[i] == b'b' && b.get(i + 1) == Some(&b'r')) as usize;
            let hashes = b[r + 1..].iter().take_while(|&&c| c == b'#').count();
            if b[r] != b'r' || b.get(r + 1 + hashes) != Some(&b'"') {
                return i;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            after(r + 2 + hashes, &close)
        }
        b'"' => {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        }
        b'\'' if b.get(i + 1) == Some(&b'\\') => after(i + 3, b"'"),
        b'\'' => {
            // A character literal, or a lifetime (left as it is).
            let len = match b.get(i + 1) {
                Some(&c) if c >= 0xf0 => 4,
                Some(&c) if c >= 0xe0 => 3,
                Some(&c) if c >= 0xc0 => 2,
                _ => 1,
            };
            if b.get(i + 1 + len) == Some(&b'\'') { i + 2 + len } else { i }
        }
        _ => i,
    }
}

/// Blanked code without its `#[cfg(test)]` items.
fn without_tests(code: &str) -> String {
    let mut b = code.as_bytes().to_vec();
    let attr = b"#[cfg(test)]";
    while let Some(start) = b.windows(attr.len()).position(|w| w == attr) {
        let (mut j, mut depth) = (start + attr.len(), 0);
        while depth > 0 || (b[j] != b'{' && b[j] != b';') {
            depth += matches!(b[j], b'(' | b'[') as i32 - matches!(b[j], b')' | b']') as i32;
            j += 1;
        }
        let end = if b[j] == b'{' { matching(&b, j) } else { j } + 1;
        for x in &mut b[start..end] {
            if *x != b'\n' {
                *x = b' ';
            }
        }
    }
    String::from_utf8(b).unwrap()
}

/// The offset of the brace that closes the one at `open`.
fn matching(b: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (j, &c) in b.iter().enumerate().skip(open) {
        depth += (c == b'{') as i32 - (c == b'}') as i32;
        if depth == 0 {
            return j;
        }
    }
    panic!("an unclosed brace at byte {open}")
}

fn skip_space(b: &[u8], at: &mut usize) {
    while *at < b.len() && b[*at].is_ascii_whitespace() {
        *at += 1;
    }
}

fn ident(b: &[u8], at: &mut usize) -> String {
    let start = *at;
    while *at < b.len() && is_ident(b[*at]) {
        *at += 1;
    }
    String::from_utf8(b[start..*at].to_vec()).unwrap()
}

/// Reads the `use` tree at `*at` (what follows `use`), giving each path it
/// names, `prefix` first, with the offset of its last segment; Err(offset)
/// where it cannot read one.
fn tree(b: &[u8], at: &mut usize, prefix: &[String], found: &mut dyn FnMut(Vec<String>, usize)) -> Result<(), usize> {
    let mut path = prefix.to_vec();
    loop {
        skip_space(b, at);
        match b.get(*at) {
            Some(b'{') => {
                *at += 1;
                loop {
                    skip_space(b, at);
                    if b.get(*at) == Some(&b'}') {
                        *at += 1;
                        return Ok(());
                    }
                    tree(b, at, &path, found)?;
                    skip_space(b, at);
                    match b.get(*at) {
                        Some(b',') => *at += 1,
                        Some(b'}') => {}
                        _ => return Err(*at),
                    }
                }
            }
            Some(b'*') => {
                *at += 1;
                found(path, *at - 1);
                return Ok(());
            }
            // `::name`: a crate from outside, by its absolute path.
            Some(b':') if path.is_empty() && b[*at..].starts_with(b"::") => {
                *at += 2;
                path.push("::".to_string());
            }
            _ => {
                let start = *at;
                let name = ident(b, at);
                if name.is_empty() {
                    return Err(start);
                }
                if name != "self" || path.is_empty() {
                    path.push(name);
                }
                skip_space(b, at);
                if b[*at..].starts_with(b"::") {
                    *at += 2;
                    continue;
                }
                if b[*at..].starts_with(b"as") && !is_ident(b[*at + 2]) {
                    *at += 2;
                    skip_space(b, at);
                    ident(b, at);
                }
                found(path, start);
                return Ok(());
            }
        }
    }
}

/// A path a file names that leads out of it.
enum Reach {
    /// `crate::…` (or a `super::` chain that climbs to the crate's root):
    /// the path from the root.
    Crate(Vec<String>),
    /// A `super::` chain climbing out of its layer.
    Climbs(String),
}

/// Every path of `src` that leads out of the file, with its line.
fn reaches(src: &Source) -> Vec<(usize, Reach)> {
    let b = src.code.as_bytes();
    let inline = inline_modules(b);
    let mut out = Vec::new();
    let line = |at: usize| b[..at].iter().filter(|&&c| c == b'\n').count() + 1;
    let keep = |path: Vec<String>, at: usize, out: &mut Vec<(usize, Reach)>| {
        let line = line(at);
        let supers = path.iter().take_while(|s| *s == "super").count();
        if path[0] == "crate" && path.len() > 1 {
            out.push((line, Reach::Crate(path[1..].to_vec())));
        } else if supers > 0 {
            let depth = src.module.len() + inline.iter().filter(|(s, e)| (*s..*e).contains(&at)).count();
            if supers >= depth {
                out.push((line, Reach::Climbs(path.join("::"))));
            }
        }
    };
    let mut in_use = Vec::new();
    let mut i = 0;
    while i + 4 < b.len() {
        if b[i..].starts_with(b"use") && (i == 0 || !is_ident(b[i - 1])) && b[i + 3].is_ascii_whitespace() {
            let mut at = i + 3;
            tree(b, &mut at, &[], &mut |p, o| keep(p, o, &mut out))
                .unwrap_or_else(|o| panic!("src/{}:{}: a use tree tests/layers.rs cannot read", src.path, line(o)));
            in_use.push(i..at);
            i = at;
        } else {
            i += 1;
        }
    }
    for start in 0..b.len() {
        let begins =
            |w: &[u8]| b[start..].starts_with(w) && (start == 0 || !is_ident(b[start - 1]) && b[start - 1] != b':');
        if (begins(b"crate::") || begins(b"super::")) && !in_use.iter().any(|r| r.contains(&start)) {
            let mut at = start;
            let mut path = vec![ident(b, &mut at)];
            let mut last = start;
            while b[at..].starts_with(b"::") && b.get(at + 2).is_some_and(|&c| is_ident(c)) {
                at += 2;
                last = at;
                path.push(ident(b, &mut at));
            }
            keep(path, last, &mut out);
        }
    }
    out
}

/// The spans of the modules written inline (`mod name { … }`).
fn inline_modules(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for i in 0..b.len() {
        if b[i..].starts_with(b"mod ") && (i == 0 || !is_ident(b[i - 1])) {
            let mut at = i + 4;
            skip_space(b, &mut at);
            ident(b, &mut at);
            skip_space(b, &mut at);
            if b.get(at) == Some(&b'{') {
                out.push((at, matching(b, at)));
            }
        }
    }
    out
}

/// Which row each module is in, and each macro exported at the crate's
/// root (by the module defining it: `with_element` is `dtype`'s).
fn rows_of(rows: &[Row], sources: &[Source]) -> BTreeMap<String, (usize, String)> {
    let mut of: BTreeMap<String, (usize, String)> =
        rows.iter().enumerate().flat_map(|(i, r)| r.modules.iter().map(move |m| (m.clone(), (i, m.clone())))).collect();
    for s in sources {
        let Some(holder) = s.module.first().and_then(|m| of.get(m)).cloned() else { continue };
        for part in s.code.split("#[macro_export]").skip(1) {
            let Some(rest) = part.trim_start().strip_prefix("macro_rules!") else { continue };
            let name: String = rest.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            of.insert(name, holder.clone());
        }
    }
    of
}

/// The row of a source file: the one naming its module.
fn row_of(s: &Source, of: &BTreeMap<String, (usize, String)>) -> Option<usize> {
    let top = if s.module.is_empty() { s.path.trim_end_matches(".rs") } else { &s.module[0] };
    of.get(top).map(|(row, _)| *row)
}

#[test]
fn every_file_is_in_one_row_and_every_row_names_files() {
    let rows = table();
    let mut seen = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        for m in &row.modules {
            let file = root().join(format!("src/{m}.rs"));
            let folder = root().join(format!("src/{m}"));
            let written = row.label.contains(&format!("`{m}/`"));
            assert!(
                if written { folder.is_dir() } else { file.is_file() },
                "row {}: no src/{m}{}",
                row.label,
                if written { "/" } else { ".rs" }
            );
            if let Some(other) = seen.insert(m.clone(), i) {
                panic!("`{m}` is in two rows: {} and {}", rows[other].label, row.label);
            }
        }
    }
    let sources = sources();
    let of = rows_of(&rows, &sources);
    let loose: Vec<&str> = sources.iter().filter(|s| row_of(s, &of).is_none()).map(|s| s.path.as_str()).collect();
    assert!(loose.is_empty(), "files no row of the layer table covers (add them to a row): {loose:?}");
}

/// Why row `r` may not use `crate::path`; None where it may.
fn refused(rows: &[Row], r: usize, path: &[String], of: &BTreeMap<String, (usize, String)>) -> Option<String> {
    let shown = format!("crate::{}", path.join("::"));
    let Some((target, holder)) = of.get(&path[0]) else {
        return Some(format!("{shown} is in no row of the layer table"));
    };
    // A macro exported at the root is named by its module's path.
    let full = if *holder == path[0] { path.to_vec() } else { [std::slice::from_ref(holder), path].concat() };
    let row = &rows[r];
    let allowed = *target == r || row.may.as_ref().is_none_or(|may| may.iter().any(|a| full.starts_with(a)));
    (!allowed).then(|| format!("{shown}: {} may use only {}", row.label, row.may_text))
}

#[test]
fn every_layer_uses_only_what_its_row_allows() {
    let rows = table();
    let sources = sources();
    let of = rows_of(&rows, &sources);
    let mut found = Vec::new();
    for s in &sources {
        let Some(r) = row_of(s, &of) else { continue };
        for (line, reach) in reaches(s) {
            let why = match reach {
                Reach::Climbs(p) => Some(format!("{p} climbs out of its layer: name it by crate::")),
                Reach::Crate(p) => refused(&rows, r, &p, &of),
            };
            found.extend(why.map(|w| format!("src/{}:{line}: {w}", s.path)));
        }
    }
    assert!(found.is_empty(), "uses the layer table does not allow:\n{}", found.join("\n"));
}

#[test]
fn no_layer_does_what_its_row_says_it_never_does() {
    let rows = table();
    let sources = sources();
    let of = rows_of(&rows, &sources);
    let mut found = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        for phrase in &row.never {
            let Some((_, words, layers)) = NEVER.iter().find(|(p, _, _)| p == phrase) else {
                panic!(
                    "{}: \"never\" says {phrase:?}, which tests/layers.rs does not know: say it as one of {:?}",
                    row.label,
                    NEVER.map(|n| n.0)
                );
            };
            let above: Vec<&String> = rows[..r].iter().flat_map(|a| &a.modules).collect();
            let ruled_out: Vec<&str> =
                if *phrase == "anything above" { above.iter().map(|m| m.as_str()).collect() } else { layers.to_vec() };
            let named = match &row.may {
                None => ruled_out.clone(),
                Some(may) => may
                    .iter()
                    .filter(|p| p.len() == 1 && ruled_out.contains(&p[0].as_str()))
                    .map(|p| p[0].as_str())
                    .collect(),
            };
            assert!(
                named.is_empty(),
                "{}: \"may use\" names {named:?}, which \"never\" rules out ({phrase})",
                row.label
            );
            for s in sources.iter().filter(|s| row_of(s, &of) == Some(r)) {
                for (i, line) in s.code.lines().enumerate() {
                    if let Some(w) = words.iter().find(|w| line.contains(*w)) {
                        found.push(format!("src/{}:{}: `{w}`: {} never: {phrase}", s.path, i + 1, row.label));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "what the layer table says never happens:\n{}", found.join("\n"));
}

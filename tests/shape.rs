//! The shape the code keeps: no function outside tests longer than a
//! screen (80 lines, its signature to its closing brace), so that each can
//! be read whole. Counts braces outside strings, chars and comments.

use std::path::Path;

const MOST_LINES: usize = 80;

/// `line` without its string and char literals and its `//` comment.
fn code(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            // A char literal ('{', '\''), not a lifetime ('a).
            '\'' if matches!(chars.clone().nth(1), Some('\'')) || chars.peek() == Some(&'\\') => {
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            chars.next();
                        }
                        '\'' => break,
                        _ => {}
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => break,
            c => out.push(c),
        }
    }
    out
}

/// Whether `line` starts a function's definition: `fn` after nothing but
/// qualifiers (`pub(crate)`, `const`, `async`, `unsafe`, `extern "C"`).
fn starts_fn(line: &str) -> bool {
    let mut words = line.split_whitespace();
    for w in words.by_ref() {
        match w {
            "fn" => return true,
            "pub" | "const" | "async" | "unsafe" | "extern" | "\"C\"" => {}
            w if w.starts_with("pub(") => {}
            _ => return false,
        }
    }
    false
}

/// (file, line, lines) of every function over the limit in `text`.
fn long_functions(file: &str, text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().take_while(|l| !l.starts_with("#[cfg(test)]")).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !starts_fn(l) {
            continue;
        }
        let (mut depth, mut opened) = (0i64, false);
        for (j, m) in lines.iter().enumerate().skip(i) {
            let c = code(m);
            if !opened && c.trim_end().ends_with(';') {
                break;
            }
            for ch in c.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                if j - i + 1 > MOST_LINES {
                    out.push((file.to_string(), i + 1, j - i + 1));
                }
                break;
            }
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<(String, usize, usize)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.extend(long_functions(&p.display().to_string(), &std::fs::read_to_string(&p).unwrap()));
        }
    }
}

#[test]
fn no_function_is_longer_than_a_screen() {
    let mut long = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut long);
    let said: Vec<String> = long.iter().map(|(f, l, n)| format!("{f}:{l}: {n} lines")).collect();
    assert!(said.is_empty(), "functions longer than {MOST_LINES} lines:\n{}", said.join("\n"));
}

#[test]
fn the_counter_sees_a_long_function_and_skips_braces_in_strings() {
    let body: String = (0..MOST_LINES).map(|_| "    let x = \"}\"; // }\n").collect();
    let long = format!("pub fn f() {{\n{body}}}\n");
    assert_eq!(long_functions("f.rs", &long), vec![("f.rs".to_string(), 1, MOST_LINES + 2)]);
    let short = "fn g() -> char {\n    '{'\n}\nfn h();\n";
    assert!(long_functions("g.rs", short).is_empty());
}

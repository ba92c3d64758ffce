//! `qbench plot`: records drawn as SVG or PNG. Each record kind implements
//! [`Plot`] in its own file here, turning one or several runs of that kind
//! into a [`Figure`] (figure.rs, drawing nothing); draw.rs alone turns a
//! figure into pictures. Drawing a new record kind is a file with its
//! `Plot` and one arm in [`figure`].

mod check;
mod collective;
mod compare;
mod copy;
mod draw;
mod exchange;
pub mod figure;
mod osu;
mod pairs;
mod raster;
mod rdma;

use crate::error::{Error, Result};
use crate::record::{AnyRecord, Header};
pub use figure::Figure;
use std::path::{Path, PathBuf};

/// What the figure shows of each record, where the kind offers a choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Bus bandwidth (nccl-tests' busbw).
    BusBw,
    /// Algorithm bandwidth: bytes / time.
    AlgBw,
    /// The time column (collectives), per copy (copy latency), per exchange.
    Time,
    /// The per-iteration median time.
    P50,
    /// The per-iteration 99th percentile time.
    P99,
}

impl Metric {
    pub fn parse(text: &str) -> Result<Metric> {
        Ok(match text {
            "busbw" => Metric::BusBw,
            "algbw" => Metric::AlgBw,
            "time" => Metric::Time,
            "p50" => Metric::P50,
            "p99" => Metric::P99,
            _ => return Err(Error::Usage(format!("unknown metric '{text}': use busbw, algbw, time, p50 or p99"))),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::BusBw => "busbw",
            Metric::AlgBw => "algbw",
            Metric::Time => "time",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
        }
    }

    /// The refusal of a metric a record kind does not have.
    pub fn not_for(self, kind: &str, offers: &str) -> Error {
        Error::Usage(format!("--metric {} does not apply to {kind} records ({offers})", self.name()))
    }
}

/// The picture's format, from the output file's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

impl Format {
    /// PNG for a name ending in .png, SVG for .svg or no extension; other
    /// extensions are refused.
    pub fn of(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("png") => Ok(Format::Png),
            Some("svg") | None => Ok(Format::Svg),
            Some(other) => {
                Err(Error::Usage(format!("cannot write a .{other} picture ({}): name it .svg or .png", path.display())))
            }
        }
    }
}

/// How the figure is drawn, besides the records.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// None: each kind's own figure (busbw for collectives).
    pub metric: Option<Metric>,
    pub title: Option<String>,
    /// Copy records: the tests to draw (names or families); None for all.
    pub tests: Option<Vec<String>>,
    pub format: Format,
}

/// `qbench plot`, as the command line asked for it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotPlan {
    pub files: Vec<PathBuf>,
    /// None: stdout (`-o -`).
    pub output: Option<PathBuf>,
    pub options: Options,
}

impl PlotPlan {
    pub fn new(
        files: Vec<PathBuf>,
        output: Option<PathBuf>,
        metric: Option<&str>,
        title: Option<String>,
        tests: Option<&str>,
    ) -> Result<PlotPlan> {
        let first = files.first().ok_or_else(|| Error::Usage("plot needs at least one JSON record".into()))?;
        let output = match output {
            Some(p) if p.as_os_str() == "-" => None,
            Some(p) => Some(p),
            None => Some(PathBuf::from(first.file_stem().unwrap_or(first.as_os_str())).with_extension("svg")),
        };
        let format = output.as_deref().map_or(Ok(Format::Svg), Format::of)?;
        let tests = tests.map(|t| t.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect());
        Ok(PlotPlan {
            files,
            output,
            options: Options { metric: metric.map(Metric::parse).transpose()?, title, tests, format },
        })
    }

    /// Reads every file; the first that is not a qbench record ends it.
    pub fn read(&self) -> Result<Vec<(PathBuf, AnyRecord)>> {
        self.files.iter().map(|f| crate::record::read(f).map(|r| (f.clone(), r))).collect()
    }
}

/// A drawn picture and what is in it.
#[derive(Debug, Clone)]
pub struct Picture {
    pub bytes: Vec<u8>,
    /// Lines, bar series and heat maps drawn.
    pub series: usize,
    pub panels: usize,
}

/// One run to draw: its record, its file, and the words that name it in
/// legends (host, date and what carried the data; the file when two runs
/// would read alike).
pub struct Source<'a, R> {
    pub path: &'a Path,
    pub record: &'a R,
    pub label: String,
}

/// A record kind that can be drawn: one or several runs of it, overlaid,
/// become one figure.
pub trait Plot: Sized {
    /// What names a run in a legend after its host and date: the transport,
    /// the GPUs. Empty when nothing does.
    fn carrier(&self) -> String;
    /// The figure of the runs.
    fn figure(runs: &[Source<'_, Self>], options: &Options) -> Result<Figure>;
}

/// The figure of the records: all of one kind, overlaid.
pub fn figure(records: &[(PathBuf, AnyRecord)], options: &Options) -> Result<Figure> {
    let (_, first) = records.first().ok_or_else(|| Error::Usage("plot needs at least one JSON record".into()))?;
    match first {
        AnyRecord::Collective(_) => {
            of_kind(records, options, |r| if let AnyRecord::Collective(x) = r { Some(x.as_ref()) } else { None })
        }
        AnyRecord::Exchange(_) => {
            of_kind(records, options, |r| if let AnyRecord::Exchange(x) = r { Some(x) } else { None })
        }
        AnyRecord::Compare(_) => {
            of_kind(records, options, |r| if let AnyRecord::Compare(x) = r { Some(x) } else { None })
        }
        AnyRecord::Copy(_) => of_kind(records, options, |r| if let AnyRecord::Copy(x) = r { Some(x) } else { None }),
        AnyRecord::Check(_) => of_kind(records, options, |r| if let AnyRecord::Check(x) = r { Some(x) } else { None }),
        AnyRecord::Rdma(_) => of_kind(records, options, |r| if let AnyRecord::Rdma(x) = r { Some(x) } else { None }),
        AnyRecord::Osu(_) => of_kind(records, options, |r| if let AnyRecord::Osu(x) = r { Some(x) } else { None }),
    }
}

/// The records drawn as a picture in the options' format.
pub fn draw(records: &[(PathBuf, AnyRecord)], options: &Options) -> Result<Picture> {
    let fig = figure(records, options)?;
    // An empty picture would say nothing was measured as if it were a result.
    if fig.is_empty() {
        let files: Vec<String> = records.iter().map(|(p, _)| p.display().to_string()).collect();
        return Err(Error::Usage(format!(
            "{}: no results to draw (a run stopped before its first figure?)",
            files.join(", ")
        )));
    }
    let bytes = match options.format {
        Format::Svg => draw::svg(&fig)?.into_bytes(),
        Format::Png => draw::png(&fig)?,
    };
    Ok(Picture { bytes, series: fig.series(), panels: fig.panels.len() })
}

fn kind(header: &Header) -> &str {
    header.kind_and_version().map_or("unknown", |(k, _)| k)
}

/// The runs of one kind with their legend labels, drawn by that kind's `Plot`.
fn of_kind<R: Plot>(
    records: &[(PathBuf, AnyRecord)],
    options: &Options,
    pick: impl Fn(&AnyRecord) -> Option<&R>,
) -> Result<Figure> {
    let first = kind(records[0].1.header());
    let runs = records
        .iter()
        .map(|(path, r)| {
            pick(r).map(|record| (path.as_path(), r.header(), record)).ok_or_else(|| {
                Error::Usage(format!(
                    "{} is a {} record and {} a {first} one: plot records of one kind together",
                    path.display(),
                    kind(r.header()),
                    records[0].0.display()
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let labels: Vec<String> = runs.iter().map(|(_, h, r)| label(h, &r.carrier())).collect();
    let sources = runs
        .iter()
        .zip(&labels)
        .map(|((path, _, record), l)| {
            let twin = labels.iter().filter(|x| *x == l).count() > 1;
            let label = if twin {
                format!("{l} ({})", path.file_stem().map_or(path.display().to_string(), |s| s.to_string_lossy().into()))
            } else {
                l.clone()
            };
            Source { path, record: *record, label }
        })
        .collect::<Vec<_>>();
    let mut fig = R::figure(&sources, options)?;
    if let Some(t) = &options.title {
        fig.title = t.clone();
    }
    Ok(fig)
}

/// "host date carrier": the run's host, the day it started, what carried it.
fn label(h: &Header, carrier: &str) -> String {
    let date = h.start_time.get(..10).unwrap_or(&h.start_time);
    let mut s = format!("{} {date}", h.host);
    if !carrier.is_empty() {
        s.push(' ');
        s.push_str(carrier);
    }
    if !h.complete {
        s.push_str(" (incomplete)");
    }
    s
}

/// The hosts of the runs, for a title: "vm", "vm and node2".
fn hosts<R>(runs: &[Source<'_, R>], header: impl Fn(&R) -> &Header) -> String {
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        let h = header(r.record).host.as_str();
        if !names.contains(&h) {
            names.push(h);
        }
    }
    match names.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// "N× NAME" for the GPUs of a run, e.g. "2× NVIDIA H200"; several kinds joined.
fn gpus<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match counts.iter_mut().find(|(m, _)| *m == n) {
            Some((_, c)) => *c += 1,
            None => counts.push((n, 1)),
        }
    }
    counts.iter().map(|(n, c)| format!("{c}× {n}")).collect::<Vec<_>>().join(" + ")
}

/// The distinct names among `names` that `keep` keeps, in first-seen order.
fn groups<'a>(names: impl IntoIterator<Item = &'a str>, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for n in names {
        if keep(n) && !v.iter().any(|x| x == n) {
            v.push(n.to_string());
        }
    }
    v
}

/// A bandwidth axis: from zero, or powers of ten when the values span more
/// than a factor of 20 (a host link beside NVLink beside a local copy).
fn bandwidth_scale(values: impl IntoIterator<Item = f64>) -> figure::Scale {
    let (lo, hi) =
        values.into_iter().filter(|v| *v > 0.0).fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    if hi > 20.0 * lo { figure::Scale::Log10 } else { figure::Scale::Linear }
}

/// A byte count as the axes label sizes: 1K, 16M, 1G (binary), or bytes.
pub fn size_label(bytes: f64) -> String {
    const UNITS: [(f64, &str); 5] =
        [(1099511627776.0, "T"), (1073741824.0, "G"), (1048576.0, "M"), (1024.0, "K"), (1.0, "")];
    for (m, u) in UNITS {
        if bytes >= m {
            let v = bytes / m;
            return if (v - v.round()).abs() < 1e-9 { format!("{}{u}", v.round()) } else { format!("{v:.1}{u}") };
        }
    }
    format!("{bytes}")
}

/// A byte count in words for titles: "1 GiB", "16 MiB", "512 B".
pub fn size_words(bytes: u64) -> String {
    let l = size_label(bytes as f64);
    match l.chars().last() {
        Some(u @ ('K' | 'M' | 'G' | 'T')) => format!("{} {u}iB", &l[..l.len() - 1]),
        _ => format!("{l} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_follow_the_name() {
        assert_eq!(Format::of(Path::new("a.png")).unwrap(), Format::Png);
        assert_eq!(Format::of(Path::new("a.PNG")).unwrap(), Format::Png);
        assert_eq!(Format::of(Path::new("a.svg")).unwrap(), Format::Svg);
        assert_eq!(Format::of(Path::new("a")).unwrap(), Format::Svg);
        assert_eq!(Format::of(Path::new("a.jpg")).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn the_default_picture_is_the_first_file_as_svg_here() {
        let p = PlotPlan::new(vec!["results/x.json".into(), "y.json".into()], None, None, None, None).unwrap();
        assert_eq!(p.output, Some(PathBuf::from("x.svg")));
        let p = PlotPlan::new(vec!["x.json".into()], Some("-".into()), Some("p99"), None, None).unwrap();
        assert_eq!((p.output, p.options.metric), (None, Some(Metric::P99)));
        assert_eq!(PlotPlan::new(vec!["x.json".into()], None, Some("fast"), None, None).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn sizes_are_labelled_in_binary_units() {
        assert_eq!(size_label(1024.0), "1K");
        assert_eq!(size_label(16.0 * 1048576.0), "16M");
        assert_eq!(size_label(1073741824.0), "1G");
        assert_eq!(size_label(8.0), "8");
        assert_eq!(size_words(1 << 30), "1 GiB");
        assert_eq!(size_words(8), "8 B");
        assert_eq!(gpus(["NVIDIA H200", "NVIDIA H200"]), "2× NVIDIA H200");
    }
}

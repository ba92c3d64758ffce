//! OSU Micro-Benchmarks' output, as OSU 7.4 prints it: its title line,
//! `# Datatype:` and column heading before each datatype's rows, OSU's
//! field widths (10 for the size, 18 for each figure, two decimals); then
//! what OSU does not print, as comment lines scripts skip: the ranks and
//! the data check. And its rows, one per datatype and size.

use super::Table;
use super::rows::{Cell, Rows};
use crate::record::osu::{Benchmark, OsuRow, OsuRun, Place};
use std::fmt::Write;

/// OSU's FIELD_WIDTH as its configure sets it (18; the header's fallback is 20).
const FIELD: usize = 18;

impl Table for OsuRun {
    fn head(&self) -> String {
        let accel = if self.buffers.0 == Place::Device || self.buffers.1 == Place::Device { "-CUDA" } else { "" };
        let title = format!("# {} v7.4 (qbench {})\n", self.benchmark.title(accel), env!("CARGO_PKG_VERSION"));
        let mut s = match self.benchmark {
            // osu_mbw_mr starts without the blank line.
            Benchmark::MbwMr => {
                title
                    + &format!(
                        "# [ pairs: {} ] [ window size: {} ]\n",
                        self.pairs.unwrap_or(0),
                        self.window.unwrap_or(0)
                    )
            }
            _ => format!("\n{title}"),
        };
        let _ = writeln!(s, "# Buffers: {} {}", self.buffers.0.letter(), self.buffers.1.letter());
        for r in &self.ranks {
            let memory = if r.bus_id == "host" {
                "host memory".to_string()
            } else {
                format!("GPU {} [{}] {}", r.device, r.bus_id, r.name)
            };
            let _ = writeln!(s, "# Rank {} on {}: {memory}", r.rank, r.host);
        }
        s
    }

    fn part(&self, row: &OsuRow) -> String {
        let mut s = String::new();
        let first = self.rows.iter().find(|r| r.datatype == row.datatype).is_none_or(|r| std::ptr::eq(r, row));
        if first {
            let _ = writeln!(s, "# Datatype: {}.", row.datatype.name());
            s.push_str(&self.columns());
        }
        let _ = write!(s, "{:<10}{:>FIELD$.2}", row.size, row.value);
        if let Some(m) = row.messages_per_s {
            let _ = write!(s, "{m:>FIELD$.2}");
        }
        if self.full
            && let (Some(min), Some(max)) = (row.min_us, row.max_us)
        {
            let _ = write!(s, "{min:>FIELD$.2}{max:>FIELD$.2}{:>12}", row.iterations);
        }
        if self.validation_column {
            let _ = write!(s, "{:>FIELD$}", if row.wrong == 0 { "Pass" } else { "Fail" });
        }
        s.push('\n');
        s
    }

    fn tail(&self) -> String {
        let sizes = self.rows.len();
        if self.wrong_elements == 0 {
            format!("# Data check: {sizes} sizes, every received element right: OK\n")
        } else {
            format!(
                "# Data check: {} wrong elements in {} of {sizes} sizes: FAIL\n",
                self.wrong_elements,
                self.rows.iter().filter(|r| r.wrong > 0).count()
            )
        }
    }
}

impl OsuRun {
    /// OSU's column heading.
    fn columns(&self) -> String {
        let mut s = format!("{:<10}", "# Size");
        match self.benchmark {
            Benchmark::MbwMr => {
                let _ = write!(s, "{:>FIELD$}{:>FIELD$}", "MB/s", "Messages/s");
            }
            b if b.is_latency() => {
                let _ = write!(s, "{:>FIELD$}", "Avg Latency(us)");
            }
            _ => {
                let _ = write!(s, "{:>FIELD$}", "Bandwidth (MB/s)");
            }
        }
        if self.full {
            let _ = write!(s, "{:>FIELD$}{:>FIELD$}{:>12}", "Min Latency(us)", "Max Latency(us)", "Iterations");
        }
        if self.validation_column {
            let _ = write!(s, "{:>FIELD$}", "Validation");
        }
        s.push('\n');
        s
    }
}

impl Rows for OsuRun {
    const KIND: &'static str = crate::record::osu::KIND;

    fn rows(&self) -> Vec<Vec<Cell>> {
        let unit = if self.benchmark.is_latency() { "us" } else { "MB/s" };
        let rows = self.rows.iter().map(|r| {
            vec![
                Cell::key("benchmark", self.benchmark.program()),
                Cell::key("datatype", r.datatype.name()),
                Cell::key("size", r.size),
                Cell::figure("iterations", r.iterations),
                Cell::figure("value", r.value).help("each size's latency or bandwidth, in its unit"),
                Cell::key("unit", unit),
                Cell::figure("messages_per_s", r.messages_per_s),
                Cell::figure("min_us", r.min_us),
                Cell::figure("max_us", r.max_us),
                Cell::figure("wrong", r.wrong),
            ]
        });
        rows.collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::record::Header;
    use crate::record::osu::{Benchmark, Datatype, OsuRow, OsuRun, Place};
    use crate::report::render;

    fn run(benchmark: Benchmark, full: bool, validation_column: bool) -> OsuRun {
        let mut r = OsuRun {
            header: Header::start("osu", None),
            benchmark,
            buffers: (Place::Host, Place::Host),
            window: benchmark.windowed().then_some(64),
            pairs: (benchmark == Benchmark::MbwMr).then_some(1),
            full,
            validation_column,
            ranks: Vec::new(),
            rows: Vec::new(),
            wrong_elements: 0,
        };
        for (size, value) in [(1, 0.16), (4194304, 1018.69)] {
            r.push(OsuRow {
                datatype: Datatype::Char,
                size,
                iterations: 1000,
                value,
                messages_per_s: (benchmark == Benchmark::MbwMr).then_some(value * 1e6 / size as f64),
                min_us: Some(19.72),
                max_us: Some(20.01),
                wrong: 0,
            });
        }
        r
    }

    /// Against OSU 7.4's own output (osu_latency, osu_allreduce -f -c,
    /// osu_mbw_mr -c, osu_bw, built with Open MPI 4.1.4).
    #[test]
    fn rows_and_headings_are_osus_to_the_column() {
        let text = render(&run(Benchmark::Latency, false, false));
        assert!(text.starts_with("\n# OSU MPI Latency Test v7.4 (qbench "), "{text}");
        assert!(
            text.contains("\n# Datatype: MPI_CHAR.\n# Size       Avg Latency(us)\n1                       0.16\n"),
            "{text}"
        );
        assert!(text.contains("\n4194304              1018.69\n"), "{text}");
        let full = render(&run(Benchmark::Allreduce, true, true));
        assert!(
            full.contains(
                "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations        Validation\n"
            ),
            "{full}"
        );
        assert!(
            full.contains(
                "\n1                       0.16             19.72             20.01        1000              Pass\n"
            ),
            "{full}"
        );
        let mr = render(&run(Benchmark::MbwMr, false, true));
        assert!(mr.starts_with("# OSU MPI Multiple Bandwidth / Message Rate Test v7.4"), "{mr}");
        assert!(mr.contains("\n# [ pairs: 1 ] [ window size: 64 ]\n"), "{mr}");
        assert!(mr.contains("# Size                  MB/s        Messages/s        Validation\n"), "{mr}");
        assert!(mr.contains("\n1                       0.16         160000.00              Pass\n"), "{mr}");
        assert!(render(&run(Benchmark::Bw, false, false)).contains("\n# Size      Bandwidth (MB/s)\n"));
    }

    #[test]
    fn csv_has_a_line_per_row() {
        let csv = crate::report::export::Format::Csv.exporter().export(&run(Benchmark::MbwMr, false, true)).unwrap();
        let text = String::from_utf8(csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "benchmark,datatype,size,iterations,value,unit,messages_per_s,min_us,max_us,wrong");
        assert_eq!(lines[1], "osu_mbw_mr,MPI_CHAR,1,1000,0.16,MB/s,160000.0,19.72,20.01,0");
        assert_eq!(lines.len(), 3, "{text}");
    }
}

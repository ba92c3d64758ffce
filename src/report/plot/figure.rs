//! What a plot shows, before any drawing: panels of lines against an axis,
//! grouped bars, heat maps or judged steps, each with its axes, series and
//! reference lines. Each record kind builds one (its `Plot`); `draw.rs`
//! alone turns it into SVG or PNG.

use crate::record::check::Status;

/// A whole picture: a title over panels laid out in `columns`.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub title: String,
    pub panels: Vec<Panel>,
    pub columns: usize,
}

impl Figure {
    /// The series drawn in every panel (lines, bar series, heat maps).
    pub fn series(&self) -> usize {
        self.panels.iter().map(|p| p.chart.series()).sum()
    }

    /// Whether no panel holds a figure (records without results).
    pub fn is_empty(&self) -> bool {
        self.panels.iter().all(|p| match &p.chart {
            Chart::Lines(l) => l.series.iter().all(|s| s.points.is_empty()),
            chart => chart.series() == 0,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: String,
    pub chart: Chart,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    Lines(Lines),
    Bars(Bars),
    Heat(Heat),
    Judged(Judged),
}

impl Chart {
    pub fn series(&self) -> usize {
        match self {
            Chart::Lines(l) => l.series.len(),
            Chart::Bars(b) => b.series.len(),
            Chart::Heat(_) => 1,
            Chart::Judged(j) => j.columns.len(),
        }
    }
}

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// From zero (or the smallest value) up, evenly.
    Linear,
    /// Powers of ten evenly spaced.
    Log10,
    /// Byte sizes, powers of two evenly spaced, labelled 1K, 16M, 1G.
    Bytes,
    /// Whole numbers (qubits), evenly.
    Integer,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// With the unit, e.g. "bus bandwidth (GB/s)".
    pub title: String,
    pub scale: Scale,
}

impl Axis {
    pub fn new(title: impl Into<String>, scale: Scale) -> Axis {
        Axis { title: title.into(), scale }
    }
}

/// How a line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
}

/// The mark at each point of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Triangle,
    Square,
    None,
}

/// One line: its legend label, its points (x, y) and how it is drawn.
/// Series of one `colour` index share a colour (a run's out-of-place and
/// in-place lines, say). A `reference` line (a link measured at each size)
/// takes its colour from the darker colours of references.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub colour: usize,
    pub dash: Dash,
    pub marker: Marker,
    pub reference: bool,
}

/// A horizontal line across the chart at `value`: a floor, a link's speed.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub label: String,
    pub value: f64,
    /// A colour index shared with the series it belongs to; None for grey.
    pub colour: Option<usize>,
}

/// Lines against an x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Lines {
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub references: Vec<Reference>,
}

/// One bar per group for each series (a file, a pattern); None where the
/// series has no value in that group, with the reason when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    pub label: String,
    pub values: Vec<Option<f64>>,
    pub colour: usize,
}

/// Grouped bars: groups along x (transports), series side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// The x axis' title, e.g. "transport".
    pub groups_title: String,
    pub groups: Vec<String>,
    pub y: Axis,
    pub series: Vec<BarSeries>,
    pub references: Vec<Reference>,
}

/// A matrix of values, each written in its cell, coloured by size.
#[derive(Debug, Clone, PartialEq)]
pub struct Heat {
    pub rows_title: String,
    pub rows: Vec<String>,
    pub columns_title: String,
    pub columns: Vec<String>,
    /// `cells[row][column]`; None where nothing was measured.
    pub cells: Vec<Vec<Option<f64>>>,
    /// The values' unit, e.g. "GB/s".
    pub unit: String,
}

/// Steps held against what was expected: a row per step, a column per run,
/// all on one axis of measured / expected with expected at 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The axis under each column, e.g. "measured / expected".
    pub x_title: String,
    pub rows_title: String,
    pub rows: Vec<Heading>,
    /// A run each, its detail the run's verdict.
    pub columns: Vec<Heading>,
    /// `marks[row][column]`; None where the run has no such step.
    pub marks: Vec<Vec<Option<Mark>>>,
    /// The legend's words for the limit ticks and for the line at 1.
    pub tick_label: String,
    pub expected_label: String,
}

/// A row's or a column's name, and a second line under it (empty for none),
/// coloured as `status` when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Heading {
    pub text: String,
    pub detail: String,
    pub status: Option<Status>,
}

/// One step of one run: a bar to `value` coloured by its status, a tick at
/// each of its `limits` (same scale), and `note` written over it; the note
/// alone, in the status' colour, where there is no value to scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub value: Option<f64>,
    pub limits: Vec<f64>,
    pub status: Status,
    pub note: String,
}

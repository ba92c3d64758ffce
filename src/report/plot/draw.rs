//! A [`Figure`] drawn with plotters, as SVG text or a PNG. Text comes from
//! the font compiled into the binary (assets/fonts), so that a machine with
//! no fonts draws the same picture; SVG names the family and leaves the
//! glyphs to the viewer. Every panel has its legend below its chart, never
//! over the data; axes carry their own ticks (powers of two labelled 1K,
//! 16M, 1G; powers of ten; round steps).

use super::figure::{Bars, Chart, Dash, Figure, Heading, Heat, Judged, Lines, Mark, Marker, Panel, Scale};
use crate::error::{Error, Result};
use crate::record::check::Status;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;

const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans-qbench.ttf");
const FAMILY: &str = "sans-serif";

const PANEL_W: u32 = 1000;
const CHART_H: u32 = 540;
const TITLE_H: u32 = 54;
const PANEL_TITLE_H: u32 = 34;
const LEGEND_ROW: u32 = 24;
const LEGEND_PAD: u32 = 14;
const SAMPLE_W: i32 = 40;

const TITLE_PT: f64 = 24.0;
const PANEL_TITLE_PT: f64 = 19.0;
const AXIS_TITLE_PT: f64 = 18.0;
const LABEL_PT: f64 = 15.0;
const LEGEND_PT: f64 = 15.0;
const VALUE_PT: f64 = 13.0;

/// Tableau's ten colours: distinct, and kind to most colour vision.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0x79, 0x70, 0x6e),
];
/// Reference lines without a series of their own: dark, apart from the series.
const REFERENCE: [RGBColor; 4] =
    [RGBColor(0x30, 0x30, 0x30), RGBColor(0x8c, 0x56, 0x4b), RGBColor(0x17, 0x8f, 0x9f), RGBColor(0x7f, 0x7f, 0x7f)];
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
const MISSING: RGBColor = RGBColor(0xee, 0xee, 0xee);
/// A judged step's limit (floor or ceiling): near-black, used for nothing else.
const TICK: RGBColor = RGBColor(0x1a, 0x1a, 0x1a);
/// Every other row of judged steps, to lead the eye from label to marks.
const BAND: RGBColor = RGBColor(0xf4, 0xf4, 0xf4);
const FAINT: RGBColor = RGBColor(0x80, 0x80, 0x80);

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// PASS green, WARN amber, FAIL red, SKIP grey.
fn status_colour(s: Status) -> RGBColor {
    match s {
        Status::Pass => RGBColor(0x2c, 0xa0, 0x2c),
        Status::Warn => RGBColor(0xf5, 0xa6, 0x23),
        Status::Fail => RGBColor(0xd6, 0x27, 0x28),
        Status::Skip => RGBColor(0xa0, 0xa0, 0xa0),
    }
}

/// The figure as SVG text.
pub fn svg(fig: &Figure) -> Result<String> {
    fonts()?;
    let (w, h) = size(fig);
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (w, h)).into_drawing_area();
        paint(&root, fig).map_err(fail)?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    Ok(text)
}

/// The figure as a PNG file's bytes.
pub fn png(fig: &Figure) -> Result<Vec<u8>> {
    fonts()?;
    let (w, h) = size(fig);
    let mut pixels = vec![255u8; w as usize * h as usize * 3];
    {
        let bitmap = BitMapBackend::with_buffer(&mut pixels, (w, h));
        let root = super::raster::Raster::new(bitmap, FONT)
            .ok_or_else(|| Error::Runtime("the font compiled into qbench cannot be read".into()))?
            .into_drawing_area();
        paint(&root, fig).map_err(fail)?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(|e| fail(e.to_string()))?;
    writer.write_image_data(&pixels).map_err(|e| fail(e.to_string()))?;
    writer.finish().map_err(|e| fail(e.to_string()))?;
    Ok(out)
}

fn fail(e: String) -> Error {
    Error::Runtime(format!("cannot draw the plot: {e}"))
}

/// Registers the embedded font once.
fn fonts() -> Result<()> {
    static DONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *DONE.get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok { Ok(()) } else { Err(Error::Runtime("the font compiled into qbench cannot be read".into())) }
}

fn font(pt: f64) -> FontDesc<'static> {
    (FAMILY, pt).into_font()
}

/// Width in pixels of `text` in the legend's font.
fn text_width(text: &str, pt: f64) -> u32 {
    font(pt).box_size(text).map_or(text.chars().count() as u32 * (pt as u32 * 6 / 10), |(w, _)| w)
}

/// One legend entry: a line sample (dashed or not, with its mark), a box
/// or an upright tick.
struct Entry {
    label: String,
    colour: RGBColor,
    dash: Dash,
    marker: Marker,
    sample: Sample,
}

#[derive(Clone, Copy)]
enum Sample {
    Line,
    Box,
    Tick,
}

/// A panel's legend: the words every entry starts with (host, date, the
/// GPUs), said once above them, and the entries without them.
fn legend_of(p: &Panel) -> (Option<String>, Vec<Entry>) {
    let mut all = entries(p);
    if all.len() < 2 {
        return (None, all);
    }
    let words: Vec<Vec<&str>> = all.iter().map(|e| e.label.split(' ').collect()).collect();
    let bare = |w: &str| w.trim_end_matches([',', ':']).to_string();
    let mut n = 0;
    while words.iter().all(|w| w.len() > n && bare(w[n]) == bare(words[0][n])) {
        n += 1;
    }
    // Every entry keeps words of its own, and the shared ones are worth a line.
    if n < 2 || words.iter().any(|w| w.len() == n) {
        return (None, all);
    }
    let head = bare(&words[0][..n].join(" "));
    let rest: Vec<String> = words.iter().map(|w| w[n..].join(" ")).collect();
    for (e, r) in all.iter_mut().zip(rest) {
        e.label = r;
    }
    (Some(head), all)
}

fn entries(p: &Panel) -> Vec<Entry> {
    let refs = |refs: &[super::figure::Reference]| {
        refs.iter()
            .enumerate()
            .map(|(i, r)| Entry {
                label: r.label.clone(),
                colour: reference_colour(r.colour, i),
                dash: Dash::Dashed,
                marker: Marker::None,
                sample: Sample::Line,
            })
            .collect::<Vec<_>>()
    };
    match &p.chart {
        Chart::Lines(l) => l
            .series
            .iter()
            .map(|s| Entry {
                label: s.label.clone(),
                colour: series_colour(s),
                dash: s.dash,
                marker: s.marker,
                sample: Sample::Line,
            })
            .chain(refs(&l.references))
            .collect(),
        Chart::Bars(b) => b
            .series
            .iter()
            .map(|s| Entry {
                label: s.label.clone(),
                colour: colour(s.colour),
                dash: Dash::Solid,
                marker: Marker::None,
                sample: Sample::Box,
            })
            .chain(refs(&b.references))
            .collect(),
        Chart::Heat(_) => Vec::new(),
        Chart::Judged(j) => judged_entries(j),
    }
}

/// The four statuses, the limit tick and the line at expected.
fn judged_entries(j: &Judged) -> Vec<Entry> {
    let entry =
        |label: &str, colour, dash, sample| Entry { label: label.into(), colour, dash, marker: Marker::None, sample };
    let mut v: Vec<Entry> = [Status::Pass, Status::Warn, Status::Fail, Status::Skip]
        .into_iter()
        .map(|s| entry(s.name(), status_colour(s), Dash::Solid, Sample::Box))
        .collect();
    v.push(entry(&j.tick_label, TICK, Dash::Solid, Sample::Tick));
    v.push(entry(&j.expected_label, REFERENCE[0], Dash::Dashed, Sample::Line));
    v
}

fn series_colour(s: &super::figure::Series) -> RGBColor {
    if s.reference { REFERENCE[s.colour % REFERENCE.len()] } else { colour(s.colour) }
}

fn reference_colour(c: Option<usize>, i: usize) -> RGBColor {
    c.map_or(REFERENCE[i % REFERENCE.len()], colour)
}

/// Legend columns and rows for a panel of `width` pixels.
fn legend_grid(entries: &[Entry], width: u32) -> (usize, usize, u32) {
    if entries.is_empty() {
        return (0, 0, 0);
    }
    let widest = entries.iter().map(|e| text_width(&e.label, LEGEND_PT)).max().unwrap_or(0) + SAMPLE_W as u32 + 34;
    let columns = ((width - 2 * LEGEND_PAD) / widest.max(1)).clamp(1, entries.len() as u32) as usize;
    let rows = entries.len().div_ceil(columns);
    (columns, rows, (width - 2 * LEGEND_PAD) / columns as u32)
}

/// The height of a heat map's chart: a row of cells per matrix row; of
/// judged steps: the runs' headings, a row per step, the axis.
fn chart_height(p: &Panel) -> u32 {
    match &p.chart {
        Chart::Heat(h) => (h.rows.len() as u32 * 48 + 120).max(230),
        Chart::Judged(j) => (JUDGED_HEAD + j.rows.len() as i32 * JUDGED_ROW + JUDGED_FOOT) as u32,
        _ => CHART_H,
    }
}

/// PANEL_W, or wider for judged steps of many runs.
fn panel_width(p: &Panel) -> u32 {
    match &p.chart {
        Chart::Judged(j) => (judged_label_room(j) + j.columns.len() as u32 * JUDGED_COLUMN_W + 36).max(PANEL_W),
        _ => PANEL_W,
    }
}

fn panel_height(p: &Panel) -> u32 {
    let title = if p.title.is_empty() { 0 } else { PANEL_TITLE_H };
    let legend = match &p.chart {
        Chart::Heat(_) => LEGEND_ROW + 2 * LEGEND_PAD,
        _ => {
            let (head, entries) = legend_of(p);
            let (_, rows, _) = legend_grid(&entries, panel_width(p));
            (rows + usize::from(head.is_some())) as u32 * LEGEND_ROW + 2 * LEGEND_PAD
        }
    };
    title + chart_height(p) + legend
}

/// The rows of panels, each as tall as its tallest.
fn rows(fig: &Figure) -> Vec<(u32, &[Panel])> {
    fig.panels.chunks(fig.columns.max(1)).map(|row| (row.iter().map(panel_height).max().unwrap_or(0), row)).collect()
}

fn size(fig: &Figure) -> (u32, u32) {
    let rows = rows(fig);
    let w = rows.iter().map(|(_, ps)| ps.iter().map(panel_width).sum::<u32>()).max().unwrap_or(PANEL_W);
    (w.max(PANEL_W), TITLE_H + rows.iter().map(|(h, _)| h).sum::<u32>())
}

type Drawn = std::result::Result<(), String>;

fn e<T: std::fmt::Display>(x: T) -> String {
    x.to_string()
}

fn paint<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Drawn {
    root.fill(&WHITE).map_err(e)?;
    let (title, mut body) = root.split_vertically(TITLE_H);
    let (w, _) = title.dim_in_pixel();
    title
        .draw(&Text::new(
            fig.title.clone(),
            (w as i32 / 2, TITLE_H as i32 / 2 + 4),
            font(TITLE_PT).color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center)),
        ))
        .map_err(e)?;
    for (h, panels) in rows(fig) {
        let (row, rest) = body.split_vertically(h);
        body = rest;
        let mut area = row;
        for p in panels {
            let (cell, rest) = area.split_horizontally(panel_width(p));
            area = rest;
            panel(&cell, p)?;
        }
    }
    Ok(())
}

fn panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Drawn {
    let mut area = area.clone();
    let width = panel_width(p);
    if !p.title.is_empty() {
        let (title, rest) = area.split_vertically(PANEL_TITLE_H);
        title
            .draw(&Text::new(
                p.title.clone(),
                (width as i32 / 2, PANEL_TITLE_H as i32 / 2),
                font(PANEL_TITLE_PT).color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center)),
            ))
            .map_err(e)?;
        area = rest;
    }
    let (chart, legend_area) = area.split_vertically(chart_height(p));
    match &p.chart {
        Chart::Lines(l) => lines(&chart, l)?,
        Chart::Bars(b) => bars(&chart, b)?,
        Chart::Heat(h) => return heat(&chart, &legend_area, h),
        Chart::Judged(j) => judged(&chart, j)?,
    }
    let (head, entries) = legend_of(p);
    legend(&legend_area, width, head.as_deref(), &entries)
}

/// An axis drawn from its own ticks: a position for each, and its label.
#[derive(Clone)]
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

impl Ranged for Ticked {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            return Vec::new();
        }
        self.ticks.iter().map(|t| t.0).collect()
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Ticked {
    fn format_ext(&self, v: &f64) -> String {
        self.ticks.iter().find(|t| (t.0 - v).abs() < 1e-9).map_or_else(|| number(*v), |t| t.1.clone())
    }
}

/// A tick value as people write it: 0.5, 10, 250, 1e+06.
fn number(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if v.abs() >= 1e6 || v.abs() < 1e-3 {
        return format!("{v:e}");
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A value's place on an axis of `scale` (None where it has none: zero or
/// less on a logarithmic axis).
fn place(scale: Scale, v: f64) -> Option<f64> {
    match scale {
        Scale::Linear | Scale::Integer => v.is_finite().then_some(v),
        Scale::Log10 => (v > 0.0 && v.is_finite()).then(|| v.log10()),
        Scale::Bytes => (v > 0.0 && v.is_finite()).then(|| v.log2()),
    }
}

/// The smallest of 1, 2, 5 × 10^k at least `raw`.
fn nice(raw: f64) -> f64 {
    let k = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].into_iter().map(|m| m * k).find(|s| *s >= raw * 0.999).unwrap_or(10.0 * k)
}

/// The axis of `scale` that holds `values` (already placed), with its ticks.
fn ticked(scale: Scale, placed: &[f64]) -> Ticked {
    let (mut lo, mut hi) = placed.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    match scale {
        Scale::Linear => {
            let lo = lo.min(0.0);
            let hi = if hi <= lo { lo + 1.0 } else { hi };
            let step = nice((hi - lo) / 8.0);
            let top = (hi / step).ceil() * step;
            let hi = if top - hi < step * 0.15 { top + step } else { top };
            let n = ((hi - lo) / step).round() as i64;
            let ticks = (0..=n).map(|k| lo + k as f64 * step).map(|v| (v, number(v))).collect();
            Ticked { lo, hi, ticks }
        }
        Scale::Integer => {
            let (a, b) = (lo.floor() as i64, hi.ceil() as i64);
            let stride = ((b - a) / 16 + 1).max(1);
            let ticks = (a..=b).filter(|v| (v - a) % stride == 0).map(|v| (v as f64, v.to_string())).collect();
            Ticked { lo: a as f64 - 0.6, hi: b as f64 + 0.6, ticks }
        }
        Scale::Log10 => {
            let (a, b) = ((lo - 0.02).floor() as i64, (hi + 0.02).ceil() as i64);
            let b = b.max(a + 1);
            let mut ticks = Vec::new();
            for k in a..=b {
                let base = 10f64.powi(k as i32);
                ticks.push((k as f64, number(base)));
                if b - a <= 2 && k < b {
                    for m in [2.0f64, 5.0] {
                        ticks.push(((base * m).log10(), number(base * m)));
                    }
                }
            }
            Ticked { lo: a as f64, hi: b as f64, ticks }
        }
        Scale::Bytes => {
            let (a, b) = (lo.floor() as i64, hi.ceil() as i64);
            let stride = [1, 2, 4, 5, 10].into_iter().find(|s| (b - a) / s < 14).unwrap_or(10);
            let ticks = (a..=b)
                .filter(|v| v.rem_euclid(stride) == 0)
                .map(|v| (v as f64, super::size_label(2f64.powi(v as i32))))
                .collect();
            Ticked { lo: a as f64 - 0.3, hi: b as f64 + 0.3, ticks }
        }
    }
}

/// Room for the widest tick label left of the y axis.
fn y_label_room(t: &Ticked) -> u32 {
    t.ticks.iter().map(|(_, l)| text_width(l, LABEL_PT)).max().unwrap_or(20) + 18
}

fn mesh<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Ticked, Ticked>>,
    x: &str,
    y: &str,
    grid: bool,
) -> Drawn {
    let mut m = chart.configure_mesh();
    m.x_desc(x)
        .y_desc(y)
        .label_style(font(LABEL_PT).color(&BLACK))
        .axis_desc_style(font(AXIS_TITLE_PT).color(&BLACK))
        .x_labels(64)
        .y_labels(64)
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT);
    if !grid {
        // Heat maps: the cells are the grid; no axis lines or tick marks, a gap for the labels.
        m.disable_mesh().axis_style(TRANSPARENT).set_all_tick_mark_size(8);
    }
    m.draw().map_err(e)
}

fn line_style(c: RGBColor, width: u32) -> ShapeStyle {
    ShapeStyle::from(&c).stroke_width(width)
}

/// Draws `points` as a line of `dash`.
fn polyline<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Ticked, Ticked>>,
    points: Vec<(f64, f64)>,
    dash: Dash,
    style: ShapeStyle,
) -> Drawn {
    match dash {
        Dash::Solid => chart.draw_series(LineSeries::new(points, style)).map(|_| ()),
        Dash::Dashed => chart.draw_series(DashedLineSeries::new(points, 10, 6, style)).map(|_| ()),
        Dash::Dotted => chart.draw_series(DashedLineSeries::new(points, 3, 4, style)).map(|_| ()),
    }
    .map_err(e)
}

fn lines<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, l: &Lines) -> Drawn {
    let px = |v: f64| place(l.x.scale, v);
    let py = |v: f64| place(l.y.scale, v);
    let xs: Vec<f64> = l.series.iter().flat_map(|s| s.points.iter().filter_map(|p| px(p.0))).collect();
    let ys: Vec<f64> = l
        .series
        .iter()
        .flat_map(|s| s.points.iter().filter_map(|p| py(p.1)))
        .chain(l.references.iter().filter_map(|r| py(r.value)))
        .collect();
    let (x, y) = (ticked(l.x.scale, &xs), ticked(l.y.scale, &ys));
    let (x_lo, x_hi) = (x.lo, x.hi);
    let room = y_label_room(&y);
    let mut chart = ChartBuilder::on(area)
        .margin_top(12)
        .margin_right(36)
        .margin_left(12)
        .x_label_area_size(62)
        .y_label_area_size(room + 34)
        .build_cartesian_2d(x, y)
        .map_err(e)?;
    mesh(&mut chart, &l.x.title, &l.y.title, true)?;
    for (i, r) in l.references.iter().enumerate() {
        if let Some(v) = py(r.value) {
            polyline(
                &mut chart,
                vec![(x_lo, v), (x_hi, v)],
                Dash::Dashed,
                line_style(reference_colour(r.colour, i), 2),
            )?;
        }
    }
    for s in &l.series {
        let pts: Vec<(f64, f64)> = s.points.iter().filter_map(|p| Some((px(p.0)?, py(p.1)?))).collect();
        let c = series_colour(s);
        polyline(&mut chart, pts.clone(), s.dash, line_style(c, 2))?;
        markers(&mut chart, &pts, s.marker, c)?;
    }
    Ok(())
}

fn markers<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Ticked, Ticked>>,
    pts: &[(f64, f64)],
    marker: Marker,
    c: RGBColor,
) -> Drawn {
    let fill = c.filled();
    match marker {
        Marker::Circle => chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, fill))).map(|_| ()),
        Marker::Triangle => chart.draw_series(pts.iter().map(|p| TriangleMarker::new(*p, 5, fill))).map(|_| ()),
        Marker::Square => chart
            .draw_series(pts.iter().map(|p| EmptyElement::at(*p) + Rectangle::new([(-4, -4), (4, 4)], fill)))
            .map(|_| ()),
        Marker::None => Ok(()),
    }
    .map_err(e)
}

/// The labels of categories at the middle of their slots 0..n.
fn categories(names: &[String], reversed: bool) -> Ticked {
    let n = names.len();
    let ticks = names
        .iter()
        .enumerate()
        .map(|(i, s)| (if reversed { (n - 1 - i) as f64 + 0.5 } else { i as f64 + 0.5 }, s.clone()))
        .collect();
    Ticked { lo: 0.0, hi: n.max(1) as f64, ticks }
}

/// A bar chart: a group of bars per category, the references dashed
/// behind them, each bar's value over it where it fits.
fn bars<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, b: &Bars) -> Drawn {
    let py = |v: f64| place(b.y.scale, v);
    let ys: Vec<f64> = b
        .series
        .iter()
        .flat_map(|s| s.values.iter().flatten().filter_map(|v| py(*v)))
        .chain(b.references.iter().filter_map(|r| py(r.value)))
        .collect();
    let y = ticked(b.y.scale, &ys);
    let base = y.lo;
    let top = y.hi;
    let room = y_label_room(&y);
    let n = b.groups.len();
    let mut chart = ChartBuilder::on(area)
        .margin_top(12)
        .margin_right(36)
        .margin_left(12)
        .x_label_area_size(62)
        .y_label_area_size(room + 34)
        .build_cartesian_2d(categories(&b.groups, false), y)
        .map_err(e)?;
    mesh(&mut chart, &b.groups_title, &b.y.title, true)?;
    // The references first: the bars stand in front of them.
    for (i, r) in b.references.iter().enumerate() {
        if let Some(v) = py(r.value) {
            polyline(
                &mut chart,
                vec![(0.0, v), (n as f64, v)],
                Dash::Dashed,
                line_style(reference_colour(r.colour, i), 2),
            )?;
        }
    }
    let (plot_w, _) = chart.plotting_area().dim_in_pixel();
    let mut labels = Vec::new();
    for (g, _) in b.groups.iter().enumerate() {
        let present: Vec<(usize, f64)> = b
            .series
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.values.get(g).copied().flatten().map(|v| (i, v)))
            .collect();
        if present.is_empty() {
            not_run(&mut chart, g, base)?;
            continue;
        }
        let slot = 0.8 / present.len() as f64;
        let slot_px = plot_w as f64 / n as f64 * slot;
        for (j, (i, v)) in present.iter().enumerate() {
            let Some(h) = py(*v) else { continue };
            let x0 = g as f64 + 0.1 + j as f64 * slot;
            let x1 = x0 + slot * 0.9;
            let c = colour(b.series[*i].colour);
            chart
                .draw_series(std::iter::once(Rectangle::new([(x0, base), (x1, h.min(top))], c.filled())))
                .map_err(e)?;
            let label = value_label(*v);
            if (text_width(&label, VALUE_PT) as f64) < slot_px * 1.05 {
                labels.push((((x0 + x1) / 2.0, h.min(top)), label));
            }
        }
    }
    value_labels(&mut chart, labels)
}

/// "not run" over the slot of group `g`, whose bars are all absent.
fn not_run<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Ticked, Ticked>>,
    g: usize,
    base: f64,
) -> Drawn {
    chart
        .draw_series(std::iter::once(
            EmptyElement::at((g as f64 + 0.5, base))
                + Text::new(
                    "not run",
                    (0, -14),
                    font(VALUE_PT).color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom)),
                ),
        ))
        .map(|_| ())
        .map_err(e)
}

/// Values over the bars, each on white so that a reference line behind stays out of it.
fn value_labels<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Ticked, Ticked>>,
    labels: Vec<((f64, f64), String)>,
) -> Drawn {
    for (at, label) in labels {
        let w = text_width(&label, VALUE_PT) as i32;
        let hgt = (VALUE_PT / 1.24) as i32;
        chart
            .draw_series(std::iter::once(
                EmptyElement::at(at)
                    + Rectangle::new([(-w / 2 - 3, -hgt - 8), (w / 2 + 3, -2)], WHITE.filled())
                    + Text::new(label, (0, -5), font(VALUE_PT).color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom))),
            ))
            .map_err(e)?;
    }
    Ok(())
}

/// A measured value written on a bar or in a cell: three figures or so.
fn value_label(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Viridis at nine stops: dark blue (small) to yellow (large).
const VIRIDIS: [(u8, u8, u8); 9] = [
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 144, 141),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
];

fn viridis(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0) * (VIRIDIS.len() - 1) as f64;
    let i = (t.floor() as usize).min(VIRIDIS.len() - 2);
    let f = t - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Where a value falls between the map's smallest and largest, on a log
/// scale when they are more than a factor of 20 apart.
struct Shade {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Shade {
    fn of(h: &Heat) -> Shade {
        let vals: Vec<f64> = h.cells.iter().flatten().flatten().copied().filter(|v| *v > 0.0).collect();
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(0.0, f64::max);
        let lo = if lo.is_finite() { lo } else { 0.0 };
        let log = lo > 0.0 && hi > 20.0 * lo;
        // A linear scale starts at zero: near-equal values look alike.
        Shade { lo: if log { lo } else { 0.0 }, hi, log }
    }

    fn t(&self, v: f64) -> f64 {
        if self.hi <= self.lo {
            return 0.6;
        }
        if self.log {
            (v.max(self.lo).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }
}

fn heat<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, legend_area: &DrawingArea<DB, Shift>, h: &Heat) -> Drawn {
    let rows = categories(&h.rows, true);
    let room = y_label_room(&rows);
    let nr = h.rows.len();
    let mut chart = ChartBuilder::on(area)
        .margin_top(8)
        .margin_right(36)
        .margin_left(12)
        .x_label_area_size(50)
        .y_label_area_size(room + 34)
        .build_cartesian_2d(categories(&h.columns, false), rows)
        .map_err(e)?;
    mesh(&mut chart, &h.columns_title, &h.rows_title, false)?;
    let shade = Shade::of(h);
    for (r, row) in h.cells.iter().enumerate() {
        let y0 = (nr - 1 - r) as f64;
        for (c, v) in row.iter().enumerate() {
            let x0 = c as f64;
            let (fill, text, ink) = match v {
                Some(v) => {
                    let t = shade.t(*v);
                    (viridis(t), value_label(*v), if t > 0.55 { BLACK } else { WHITE })
                }
                None => (MISSING, "n/a".to_string(), RGBColor(0x80, 0x80, 0x80)),
            };
            chart
                .draw_series([
                    Rectangle::new([(x0, y0), (x0 + 1.0, y0 + 1.0)], fill.filled()),
                    Rectangle::new([(x0, y0), (x0 + 1.0, y0 + 1.0)], WHITE.stroke_width(2)),
                ])
                .map_err(e)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    text,
                    (x0 + 0.5, y0 + 0.5),
                    font(LABEL_PT).color(&ink).pos(Pos::new(HPos::Center, VPos::Center)),
                )))
                .map_err(e)?;
        }
    }
    scale_bar(legend_area, &shade, &h.unit)
}

/// The colour scale under a heat map: a strip from the smallest to the
/// largest value, its ends labelled.
fn scale_bar<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, s: &Shade, unit: &str) -> Drawn {
    let y = (LEGEND_PAD + LEGEND_ROW / 2) as i32;
    let mut x = LEGEND_PAD as i32 + 20;
    let style = font(LEGEND_PT).color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    let lo = if s.lo > 0.0 { value_label(s.lo) } else { "0".into() };
    let lead = format!("colour: {unit}{}, {lo}", if s.log { " (log scale)" } else { "" });
    area.draw(&Text::new(lead.clone(), (x, y), style.clone())).map_err(e)?;
    x += text_width(&lead, LEGEND_PT) as i32 + 10;
    let steps = 60;
    for i in 0..steps {
        let c = viridis(i as f64 / (steps - 1) as f64);
        area.draw(&Rectangle::new([(x + i * 4, y - 8), (x + i * 4 + 4, y + 8)], c.filled())).map_err(e)?;
    }
    x += steps * 4 + 10;
    area.draw(&Text::new(value_label(s.hi), (x, y), style)).map_err(e)?;
    Ok(())
}

/// Judged steps' layout: the runs' headings, a row per step, the axis
/// under the rows, a column's width at least.
const JUDGED_HEAD: i32 = 60;
const JUDGED_ROW: i32 = 46;
const JUDGED_FOOT: i32 = 70;
const JUDGED_COLUMN_W: u32 = 420;
const JUDGED_GAP: i32 = 56;
/// Past this many times expected a bar stops at the axis' end (its note
/// still says measured and expected).
const JUDGED_MOST: f64 = 3.0;

/// Room left of the columns for the steps' names.
fn judged_label_room(j: &Judged) -> u32 {
    let names = j.rows.iter().map(|r| text_width(&r.text, LABEL_PT).max(text_width(&r.detail, VALUE_PT)));
    names.chain([text_width(&j.rows_title, AXIS_TITLE_PT)]).max().unwrap_or(0) + 32
}

/// The axis every column shares: from 0 past the largest value or limit.
fn judged_axis(j: &Judged) -> Ticked {
    let marks = j.marks.iter().flatten().flatten();
    let top = marks.flat_map(|m| m.value.into_iter().chain(m.limits.iter().copied())).fold(1.0f64, f64::max);
    ticked(Scale::Linear, &[0.0, top.min(JUDGED_MOST) * 1.1])
}

fn left_text(pt: f64, c: RGBColor) -> TextStyle<'static> {
    font(pt).color(&c).pos(Pos::new(HPos::Left, VPos::Center))
}

/// Judged steps: names down the left, then a column per run, each with the
/// run's heading, a mark per step and the shared axis under it.
fn judged<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, j: &Judged) -> Drawn {
    let (w, _) = area.dim_in_pixel();
    let left = judged_label_room(j) as i32;
    let col_w = (w as i32 - left - 36) / j.columns.len().max(1) as i32;
    let bottom = JUDGED_HEAD + j.rows.len() as i32 * JUDGED_ROW;
    let top_of = |r: usize| JUDGED_HEAD + r as i32 * JUDGED_ROW;
    for r in (0..j.rows.len()).step_by(2) {
        area.draw(&Rectangle::new([(0, top_of(r)), (w as i32, top_of(r) + JUDGED_ROW)], BAND.filled())).map_err(e)?;
    }
    let title = font(AXIS_TITLE_PT).color(&BLACK).pos(Pos::new(HPos::Left, VPos::Bottom));
    area.draw(&Text::new(j.rows_title.clone(), (16, JUDGED_HEAD - 8), title)).map_err(e)?;
    for (r, row) in j.rows.iter().enumerate() {
        row_name(area, top_of(r), row)?;
    }
    let axis = judged_axis(j);
    for (c, heading) in j.columns.iter().enumerate() {
        let x0 = left + c as i32 * col_w;
        let span = (x0 + JUDGED_GAP / 2, x0 + col_w - JUDGED_GAP / 2);
        let px = |v: f64| axis.map(&v.clamp(axis.lo, axis.hi), span);
        column_heading(area, (span.0 + span.1) / 2, heading)?;
        column_axis(area, &axis, &px, span, bottom, &j.x_title)?;
        for (r, marks) in j.marks.iter().enumerate() {
            mark(area, &px, span.0, top_of(r), marks.get(c).and_then(Option::as_ref))?;
        }
        let one = px(1.0);
        let s = line_style(REFERENCE[0], 2);
        area.draw(&DashedPathElement::new(vec![(one, JUDGED_HEAD), (one, bottom)], 10, 6, s)).map_err(e)?;
    }
    Ok(())
}

/// A step's name in its row from `y`, and the line under it where there is one.
fn row_name<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, y: i32, row: &Heading) -> Drawn {
    if row.detail.is_empty() {
        return area
            .draw(&Text::new(row.text.clone(), (16, y + JUDGED_ROW / 2), left_text(LABEL_PT, BLACK)))
            .map_err(e);
    }
    area.draw(&Text::new(row.text.clone(), (16, y + 15), left_text(LABEL_PT, BLACK))).map_err(e)?;
    area.draw(&Text::new(row.detail.clone(), (16, y + 33), left_text(VALUE_PT, FAINT))).map_err(e)
}

/// A run's name over its column, its verdict under it in the verdict's colour.
fn column_heading<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, x: i32, h: &Heading) -> Drawn {
    let centred = |pt: f64, c: RGBColor| font(pt).color(&c).pos(Pos::new(HPos::Center, VPos::Center));
    area.draw(&Text::new(h.text.clone(), (x, 18), centred(LEGEND_PT, BLACK))).map_err(e)?;
    let ink = h.status.map_or(FAINT, status_colour);
    area.draw(&Text::new(h.detail.clone(), (x, 40), centred(VALUE_PT, ink))).map_err(e)
}

/// A column's grid lines, its axis line at 0, its tick labels and title.
fn column_axis<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &Ticked,
    px: &impl Fn(f64) -> i32,
    span: (i32, i32),
    bottom: i32,
    title: &str,
) -> Drawn {
    let below = font(LABEL_PT).color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
    for (v, label) in &axis.ticks {
        let x = px(*v);
        let ink = if *v == axis.lo { BLACK } else { GRID };
        area.draw(&PathElement::new(vec![(x, JUDGED_HEAD), (x, bottom + 6)], line_style(ink, 1))).map_err(e)?;
        area.draw(&Text::new(label.clone(), (x, bottom + 10), below.clone())).map_err(e)?;
    }
    let centre = (span.0 + span.1) / 2;
    area.draw(&Text::new(
        title.to_string(),
        (centre, bottom + 38),
        font(AXIS_TITLE_PT).color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top)),
    ))
    .map_err(e)
}

/// One step of one run in the row from `y`: its bar, its limit ticks and
/// its note over them; the note alone where there is nothing to scale.
fn mark<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    px: &impl Fn(f64) -> i32,
    x: i32,
    y: i32,
    m: Option<&Mark>,
) -> Drawn {
    let Some(m) = m else {
        return area
            .draw(&Text::new("not in this run", (x + 4, y + JUDGED_ROW / 2), left_text(VALUE_PT, FAINT)))
            .map_err(e);
    };
    let Some(v) = m.value else {
        let ink = if m.status == Status::Skip { FAINT } else { status_colour(m.status) };
        return area.draw(&Text::new(m.note.clone(), (x + 4, y + JUDGED_ROW / 2), left_text(LABEL_PT, ink))).map_err(e);
    };
    area.draw(&Rectangle::new([(px(0.0), y + 24), (px(v), y + 38)], status_colour(m.status).filled())).map_err(e)?;
    for l in &m.limits {
        let t = px(*l);
        area.draw(&Rectangle::new([(t - 1, y + 18), (t + 2, y + 44)], TICK.filled())).map_err(e)?;
    }
    area.draw(&Text::new(m.note.clone(), (x + 4, y + 12), left_text(VALUE_PT, BLACK))).map_err(e)
}

fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    width: u32,
    head: Option<&str>,
    entries: &[Entry],
) -> Drawn {
    let (columns, _, column_w) = legend_grid(entries, width);
    let style = font(LEGEND_PT).color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    let first = usize::from(head.is_some());
    if let Some(h) = head {
        let y = (LEGEND_PAD + LEGEND_ROW / 2) as i32;
        area.draw(&Text::new(format!("{h}:"), (LEGEND_PAD as i32 + 12, y), style.clone())).map_err(e)?;
    }
    for (k, en) in entries.iter().enumerate() {
        let (row, col) = (k / columns + first, k % columns);
        let x = (LEGEND_PAD + col as u32 * column_w) as i32 + 12;
        let y = (LEGEND_PAD + row as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32;
        sample(area, en, x, y)?;
        area.draw(&Text::new(en.label.clone(), (x + SAMPLE_W + 10, y), style.clone())).map_err(e)?;
    }
    Ok(())
}

/// An entry's sample left of its words, from (x, y) on the row's middle.
fn sample<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, en: &Entry, x: i32, y: i32) -> Drawn {
    let fill = en.colour.filled();
    let c = (x + SAMPLE_W / 2, y);
    match en.sample {
        Sample::Box => return area.draw(&Rectangle::new([(x + 8, y - 8), (x + SAMPLE_W - 8, y + 8)], fill)).map_err(e),
        Sample::Tick => return area.draw(&Rectangle::new([(c.0 - 1, y - 10), (c.0 + 2, y + 10)], fill)).map_err(e),
        Sample::Line => {}
    }
    let s = line_style(en.colour, 2);
    let pts = vec![(x, y), (x + SAMPLE_W, y)];
    match en.dash {
        Dash::Solid => area.draw(&PathElement::new(pts, s)),
        Dash::Dashed => area.draw(&DashedPathElement::new(pts, 10, 6, s)),
        Dash::Dotted => area.draw(&DashedPathElement::new(pts, 3, 4, s)),
    }
    .map_err(e)?;
    match en.marker {
        Marker::Circle => area.draw(&Circle::new(c, 4, fill)),
        Marker::Triangle => area.draw(&TriangleMarker::new(c, 5, fill)),
        Marker::Square => area.draw(&Rectangle::new([(c.0 - 4, c.1 - 4), (c.0 + 4, c.1 + 4)], fill)),
        Marker::None => Ok(()),
    }
    .map_err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_axes_tick_at_powers_of_two_with_binary_labels() {
        let t = ticked(Scale::Bytes, &[24.0, 30.0]);
        let labels: Vec<&str> = t.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["16M", "32M", "64M", "128M", "256M", "512M", "1G"]);
        let t = ticked(Scale::Bytes, &[0.0, 24.0]);
        assert!(t.ticks.len() <= 14 && t.ticks.iter().any(|t| t.1 == "1K") && t.ticks.iter().any(|t| t.1 == "16M"));
    }

    #[test]
    fn linear_axes_start_at_zero_on_round_steps() {
        let t = ticked(Scale::Linear, &[207.9, 360.6]);
        assert_eq!(t.lo, 0.0);
        assert!(t.hi > 360.6);
        assert!(t.ticks.iter().all(|(v, l)| (v % 50.0).abs() < 1e-9 && l == &number(*v)), "{:?}", t.ticks);
    }

    #[test]
    fn log_axes_tick_at_powers_of_ten() {
        let t = ticked(Scale::Log10, &[6f64.log10(), 4262f64.log10()]);
        let labels: Vec<&str> = t.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1", "10", "100", "1000", "10000"]);
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(2.5e6), "2.5e6");
    }
}

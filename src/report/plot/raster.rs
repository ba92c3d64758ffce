//! The PNG backend: plotters' bitmap, with text laid out here. plotters'
//! own ab_glyph text drops each glyph's side bearing ("2026-11 -30"); this
//! places every glyph at its pen position with kerning, in the same box
//! plotters measures, so that labels read as they do in the SVG.

use ab_glyph::{Font, FontRef, ScaleFont, point};
use plotters::backend::BitMapBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};

/// Where the baseline sits below the top of plotters' text box, per pixel of size.
const BASELINE: f32 = 0.72;

pub struct Raster<'a> {
    inner: BitMapBackend<'a>,
    font: FontRef<'static>,
}

impl<'a> Raster<'a> {
    pub fn new(inner: BitMapBackend<'a>, font: &'static [u8]) -> Option<Raster<'a>> {
        Some(Raster { inner, font: FontRef::try_from_slice(font).ok()? })
    }
}

type Drawn<'a> = Result<(), DrawingErrorKind<<BitMapBackend<'a> as DrawingBackend>::ErrorType>>;

impl<'a> DrawingBackend for Raster<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Drawn<'a> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Drawn<'a> {
        self.inner.present()
    }
    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Drawn<'a> {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, style: &S) -> Drawn<'a> {
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(&mut self, a: BackendCoord, b: BackendCoord, style: &S, fill: bool) -> Drawn<'a> {
        self.inner.draw_rect(a, b, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, path: I, style: &S) -> Drawn<'a> {
        self.inner.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(&mut self, c: BackendCoord, r: u32, style: &S, fill: bool) -> Drawn<'a> {
        self.inner.draw_circle(c, r, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, vert: I, style: &S) -> Drawn<'a> {
        self.inner.fill_polygon(vert, style)
    }
    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Drawn<'a> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn draw_text<T: BackendTextStyle>(&mut self, text: &str, style: &T, pos: BackendCoord) -> Drawn<'a> {
        let colour = style.color();
        if colour.alpha == 0.0 {
            return Ok(());
        }
        let size = style.size() as f32;
        let scaled = self.font.as_scaled(size);
        let mut glyphs = Vec::new();
        let mut x = 0.0f32;
        let mut prev = None;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = prev {
                x += scaled.kern(p, id);
            }
            glyphs.push(id.with_scale_and_position(size, point(x, size * BASELINE)));
            x += scaled.h_advance(id);
            prev = Some(id);
        }
        // The box plotters measured the text by (its layout: advances, size / 1.24 high).
        let (width, height) = (x.round() as i32, (size / 1.24) as i32);
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match anchor.v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let turn = style.transform();
        let mut ink = Vec::new();
        for g in glyphs {
            if let Some(outline) = self.font.outline_glyph(g) {
                let b = outline.px_bounds();
                outline.draw(|gx, gy, cover| {
                    if cover > 0.0 {
                        let (lx, ly) = (b.min.x as i32 + gx as i32 + dx, b.min.y as i32 + gy as i32 + dy);
                        ink.push((turn.transform(lx, ly), cover));
                    }
                });
            }
        }
        for ((tx, ty), cover) in ink {
            let c = BackendColor { alpha: colour.alpha * f64::from(cover.min(1.0)), rgb: colour.rgb };
            self.inner.draw_pixel((pos.0 + tx, pos.1 + ty), c)?;
        }
        Ok(())
    }
}

//! Latency charts like Figure 8 of the FM paper: panels of p99 against load, one line per
//! policy with each point's confidence interval as a bar, latency on a log scale, as SVG
//! and PNG (plotters).

use std::path::{Path, PathBuf};

use anyhow::Context;
use plotters::coord::Shift;
use plotters::prelude::*;
use tailor_core::Estimate;

/// One point: (x, latency with its interval; a simulated point's interval is the point).
pub(crate) type Point = (f64, Estimate);

/// One policy's points.
pub(crate) struct Series {
    pub(crate) label: String,
    pub(crate) points: Vec<Point>,
}

/// One panel of the chart.
pub(crate) struct Panel {
    pub(crate) title: String,
    pub(crate) x_desc: String,
    pub(crate) y_desc: String,
    pub(crate) series: Vec<Series>,
}

/// Fonts tried for the text, in order: plotters draws text with a font it is given.
const FONTS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

fn register_font() -> anyhow::Result<()> {
    let path = FONTS
        .iter()
        .find(|p| Path::new(p).exists())
        .with_context(|| format!("no font found (tried {})", FONTS.join(", ")))?;
    let bytes: &'static [u8] = Box::leak(std::fs::read(path)?.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| anyhow::anyhow!("{path} is not a usable font"))
}

/// Writes `latency.svg` and `latency.png` into `dir`, the panels side by side; returns
/// their paths.
pub(crate) fn write_charts(dir: &Path, panels: &[Panel]) -> anyhow::Result<Vec<PathBuf>> {
    register_font()?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let svg = dir.join("latency.svg");
    let png = dir.join("latency.png");
    let size = (560 * panels.len().max(1) as u32, 500);
    draw(SVGBackend::new(&svg, size).into_drawing_area(), panels)?;
    draw(BitMapBackend::new(&png, size).into_drawing_area(), panels)?;
    Ok(vec![png, svg])
}

fn draw<B: DrawingBackend>(root: DrawingArea<B, Shift>, panels: &[Panel]) -> anyhow::Result<()>
where
    B::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<B::ErrorType>| anyhow::anyhow!("drawing: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    // One colour per label across the panels, in order of first appearance.
    let mut labels: Vec<&str> = Vec::new();
    for s in panels.iter().flat_map(|p| &p.series) {
        if !labels.contains(&s.label.as_str()) {
            labels.push(&s.label);
        }
    }
    for (area, panel) in areas.iter().zip(panels) {
        let xs = || {
            panel
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
        };
        let x_max = xs().fold(0.0, f64::max) * 1.05;
        let x_min = xs().fold(f64::INFINITY, f64::min) * 0.95;
        let estimates = || {
            panel
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
        };
        let top = estimates().map(|e| e.high).fold(0.0, f64::max).max(1e-3) * 1.3;
        let bottom = estimates()
            .map(|e| e.low)
            .filter(|&v| v > 0.0)
            .fold(f64::INFINITY, f64::min)
            .min(top / 2.0)
            / 1.3;
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(x_min..x_max, (bottom..top).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_desc.as_str())
            .y_desc(panel.y_desc.as_str())
            .draw()
            .map_err(err)?;
        for s in &panel.series {
            let index = labels.iter().position(|l| *l == s.label).unwrap_or(0);
            let color = Palette99::pick(index).to_rgba();
            let at = |v: f64| v.max(bottom);
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().map(|p| (p.0, at(p.1.value))),
                    color.stroke_width(2),
                ))
                .map_err(err)?
                .label(s.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            chart
                .draw_series(s.points.iter().filter(|p| p.1.high > p.1.low).map(|p| {
                    ErrorBar::new_vertical(
                        p.0,
                        at(p.1.low),
                        at(p.1.value),
                        at(p.1.high),
                        color.stroke_width(1),
                        6,
                    )
                }))
                .map_err(err)?;
            chart
                .draw_series(
                    s.points
                        .iter()
                        .map(|p| Circle::new((p.0, at(p.1.value)), 3, color.filled())),
                )
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

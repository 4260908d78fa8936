//! Latency charts like Figure 8 of the FM paper: p99 and mean against load, one line per
//! policy, as SVG and PNG (plotters).

use std::path::{Path, PathBuf};

use anyhow::Context;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One measured point: (rps, p99 ms, mean ms).
pub(crate) type Point = (f64, f64, f64);

/// Picks a latency out of a point.
type Metric = fn(&Point) -> f64;

/// One policy's points.
pub(crate) struct Series {
    pub(crate) label: String,
    pub(crate) points: Vec<Point>,
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

/// Writes `latency.svg` and `latency.png` into `dir`; returns their paths.
pub(crate) fn write_charts(dir: &Path, series: &[Series]) -> anyhow::Result<Vec<PathBuf>> {
    register_font()?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let svg = dir.join("latency.svg");
    let png = dir.join("latency.png");
    let size = (1200, 500);
    draw(SVGBackend::new(&svg, size).into_drawing_area(), series)?;
    draw(BitMapBackend::new(&png, size).into_drawing_area(), series)?;
    Ok(vec![png, svg])
}

fn draw<B: DrawingBackend>(root: DrawingArea<B, Shift>, series: &[Series]) -> anyhow::Result<()>
where
    B::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<B::ErrorType>| anyhow::anyhow!("drawing: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let panels = root.split_evenly((1, 2));
    let rps_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        * 1.05;
    let rps_min = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(f64::INFINITY, f64::min)
        * 0.95;
    let pick: [(&str, Metric); 2] = [
        ("p99 latency (ms)", |p| p.1),
        ("mean latency (ms)", |p| p.2),
    ];
    for (panel, (title, value)) in panels.iter().zip(pick) {
        let top = series
            .iter()
            .flat_map(|s| s.points.iter().map(value))
            .fold(0.0, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(rps_min..rps_max, 0.0..top.max(1e-3))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("offered load (queries/s)")
            .y_desc(title)
            .draw()
            .map_err(err)?;
        for (i, s) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().map(|p| (p.0, value(p))),
                    color.stroke_width(2),
                ))
                .map_err(err)?
                .label(s.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            chart
                .draw_series(
                    s.points
                        .iter()
                        .map(|p| Circle::new((p.0, value(p)), 3, color.filled())),
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

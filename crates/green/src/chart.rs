//! A run's power profile as an SVG chart: green used for Green SLAs, other green, brown, production and its prediction (as Figs. A.6 and B.8-B.12 draw them).

use std::path::Path;

use plotters::prelude::*;

use crate::profile::EpochPower;
use crate::EPOCH_H;

/// Okabe and Ito's colour-blind-safe palette: bluish green, yellow, vermillion, black and
/// blue.
const GREEN_SLA: RGBColor = RGBColor(0, 158, 115);
const GREEN_OTHER: RGBColor = RGBColor(240, 228, 66);
const BROWN: RGBColor = RGBColor(213, 94, 0);
const PRODUCED: RGBColor = RGBColor(0, 0, 0);
const PREDICTED: RGBColor = RGBColor(0, 114, 178);

/// A stacked layer: its label, its colour, and its top as a function of the epoch.
type Layer = (&'static str, RGBColor, fn(&EpochPower) -> f64);

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the chart {path}: {reason}")]
pub struct ChartError {
    /// The file.
    pub path: String,
    /// What went wrong.
    pub reason: String,
}

/// Fonts tried for the text, in order: plotters measures and draws text with a font it
/// is given (the same list as the demo's chart).
const FONTS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

fn register_font() -> Result<(), String> {
    let path = FONTS
        .iter()
        .find(|p| Path::new(p).exists())
        .ok_or_else(|| format!("no font found (tried {})", FONTS.join(", ")))?;
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| format!("{path} is not a usable font"))
}

/// Draws `epochs` to an SVG file at `path`, titled `title`: the power used stacked by
/// source (green for Green SLAs, other green, brown), with the solar production as a line
/// and its one-hour-ahead prediction dashed.
pub fn power_chart(path: &Path, title: &str, epochs: &[EpochPower]) -> Result<(), ChartError> {
    let fail = |reason: String| ChartError {
        path: path.display().to_string(),
        reason,
    };
    if epochs.is_empty() {
        return Err(fail("the run has no epochs".into()));
    }
    register_font().map_err(fail)?;
    let end_h = epochs.last().map_or(0.0, |e| e.time_h) + EPOCH_H;
    let top = epochs
        .iter()
        .map(|e| {
            (e.green_sla_kw + e.green_other_kw + e.brown_kw)
                .max(e.produced_kw)
                .max(e.predicted_kw)
        })
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.1;
    let root = SVGBackend::new(path, (960, 420)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| fail(e.to_string());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..end_h, 0.0..top)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("hours")
        .y_desc("kW")
        .light_line_style(WHITE)
        .draw()
        .map_err(|e| err(&e))?;
    // Stacked areas, drawn top layer first so that each lower one covers its part.
    let stack = |f: &dyn Fn(&EpochPower) -> f64| -> Vec<(f64, f64)> {
        epochs
            .iter()
            .flat_map(|e| [(e.time_h, f(e)), (e.time_h + EPOCH_H, f(e))])
            .collect()
    };
    let layers: [Layer; 3] = [
        ("brown used", BROWN, |e| {
            e.green_sla_kw + e.green_other_kw + e.brown_kw
        }),
        ("green used (other)", GREEN_OTHER, |e| {
            e.green_sla_kw + e.green_other_kw
        }),
        ("green used (Green SLAs)", GREEN_SLA, |e| e.green_sla_kw),
    ];
    for (label, colour, f) in &layers {
        let (label, colour) = (*label, *colour);
        chart
            .draw_series(AreaSeries::new(stack(f), 0.0, colour.mix(0.85)))
            .map_err(|e| err(&e))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled()));
    }
    chart
        .draw_series(LineSeries::new(
            stack(&|e: &EpochPower| e.produced_kw),
            PRODUCED.stroke_width(2),
        ))
        .map_err(|e| err(&e))?
        .label("produced")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], PRODUCED.stroke_width(2)));
    chart
        .draw_series(DashedLineSeries::new(
            stack(&|e: &EpochPower| e.predicted_kw),
            6,
            4,
            PREDICTED.stroke_width(2),
        ))
        .map_err(|e| err(&e))?
        .label("predicted (1 h ahead)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], PREDICTED.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_draws_to_svg_and_an_empty_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("tailor-green-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let epochs: Vec<EpochPower> = (0..8)
            .map(|k| EpochPower {
                time_h: k as f64 * EPOCH_H,
                produced_kw: k as f64,
                predicted_kw: k as f64 + 0.5,
                green_sla_kw: 1.0,
                green_other_kw: 0.5,
                brown_kw: 2.0,
                servers: 4,
            })
            .collect();
        let path = dir.join("day.svg");
        power_chart(&path, "test day", &epochs).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("brown used") && svg.contains("test day"));
        let e = power_chart(&dir.join("none.svg"), "x", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no epochs"), "{e}");
    }
}

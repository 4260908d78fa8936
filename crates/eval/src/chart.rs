//! Latency charts like Figure 8 of the FM paper, as SVG and PNG (plotters).
//!
//! Panels of p99 against load, one line per policy with its confidence intervals as a
//! shaded band, latency on a log scale. Colours are Okabe and Ito's colour-blind-safe
//! set, and each policy also has its own marker shape, so the lines part without colour.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::bootstrap::Estimate;
use crate::error::EvalError;

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

/// Okabe and Ito's colour-blind-safe colours (yellow left out: it fades on white), in the
/// order policies first appear.
const OKABE_ITO: [(u8, u8, u8); 7] = [
    (0, 114, 178),   // blue
    (230, 159, 0),   // orange
    (0, 158, 115),   // bluish green
    (213, 94, 0),    // vermillion
    (204, 121, 167), // reddish purple
    (86, 180, 233),  // sky blue
    (0, 0, 0),       // black
];

/// The marker shapes, in the same order as the colours.
#[derive(Clone, Copy)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

const MARKERS: [Marker; 4] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Cross,
];

/// Fonts tried for the text, in order: plotters draws text with a font it is given.
const FONTS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

fn register_font() -> Result<(), EvalError> {
    let path = FONTS
        .iter()
        .find(|p| Path::new(p).exists())
        .ok_or_else(|| EvalError::Chart(format!("no font found (tried {})", FONTS.join(", "))))?;
    let bytes: &'static [u8] = Box::leak(std::fs::read(path)?.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| EvalError::Chart(format!("{path} is not a usable font")))
}

/// Writes `latency.svg` and `latency.png` into `dir`, the panels side by side; returns
/// their paths.
pub(crate) fn write_charts(dir: &Path, panels: &[Panel]) -> Result<Vec<PathBuf>, EvalError> {
    register_font()?;
    std::fs::create_dir_all(dir).map_err(|e| EvalError::file("create", dir, e))?;
    let svg = dir.join("latency.svg");
    let png = dir.join("latency.png");
    let size = (560 * panels.len().max(1) as u32, 500);
    draw(SVGBackend::new(&svg, size).into_drawing_area(), panels)?;
    draw(BitMapBackend::new(&png, size).into_drawing_area(), panels)?;
    Ok(vec![png, svg])
}

/// Height in pixels of the band above the panels that holds the one legend they share.
const LEGEND_BAND: u32 = 34;

fn draw<B: DrawingBackend>(root: DrawingArea<B, Shift>, panels: &[Panel]) -> Result<(), EvalError>
where
    B::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<B::ErrorType>| EvalError::Chart(format!("drawing: {e:?}"));
    root.fill(&WHITE).map_err(err)?;
    // One colour per label across the panels, in order of first appearance.
    let mut labels: Vec<&str> = Vec::new();
    for s in panels.iter().flat_map(|p| &p.series) {
        if !labels.contains(&s.label.as_str()) {
            labels.push(&s.label);
        }
    }
    let index_of = |label: &str| labels.iter().position(|l| *l == label).unwrap_or(0);
    let color_of = |label: &str| {
        let (r, g, b) = OKABE_ITO[index_of(label) % OKABE_ITO.len()];
        RGBColor(r, g, b).to_rgba()
    };
    let marker_of = |label: &str| MARKERS[index_of(label) % MARKERS.len()];
    // The legend goes above the panels, where it covers no line.
    let (band, body) = root.split_vertically(LEGEND_BAND);
    let font: TextStyle = ("sans-serif", 16).into_font().into();
    let mut x = 20;
    for label in &labels {
        let color = color_of(label);
        let y = LEGEND_BAND as i32 / 2;
        band.draw(&PathElement::new(
            vec![(x, y), (x + 22, y)],
            color.stroke_width(3),
        ))
        .map_err(err)?;
        draw_marker(&band, marker_of(label), (x + 11, y), color).map_err(err)?;
        band.draw(&Text::new(label.to_string(), (x + 28, y - 8), font.clone()))
            .map_err(err)?;
        let (width, _) = band.estimate_text_size(label, &font).map_err(err)?;
        x += 28 + width as i32 + 24;
    }
    let areas = body.split_evenly((1, panels.len().max(1)));
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
        let top = estimates().map(|e| e.high).fold(0.0, f64::max).max(1e-3) * 1.15;
        let bottom = estimates()
            .map(|e| e.low)
            .filter(|&v| v > 0.0)
            .fold(f64::INFINITY, f64::min)
            .min(top / 2.0)
            / 1.15;
        let (bold, light) = log_ticks(bottom, top);
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(
                x_min..x_max,
                (bottom..top)
                    .log_scale()
                    .with_key_points(bold)
                    .with_light_points(light),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_desc.as_str())
            .y_desc(panel.y_desc.as_str())
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| tick_label(*v))
            .draw()
            .map_err(err)?;
        for s in &panel.series {
            let color = color_of(&s.label);
            let at = |v: f64| v.max(bottom);
            // The interval as a band: low along the points, back along high.
            let banded: Vec<&Point> = s.points.iter().filter(|p| p.1.high > p.1.low).collect();
            if banded.len() >= 2 {
                let outline: Vec<(f64, f64)> = banded
                    .iter()
                    .map(|p| (p.0, at(p.1.low)))
                    .chain(banded.iter().rev().map(|p| (p.0, at(p.1.high))))
                    .collect();
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        outline,
                        color.mix(0.15).filled(),
                    )))
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(banded.iter().map(|p| {
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
            }
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().map(|p| (p.0, at(p.1.value))),
                    color.stroke_width(2),
                ))
                .map_err(err)?;
            let points = || s.points.iter().map(|p| (p.0, at(p.1.value)));
            let filled = color.filled();
            let line = color.stroke_width(2);
            match marker_of(&s.label) {
                Marker::Circle => chart
                    .draw_series(points().map(|c| Circle::new(c, 4, filled)))
                    .map(drop),
                Marker::Triangle => chart
                    .draw_series(points().map(|c| {
                        EmptyElement::at(c) + Polygon::new(vec![(0, -5), (-5, 4), (5, 4)], filled)
                    }))
                    .map(drop),
                Marker::Square => {
                    chart
                        .draw_series(points().map(|c| {
                            EmptyElement::at(c) + Rectangle::new([(-4, -4), (4, 4)], filled)
                        }))
                        .map(drop)
                }
                Marker::Cross => chart
                    .draw_series(points().map(|c| {
                        EmptyElement::at(c)
                            + PathElement::new(vec![(-5, -5), (5, 5)], line)
                            + PathElement::new(vec![(-5, 5), (5, -5)], line)
                    }))
                    .map(drop),
            }
            .map_err(err)?;
        }
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Draws `marker` centred on pixel `at`.
fn draw_marker<B: DrawingBackend>(
    area: &DrawingArea<B, Shift>,
    marker: Marker,
    at: (i32, i32),
    color: RGBAColor,
) -> Result<(), DrawingAreaErrorKind<B::ErrorType>> {
    let (x, y) = at;
    match marker {
        Marker::Circle => area.draw(&Circle::new(at, 4, color.filled())),
        Marker::Triangle => area.draw(&Polygon::new(
            vec![(x, y - 5), (x - 5, y + 4), (x + 5, y + 4)],
            color.filled(),
        )),
        Marker::Square => area.draw(&Rectangle::new(
            [(x - 4, y - 4), (x + 4, y + 4)],
            color.filled(),
        )),
        Marker::Cross => {
            area.draw(&PathElement::new(
                vec![(x - 5, y - 5), (x + 5, y + 5)],
                color.stroke_width(2),
            ))?;
            area.draw(&PathElement::new(
                vec![(x - 5, y + 5), (x + 5, y - 5)],
                color.stroke_width(2),
            ))
        }
    }
}

/// Labelled and unlabelled ticks of a log axis from `bottom` to `top`: labels at 1, 2 and
/// 5 times the powers of ten, or at finer steps when those give fewer than three, and a
/// light line at every integer multiple of each power of ten in the range.
fn log_ticks(bottom: f64, top: f64) -> (Vec<f64>, Vec<f64>) {
    let in_range = |steps: &[f64]| -> Vec<f64> {
        let first = bottom.log10().floor() as i32;
        let last = top.log10().ceil() as i32;
        (first..=last)
            .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|v| *v >= bottom && *v <= top)
            .collect()
    };
    let light = in_range(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    let bold = [
        &[1.0, 2.0, 5.0][..],
        &[1.0, 1.5, 2.0, 3.0, 5.0, 7.0][..],
        &[1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0][..],
    ]
    .iter()
    .map(|steps| in_range(steps))
    .find(|points| points.len() >= 3)
    .unwrap_or_else(|| vec![bottom, (bottom * top).sqrt(), top]);
    (bold, light)
}

/// A tick's label: whole numbers from 10 up, otherwise at most two decimals, with no
/// trailing zeros ("200", "1.5", "0.25").
fn tick_label(v: f64) -> String {
    if v >= 10.0 {
        return format!("{v:.0}");
    }
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_label_one_two_five_and_never_leave_the_range() {
        let (bold, light) = log_ticks(8.0, 230.0);
        assert_eq!(bold, vec![10.0, 20.0, 50.0, 100.0, 200.0]);
        assert!(light.iter().all(|v| (8.0..=230.0).contains(v)));
        assert!(light.contains(&90.0) && light.contains(&8.0));
    }

    #[test]
    fn a_narrow_range_gets_finer_labels_and_always_three() {
        // 2.6 to 17 ms: 5 and 10 only at 1-2-5, so the finer steps are used.
        let (bold, _) = log_ticks(2.6, 17.0);
        assert_eq!(bold, vec![3.0, 5.0, 7.0, 10.0, 15.0]);
        for (b, t) in [(2.9, 3.4), (1.0, 1.01), (0.003, 0.004), (5.0, 5000.0)] {
            let (bold, _) = log_ticks(b, t);
            assert!(bold.len() >= 3, "{b}..{t}: {bold:?}");
            assert!(
                bold.iter().all(|v| *v >= b && *v <= t),
                "{b}..{t}: {bold:?}"
            );
        }
    }

    #[test]
    fn charts_use_one_colour_per_policy_from_the_safe_set_and_shade_intervals() {
        let series = |label: &str, scale: f64, live: bool| Series {
            label: label.into(),
            points: [30.0, 60.0, 90.0]
                .iter()
                .map(|&x| {
                    let v = scale * (1.0 + x / 50.0);
                    let (low, high) = if live { (0.8 * v, 1.3 * v) } else { (v, v) };
                    (
                        x,
                        Estimate {
                            value: v,
                            low,
                            high,
                        },
                    )
                })
                .collect(),
        };
        let panel = |title: &str, live: bool| Panel {
            title: title.into(),
            x_desc: "load (%)".into(),
            y_desc: "p99 (ms)".into(),
            series: ["SEQ", "FIX-2", "executor", "Adaptive", "FM"]
                .iter()
                .enumerate()
                .map(|(i, l)| series(l, 5.0 + i as f64, live))
                .collect(),
        };
        let dir = std::env::temp_dir().join(format!("tailor-chart-{}", std::process::id()));
        let written = write_charts(&dir, &[panel("live", true), panel("16 cores", false)]).unwrap();
        let svg = std::fs::read_to_string(
            written
                .iter()
                .find(|p| p.extension().unwrap() == "svg")
                .unwrap(),
        )
        .unwrap();
        // Each policy once in the legend, however many panels show it.
        assert_eq!(
            svg.matches("executor").count(),
            1,
            "one legend entry per policy"
        );
        for (r, g, b) in &OKABE_ITO[..5] {
            assert!(
                svg.contains(&format!("#{r:02X}{g:02X}{b:02X}")),
                "#{r:02X}{g:02X}{b:02X}"
            );
        }
        // The live panel's intervals are shaded bands (translucent fills); the projected
        // panel has none.
        assert_eq!(
            svg.matches("opacity=\"0.15\"").count(),
            5,
            "one band per live series"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_label(200.0), "200");
        assert_eq!(tick_label(10.0), "10");
        assert_eq!(tick_label(1.5), "1.5");
        assert_eq!(tick_label(3.0), "3");
        assert_eq!(tick_label(0.25), "0.25");
    }
}

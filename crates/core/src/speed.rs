//! A host's work speed over time: how much longer than nominal the work took, window by window.
//!
//! A live run on a virtual machine does not run its calibrated work at one speed: the
//! hypervisor, other tenants and the clock move it by a percent or two over seconds,
//! and now and then by 10-20% for a fraction of a second. At a latency target near the
//! p99, 1% of speed moves the miss ratio by about a quarter, and the miss ratio is convex
//! in the speed, so a run's mean speed alone understates its misses. A speed trace
//! records the work scale (wall time taken over the time asked) in windows from the
//! run's start, so that the simulator can replay the speed the live run had
//! (`tailor run --speed-trace`, `tailor simulate --speed-trace`; docs/reproduction.md).
//!
//! File format (CSV): `start_ms,work_scale`, start times increasing; each scale holds
//! from its start to the next row's (the first also before it, the last after it).

use std::fmt::Write as _;
use std::path::Path;

use crate::csvfile::{read_text, CsvFile};
use crate::error::{ReadError, ReadErrorKind};

/// The largest work scale a trace may hold: a window 100 times slower than nominal.
pub const MAX_WORK_SCALE: f64 = 100.0;

/// A piecewise-constant work scale over time, in ms from the run's start.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedTrace {
    starts: Vec<f64>,
    scales: Vec<f64>,
}

impl SpeedTrace {
    /// A trace of `(start_ms, work_scale)` points; None when it is empty, not increasing
    /// in time, or holds a scale that is not finite and in (0, [`MAX_WORK_SCALE`]].
    pub fn new(points: Vec<(f64, f64)>) -> Option<SpeedTrace> {
        let ok = !points.is_empty()
            && points.windows(2).all(|w| w[0].0 < w[1].0)
            && points
                .iter()
                .all(|&(t, s)| t.is_finite() && s.is_finite() && s > 0.0 && s <= MAX_WORK_SCALE);
        ok.then(|| SpeedTrace {
            starts: points.iter().map(|p| p.0).collect(),
            scales: points.iter().map(|p| p.1).collect(),
        })
    }

    /// The points, `(start_ms, work_scale)`.
    pub fn points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.starts.iter().copied().zip(self.scales.iter().copied())
    }

    /// The work scale at time `t_ms`.
    pub fn scale_at(&self, t_ms: f64) -> f64 {
        let i = self.starts.partition_point(|&s| s <= t_ms);
        self.scales[i.saturating_sub(1)]
    }

    /// The first time after `t_ms` at which the scale may change, if any.
    pub fn next_change_after(&self, t_ms: f64) -> Option<f64> {
        let i = self.starts.partition_point(|&s| s <= t_ms);
        self.starts.get(i).copied()
    }

    /// The mean scale over the trace's windows, each weighted by its length (the last
    /// window counts as long as the one before it).
    pub fn mean_scale(&self) -> f64 {
        let n = self.starts.len();
        if n == 1 {
            return self.scales[0];
        }
        let mut weighted = 0.0;
        let mut total = 0.0;
        for i in 0..n {
            let len = if i + 1 < n {
                self.starts[i + 1] - self.starts[i]
            } else {
                self.starts[n - 1] - self.starts[n - 2]
            };
            weighted += len * self.scales[i];
            total += len;
        }
        weighted / total
    }

    /// The trace as CSV text.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("start_ms,work_scale\n");
        for (t, s) in self.points() {
            let _ = writeln!(out, "{t:.3},{s:.6}");
        }
        out
    }

    /// Reads a trace file.
    pub fn read(path: &Path) -> Result<SpeedTrace, ReadError> {
        let text = read_text(path)?;
        SpeedTrace::parse(&text, &path.display().to_string())
    }

    /// Parses trace CSV text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<SpeedTrace, ReadError> {
        let csv = CsvFile::parse(text, file)?;
        let columns = csv.columns(|name| name == "start_ms" || name == "work_scale")?;
        let (t_col, s_col) = (
            csv.require(&columns, "start_ms")?,
            csv.require(&columns, "work_scale")?,
        );
        let mut points: Vec<(f64, f64)> = Vec::with_capacity(csv.rows.len());
        for (line, fields) in &csv.rows {
            let t = csv.number(*line, "start_ms", &fields[t_col])?;
            let s = csv.positive_time(*line, "work_scale", &fields[s_col])?;
            if s > MAX_WORK_SCALE {
                return Err(ReadError::new(
                    csv.at(*line, "work_scale"),
                    ReadErrorKind::Invalid(format!(
                        "a work scale must be at most {MAX_WORK_SCALE}, found {s}"
                    )),
                ));
            }
            if let Some(&(previous, _)) = points.last() {
                if t <= previous {
                    return Err(ReadError::new(
                        csv.at(*line, "start_ms"),
                        ReadErrorKind::Invalid(format!(
                            "start times must increase, found {t} after {previous}"
                        )),
                    ));
                }
            }
            points.push((t, s));
        }
        Ok(SpeedTrace::new(points).expect("the rows were checked one by one"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_holds_from_each_start_to_the_next() {
        let trace = SpeedTrace::new(vec![(0.0, 1.0), (100.0, 1.2), (200.0, 0.9)]).unwrap();
        assert_eq!(trace.scale_at(-5.0), 1.0);
        assert_eq!(trace.scale_at(99.9), 1.0);
        assert_eq!(trace.scale_at(100.0), 1.2);
        assert_eq!(trace.scale_at(1e9), 0.9);
        assert_eq!(trace.next_change_after(-5.0), Some(0.0));
        assert_eq!(trace.next_change_after(100.0), Some(200.0));
        assert_eq!(trace.next_change_after(200.0), None);
        assert!((trace.mean_scale() - (1.0 + 1.2 + 0.9) / 3.0).abs() < 1e-12);
    }

    #[test]
    fn a_trace_round_trips_through_its_csv() {
        let trace = SpeedTrace::new(vec![(-20.0, 1.01), (80.0, 1.5)]).unwrap();
        assert_eq!(SpeedTrace::parse(&trace.to_csv(), "t").unwrap(), trace);
    }

    #[test]
    fn bad_traces_are_refused_with_their_line() {
        let err = SpeedTrace::parse("start_ms,work_scale\n0,1\n0,1.1\n", "t.csv").unwrap_err();
        assert!(err.to_string().contains("t.csv"), "{err}");
        assert!(err.to_string().contains("must increase"), "{err}");
        let err = SpeedTrace::parse("start_ms,work_scale\n0,0\n", "t.csv").unwrap_err();
        assert!(err.to_string().contains("work_scale"), "{err}");
        let err = SpeedTrace::parse("start_ms,work_scale\n0,1000\n", "t.csv").unwrap_err();
        assert!(err.to_string().contains("at most"), "{err}");
        assert!(SpeedTrace::parse("start_ms,speed\n0,1\n", "t.csv").is_err());
        assert!(SpeedTrace::new(vec![]).is_none());
        assert!(SpeedTrace::new(vec![(0.0, f64::NAN)]).is_none());
    }
}

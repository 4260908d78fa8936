//! Planned tables and their JSON files: the FM interval table and the Adaptive degree table.

use std::io::{self, Write};
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::csvfile::read_text;
use crate::error::{Location, ReadError, ReadErrorKind};

/// The `kind` of an FM interval table file.
pub const INTERVAL_TABLE_KIND: &str = "fm-interval-table";
/// The `kind` of an Adaptive degree table file.
pub const ADAPTIVE_TABLE_KIND: &str = "adaptive-degree-table";

/// The FM interval table (Haque et al., ASPLOS 2015, §4.1): for each load, the schedule
/// S = (v0, v1, ..., v_{n-1}) a request follows. See `fm-table.json` in
/// shared/spec/formats.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalTable {
    /// Always [`INTERVAL_TABLE_KIND`].
    pub kind: String,
    /// n, the maximum degree, which is also the length of each schedule.
    pub max_degree: usize,
    /// target_p: the total software parallelism the table aims not to exceed.
    pub target_parallelism: f64,
    /// beta, the percentile the table minimizes, in (0, 1].
    pub percentile: f64,
    /// The grid step of every interval, in ms.
    pub step_ms: f64,
    /// y, the largest interval on the grid, in ms.
    pub max_interval_ms: f64,
    /// `rows[i]` is for load i + 1.
    pub rows: Vec<IntervalRow>,
}

/// One row of the FM interval table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalRow {
    /// The load (requests in the system) this row is for.
    pub load: usize,
    /// The schedule (v0, v1, ..., v_{n-1}) in ms.
    pub intervals_ms: Vec<f64>,
    /// The paper's (e1, d1): wait for another request to leave, then start at degree 1.
    pub admit_on_exit: bool,
    /// Predicted percentile latency under the planner's model.
    pub tail_ms: f64,
    /// Predicted mean latency under the planner's model.
    pub mean_ms: f64,
    /// Predicted total average parallelism ap_R(S, load).
    pub parallelism: f64,
}

impl IntervalRow {
    /// The degree a request of this row runs at after executing `executed_ms` since it
    /// started: 1 until v1, 2 until v1 + v2, ..., then n. Zero-length intervals are
    /// skipped, so (0, 0, ...) starts at degree n.
    pub fn degree_at(&self, executed_ms: f64) -> usize {
        let mut boundary = 0.0;
        let mut degree = 1;
        for v in &self.intervals_ms[1..] {
            boundary += v;
            if executed_ms >= boundary {
                degree += 1;
            } else {
                break;
            }
        }
        degree
    }

    /// The delay v0 before a request may start, unless it is admit-on-exit.
    pub fn admission_delay_ms(&self) -> f64 {
        self.intervals_ms[0]
    }
}

impl IntervalTable {
    /// A hand-written table: row q is `(v0..v_{n-1} in ms, admit_on_exit)` for load q,
    /// with placeholder planning metadata and predictions (for tests and examples).
    pub fn from_schedules(max_degree: usize, rows: Vec<(Vec<f64>, bool)>) -> IntervalTable {
        IntervalTable {
            kind: INTERVAL_TABLE_KIND.into(),
            max_degree,
            target_parallelism: 8.0,
            percentile: 0.99,
            step_ms: 5.0,
            max_interval_ms: 100.0,
            rows: rows
                .into_iter()
                .enumerate()
                .map(|(i, (intervals_ms, admit_on_exit))| IntervalRow {
                    load: i + 1,
                    intervals_ms,
                    admit_on_exit,
                    tail_ms: 0.0,
                    mean_ms: 0.0,
                    parallelism: 0.0,
                })
                .collect(),
        }
    }

    /// The row for `load`: loads above the last row use the last row, and load 0 the first.
    pub fn row(&self, load: usize) -> &IntervalRow {
        &self.rows[load.clamp(1, self.rows.len()) - 1]
    }

    /// Reads and checks a table file.
    pub fn read(path: &Path) -> Result<Self, ReadError> {
        Self::parse(&read_text(path)?, &path.display().to_string())
    }

    /// Parses and checks table JSON; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, ReadError> {
        let table: IntervalTable = parse_table(text, file, INTERVAL_TABLE_KIND, |t: &Self| {
            (&t.kind, t.rows.iter().map(|r| r.load).collect())
        })?;
        if table.max_degree == 0 {
            return Err(invalid(
                file,
                "max_degree".into(),
                "must be at least 1".into(),
            ));
        }
        positive(file, "target_parallelism", table.target_parallelism)?;
        positive(file, "step_ms", table.step_ms)?;
        if !(table.max_interval_ms.is_finite() && table.max_interval_ms >= 0.0) {
            return Err(invalid(
                file,
                "max_interval_ms".into(),
                format!(
                    "must be finite and non-negative, found {}",
                    table.max_interval_ms
                ),
            ));
        }
        if !(table.percentile > 0.0 && table.percentile <= 1.0) {
            return Err(invalid(
                file,
                "percentile".into(),
                format!("must lie in (0, 1], found {}", table.percentile),
            ));
        }
        for (i, row) in table.rows.iter().enumerate() {
            for (name, value) in [
                ("tail_ms", row.tail_ms),
                ("mean_ms", row.mean_ms),
                ("parallelism", row.parallelism),
            ] {
                if !(value.is_finite() && value >= 0.0) {
                    return Err(invalid(
                        file,
                        format!("rows[{i}].{name}"),
                        format!("must be finite and non-negative, found {value}"),
                    ));
                }
            }
            let field = || format!("rows[{i}].intervals_ms");
            if row.intervals_ms.len() != table.max_degree {
                return Err(invalid(
                    file,
                    field(),
                    format!(
                        "expected {} intervals (max_degree), found {}",
                        table.max_degree,
                        row.intervals_ms.len()
                    ),
                ));
            }
            if let Some(v) = row
                .intervals_ms
                .iter()
                .find(|v| !(v.is_finite() && **v >= 0.0))
            {
                return Err(invalid(
                    file,
                    field(),
                    format!("intervals must be finite and non-negative, found {v}"),
                ));
            }
        }
        Ok(table)
    }

    /// Writes the table as pretty JSON with a final newline.
    pub fn write(&self, out: impl Write) -> io::Result<()> {
        write_json(self, out)
    }
}

/// The Adaptive baseline's table (Jeon et al., EuroSys 2013): the degree a request gets
/// at admission, by load. It never changes afterwards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveTable {
    /// Always [`ADAPTIVE_TABLE_KIND`].
    pub kind: String,
    /// The highest degree the table may choose.
    pub max_degree: usize,
    /// The parallelism the planner shares among the requests in the system.
    pub target_parallelism: f64,
    /// `rows[i]` is for load i + 1.
    pub rows: Vec<AdaptiveRow>,
}

/// One row of the Adaptive table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveRow {
    /// The load (requests in the system, the new one included) at admission.
    pub load: usize,
    /// The degree chosen for a request admitted at this load.
    pub degree: usize,
    /// The planner's predicted mean execution time at that degree and load.
    pub predicted_ms: f64,
}

impl AdaptiveTable {
    /// The degree for a request admitted at `load` (loads above the last row use it).
    pub fn degree(&self, load: usize) -> usize {
        self.rows[load.clamp(1, self.rows.len()) - 1].degree
    }

    /// Reads and checks a table file.
    pub fn read(path: &Path) -> Result<Self, ReadError> {
        Self::parse(&read_text(path)?, &path.display().to_string())
    }

    /// Parses and checks table JSON; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, ReadError> {
        let table: AdaptiveTable = parse_table(text, file, ADAPTIVE_TABLE_KIND, |t: &Self| {
            (&t.kind, t.rows.iter().map(|r| r.load).collect())
        })?;
        if table.max_degree == 0 {
            return Err(invalid(
                file,
                "max_degree".into(),
                "must be at least 1".into(),
            ));
        }
        positive(file, "target_parallelism", table.target_parallelism)?;
        for (i, row) in table.rows.iter().enumerate() {
            if row.degree == 0 || row.degree > table.max_degree {
                return Err(invalid(
                    file,
                    format!("rows[{i}].degree"),
                    format!("must lie in 1..={}, found {}", table.max_degree, row.degree),
                ));
            }
        }
        Ok(table)
    }

    /// Writes the table as pretty JSON with a final newline.
    pub fn write(&self, out: impl Write) -> io::Result<()> {
        write_json(self, out)
    }
}

/// The `kind` of a tail-control threshold table file.
pub const TAIL_CONTROL_TABLE_KIND: &str = "tail-control-thresholds";

/// Tail-control's large-request thresholds by the number of active requests (Li et al.,
/// PPoPP 2016, §4.1 and Fig. 3; shared/spec/formats.md `tc-table.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailControlTable {
    /// Always [`TAIL_CONTROL_TABLE_KIND`].
    pub kind: String,
    /// The latency target the thresholds were planned for, in ms.
    pub target_ms: f64,
    /// The arrival rate planned for, requests per second.
    pub rps: f64,
    /// The cores planned for.
    pub cores: usize,
    /// `rows[i]` is for i + 1 active requests.
    pub rows: Vec<TailControlRow>,
}

/// One row of the tail-control table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailControlRow {
    /// Active requests (waiting and running).
    pub active: usize,
    /// A request whose processed work passes this is serialized, in ms.
    pub threshold_ms: f64,
    /// The planner's expected target misses at this threshold.
    pub expected_misses: f64,
}

impl TailControlTable {
    /// The threshold with `active` requests (counts above the last row use it).
    pub fn threshold_ms(&self, active: usize) -> f64 {
        self.rows[active.clamp(1, self.rows.len()) - 1].threshold_ms
    }

    /// Reads and checks a table file.
    pub fn read(path: &Path) -> Result<Self, ReadError> {
        Self::parse(&read_text(path)?, &path.display().to_string())
    }

    /// Parses and checks table JSON; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, ReadError> {
        let table: TailControlTable =
            parse_table(text, file, TAIL_CONTROL_TABLE_KIND, |t: &Self| {
                (&t.kind, t.rows.iter().map(|r| r.active).collect())
            })?;
        positive(file, "target_ms", table.target_ms)?;
        positive(file, "rps", table.rps)?;
        if table.cores == 0 {
            return Err(invalid(file, "cores".into(), "must be at least 1".into()));
        }
        for (i, row) in table.rows.iter().enumerate() {
            positive(file, &format!("rows[{i}].threshold_ms"), row.threshold_ms)?;
            if !(row.expected_misses.is_finite() && row.expected_misses >= 0.0) {
                return Err(invalid(
                    file,
                    format!("rows[{i}].expected_misses"),
                    format!(
                        "must be finite and not negative, found {}",
                        row.expected_misses
                    ),
                ));
            }
        }
        Ok(table)
    }

    /// Writes the table as pretty JSON with a final newline.
    pub fn write(&self, out: impl Write) -> io::Result<()> {
        write_json(self, out)
    }
}

/// Checks that a header number is positive and finite.
fn positive(file: &str, field: &str, value: f64) -> Result<(), ReadError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(invalid(
            file,
            field.into(),
            format!("must be positive and finite, found {value}"),
        ))
    }
}

/// An `Invalid` error at a JSON field.
fn invalid(file: &str, field: String, why: String) -> ReadError {
    ReadError::new(
        Location::file(file).with_field(field),
        ReadErrorKind::Invalid(why),
    )
}

/// Parses table JSON and checks what every table shares: its `kind`, at least one row,
/// and rows for loads 1, 2, ... in order. `header` returns the kind and the row loads.
fn parse_table<T: DeserializeOwned>(
    text: &str,
    file: &str,
    expected_kind: &str,
    header: impl Fn(&T) -> (&String, Vec<usize>),
) -> Result<T, ReadError> {
    let table: T = parse_json(text, file)?;
    let (kind, loads) = header(&table);
    if kind != expected_kind {
        return Err(invalid(
            file,
            "kind".into(),
            format!("expected {expected_kind:?}, found {kind:?}"),
        ));
    }
    if loads.is_empty() {
        return Err(invalid(file, "rows".into(), "the table has no rows".into()));
    }
    if let Some((i, load)) = loads.iter().enumerate().find(|(i, l)| **l != i + 1) {
        return Err(invalid(
            file,
            format!("rows[{i}].load"),
            format!("expected load {}, found {load}", i + 1),
        ));
    }
    Ok(table)
}

pub(crate) fn parse_json<T: DeserializeOwned>(text: &str, file: &str) -> Result<T, ReadError> {
    if text.trim().is_empty() {
        return Err(ReadError::new(Location::file(file), ReadErrorKind::Empty));
    }
    serde_json::from_str(text).map_err(|e| {
        ReadError::new(
            Location::line(file, e.line() as u64),
            ReadErrorKind::Malformed(e.to_string()),
        )
    })
}

fn write_json<T: Serialize>(value: &T, mut out: impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> IntervalTable {
        IntervalTable {
            kind: INTERVAL_TABLE_KIND.into(),
            max_degree: 3,
            target_parallelism: 6.0,
            percentile: 0.99,
            step_ms: 50.0,
            max_interval_ms: 150.0,
            rows: vec![
                IntervalRow {
                    load: 1,
                    intervals_ms: vec![0.0, 0.0, 0.0],
                    admit_on_exit: false,
                    tail_ms: 75.0,
                    mean_ms: 50.0,
                    parallelism: 3.0,
                },
                IntervalRow {
                    load: 2,
                    intervals_ms: vec![0.0, 50.0, 0.0],
                    admit_on_exit: false,
                    tail_ms: 100.0,
                    mean_ms: 75.0,
                    parallelism: 3.33,
                },
            ],
        }
    }

    #[test]
    fn round_trips_and_looks_up_rows() {
        let t = table();
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        let back = IntervalTable::parse(std::str::from_utf8(&out).unwrap(), "t.json").unwrap();
        assert_eq!(back, t);
        assert_eq!(t.row(0).load, 1);
        assert_eq!(t.row(2).load, 2);
        assert_eq!(t.row(99).load, 2);
    }

    #[test]
    fn degree_follows_the_schedule() {
        let t = table();
        assert_eq!(t.row(1).degree_at(0.0), 3);
        let r = t.row(2);
        assert_eq!(r.degree_at(0.0), 1);
        assert_eq!(r.degree_at(49.9), 1);
        // v2 = 0: degree 2 is skipped, straight to 3 at 50 ms.
        assert_eq!(r.degree_at(50.0), 3);
        let r = IntervalRow {
            intervals_ms: vec![5.0, 10.0, 20.0, 5.0],
            ..r.clone()
        };
        assert_eq!(r.degree_at(9.0), 1);
        assert_eq!(r.degree_at(10.0), 2);
        assert_eq!(r.degree_at(30.0), 3);
        assert_eq!(r.degree_at(35.0), 4);
        assert_eq!(r.admission_delay_ms(), 5.0);
    }

    #[test]
    fn rejects_inconsistent_tables_naming_the_field() {
        let mut t = table();
        t.rows[1].load = 3;
        let text = serde_json::to_string(&t).unwrap();
        let e = IntervalTable::parse(&text, "t.json").unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("rows[1].load"));

        let mut t = table();
        t.rows[0].intervals_ms.pop();
        let e = IntervalTable::parse(&serde_json::to_string(&t).unwrap(), "t.json").unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("rows[0].intervals_ms"));

        let mut t = table();
        t.kind = "other".into();
        assert!(IntervalTable::parse(&serde_json::to_string(&t).unwrap(), "t.json").is_err());

        for (field, mutate) in [
            (
                "step_ms",
                (|t: &mut IntervalTable| t.step_ms = -1.0) as fn(&mut IntervalTable),
            ),
            ("percentile", |t| t.percentile = 7.0),
            ("target_parallelism", |t| t.target_parallelism = -2.0),
            ("max_interval_ms", |t| t.max_interval_ms = -1.0),
            ("rows[1].tail_ms", |t| t.rows[1].tail_ms = -1.0),
        ] {
            let mut t = table();
            mutate(&mut t);
            let e =
                IntervalTable::parse(&serde_json::to_string(&t).unwrap(), "t.json").unwrap_err();
            assert_eq!(e.location.field.as_deref(), Some(field));
        }

        let e = IntervalTable::parse("{\"kind\": 3", "t.json").unwrap_err();
        assert!(matches!(e.kind, ReadErrorKind::Malformed(_)));
        assert_eq!(
            IntervalTable::parse("", "t.json").unwrap_err().kind,
            ReadErrorKind::Empty
        );
    }

    #[test]
    fn adaptive_tables_check_their_degrees() {
        let t = AdaptiveTable {
            kind: ADAPTIVE_TABLE_KIND.into(),
            max_degree: 4,
            target_parallelism: 8.0,
            rows: vec![
                AdaptiveRow {
                    load: 1,
                    degree: 4,
                    predicted_ms: 10.0,
                },
                AdaptiveRow {
                    load: 2,
                    degree: 5,
                    predicted_ms: 10.0,
                },
            ],
        };
        let e = AdaptiveTable::parse(&serde_json::to_string(&t).unwrap(), "a.json").unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("rows[1].degree"));
    }
}

//! The green schedulers' inputs: the job trace, the solar production and its predictions, as CSV files read with errors that name the file, line and field.
//!
//! - `jobs.csv`: `job,arrival_h,servers,runtime_h,green_sla,app`, one job per line in
//!   arrival order. `servers` is the job's VMs (appendix A: one VM per server) or its
//!   requested servers N_j (appendix B); `runtime_h` its contracted service time, or its
//!   runtime on N_j servers; `green_sla` the percentage of its energy that must be green
//!   (appendix A, 0-100); `app` the application whose speedup profile it follows
//!   (appendix B: an NPB application such as `ft`, or empty).
//! - `solar.csv`: `time_h,kw`, the solar plant's mean power over each epoch of
//!   [`EPOCH_H`] hours, from 0, one line per epoch.
//! - `prediction.csv`: `issued_h,time_h,kw`, the production predicted at `issued_h` for
//!   the epoch that starts at `time_h` (appendix A, §A.4.5: issued each hour for the next
//!   48 hours).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use tailor_core::{Location, ReadError, ReadErrorKind};

/// The scheduling epoch, hours: 15 minutes (§A.5.1, §B.4).
pub const EPOCH_H: f64 = 0.25;
/// The most lines an input may have.
const MAX_ROWS: usize = 1_000_000;
/// Times within this of a grid point are on it, hours.
const TIME_SLACK_H: f64 = 1e-6;

/// One job of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Its id, unique in the trace.
    pub id: String,
    /// When it arrives, hours from the trace's start.
    pub arrival_h: f64,
    /// VMs (appendix A) or requested servers N_j (appendix B), at least 1.
    pub servers: u32,
    /// Its contracted service time (A) or its runtime on `servers` servers (B), hours.
    pub runtime_h: f64,
    /// The percentage of its energy that must be green (A), 0-100.
    pub green_sla: f64,
    /// The application whose speedup profile it follows (B), lower case; may be empty.
    pub app: String,
    /// Its line in the file, for later errors.
    pub line: u64,
}

/// Solar production over time: mean power per epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct Solar {
    /// Mean kW over each epoch, from time 0.
    pub kw: Vec<f64>,
}

/// Predictions of solar production, by when they were issued.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// Issue time (in epochs) → (epoch, predicted kW), by epoch.
    issues: BTreeMap<usize, Vec<(usize, f64)>>,
}

/// A CSV file's rows with their lines, and the column of each name.
struct Table {
    file: String,
    columns: HashMap<String, usize>,
    rows: Vec<(u64, Vec<String>)>,
}

impl Table {
    fn read(path: &Path, expected: &[&str]) -> Result<Table, ReadError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ReadError::new(Location::file(&file), ReadErrorKind::Io(e.to_string())))?;
        Table::parse(&text, &file, expected)
    }

    fn parse(text: &str, file: &str, expected: &[&str]) -> Result<Table, ReadError> {
        let err = |loc: Location, kind| ReadError::new(loc, kind);
        if text.trim().is_empty() {
            return Err(err(Location::file(file), ReadErrorKind::Empty));
        }
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let malformed = |e: csv::Error| {
            let line = e.position().map_or(1, |p| p.line());
            err(
                Location::line(file, line),
                ReadErrorKind::Malformed(e.to_string()),
            )
        };
        let header: Vec<String> = reader
            .headers()
            .map_err(malformed)?
            .iter()
            .map(str::to_string)
            .collect();
        let mut columns = HashMap::new();
        for (i, name) in header.iter().enumerate() {
            if !expected.contains(&name.as_str()) {
                return Err(err(
                    Location::line(file, 1),
                    ReadErrorKind::UnknownColumn(name.clone()),
                ));
            }
            if columns.insert(name.clone(), i).is_some() {
                return Err(err(
                    Location::line(file, 1),
                    ReadErrorKind::DuplicateColumn(name.clone()),
                ));
            }
        }
        if let Some(missing) = expected.iter().find(|c| !columns.contains_key(**c)) {
            return Err(err(
                Location::line(file, 1),
                ReadErrorKind::MissingColumn(missing.to_string()),
            ));
        }
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(malformed)?;
            let line = record.position().map_or(0, |p| p.line());
            if record.len() != header.len() {
                return Err(err(
                    Location::line(file, line),
                    ReadErrorKind::FieldCount {
                        expected: header.len(),
                        found: record.len(),
                    },
                ));
            }
            if rows.len() == MAX_ROWS {
                return Err(err(
                    Location::line(file, line),
                    ReadErrorKind::Invalid(format!("more than {MAX_ROWS} rows, the most read")),
                ));
            }
            rows.push((line, record.iter().map(str::to_string).collect()));
        }
        if rows.is_empty() {
            return Err(err(Location::line(file, 1), ReadErrorKind::NoRows));
        }
        Ok(Table {
            file: file.to_string(),
            columns,
            rows,
        })
    }

    fn at(&self, line: u64, column: &str) -> Location {
        Location::line(&self.file, line).with_field(column)
    }

    fn text<'a>(&self, row: &'a [String], column: &str) -> &'a str {
        &row[self.columns[column]]
    }

    /// A finite number of `column` at least `min`.
    fn number(
        &self,
        (line, row): &(u64, Vec<String>),
        column: &str,
        min: f64,
    ) -> Result<f64, ReadError> {
        let raw = self.text(row, column);
        let v: f64 = raw.parse().map_err(|_| {
            ReadError::new(
                self.at(*line, column),
                ReadErrorKind::NotANumber(raw.into()),
            )
        })?;
        if !v.is_finite() {
            return Err(ReadError::new(
                self.at(*line, column),
                ReadErrorKind::NotFinite(raw.into()),
            ));
        }
        if v < min {
            return Err(ReadError::new(
                self.at(*line, column),
                ReadErrorKind::Invalid(format!("must be at least {min}, found {v}")),
            ));
        }
        Ok(v)
    }

    /// A time in hours on the epoch grid, as an epoch index.
    fn epoch(&self, row: &(u64, Vec<String>), column: &str) -> Result<usize, ReadError> {
        let h = self.number(row, column, 0.0)?;
        let k = (h / EPOCH_H).round();
        if (k * EPOCH_H - h).abs() > TIME_SLACK_H || k > 1e7 {
            return Err(ReadError::new(
                self.at(row.0, column),
                ReadErrorKind::Invalid(format!("{h} h is not a multiple of the {EPOCH_H} h epoch")),
            ));
        }
        Ok(k as usize)
    }
}

impl Job {
    /// Reads `jobs.csv`.
    pub fn read_all(path: &Path) -> Result<Vec<Job>, ReadError> {
        Job::from_table(Table::read(path, &Self::COLUMNS)?)
    }

    /// Parses `jobs.csv` text; `file` names it in errors.
    pub fn parse_all(text: &str, file: &str) -> Result<Vec<Job>, ReadError> {
        Job::from_table(Table::parse(text, file, &Self::COLUMNS)?)
    }

    const COLUMNS: [&'static str; 6] = [
        "job",
        "arrival_h",
        "servers",
        "runtime_h",
        "green_sla",
        "app",
    ];

    fn from_table(t: Table) -> Result<Vec<Job>, ReadError> {
        let mut jobs: Vec<Job> = Vec::with_capacity(t.rows.len());
        let mut seen: HashMap<String, u64> = HashMap::new();
        for row in &t.rows {
            let line = row.0;
            let id = t.text(&row.1, "job").to_string();
            if id.is_empty() {
                return Err(ReadError::new(t.at(line, "job"), ReadErrorKind::EmptyId));
            }
            if let Some(&first_line) = seen.get(&id) {
                return Err(ReadError::new(
                    t.at(line, "job"),
                    ReadErrorKind::DuplicateId { id, first_line },
                ));
            }
            seen.insert(id.clone(), line);
            let arrival_h = t.number(row, "arrival_h", 0.0)?;
            if let Some(prev) = jobs.last().filter(|j| j.arrival_h > arrival_h) {
                return Err(ReadError::new(
                    t.at(line, "arrival_h"),
                    ReadErrorKind::Decreasing {
                        previous: prev.arrival_h,
                    },
                ));
            }
            let servers = t.number(row, "servers", 1.0)?;
            if servers.fract() != 0.0 || servers > 1e6 {
                return Err(ReadError::new(
                    t.at(line, "servers"),
                    ReadErrorKind::Invalid(format!(
                        "must be a whole number up to 10^6, found {servers}"
                    )),
                ));
            }
            let runtime_h = t.number(row, "runtime_h", 0.0)?;
            if runtime_h <= 0.0 {
                return Err(ReadError::new(
                    t.at(line, "runtime_h"),
                    ReadErrorKind::NotPositive(runtime_h),
                ));
            }
            let green_sla = t.number(row, "green_sla", 0.0)?;
            if green_sla > 100.0 {
                return Err(ReadError::new(
                    t.at(line, "green_sla"),
                    ReadErrorKind::Invalid(format!("a percentage up to 100, found {green_sla}")),
                ));
            }
            jobs.push(Job {
                id,
                arrival_h,
                servers: servers as u32,
                runtime_h,
                green_sla,
                app: t.text(&row.1, "app").to_ascii_lowercase(),
                line,
            });
        }
        Ok(jobs)
    }
}

impl Solar {
    /// Reads `solar.csv`.
    pub fn read(path: &Path) -> Result<Solar, ReadError> {
        Solar::from_table(Table::read(path, &["time_h", "kw"])?)
    }

    /// Parses `solar.csv` text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Solar, ReadError> {
        Solar::from_table(Table::parse(text, file, &["time_h", "kw"])?)
    }

    fn from_table(t: Table) -> Result<Solar, ReadError> {
        let mut kw = Vec::with_capacity(t.rows.len());
        for row in &t.rows {
            let k = t.epoch(row, "time_h")?;
            if k != kw.len() {
                return Err(ReadError::new(
                    t.at(row.0, "time_h"),
                    ReadErrorKind::Invalid(format!(
                        "expected {} h: one line per {EPOCH_H} h epoch from 0, in order",
                        kw.len() as f64 * EPOCH_H
                    )),
                ));
            }
            kw.push(t.number(row, "kw", 0.0)?);
        }
        Ok(Solar { kw })
    }

    /// Mean kW over epoch `k` (0 past the end of the trace).
    pub fn kw_at(&self, k: usize) -> f64 {
        self.kw.get(k).copied().unwrap_or(0.0)
    }

    /// Energy over the trace, kWh.
    pub fn total_kwh(&self) -> f64 {
        self.kw.iter().sum::<f64>() * EPOCH_H
    }
}

impl Prediction {
    /// Reads `prediction.csv`.
    pub fn read(path: &Path) -> Result<Prediction, ReadError> {
        Prediction::from_table(Table::read(path, &["issued_h", "time_h", "kw"])?)
    }

    /// Parses `prediction.csv` text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Prediction, ReadError> {
        Prediction::from_table(Table::parse(text, file, &["issued_h", "time_h", "kw"])?)
    }

    /// Predictions built in memory: for each issue epoch, (epoch, kW) pairs.
    pub fn from_issues(issues: BTreeMap<usize, Vec<(usize, f64)>>) -> Prediction {
        let mut issues = issues;
        for v in issues.values_mut() {
            v.sort_by_key(|p| p.0);
        }
        Prediction { issues }
    }

    fn from_table(t: Table) -> Result<Prediction, ReadError> {
        let mut issues: BTreeMap<usize, Vec<(usize, f64)>> = BTreeMap::new();
        for row in &t.rows {
            let issued = t.epoch(row, "issued_h")?;
            let time = t.epoch(row, "time_h")?;
            if time < issued {
                return Err(ReadError::new(
                    t.at(row.0, "time_h"),
                    ReadErrorKind::Invalid(
                        "a prediction is for a time at or after its issue".into(),
                    ),
                ));
            }
            let kw = t.number(row, "kw", 0.0)?;
            let list = issues.entry(issued).or_default();
            if list.last().is_some_and(|&(k, _)| k >= time) {
                return Err(ReadError::new(
                    t.at(row.0, "time_h"),
                    ReadErrorKind::Invalid("times of one issue must increase".into()),
                ));
            }
            list.push((time, kw));
        }
        Ok(Prediction { issues })
    }

    /// The kW predicted for epoch `k` by the latest issue at or before epoch `now`; with
    /// no issue yet, or an epoch the issue does not cover, `None`.
    pub fn kw(&self, now: usize, k: usize) -> Option<f64> {
        let (_, list) = self.issues.range(..=now).next_back()?;
        list.binary_search_by_key(&k, |p| p.0)
            .ok()
            .map(|i| list[i].1)
    }

    /// The issues, by issue epoch: (epoch, kW) each.
    pub fn issues(&self) -> &BTreeMap<usize, Vec<(usize, f64)>> {
        &self.issues
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_read_and_bad_rows_name_the_line_and_field() {
        let jobs = Job::parse_all(
            "job,arrival_h,servers,runtime_h,green_sla,app\n1,0,4,2.5,25,FT\n2,0.5,1,1,0,\n",
            "jobs.csv",
        )
        .unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0].servers, jobs[0].app.as_str()), (4, "ft"));
        assert_eq!(jobs[1].line, 3);
        for (text, want) in [
            ("1,0,4,2.5,125,ft", "jobs.csv:2: field `green_sla`"),
            ("1,0,0,2.5,25,ft", "jobs.csv:2: field `servers`"),
            ("1,0,2.5,2.5,25,ft", "jobs.csv:2: field `servers`"),
            (
                "1,x,4,2.5,25,ft",
                "jobs.csv:2: field `arrival_h`: not a number",
            ),
            ("1,0,4,0,25,ft", "jobs.csv:2: field `runtime_h`"),
            ("1,0,4,2.5,25", "jobs.csv:2: expected 6 fields"),
        ] {
            let e = Job::parse_all(
                &format!("job,arrival_h,servers,runtime_h,green_sla,app\n{text}\n"),
                "jobs.csv",
            )
            .unwrap_err()
            .to_string();
            assert!(e.starts_with(want), "{text}: {e}");
        }
        let e = Job::parse_all(
            "job,arrival_h,servers,runtime_h,green_sla,app\n1,2,4,2.5,25,ft\n1,3,4,2.5,25,ft\n",
            "j",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("duplicate id"), "{e}");
        let e = Job::parse_all("job,arrival_h,servers\n1,2,4\n", "j")
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing column `runtime_h`"), "{e}");
    }

    #[test]
    fn solar_is_one_line_per_epoch_and_predictions_come_from_the_latest_issue() {
        let s = Solar::parse("time_h,kw\n0,0\n0.25,10\n0.5,20\n", "solar.csv").unwrap();
        assert_eq!(s.kw, vec![0.0, 10.0, 20.0]);
        assert!((s.total_kwh() - 7.5).abs() < 1e-12);
        let e = Solar::parse("time_h,kw\n0,0\n0.5,10\n", "solar.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("solar.csv:3: field `time_h`"), "{e}");
        let e = Solar::parse("time_h,kw\n0,-1\n", "solar.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("solar.csv:2: field `kw`"), "{e}");
        let p = Prediction::parse(
            "issued_h,time_h,kw\n0,0,5\n0,1,7\n1,1,9\n1,1.25,3\n",
            "prediction.csv",
        )
        .unwrap();
        assert_eq!(p.kw(0, 4), Some(7.0));
        assert_eq!(p.kw(3, 4), Some(7.0));
        assert_eq!(p.kw(4, 4), Some(9.0));
        assert_eq!(p.kw(4, 5), Some(3.0));
        assert_eq!(p.kw(4, 0), None);
        let e = Prediction::parse("issued_h,time_h,kw\n1,0.5,5\n", "p.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.csv:2: field `time_h`"), "{e}");
    }
}

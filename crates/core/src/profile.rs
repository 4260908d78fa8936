//! Demand profiles: each request's execution time, measured alone, at degree 1..N.
//!
//! The file format is `profile.csv` of shared/spec/formats.md: a `request` column and
//! `t1_ms` .. `tN_ms`, with N read from the header.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::csvfile::{fmt_number, read_text, CsvFile};
use crate::error::{Location, ReadError, ReadErrorKind};
use crate::summary::HostStats;

/// The conditions a profile was measured under: the machine's cores, and what the
/// hypervisor, other programs and stalls took meanwhile. Kept beside a profile as JSON,
/// so that a profile measured on a busy machine is not planned from unawares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProfileConditions {
    /// The machine's cores.
    pub cores: usize,
    /// How long the measurement took, ms.
    pub wall_ms: f64,
    /// Steal, other processes' CPU and stalls over the measurement.
    pub host: HostStats,
}

impl ProfileConditions {
    /// Why a profile measured under these conditions should not be used on a machine of
    /// `cores` cores, or `None` when it may.
    pub fn problem(&self, cores: usize) -> Option<String> {
        if self.cores != cores {
            return Some(format!(
                "it was measured on {} cores and this machine has {cores}",
                self.cores
            ));
        }
        self.host
            .noise(self.wall_ms, self.cores)
            .map(|why| format!("while it was measured, {why}"))
    }
}

/// One profiled request: its execution time alone on an idle machine at each degree.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestProfile {
    /// The request's identifier, unique in its profile.
    pub id: String,
    /// `times_ms[d - 1]` is the execution time at degree `d`.
    pub times_ms: Vec<f64>,
}

impl RequestProfile {
    /// The sequential execution time, seq_r, which is also the request's work.
    pub fn seq_ms(&self) -> f64 {
        self.times_ms[0]
    }

    /// The speedup s_r(d) = t1 / td. Degrees above the profiled ones keep the last
    /// profiled speedup; degree 0 is treated as 1.
    pub fn speedup(&self, degree: usize) -> f64 {
        let d = degree.clamp(1, self.times_ms.len());
        self.times_ms[0] / self.times_ms[d - 1]
    }

    /// The speedups s_r(1..=N), with s_r(1) = 1.
    pub fn speedups(&self) -> Vec<f64> {
        (1..=self.times_ms.len()).map(|d| self.speedup(d)).collect()
    }
}

/// A demand profile: requests measured alone at degrees 1..N.
#[derive(Debug, Clone, PartialEq)]
pub struct DemandProfile {
    max_degree: usize,
    requests: Vec<RequestProfile>,
}

/// Column name of the time at degree `d`.
fn time_column(d: usize) -> String {
    format!("t{d}_ms")
}

/// The degree a column name stands for, if it is a `tK_ms` column.
fn column_degree(name: &str) -> Option<usize> {
    let digits = name.strip_prefix('t')?.strip_suffix("_ms")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('0') {
        return None;
    }
    digits.parse().ok()
}

impl DemandProfile {
    /// A profile from requests that all have times for the same degrees 1..N, N >= 1,
    /// with finite positive times and unique, non-empty ids.
    pub fn new(requests: Vec<RequestProfile>) -> Result<Self, String> {
        let Some(first) = requests.first() else {
            return Err("a profile needs at least one request".into());
        };
        let max_degree = first.times_ms.len();
        if max_degree == 0 {
            return Err("a profile needs times for at least degree 1".into());
        }
        let mut seen = HashMap::new();
        for (i, r) in requests.iter().enumerate() {
            if r.times_ms.len() != max_degree {
                return Err(format!(
                    "request {:?} has {} times, the first has {max_degree}",
                    r.id,
                    r.times_ms.len()
                ));
            }
            if r.id.is_empty() {
                return Err(format!("request {i} has an empty id"));
            }
            if seen.insert(r.id.as_str(), i).is_some() {
                return Err(format!("duplicate request id {:?}", r.id));
            }
            if let Some(t) = r.times_ms.iter().find(|t| !(t.is_finite() && **t > 0.0)) {
                return Err(format!("request {:?} has a bad time {t}", r.id));
            }
        }
        Ok(DemandProfile {
            max_degree,
            requests,
        })
    }

    /// The highest profiled degree N.
    pub fn max_degree(&self) -> usize {
        self.max_degree
    }

    /// The profiled requests, in file order.
    pub fn requests(&self) -> &[RequestProfile] {
        &self.requests
    }

    /// Reads a profile file.
    pub fn read(path: &Path) -> Result<Self, ReadError> {
        let text = read_text(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses profile CSV text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, ReadError> {
        let csv = CsvFile::parse(text, file)?;
        let columns = csv.columns(|name| name == "request" || column_degree(name).is_some())?;
        let id_col = csv.require(&columns, "request")?;
        let max_degree = columns
            .keys()
            .filter_map(|n| column_degree(n))
            .max()
            .unwrap_or(0);
        if max_degree == 0 {
            return Err(ReadError::new(
                Location::line(file, 1),
                ReadErrorKind::MissingColumn(time_column(1)),
            ));
        }
        let time_cols = (1..=max_degree)
            .map(|d| csv.require(&columns, &time_column(d)))
            .collect::<Result<Vec<_>, _>>()?;

        let mut first_line: HashMap<String, u64> = HashMap::new();
        let mut requests = Vec::with_capacity(csv.rows.len());
        for (line, fields) in &csv.rows {
            let id = fields[id_col].clone();
            if id.is_empty() {
                return Err(ReadError::new(
                    csv.at(*line, "request"),
                    ReadErrorKind::EmptyId,
                ));
            }
            if let Some(first) = first_line.get(&id) {
                return Err(ReadError::new(
                    csv.at(*line, "request"),
                    ReadErrorKind::DuplicateId {
                        id: crate::error::clip(&id),
                        first_line: *first,
                    },
                ));
            }
            let times_ms = time_cols
                .iter()
                .enumerate()
                .map(|(k, &col)| csv.positive_time(*line, &time_column(k + 1), &fields[col]))
                .collect::<Result<Vec<_>, _>>()?;
            first_line.insert(id.clone(), *line);
            requests.push(RequestProfile { id, times_ms });
        }
        Ok(DemandProfile {
            max_degree,
            requests,
        })
    }

    /// Writes the profile as CSV.
    pub fn write(&self, mut out: impl Write) -> io::Result<()> {
        let mut header = vec!["request".to_string()];
        header.extend((1..=self.max_degree).map(time_column));
        writeln!(out, "{}", header.join(","))?;
        for r in &self.requests {
            let mut fields = vec![csv_quote(&r.id)];
            fields.extend(r.times_ms.iter().map(|t| fmt_number(*t)));
            writeln!(out, "{}", fields.join(","))?;
        }
        Ok(())
    }
}

/// Quotes a CSV field when it needs it.
fn csv_quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) || field.trim() != field {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<DemandProfile, ReadError> {
        DemandProfile::parse(text, "p.csv")
    }

    #[test]
    fn reads_a_well_formed_profile() {
        let p = parse("request,t1_ms,t2_ms\nq1,100,60\nq2,10,12.5\n").unwrap();
        assert_eq!(p.max_degree(), 2);
        assert_eq!(p.requests().len(), 2);
        assert_eq!(p.requests()[0].speedup(2), 100.0 / 60.0);
        // Speedups below 1 are a fact of the workload and are kept.
        assert!(p.requests()[1].speedup(2) < 1.0);
        // Beyond the profiled degrees the last speedup holds.
        assert_eq!(p.requests()[0].speedup(7), p.requests()[0].speedup(2));
    }

    #[test]
    fn columns_may_come_in_any_order() {
        let p = parse("t2_ms,request,t1_ms\n60,q1,100\n").unwrap();
        assert_eq!(p.requests()[0].times_ms, vec![100.0, 60.0]);
    }

    #[test]
    fn round_trips_through_write() {
        let p =
            parse("request,t1_ms,t2_ms,t3_ms\n\"a,b\",182.4,95.1,70.3\nq2,1e-3,0.1,3\n").unwrap();
        let mut out = Vec::new();
        p.write(&mut out).unwrap();
        let back = parse(std::str::from_utf8(&out).unwrap()).unwrap();
        assert_eq!(p, back);
    }

    fn err(text: &str) -> ReadError {
        parse(text).unwrap_err()
    }

    #[test]
    fn rejects_an_empty_file() {
        assert_eq!(err("").kind, ReadErrorKind::Empty);
        assert_eq!(err("  \n\n").kind, ReadErrorKind::Empty);
    }

    #[test]
    fn rejects_a_header_without_rows() {
        let e = err("request,t1_ms\n");
        assert_eq!(e.kind, ReadErrorKind::NoRows);
        assert_eq!(e.location.file, "p.csv");
    }

    #[test]
    fn rejects_missing_and_unknown_columns() {
        let e = err("t1_ms\n5\n");
        assert_eq!(e.kind, ReadErrorKind::MissingColumn("request".into()));
        let e = err("request,t1_ms,t3_ms\nq,5,3\n");
        assert_eq!(e.kind, ReadErrorKind::MissingColumn("t2_ms".into()));
        let e = err("request\nq\n");
        assert_eq!(e.kind, ReadErrorKind::MissingColumn("t1_ms".into()));
        let e = err("request,t1_ms,cost\nq,5,3\n");
        assert_eq!(e.kind, ReadErrorKind::UnknownColumn("cost".into()));
        assert_eq!(e.location.field.as_deref(), Some("cost"));
        let e = err("request,t1_ms,t1_ms\nq,5,3\n");
        assert_eq!(e.kind, ReadErrorKind::DuplicateColumn("t1_ms".into()));
    }

    #[test]
    fn rejects_bad_numbers_naming_line_and_field() {
        let e = err("request,t1_ms,t2_ms\nq1,5,3\nq2,abc,3\n");
        assert_eq!(e.kind, ReadErrorKind::NotANumber("abc".into()));
        assert_eq!(e.location.line, Some(3));
        assert_eq!(e.location.field.as_deref(), Some("t1_ms"));
        assert_eq!(
            e.to_string(),
            "p.csv:3: field `t1_ms`: not a number: \"abc\""
        );

        let e = err("request,t1_ms,t2_ms\nq1,5,NaN\n");
        assert!(matches!(e.kind, ReadErrorKind::NotFinite(_)));
        assert_eq!(e.location.field.as_deref(), Some("t2_ms"));
        let e = err("request,t1_ms\nq1,inf\n");
        assert!(matches!(e.kind, ReadErrorKind::NotFinite(_)));
        let e = err("request,t1_ms\nq1,0\n");
        assert_eq!(e.kind, ReadErrorKind::NotPositive(0.0));
        let e = err("request,t1_ms\nq1,-4\n");
        assert_eq!(e.kind, ReadErrorKind::NotPositive(-4.0));
    }

    #[test]
    fn rejects_duplicate_and_empty_ids() {
        let e = err("request,t1_ms\nq1,5\nq2,6\nq1,7\n");
        assert_eq!(
            e.kind,
            ReadErrorKind::DuplicateId {
                id: "q1".into(),
                first_line: 2
            }
        );
        assert_eq!(e.location.line, Some(4));
        let e = err("request,t1_ms\n,5\n");
        assert_eq!(e.kind, ReadErrorKind::EmptyId);
    }

    #[test]
    fn rejects_rows_with_the_wrong_field_count() {
        let e = err("request,t1_ms,t2_ms\nq1,5\n");
        assert_eq!(
            e.kind,
            ReadErrorKind::FieldCount {
                expected: 3,
                found: 2
            }
        );
        assert_eq!(e.location.line, Some(2));
    }

    #[test]
    fn reports_a_missing_file() {
        let e = DemandProfile::read(Path::new("/nonexistent/p.csv")).unwrap_err();
        assert!(matches!(e.kind, ReadErrorKind::Io(_)));
        assert_eq!(e.location.file, "/nonexistent/p.csv");
    }
}

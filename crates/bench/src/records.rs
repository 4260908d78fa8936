//! Per-request records with their unit times, and profiles built from them (`tailor run
//! --records`, `tailor profile from-records`; issue 41).
//!
//! A live run of the FM or pool runtime measures each request's units and merge as it
//! serves it (`tailor_runtime::ServedRequest`). Written beside shared/spec/formats.md's
//! record columns, they let a profile be rebuilt from a real run: t1 is the request's parts
//! as measured, and the higher degrees are predicted by list scheduling
//! ([`crate::predicted_ms`]), as `GET /profile` does for a server's window. The FM paper
//! profiles offline, each request alone at every degree (§6.1); these times were measured
//! among other requests and carry the load's interference.

use std::io::{self, Write};

use tailor_core::{Calibration, DemandProfile, RequestProfile};
use tailor_sim::{write_records, RequestRecord};

use crate::{charged_profile, UnitTimes};

/// Writes `records` as `tailor_sim::write_records` does, plus two columns: `units_ms`,
/// each unit's time in ms joined by `;`, and `merge_ms`; both empty where `units[i]` is
/// `None`. `units` is parallel to `records` (an empty slice writes empty columns).
pub fn write_records_with_units(
    records: &[RequestRecord],
    units: &[Option<UnitTimes>],
    mut out: impl Write,
) -> io::Result<()> {
    let mut plain = Vec::new();
    write_records(records, &mut plain)?;
    let text = String::from_utf8(plain).map_err(io::Error::other)?;
    for (i, line) in text.lines().enumerate() {
        if i == 0 {
            writeln!(out, "{line},units_ms,merge_ms")?;
            continue;
        }
        match units.get(i - 1).and_then(Option::as_ref) {
            Some(u) => {
                let parts: Vec<String> = u.units_ms.iter().map(|ms| format!("{ms:.6}")).collect();
                writeln!(out, "{line},{},{:.6}", parts.join(";"), u.merge_ms)?;
            }
            None => writeln!(out, "{line},,")?,
        }
    }
    Ok(())
}

/// A profile built from records, and what was left out.
#[derive(Debug, Clone)]
pub struct RecordsProfile {
    /// One row per record with unit times, named `r<request>`, degrees 1..=N.
    pub profile: DemandProfile,
    /// Records without unit times (failed requests, or requests the runtime did not
    /// time), left out.
    pub skipped: usize,
}

/// The profile of the records in `text` (CSV with a header; `file` names it in errors)
/// at degrees 1..=`max_degree`. The records must have a `units_ms` column, as
/// [`write_records_with_units`] writes; t1 is a record's units and merge, and higher
/// degrees are predicted from its unit times by list scheduling. With a `calibration`
/// (issue 25), a request's helpers at degree d start only after the machine's hand-off
/// delay with d / cores request threads busy per core, plus its helper cost.
pub fn profile_from_records(
    text: &str,
    file: &str,
    max_degree: usize,
    calibration: Option<&Calibration>,
) -> Result<RecordsProfile, String> {
    if max_degree == 0 {
        return Err("the highest degree must be at least 1".into());
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| format!("{file}: the header: {e}"))?
        .clone();
    let column = |name: &str| headers.iter().position(|h| h.trim() == name);
    let request = column("request").ok_or_else(|| format!("{file}: no `request` column"))?;
    let (Some(units_at), Some(merge_at)) = (column("units_ms"), column("merge_ms")) else {
        return Err(format!(
            "{file}: no `units_ms` and `merge_ms` columns: these records carry no unit \
             times (only `tailor run --engine live --records` with an FM or pool policy \
             writes them)"
        ));
    };
    let mut measured = Vec::new();
    let mut parts = Vec::new();
    let mut skipped = 0;
    for (k, row) in reader.records().enumerate() {
        let line = k + 2;
        let row = row.map_err(|e| format!("{file}: line {line}: {e}"))?;
        let field = |at: usize| row.get(at).unwrap_or("").trim();
        let units_text = field(units_at);
        if units_text.is_empty() {
            skipped += 1;
            continue;
        }
        let number = |text: &str, what: &str| -> Result<f64, String> {
            text.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    format!(
                        "{file}: line {line}: {what} {:?} is not a time in ms",
                        tailor_core::clip(text)
                    )
                })
        };
        let units_ms = units_text
            .split(';')
            .map(|u| number(u.trim(), "a unit's time"))
            .collect::<Result<Vec<f64>, String>>()?;
        let merge_ms = number(field(merge_at), "merge_ms")?;
        let t1 = units_ms.iter().sum::<f64>() + merge_ms;
        measured.push(RequestProfile {
            id: format!("r{}", field(request)),
            // A request of no measurable time still needs a positive t1.
            times_ms: vec![t1.max(1e-6)],
        });
        parts.push(UnitTimes { units_ms, merge_ms });
    }
    if measured.is_empty() {
        return Err(format!(
            "{file}: no record has unit times ({skipped} without): nothing to profile"
        ));
    }
    let measured = DemandProfile::new(measured).map_err(|e| format!("{file}: {e}"))?;
    Ok(RecordsProfile {
        profile: charged_profile(&measured, &parts, max_degree, |d| {
            calibration.map_or(0.0, |c| {
                c.dispatch_at(d as f64 / c.cores.max(1) as f64) + c.helper_cost_ms
            })
        })?,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(request: usize) -> RequestRecord {
        RequestRecord {
            request,
            arrival_ms: request as f64,
            start_ms: request as f64,
            finish_ms: request as f64 + 5.0,
            work_ms: 5.0,
            max_degree: 1,
            mean_degree: 1.0,
            boosted: false,
        }
    }

    #[test]
    fn records_with_units_round_trip_into_a_list_scheduled_profile() {
        let units = vec![
            Some(UnitTimes {
                units_ms: vec![4.0, 1.0, 1.0, 1.0, 3.0],
                merge_ms: 0.5,
            }),
            None,
            Some(UnitTimes {
                units_ms: vec![2.0, 2.0],
                merge_ms: 0.0,
            }),
        ];
        let mut out = Vec::new();
        write_records_with_units(&[record(1), record(2), record(3)], &units, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.lines()
                .next()
                .unwrap()
                .ends_with(",boosted,units_ms,merge_ms"),
            "{text}"
        );
        assert!(text.lines().nth(2).unwrap().ends_with(",,"), "{text}");
        let p = profile_from_records(&text, "r.csv", 2, None).unwrap();
        assert_eq!(p.skipped, 1);
        let rows = p.profile.requests();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].id, "r1");
        // Two threads in unit order: 4 | 1+1+1+3 = 6, then the merge.
        assert_eq!(rows[0].times_ms, vec![10.5, 6.5]);
        assert_eq!(rows[1].times_ms, vec![4.0, 2.0]);
        // A calibration that hands a helper over in 1 ms plus 0.5 ms of helper cost:
        // the second request's helper starts at 1.5 ms, its second unit ends at 3.5.
        let mut cal = Calibration::ideal(2, tailor_core::Units::Count(2));
        cal.helper_cost_ms = 0.5;
        cal.dispatch_ms = tailor_core::Curve::through(vec![[0.0, 1.0], [1.0, 1.0]], 0.0);
        let charged = profile_from_records(&text, "r.csv", 2, Some(&cal)).unwrap();
        assert_eq!(charged.profile.requests()[1].times_ms, vec![4.0, 3.5]);
    }

    #[test]
    fn records_without_unit_times_are_refused_with_the_reason() {
        let mut out = Vec::new();
        write_records(&[record(1)], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let e = profile_from_records(&text, "sim.csv", 2, None).unwrap_err();
        assert!(e.contains("sim.csv") && e.contains("no `units_ms`"), "{e}");
        let bad = "request,units_ms,merge_ms\n1,2.0;x,0\n";
        let e = profile_from_records(bad, "bad.csv", 2, None).unwrap_err();
        assert!(e.contains("line 2") && e.contains("\"x\""), "{e}");
        let none = "request,units_ms,merge_ms\n1,,\n";
        let e = profile_from_records(none, "none.csv", 2, None).unwrap_err();
        assert!(e.contains("no record has unit times"), "{e}");
    }
}

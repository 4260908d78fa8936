//! Scheduling policies as pure decision code, shared by the simulator and the runtime.
//!
//! A policy answers, from the signals of shared/DESIGN.md (load, executed time, degree):
//! when may a request start, at what degree, when does its degree change, and is it
//! boosted. It holds no threads and no clock; the engines call it at arrivals, departures
//! and self-scheduling points.

use std::path::Path;
use std::sync::Arc;

use crate::control::{EetlPlan, EETL_PLAN_KIND};
use crate::csvfile::read_text;
use crate::demand::MAX_WORK_MS;
use crate::error::{clip, Location, ReadError, ReadErrorKind, SpecError};
use crate::table::{
    AdaptiveTable, IntervalTable, TailControlTable, ADAPTIVE_TABLE_KIND, INTERVAL_TABLE_KIND,
    TAIL_CONTROL_TABLE_KIND,
};

/// A policy as named by the `POLICY` syntax of shared/spec/cli.md.
#[derive(Debug, Clone, PartialEq)]
pub enum Policy {
    /// SEQ: every request runs on one thread.
    Seq,
    /// FIX-N: every request runs at degree N.
    Fix {
        /// The degree.
        degree: usize,
    },
    /// FIX-N with selective thread priority boosting (`fix:N:boost`), the comparison of
    /// the FM paper's §6.2 ("Selective thread priority boosting", Fig. 10(c)): a request
    /// is boosted when it starts, if the boosted threads stay fewer than the cores.
    FixBoost {
        /// The degree.
        degree: usize,
    },
    /// FIX-N with a load gate: degree N when fewer than K requests are in the system at
    /// admission, else 1 (Bing's production rule, FM paper §7.2).
    FixGate {
        /// The degree under the gate.
        degree: usize,
        /// The load at and above which requests run sequentially.
        gate: usize,
    },
    /// Fixed-interval incremental parallelism (FM paper §3.3, Fig. 4): one more thread
    /// every `interval_ms` of execution, up to `max_degree`.
    Interval {
        /// Execution time between thread additions, in ms.
        interval_ms: f64,
        /// The highest degree.
        max_degree: usize,
    },
    /// Adaptive (Jeon et al., EuroSys 2013): the degree for the load at admission, from a
    /// table planned offline; it never changes.
    Adaptive(Arc<AdaptiveTable>),
    /// Request Clairvoyant (FM paper §5): requests whose work exceeds the threshold run at
    /// `degree`, the others sequentially; decided at admission with perfect knowledge.
    Rc {
        /// Work above which a request is parallelized, in ms.
        threshold_ms: f64,
        /// The degree of long requests.
        degree: usize,
    },
    /// Few-to-Many (FM paper §4.2): admission and degree by the interval table, indexed by
    /// the instantaneous load and the request's executed time; with or without selective
    /// thread priority boosting.
    Fm {
        /// The interval table.
        table: Arc<IntervalTable>,
        /// Whether requests reaching the maximum degree are boosted.
        boost: bool,
    },
}

/// The planned tables a run was given (`--table`, possibly several), by kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tables {
    /// The FM interval table, for `fm` and `fm:noboost`.
    pub fm: Option<Arc<IntervalTable>>,
    /// The Adaptive degree table, for `adaptive`.
    pub adaptive: Option<Arc<AdaptiveTable>>,
    /// The tail-control threshold table, for `tail-control` and
    /// `tail-control-clairvoyant`.
    pub tail_control: Option<Arc<TailControlTable>>,
    /// The EETL controller plan, for `eetl:TARGET_MS` and `reactive:TARGET_MS`.
    pub eetl: Option<Arc<EetlPlan>>,
}

impl Tables {
    /// Reads table files, telling their kinds apart by their `kind` field. Two tables of
    /// the same kind, or a file of another kind, are errors naming the file.
    pub fn read(paths: &[impl AsRef<Path>]) -> Result<Tables, ReadError> {
        let mut tables = Tables::default();
        for path in paths {
            let path = path.as_ref();
            let file = path.display().to_string();
            let text = read_text(path)?;
            let kind = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string));
            let twice = || {
                ReadError::new(
                    Location::file(&file),
                    ReadErrorKind::Invalid("a second table of the same kind".into()),
                )
            };
            match kind.as_deref() {
                Some(INTERVAL_TABLE_KIND) => {
                    if tables.fm.is_some() {
                        return Err(twice());
                    }
                    tables.fm = Some(Arc::new(IntervalTable::parse(&text, &file)?));
                }
                Some(ADAPTIVE_TABLE_KIND) => {
                    if tables.adaptive.is_some() {
                        return Err(twice());
                    }
                    tables.adaptive = Some(Arc::new(AdaptiveTable::parse(&text, &file)?));
                }
                Some(TAIL_CONTROL_TABLE_KIND) => {
                    if tables.tail_control.is_some() {
                        return Err(twice());
                    }
                    tables.tail_control = Some(Arc::new(TailControlTable::parse(&text, &file)?));
                }
                Some(EETL_PLAN_KIND) => {
                    if tables.eetl.is_some() {
                        return Err(twice());
                    }
                    tables.eetl = Some(Arc::new(EetlPlan::parse(&text, &file)?));
                }
                _ => {
                    // Let the interval-table reader name what is wrong (bad JSON, no kind).
                    IntervalTable::parse(&text, &file)?;
                }
            }
        }
        Ok(tables)
    }
}

/// When a newly arrived request may start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admission {
    /// As soon as a worker is free (first come, first served).
    Now,
    /// After waiting this many ms (FM's v0 > 0).
    Delay(f64),
    /// When another request leaves the system (FM's e1).
    OnExit,
}

impl Policy {
    /// Parses the `POLICY` syntax; `fm` and `adaptive` take their table from `tables`.
    pub fn parse(spec: &str, tables: &Tables) -> Result<Policy, SpecError> {
        let bad = |reason: &str| SpecError::syntax("policy", spec, reason);
        let forms = "expected seq, fix:N, fix:N:boost, fix:N:gate=K, interval:D_MS:N, adaptive, \
                     rc:THRESHOLD_MS:N, fm or fm:noboost";
        let degree = |text: &str| -> Result<usize, SpecError> {
            match text.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(bad(&format!("degree {text:?} must be a whole number >= 1"))),
            }
        };
        let positive = |text: &str, what: &str| -> Result<f64, SpecError> {
            match text.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 && v <= MAX_WORK_MS => Ok(v),
                _ => Err(bad(&format!(
                    "{what} {:?} must be a number of ms above 0 and at most {MAX_WORK_MS}",
                    clip(text)
                ))),
            }
        };
        let need = |kind: &str| bad(&format!("needs --table FILE from `tailor plan {kind}`"));
        let parts: Vec<&str> = spec.split(':').collect();
        let policy = match parts.as_slice() {
            ["seq"] => Policy::Seq,
            ["fix", n] => Policy::Fix { degree: degree(n)? },
            ["fix", n, "boost"] => Policy::FixBoost { degree: degree(n)? },
            ["fix", n, gate] => {
                let k = gate
                    .strip_prefix("gate=")
                    .ok_or_else(|| bad("expected fix:N:gate=K"))?;
                Policy::FixGate {
                    degree: degree(n)?,
                    gate: degree(k).map_err(|_| bad("the gate K must be a whole number >= 1"))?,
                }
            }
            ["interval", d, n] => Policy::Interval {
                interval_ms: positive(d, "interval")?,
                max_degree: degree(n)?,
            },
            ["adaptive"] => {
                Policy::Adaptive(tables.adaptive.clone().ok_or_else(|| need("adaptive"))?)
            }
            ["rc", t, n] => Policy::Rc {
                threshold_ms: {
                    let t: f64 = t
                        .parse()
                        .map_err(|_| bad("THRESHOLD_MS must be a number"))?;
                    if !(t.is_finite() && (0.0..=MAX_WORK_MS).contains(&t)) {
                        return Err(bad(&format!(
                            "THRESHOLD_MS must be from 0 to {MAX_WORK_MS} ms"
                        )));
                    }
                    t
                },
                degree: degree(n)?,
            },
            ["fm"] => Policy::Fm {
                table: tables.fm.clone().ok_or_else(|| need("fm"))?,
                boost: true,
            },
            ["fm", "noboost"] => Policy::Fm {
                table: tables.fm.clone().ok_or_else(|| need("fm"))?,
                boost: false,
            },
            _ => return Err(bad(forms)),
        };
        Ok(policy)
    }

    /// A short name for tables and summaries, e.g. `fix:4` or `fm`.
    pub fn name(&self) -> String {
        match self {
            Policy::Seq => "seq".into(),
            Policy::Fix { degree } => format!("fix:{degree}"),
            Policy::FixBoost { degree } => format!("fix:{degree}:boost"),
            Policy::FixGate { degree, gate } => format!("fix:{degree}:gate={gate}"),
            Policy::Interval {
                interval_ms,
                max_degree,
            } => format!("interval:{interval_ms}:{max_degree}"),
            Policy::Adaptive(_) => "adaptive".into(),
            Policy::Rc {
                threshold_ms,
                degree,
            } => format!("rc:{threshold_ms}:{degree}"),
            Policy::Fm { boost: true, .. } => "fm".into(),
            Policy::Fm { boost: false, .. } => "fm:noboost".into(),
        }
    }

    /// The highest degree the policy can give a request.
    pub fn max_degree(&self) -> usize {
        match self {
            Policy::Seq => 1,
            Policy::Fix { degree }
            | Policy::FixBoost { degree }
            | Policy::FixGate { degree, .. }
            | Policy::Rc { degree, .. } => *degree,
            Policy::Interval { max_degree, .. } => *max_degree,
            Policy::Adaptive(table) => table.rows.iter().map(|r| r.degree).max().unwrap_or(1),
            Policy::Fm { table, .. } => table.max_degree,
        }
    }

    /// Whether the policy limits concurrently executing requests to a pool of worker
    /// threads (one per core by default). FM does its own admission control instead
    /// (v0 and e1), so it has no pool.
    pub fn uses_worker_pool(&self) -> bool {
        !matches!(self, Policy::Fm { .. })
    }

    /// When a request arriving at `load` (requests in the system, itself included) may
    /// start.
    pub fn admission(&self, load: usize) -> Admission {
        match self {
            Policy::Fm { table, .. } => {
                let row = table.row(load);
                if row.admit_on_exit {
                    Admission::OnExit
                } else if row.admission_delay_ms() > 0.0 {
                    Admission::Delay(row.admission_delay_ms())
                } else {
                    Admission::Now
                }
            }
            _ => Admission::Now,
        }
    }

    /// The degree a request starts at, given the load when it starts and, for the
    /// clairvoyant RC only, its work.
    pub fn start_degree(&self, load: usize, work_ms: f64) -> usize {
        match self {
            Policy::Seq => 1,
            Policy::Fix { degree } | Policy::FixBoost { degree } => *degree,
            Policy::FixGate { degree, gate } => {
                if load < *gate {
                    *degree
                } else {
                    1
                }
            }
            Policy::Interval { .. } => 1,
            Policy::Adaptive(table) => table.degree(load),
            Policy::Rc {
                threshold_ms,
                degree,
            } => {
                if work_ms > *threshold_ms {
                    *degree
                } else {
                    1
                }
            }
            Policy::Fm { table, .. } => table.row(load).degree_at(0.0),
        }
    }

    /// Whether the policy changes a running request's degree (it self-schedules).
    pub fn self_schedules(&self) -> bool {
        matches!(self, Policy::Interval { .. } | Policy::Fm { .. })
    }

    /// The degree a running request should have at a self-scheduling point, given the
    /// load now, its executed time and its current degree. Degrees only grow (few to
    /// many, FM paper Theorem 1).
    pub fn degree(&self, load: usize, executed_ms: f64, current: usize) -> usize {
        let wanted = match self {
            Policy::Interval {
                interval_ms,
                max_degree,
            } => (1 + (executed_ms / interval_ms).floor() as usize).min(*max_degree),
            Policy::Fm { table, .. } => table.row(load).degree_at(executed_ms),
            _ => current,
        };
        wanted.max(current)
    }

    /// The executed time at which [`Policy::degree`] next exceeds `current` if the load
    /// stays at `load`, or `None` if it never does. Engines use it to schedule only the
    /// self-scheduling points where something changes.
    pub fn next_increase_ms(&self, load: usize, current: usize) -> Option<f64> {
        match self {
            Policy::Interval {
                interval_ms,
                max_degree,
            } => (current < *max_degree).then(|| current as f64 * interval_ms),
            Policy::Fm { table, .. } => {
                let v = &table.row(load).intervals_ms;
                // Degree d + 1 begins once executed reaches v1 + ... + v_d.
                (current < v.len()).then(|| v[1..=current].iter().sum())
            }
            _ => None,
        }
    }

    /// Whether the policy boosts some requests (FM with boosting, FIX-N with boosting).
    pub fn boosts(&self) -> bool {
        matches!(
            self,
            Policy::Fm { boost: true, .. } | Policy::FixBoost { .. }
        )
    }

    /// Whether a request at `degree` may be boosted, given the threads already boosted and
    /// the cores (FM paper §4.2: only requests at the maximum degree, and only while the
    /// boosted threads stay fewer than the cores). Engines offer each free slot to the
    /// oldest such request first (§4.1: "we boost the oldest threads' priorities, so
    /// they complete without interference from younger requests"), at the moment a
    /// request reaches the maximum degree and whenever a boosted request leaves.
    pub fn boost(&self, degree: usize, boosted_threads: usize, cores: usize) -> bool {
        match self {
            Policy::Fm { table, boost: true } => {
                degree == table.max_degree && boosted_threads + degree < cores
            }
            Policy::FixBoost { degree: d } => degree == *d && boosted_threads + degree < cores,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{IntervalRow, INTERVAL_TABLE_KIND};

    fn fm_table() -> Arc<IntervalTable> {
        let row = |load, v: [f64; 3], admit_on_exit| IntervalRow {
            load,
            intervals_ms: v.to_vec(),
            admit_on_exit,
            tail_ms: 0.0,
            mean_ms: 0.0,
            parallelism: 0.0,
        };
        Arc::new(IntervalTable {
            kind: INTERVAL_TABLE_KIND.into(),
            max_degree: 3,
            target_parallelism: 6.0,
            percentile: 0.99,
            step_ms: 50.0,
            max_interval_ms: 150.0,
            rows: vec![
                row(1, [0.0, 0.0, 0.0], false),
                row(2, [0.0, 50.0, 0.0], false),
                row(3, [50.0, 50.0, 50.0], false),
                row(4, [150.0, 100.0, 50.0], true),
            ],
        })
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(
            Policy::parse("seq", &Tables::default()).unwrap(),
            Policy::Seq
        );
        assert_eq!(
            Policy::parse("fix:4", &Tables::default()).unwrap(),
            Policy::Fix { degree: 4 }
        );
        assert_eq!(
            Policy::parse("fix:3:gate=30", &Tables::default()).unwrap(),
            Policy::FixGate {
                degree: 3,
                gate: 30
            }
        );
        assert_eq!(
            Policy::parse("interval:20:4", &Tables::default()).unwrap(),
            Policy::Interval {
                interval_ms: 20.0,
                max_degree: 4
            }
        );
        assert_eq!(
            Policy::parse("rc:225:4", &Tables::default()).unwrap(),
            Policy::Rc {
                threshold_ms: 225.0,
                degree: 4
            }
        );
        for p in [
            "seq",
            "fix:4",
            "fix:3:boost",
            "fix:3:gate=30",
            "interval:20:4",
            "rc:225:4",
        ] {
            assert_eq!(Policy::parse(p, &Tables::default()).unwrap().name(), p);
        }
    }

    #[test]
    fn rejects_malformed_policies() {
        for bad in [
            "",
            "fix",
            "fix:0",
            "fix:x",
            "fix:2:3",
            "fix:2:gate=x",
            "interval:0:4",
            "interval:5",
            "rc:-1:4",
            "rc:10:0",
            "fm:boost",
            "lifo",
        ] {
            assert!(
                Policy::parse(bad, &Tables::default()).is_err(),
                "{bad:?} was accepted"
            );
        }
        let e = Policy::parse("fm", &Tables::default()).unwrap_err();
        assert!(e.to_string().contains("--table"), "{e}");
        let e = Policy::parse("adaptive", &Tables::default()).unwrap_err();
        assert!(e.to_string().contains("plan adaptive"), "{e}");
    }

    #[test]
    fn fm_admits_by_the_row_of_the_load() {
        let fm = Policy::Fm {
            table: fm_table(),
            boost: true,
        };
        assert_eq!(fm.admission(1), Admission::Now);
        assert_eq!(fm.admission(3), Admission::Delay(50.0));
        assert_eq!(fm.admission(4), Admission::OnExit);
        assert_eq!(
            fm.admission(40),
            Admission::OnExit,
            "loads past the table use its last row"
        );
        assert!(!fm.uses_worker_pool());
        assert!(Policy::Seq.uses_worker_pool());
    }

    #[test]
    fn fm_degrees_follow_the_row_and_never_fall() {
        let fm = Policy::Fm {
            table: fm_table(),
            boost: true,
        };
        assert_eq!(fm.start_degree(1, 0.0), 3);
        assert_eq!(fm.start_degree(2, 0.0), 1);
        assert_eq!(fm.degree(2, 49.0, 1), 1);
        assert_eq!(fm.degree(2, 50.0, 1), 3);
        // Load rose: the row for 3 says degree 2 at 60 ms, but degrees never fall.
        assert_eq!(fm.degree(3, 60.0, 3), 3);
        assert_eq!(fm.next_increase_ms(2, 1), Some(50.0));
        assert_eq!(fm.next_increase_ms(3, 1), Some(50.0));
        assert_eq!(fm.next_increase_ms(3, 2), Some(100.0));
        assert_eq!(fm.next_increase_ms(3, 3), None);
    }

    #[test]
    fn boosting_is_selective() {
        let fm = Policy::Fm {
            table: fm_table(),
            boost: true,
        };
        assert!(fm.boost(3, 0, 4), "3 boosted threads stay below 4 cores");
        assert!(!fm.boost(3, 1, 4), "4 would not");
        assert!(!fm.boost(2, 0, 16), "only at the maximum degree");
        let noboost = Policy::Fm {
            table: fm_table(),
            boost: false,
        };
        assert!(!noboost.boost(3, 0, 16));
        let fix = Policy::parse("fix:3:boost", &Tables::default()).unwrap();
        assert_eq!(fix.start_degree(40, 0.0), 3);
        assert!(fix.boost(3, 9, 15) && !fix.boost(3, 12, 15));
        assert!(!Policy::Fix { degree: 3 }.boost(3, 0, 15));
    }

    #[test]
    fn baselines_decide_at_admission() {
        let gate = Policy::FixGate {
            degree: 3,
            gate: 30,
        };
        assert_eq!(gate.start_degree(29, 0.0), 3);
        assert_eq!(gate.start_degree(30, 0.0), 1);
        let rc = Policy::Rc {
            threshold_ms: 225.0,
            degree: 4,
        };
        assert_eq!(rc.start_degree(1, 225.0), 1);
        assert_eq!(rc.start_degree(1, 226.0), 4);
        let interval = Policy::Interval {
            interval_ms: 20.0,
            max_degree: 4,
        };
        assert_eq!(interval.degree(1, 19.9, 1), 1);
        assert_eq!(interval.degree(1, 40.0, 1), 3);
        assert_eq!(interval.degree(1, 400.0, 1), 4);
        assert_eq!(interval.next_increase_ms(1, 2), Some(40.0));
        assert_eq!(interval.next_increase_ms(1, 4), None);
        assert!(!Policy::Fix { degree: 2 }.self_schedules());
    }
}

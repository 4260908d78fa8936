//! Work-stealing admission and tail-control's serialization rule, as pure decision code.
//!
//! Li et al., "Work Stealing for Interactive Services to Meet Target Latency" (PPoPP 2016):
//! §3 names the admission baselines (steal-first, admit-first, and TBB's default of pushing
//! a new request onto a random worker, §5.6), §4.2 and Fig. 5 the tail-control rule: a
//! thief about to steal marks every request whose processed work passes the threshold for
//! the current number of active requests as not stealable, so its parallelism dissolves.
//! TC-clairvoyant (§5.6) applies the same rule to each request's true work, from its
//! arrival. The simulator (`tailor_sim::steal`) and the executor (`tailor_runtime::steal`)
//! both ask this type.

use std::sync::Arc;

use crate::error::SpecError;
use crate::table::TailControlTable;

/// How an idle worker finds work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StealAdmission {
    /// Steal from a random victim; admit from the global FIFO only when nothing is
    /// stealable (§3; Fig. 5a without its tail-control lines).
    StealFirst,
    /// Admit from the global FIFO; steal only when it is empty (§3).
    AdmitFirst,
    /// No global FIFO: an arriving request goes to a random worker, which starts it when
    /// it next looks for work; idle workers steal (TBB's default, §5.6).
    RandomAdmit,
}

/// How a request's parallelism dissolves once tail-control marks it.
///
/// §4.1 of the paper models a marked request as running on one core from the moment it
/// is caught (E7's second term l/m + w_f, and E9's m_s: the other cores serve the other
/// requests); §4.2's implementation in TBB only stops thieves from taking more of it, so
/// its cores leave as their own pieces of it run out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dissolve {
    /// §4.1's model: on a mark, every core but one leaves the request at its next unit
    /// boundary, handing its unfinished range back to the core that stays. The default.
    #[default]
    Prompt,
    /// TBB's: a mark only freezes the pieces; each core leaves when its piece ends.
    Lazy,
}

impl Dissolve {
    /// Parses `prompt` or `lazy`.
    pub fn parse(text: &str) -> Result<Dissolve, SpecError> {
        match text {
            "prompt" => Ok(Dissolve::Prompt),
            "lazy" => Ok(Dissolve::Lazy),
            _ => Err(SpecError::syntax(
                "dissolve",
                text,
                "expected prompt or lazy",
            )),
        }
    }
}

/// A work-stealing policy by its `POLICY` name.
#[derive(Debug, Clone, PartialEq)]
pub enum StealPolicy {
    /// `steal-first`.
    StealFirst,
    /// `admit-first`.
    AdmitFirst,
    /// `random-admit`.
    RandomAdmit,
    /// `tail-control`: steal-first plus Fig. 5's serialization by processed work.
    TailControl(Arc<TailControlTable>),
    /// `tail-control-clairvoyant`: the rule applied to each request's true work, from
    /// its admission on (the paper's lower bound, §5.6).
    TailControlClairvoyant(Arc<TailControlTable>),
}

/// The names [`StealPolicy::parse`] accepts.
pub const STEAL_POLICY_NAMES: [&str; 5] = [
    "steal-first",
    "admit-first",
    "random-admit",
    "tail-control",
    "tail-control-clairvoyant",
];

impl StealPolicy {
    /// Whether `spec` names a work-stealing policy (so the caller picks this family).
    pub fn is_steal_policy(spec: &str) -> bool {
        STEAL_POLICY_NAMES.contains(&spec)
    }

    /// Parses a work-stealing policy name; the tail-control ones take `table` (from
    /// `tailor plan tail-control`, given with `--table`).
    pub fn parse(
        spec: &str,
        table: Option<&Arc<TailControlTable>>,
    ) -> Result<StealPolicy, SpecError> {
        let bad = |reason: &str| SpecError::syntax("policy", spec, reason);
        let table = || {
            table
                .cloned()
                .ok_or_else(|| bad("needs --table FILE from `tailor plan tail-control`"))
        };
        Ok(match spec {
            "steal-first" => StealPolicy::StealFirst,
            "admit-first" => StealPolicy::AdmitFirst,
            "random-admit" => StealPolicy::RandomAdmit,
            "tail-control" => StealPolicy::TailControl(table()?),
            "tail-control-clairvoyant" => StealPolicy::TailControlClairvoyant(table()?),
            _ => {
                return Err(bad(
                    "expected steal-first, admit-first, random-admit, tail-control or \
                     tail-control-clairvoyant",
                ))
            }
        })
    }

    /// The policy's name, as parsed.
    pub fn name(&self) -> &'static str {
        match self {
            StealPolicy::StealFirst => "steal-first",
            StealPolicy::AdmitFirst => "admit-first",
            StealPolicy::RandomAdmit => "random-admit",
            StealPolicy::TailControl(_) => "tail-control",
            StealPolicy::TailControlClairvoyant(_) => "tail-control-clairvoyant",
        }
    }

    /// How idle workers find work; both tail-control variants are steal-first.
    pub fn admission(&self) -> StealAdmission {
        match self {
            StealPolicy::AdmitFirst => StealAdmission::AdmitFirst,
            StealPolicy::RandomAdmit => StealAdmission::RandomAdmit,
            _ => StealAdmission::StealFirst,
        }
    }

    /// The threshold table, for the tail-control variants.
    pub fn table(&self) -> Option<&TailControlTable> {
        match self {
            StealPolicy::TailControl(t) | StealPolicy::TailControlClairvoyant(t) => Some(t),
            _ => None,
        }
    }

    /// Whether the policy knows each request's work in advance.
    pub fn is_clairvoyant(&self) -> bool {
        matches!(self, StealPolicy::TailControlClairvoyant(_))
    }

    /// Whether thieves run `check_pileup_phase` before stealing (Fig. 5b).
    pub fn checks_pileup(&self) -> bool {
        self.table().is_some()
    }

    /// Fig. 5b's test: whether a request is serialized with `active` requests in the
    /// system (waiting and running), given its processed work in ms (the thread-time
    /// its workers have spent on it) and, for the clairvoyant variant, its true work.
    /// Passing means strictly greater than the row's threshold (formats.md); with no
    /// active request there is no pileup to check.
    pub fn serializes(&self, active: usize, processed_ms: f64, work_ms: Option<f64>) -> bool {
        let (table, measure) = match self {
            StealPolicy::TailControl(t) => (t, processed_ms),
            StealPolicy::TailControlClairvoyant(t) => (t, work_ms.unwrap_or(processed_ms)),
            _ => return false,
        };
        active > 0 && measure > table.threshold_ms(active)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{TailControlRow, TAIL_CONTROL_TABLE_KIND};

    fn table() -> Arc<TailControlTable> {
        let row = |active, threshold_ms| TailControlRow {
            active,
            threshold_ms,
            expected_misses: 1.0,
        };
        Arc::new(TailControlTable {
            kind: TAIL_CONTROL_TABLE_KIND.into(),
            target_ms: 6.25,
            rps: 500.0,
            cores: 2,
            rows: vec![row(1, 9.0), row(2, 9.0), row(3, 3.0), row(4, 1.0)],
        })
    }

    #[test]
    fn parses_every_name_and_names_it_back() {
        let t = table();
        for name in STEAL_POLICY_NAMES {
            assert!(StealPolicy::is_steal_policy(name));
            assert_eq!(StealPolicy::parse(name, Some(&t)).unwrap().name(), name);
        }
        assert!(!StealPolicy::is_steal_policy("fm"));
    }

    #[test]
    fn tail_control_needs_its_table() {
        for name in ["tail-control", "tail-control-clairvoyant"] {
            let err = StealPolicy::parse(name, None).unwrap_err().to_string();
            assert!(err.contains("plan tail-control"), "{err}");
        }
        assert!(StealPolicy::parse("steal-first", None).is_ok());
        assert!(StealPolicy::parse("steal", None).is_err());
    }

    #[test]
    fn serializes_strictly_above_the_threshold_for_the_load() {
        let tc = StealPolicy::TailControl(table());
        assert!(!tc.serializes(3, 3.0, None));
        assert!(tc.serializes(3, 3.01, None));
        assert!(!tc.serializes(1, 8.0, None));
        // Loads past the last row use it; no active request, no pileup.
        assert!(tc.serializes(40, 1.5, None));
        assert!(!tc.serializes(0, 100.0, None));
        // The clairvoyant variant looks at the work, not the processed time.
        let cv = StealPolicy::TailControlClairvoyant(table());
        assert!(cv.serializes(4, 0.0, Some(2.0)));
        assert!(!cv.serializes(4, 5.0, Some(0.5)));
        // The baselines never serialize.
        assert!(!StealPolicy::StealFirst.serializes(4, 100.0, Some(100.0)));
    }

    #[test]
    fn admission_orders() {
        assert_eq!(
            StealPolicy::TailControl(table()).admission(),
            StealAdmission::StealFirst
        );
        assert_eq!(
            StealPolicy::AdmitFirst.admission(),
            StealAdmission::AdmitFirst
        );
        assert_eq!(
            StealPolicy::RandomAdmit.admission(),
            StealAdmission::RandomAdmit
        );
    }
}

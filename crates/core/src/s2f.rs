//! Policies for sequential requests on heterogeneous cores: Adaptive Slow-to-Fast's EETL, RTL and EE, and the Oblivious, RC, fixed and Reactive comparisons.
//!
//! Haque's dissertation, §5.1.1 (objectives), §5.2.6 (policies) and §5.3.4 (Exhaustive
//! and Reactive). The placement rule they share is [`crate::as2f_moves`].

use std::sync::Arc;

use crate::control::EetlPlan;
use crate::error::SpecError;

/// A heterogeneous-core policy by its `POLICY` name.
#[derive(Debug, Clone, PartialEq)]
pub enum HeteroPolicy {
    /// `eetl:TARGET_MS`: thresholds z · t* with z from the plan's gain-scheduled PID
    /// (needs `--table` from `tailor plan eetl` for the same target).
    Eetl(Arc<EetlPlan>),
    /// `rtl`: every threshold 0, so requests start on the fastest free core and the
    /// oldest move up whenever a faster core frees (§5.1.1.2).
    Rtl,
    /// `ee`: every threshold infinite; the oldest move up only when slower cores run out
    /// (§5.1.1.3).
    Ee,
    /// `oblivious`: a random core for each new request, another free one if that is
    /// busy, and no migration after (§5.2.6, Linux's default behaviour).
    Oblivious,
    /// `rc-hetero:WORK_MS`: clairvoyant; requests whose work is at least WORK_MS run on
    /// the fastest cores (on a slower one until a fastest core frees), the rest never do
    /// (§5.2.6's RC, with the number of long requests set by a work bound).
    RcHetero(f64),
    /// `s2f:T1[:T2...]`: fixed thresholds in ms, one per faster core type (Exhaustive
    /// searches these, §5.3.4).
    Fixed(Vec<f64>),
    /// `reactive:TARGET_MS`: §5.3.4's heuristic, starting from the plan's t* (needs
    /// `--table` from `tailor plan eetl`).
    Reactive(f64, Arc<EetlPlan>),
}

/// The names and forms [`HeteroPolicy::parse`] accepts.
pub const HETERO_POLICY_FORMS: &str =
    "eetl:TARGET_MS, rtl, ee, oblivious, rc-hetero:WORK_MS, s2f:T1[:T2...], reactive:TARGET_MS";

impl HeteroPolicy {
    /// Whether `spec` names a heterogeneous-core policy.
    pub fn is_hetero_policy(spec: &str) -> bool {
        matches!(spec, "rtl" | "ee" | "oblivious")
            || ["eetl:", "rc-hetero", "s2f:", "reactive:"]
                .iter()
                .any(|p| spec.starts_with(p))
    }

    /// Parses a policy; `eetl` and `reactive` take `plan` (from `--table`).
    pub fn parse(spec: &str, plan: Option<&Arc<EetlPlan>>) -> Result<HeteroPolicy, SpecError> {
        let bad = |reason: String| SpecError::syntax("policy", spec, reason);
        let ms = |text: &str, what: &str| parse_ms(spec, text, what);
        let plan_for = |target: f64| -> Result<Arc<EetlPlan>, SpecError> {
            let plan = plan
                .cloned()
                .ok_or_else(|| bad("needs --table FILE from `tailor plan eetl`".into()))?;
            if plan.pstates.is_some() {
                return Err(bad(
                    "the table was planned for DVFS P-states; use eetl-dvfs with it, or plan \
                     one for these cores"
                        .into(),
                ));
            }
            if (plan.target_ms - target).abs() > 1e-9 * target.max(1.0) {
                return Err(bad(format!(
                    "the table was planned for a {} ms target, not {target} ms; plan one for this target",
                    plan.target_ms
                )));
            }
            Ok(plan)
        };
        Ok(match spec.split_once(':') {
            None => match spec {
                "rtl" => HeteroPolicy::Rtl,
                "ee" => HeteroPolicy::Ee,
                "oblivious" => HeteroPolicy::Oblivious,
                "rc-hetero" => {
                    return Err(bad(
                        "needs the work bound of a long request: rc-hetero:WORK_MS".into(),
                    ))
                }
                _ => return Err(bad(format!("expected one of {HETERO_POLICY_FORMS}"))),
            },
            Some(("eetl", t)) => HeteroPolicy::Eetl(plan_for(positive(ms(t, "target")?, &bad)?)?),
            Some(("reactive", t)) => {
                let t = positive(ms(t, "target")?, &bad)?;
                HeteroPolicy::Reactive(t, plan_for(t)?)
            }
            Some(("rc-hetero", w)) => HeteroPolicy::RcHetero(ms(w, "work bound")?),
            Some(("s2f", list)) => HeteroPolicy::Fixed(parse_thresholds(spec, list)?),
            _ => return Err(bad(format!("expected one of {HETERO_POLICY_FORMS}"))),
        })
    }

    /// The policy's name for summaries.
    pub fn name(&self) -> String {
        match self {
            HeteroPolicy::Eetl(p) => format!("eetl:{}", p.target_ms),
            HeteroPolicy::Rtl => "rtl".into(),
            HeteroPolicy::Ee => "ee".into(),
            HeteroPolicy::Oblivious => "oblivious".into(),
            HeteroPolicy::RcHetero(w) => format!("rc-hetero:{w}"),
            HeteroPolicy::Fixed(t) => format!("s2f:{}", join_thresholds(t)),
            HeteroPolicy::Reactive(t, _) => format!("reactive:{t}"),
        }
    }

    /// The thresholds to start from on `types` core types, for the threshold policies
    /// (`None` for Oblivious and RC); an error if a fixed list or a plan has the wrong
    /// length.
    pub fn initial_thresholds(&self, types: usize) -> Result<Option<Vec<f64>>, String> {
        let n = types.saturating_sub(1);
        let check = |t: &[f64], what: &str| {
            if t.len() == n {
                Ok(())
            } else {
                Err(format!(
                    "{what} has {} thresholds, but {types} core types need {n}",
                    t.len()
                ))
            }
        };
        Ok(match self {
            HeteroPolicy::Rtl => Some(vec![0.0; n]),
            HeteroPolicy::Ee => Some(vec![f64::INFINITY; n]),
            HeteroPolicy::Fixed(t) => {
                check(t, &self.name())?;
                Some(t.clone())
            }
            HeteroPolicy::Eetl(p) | HeteroPolicy::Reactive(_, p) => {
                check(&p.thresholds_ms, "the eetl plan")?;
                Some(p.thresholds_ms.clone())
            }
            HeteroPolicy::Oblivious | HeteroPolicy::RcHetero(_) => None,
        })
    }
}

fn positive(v: f64, bad: &impl Fn(String) -> SpecError) -> Result<f64, SpecError> {
    if v > 0.0 {
        Ok(v)
    } else {
        Err(bad("the target must be above 0".into()))
    }
}

/// A policy's time in ms, 0 or more; `what` names it in the error about `spec`.
pub(crate) fn parse_ms(spec: &str, text: &str, what: &str) -> Result<f64, SpecError> {
    text.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| {
            SpecError::syntax(
                "policy",
                spec,
                format!("{what} {text:?} must be a number of ms, 0 or more"),
            )
        })
}

/// A fixed-threshold policy's list `T1[:T2...]` of ms, which must not decrease
/// (`s2f:` and `s2f-dvfs:`).
pub(crate) fn parse_thresholds(spec: &str, list: &str) -> Result<Vec<f64>, SpecError> {
    let t = list
        .split(':')
        .map(|x| parse_ms(spec, x, "threshold"))
        .collect::<Result<Vec<_>, _>>()?;
    if t.windows(2).any(|w| w[1] < w[0]) {
        return Err(SpecError::syntax(
            "policy",
            spec,
            "thresholds must not decrease",
        ));
    }
    Ok(t)
}

/// Thresholds as a policy name writes them: `T1:T2:...`.
pub(crate) fn join_thresholds(t: &[f64]) -> String {
    t.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_round_trip() {
        for spec in ["rtl", "ee", "oblivious", "rc-hetero:120", "s2f:10:40"] {
            assert!(HeteroPolicy::is_hetero_policy(spec));
            assert_eq!(HeteroPolicy::parse(spec, None).unwrap().name(), spec);
        }
        for bad in [
            "rc-hetero",
            "s2f:40:10",
            "s2f:x",
            "eetl:100",
            "eetl:-1",
            "fast",
        ] {
            assert!(HeteroPolicy::parse(bad, None).is_err(), "{bad}");
        }
        assert!(!HeteroPolicy::is_hetero_policy("fm"));
    }

    #[test]
    fn threshold_counts_must_match_the_core_types() {
        assert_eq!(
            HeteroPolicy::Rtl.initial_thresholds(3).unwrap(),
            Some(vec![0.0, 0.0])
        );
        assert!(HeteroPolicy::Fixed(vec![5.0])
            .initial_thresholds(3)
            .is_err());
        assert_eq!(HeteroPolicy::Oblivious.initial_thresholds(2).unwrap(), None);
    }
}

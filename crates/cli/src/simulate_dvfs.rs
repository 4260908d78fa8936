//! `tailor simulate`'s DVFS flags (issue 42): P-states, the cost of a change, schedutil's rate limit, the static-power rule.

use clap::Args;
use tailor_core::{DvfsCores, DvfsPolicy, PStates, StaticRule, DVFS_POLICY_FORMS};
use tailor_sim::{DvfsSimConfig, SimConfig, DEFAULT_TRANSITION_MS};

use crate::bounds;

/// DVFS cores: every core takes any of the P-states.
#[derive(Debug, Args)]
pub(crate) struct DvfsArgs {
    /// P-states S1:P1,S2:P2,...: relative speed and dynamic power of each (power about
    /// cubic in speed, e.g. 1:1,1.5:3.375,2:8), for the DVFS policies (eetl-dvfs:T,
    /// tl-dvfs, s2f-dvfs:T1[:T2...], pegasus:T, schedutil, max); --cores is then a count.
    #[arg(long)]
    pub(crate) pstates: Option<String>,
    /// How long a P-state change takes; the core runs at the slower speed meanwhile
    /// [default: 20us].
    #[arg(long = "transition", value_name = "DURATION", value_parser = bounds::SHORT0, requires = "pstates")]
    transition_ms: Option<f64>,
    /// schedutil's least time between changes (intel_pstate's default) [default: 500us].
    #[arg(long = "rate-limit", value_name = "DURATION", value_parser = bounds::SHORT0, requires = "pstates")]
    rate_limit_ms: Option<f64>,
    /// How a busy core's share of static power follows its P-state: `voltage` (scaled by
    /// speed over the top's, as leakage falls with voltage), `fixed` (the same in every
    /// state, as every core type's on asymmetric cores) or `busy:W` (W per busy core,
    /// e.g. another chip's); docs/dvfs.md.
    #[arg(long, default_value = "voltage", value_parser = parse_static, requires = "pstates")]
    static_power: StaticRule,
}

fn parse_static(text: &str) -> Result<StaticRule, String> {
    StaticRule::parse(text).map_err(|e| e.to_string())
}

impl DvfsArgs {
    /// The chip of `count` cores, if `--pstates` was given.
    pub(crate) fn chip(&self, count: usize) -> anyhow::Result<Option<DvfsCores>> {
        let Some(text) = &self.pstates else {
            return Ok(None);
        };
        Ok(Some(DvfsCores {
            static_rule: self.static_power,
            ..DvfsCores::new(count, PStates::parse(text)?)
        }))
    }

    /// The run of `policy` on `chip` with `base`'s workload.
    pub(crate) fn config(
        &self,
        base: SimConfig,
        chip: &DvfsCores,
        policy: &DvfsPolicy,
    ) -> DvfsSimConfig {
        DvfsSimConfig {
            base,
            cores: chip.clone(),
            policy: policy.clone(),
            transition_ms: self.transition_ms.unwrap_or(DEFAULT_TRANSITION_MS),
            rate_limit_ms: self
                .rate_limit_ms
                .unwrap_or(tailor_core::SCHEDUTIL_RATE_LIMIT_MS),
            open_loop: None,
        }
    }
}

/// Refuses a DVFS policy without `--pstates`, and `--pstates` with any other family.
pub(crate) fn check_family(
    pstates: Option<&DvfsCores>,
    dvfs: bool,
    policy: &str,
) -> anyhow::Result<()> {
    match (pstates.is_some(), dvfs) {
        (false, true) => anyhow::bail!(
            "--policy {policy}: a DVFS policy needs --pstates S1:P1,S2:P2,... (and --cores \
             a count)"
        ),
        (true, false) => anyhow::bail!(
            "--pstates: P-states are for the DVFS policies ({DVFS_POLICY_FORMS}), not {policy}"
        ),
        _ => Ok(()),
    }
}

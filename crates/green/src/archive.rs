//! Real traces into jobs: the Parallel Workload Archive's Standard Workload Format (SWF) and the Grid Workload Archive's format (GWF), windowed and scaled as appendices A and B scaled theirs.
//!
//! Haque's dissertation takes its Grid5k trace from the Grid Workload Archive and its
//! Intrepid trace from the Parallel Workload Archive (§A.5.1, §B.4). Neither trace ships
//! with tailor (issue 43); these loaders let a user with the real files run them.
//!
//! **SWF** (the Parallel Workload Archive's format): `;` starts a comment line (the header);
//! every other non-blank line holds 18 whitespace-separated fields: 1 job number, 2 submit
//! time (s), 3 wait time, 4 run time (s), 5 allocated processors, 6 average CPU time,
//! 7 used memory, 8 requested processors, 9 requested time, 10 requested memory, 11 status,
//! 12 user, 13 group, 14 executable, 15 queue, 16 partition, 17 preceding job, 18 think
//! time. `-1` marks a missing value. Status 2, 3 and 4 mark the partial executions of a
//! checkpointed job, whose summary line (status 0, 1 or 5) carries the whole job; they are
//! skipped.
//!
//! **GWF** (the Grid Workload Archive's text format): `#` starts a comment line; every
//! other non-blank line holds whitespace-separated fields, 29 in the archive's published
//! list: 1 JobID, 2 SubmitTime (s, often Unix time), 3 WaitTime, 4 RunTime (s), 5 NProcs,
//! 6 AverageCPUTimeUsed, 7 UsedMemory, 8 ReqNProcs, 9 ReqTime, 10 ReqMemory, 11 Status,
//! 12 UserID, 13 GroupID, 14 ExecutableID, 15 QueueID, 16 PartitionID, 17 OrigSiteID,
//! 18 LastRunSiteID, 19 JobStructure, 20 JobStructureParams, 21 UsedNetwork,
//! 22 UsedLocalDiskSpace, 23 UsedResources, 24 ReqPlatform, 25 ReqNetwork,
//! 26 ReqLocalDiskSpace, 27 ReqResources, 28 VOID, 29 ProjectID. `-1` marks a missing
//! value. Published files differ past field 8 (some carry an extra field, several hold
//! names rather than numbers), so a GWF line needs at least the 8 fields read here.
//!
//! Fields read: the job number, the submit time, the run time, and the processors
//! (allocated, else requested). A field read that is not a whole number, or is negative
//! other than `-1`, refuses the file naming its line and field. Jobs without a submit time,
//! run time (or with a run time of 0) or processors are skipped and counted in
//! [`Skipped`].
//!
//! Options ([`ArchiveOptions`]): a window of submit times, hours from the earliest submit
//! time in the file; the sizing of §A.5.1 (node demands divided by 24 for Intrepid,
//! [`Sizing::Divide`]) or of §B.4 (Table B.2 for Intrepid, the nearest power-of-two
//! cores for Grid5k); a runtime multiplier (§A.5.1: ×8 for Intrepid); the filters of
//! §A.5.1 (jobs too large for the datacenter) and §B.4 (single-core jobs); and Green SLAs
//! drawn as §A.5.1 draws them ([`GreenSlas`]).

use std::collections::HashMap;
use std::path::Path;

use rand::RngExt;
use tailor_core::{Location, ReadError, ReadErrorKind};

use crate::input::Job;

/// The Green SLA levels of §A.5.1, percent: each job draws one uniformly.
pub const GREEN_SLA_LEVELS: [f64; 5] = [0.0, 25.0, 50.0, 75.0, 100.0];
/// Jobs longer than this, hours, get a Green SLA of 0% (§A.5.1: predictions reach only 48
/// hours ahead).
pub const GREEN_SLA_HORIZON_H: f64 = 48.0;
/// Seconds per hour.
const SECONDS_PER_HOUR: f64 = 3600.0;
/// Processors beyond this are refused: no real machine has more.
const MAX_PROCESSORS: f64 = 1e9;

/// A trace format of the archives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Parallel Workload Archive's Standard Workload Format.
    Swf,
    /// The Grid Workload Archive's text format.
    Gwf,
}

impl Format {
    /// The format named `swf` or `gwf` (any case).
    pub fn parse(name: &str) -> Result<Format, crate::generate::UnknownName> {
        match name.to_ascii_lowercase().as_str() {
            "swf" => Ok(Format::Swf),
            "gwf" => Ok(Format::Gwf),
            _ => Err(crate::generate::UnknownName::new(
                "trace format",
                name,
                "swf, gwf",
            )),
        }
    }

    /// The fields a line must have at least, and the comment prefix.
    fn layout(self) -> (usize, char) {
        match self {
            Format::Swf => (18, ';'),
            Format::Gwf => (8, '#'),
        }
    }

    /// The names of the fields read, for errors: job, submit, run, allocated, requested,
    /// status.
    fn names(self) -> [&'static str; 6] {
        match self {
            Format::Swf => [
                "job number",
                "submit time",
                "run time",
                "allocated processors",
                "requested processors",
                "status",
            ],
            Format::Gwf => [
                "JobID",
                "SubmitTime",
                "RunTime",
                "NProcs",
                "ReqNProcs",
                "Status",
            ],
        }
    }
}

/// How a job's processors become servers (or VMs: one per server in appendix A).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizing {
    /// ⌈processors / d⌉, at least 1: §A.5.1 (1 for Grid5k, 24 for Intrepid, which shrinks
    /// 40,960 nodes to about 1,680).
    Divide(u32),
    /// §B.4's Table B.2 for Intrepid: up to 512 cores → 4, up to 2048 → 8, up to 4096 →
    /// 16, more → 32; then two VMs (cores) per dual-core server. (The table lists 256, 512,
    /// 1024, 2048 and 4096 by name and maps the others to 32; we read it as ranges.)
    IntrepidTableB2,
    /// §B.4 for Grid5k: the nearest power-of-two cores (NPB jobs need a power of 2 of VMs;
    /// ties go up), two per dual-core server, at least 1 server.
    PowerOfTwoServers,
}

impl Sizing {
    /// The servers a job of `processors` asks for.
    pub fn servers(self, processors: u64) -> u32 {
        let p = processors.max(1);
        match self {
            Sizing::Divide(d) => p.div_ceil(u64::from(d.max(1))).min(u64::from(u32::MAX)) as u32,
            Sizing::IntrepidTableB2 => match p {
                0..=512 => 2,
                513..=2048 => 4,
                2049..=4096 => 8,
                _ => 16,
            },
            Sizing::PowerOfTwoServers => {
                let up = p.next_power_of_two();
                // The power of two below p, when p is nearer to it (in ratio) than to `up`.
                let down = up / 2;
                let cores = if down > 0 && p * p < up * down {
                    down
                } else {
                    up
                };
                (cores / 2).clamp(1, u64::from(u32::MAX)) as u32
            }
        }
    }
}

/// How jobs get their Green SLAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GreenSlas {
    /// Every job 0% (for GreenPar, which has none).
    #[default]
    None,
    /// §A.5.1: uniform over [`GREEN_SLA_LEVELS`], drawn in arrival order from a ChaCha8
    /// stream of this seed; 0% for jobs longer than [`GREEN_SLA_HORIZON_H`], and for jobs
    /// that end after a finite window ([`ArchiveOptions::length_h`]; see
    /// [`assign_green_slas`]).
    Uniform {
        /// The seed.
        seed: u64,
    },
}

/// Gives `jobs`, in their order, Green SLAs as §A.5.1 does: uniform over
/// [`GREEN_SLA_LEVELS`], 0% for jobs longer than [`GREEN_SLA_HORIZON_H`]. Every job draws,
/// so a job's level does not depend on the runtimes of the jobs before it.
///
/// Jobs whose contracted end (arrival + runtime) falls after `window_end_h` also get 0%.
/// This extends the appendix's reason for its rule (no prediction reaches past 48 hours)
/// to the end of the solar data: a 48-hour window comes with 48 hours of solar, so a job
/// arriving at hour 36 that runs 20 hours could not get green energy for its last 8
/// hours under any schedule, and every policy that admits it would pay for slots no
/// policy could meet. `f64::INFINITY` keeps the appendix's rule alone.
pub(crate) fn assign_green_slas(jobs: &mut [Job], rng: &mut tailor_core::Rng, window_end_h: f64) {
    for job in jobs {
        let level = GREEN_SLA_LEVELS[rng.random_range(0..GREEN_SLA_LEVELS.len())];
        job.green_sla = if job.runtime_h > GREEN_SLA_HORIZON_H
            || job.arrival_h + job.runtime_h > window_end_h + 1e-9
        {
            0.0
        } else {
            level
        };
    }
}

/// How a trace's jobs become ours.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveOptions {
    /// The window's start: jobs submitted this many hours or more after the earliest
    /// submit time in the file are kept. Arrivals count from it.
    pub start_h: f64,
    /// The window's length, hours (`f64::INFINITY` for the whole trace): jobs submitted
    /// before `start_h + length_h` are kept. §A.5.1 took 48 hours, §B.4 24.
    pub length_h: f64,
    /// Processors to servers.
    pub sizing: Sizing,
    /// Runtimes are multiplied by this (§A.5.1: 8 for Intrepid, whose jobs run longer on
    /// fewer nodes).
    pub runtime_multiplier: f64,
    /// Jobs with fewer processors are dropped (§B.4 drops Grid5k's one-core jobs: 2).
    pub min_processors: u64,
    /// Jobs with more servers, after sizing, are dropped (§A.5.1 drops Intrepid's very
    /// large jobs: 1,680, the datacenter).
    pub max_servers: Option<u32>,
    /// Green SLAs.
    pub green_slas: GreenSlas,
}

impl Default for ArchiveOptions {
    /// The whole trace, one server per processor, runtimes as recorded, no filters, no
    /// Green SLAs.
    fn default() -> Self {
        ArchiveOptions {
            start_h: 0.0,
            length_h: f64::INFINITY,
            sizing: Sizing::Divide(1),
            runtime_multiplier: 1.0,
            min_processors: 1,
            max_servers: None,
            green_slas: GreenSlas::None,
        }
    }
}

impl ArchiveOptions {
    /// §A.5.1's Intrepid: node demands ÷ 24, runtimes × 8, jobs over the 1,680-server
    /// datacenter dropped, Green SLAs from `seed`, a 48-hour window from `start_h`.
    pub fn intrepid_sla(start_h: f64, seed: u64) -> ArchiveOptions {
        ArchiveOptions {
            start_h,
            length_h: 48.0,
            sizing: Sizing::Divide(24),
            runtime_multiplier: 8.0,
            max_servers: Some(1680),
            green_slas: GreenSlas::Uniform { seed },
            ..ArchiveOptions::default()
        }
    }

    fn check(&self, file: &str) -> Result<(), ReadError> {
        let bad = |what: String| {
            Err(ReadError::new(
                Location::file(file),
                ReadErrorKind::Invalid(format!("option {what}")),
            ))
        };
        if !self.start_h.is_finite() || self.start_h < 0.0 {
            return bad(format!(
                "start_h must be finite and at least 0, found {}",
                self.start_h
            ));
        }
        if self.length_h.is_nan() || self.length_h <= 0.0 {
            return bad(format!(
                "length_h must be positive, found {}",
                self.length_h
            ));
        }
        if !self.runtime_multiplier.is_finite() || self.runtime_multiplier <= 0.0 {
            return bad(format!(
                "runtime_multiplier must be finite and positive, found {}",
                self.runtime_multiplier
            ));
        }
        if self.sizing == Sizing::Divide(0) {
            return bad("sizing divisor must be at least 1".into());
        }
        Ok(())
    }
}

/// Lines of a trace that gave no job, by why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Skipped {
    /// No submit time, run time (or a run time of 0) or processors.
    pub missing: usize,
    /// SWF partial executions (status 2, 3, 4).
    pub partial: usize,
    /// Submitted outside the window.
    pub outside_window: usize,
    /// Dropped by `min_processors` or `max_servers`.
    pub filtered: usize,
}

/// A trace's jobs, in arrival order, and the lines that gave none.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The jobs, ids the trace's job numbers, `app` empty.
    pub jobs: Vec<Job>,
    /// What was left out.
    pub skipped: Skipped,
}

/// Reads the trace at `path`.
pub fn load(path: &Path, format: Format, options: &ArchiveOptions) -> Result<Loaded, ReadError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ReadError::new(Location::file(&file), ReadErrorKind::Io(e.to_string())))?;
    parse(&text, &file, format, options)
}

/// A line's fields that we read.
struct Record {
    line: u64,
    id: String,
    submit_s: f64,
    run_s: f64,
    processors: u64,
}

/// Parses trace text; `file` names it in errors.
pub fn parse(
    text: &str,
    file: &str,
    format: Format,
    options: &ArchiveOptions,
) -> Result<Loaded, ReadError> {
    options.check(file)?;
    let (min_fields, comment) = format.layout();
    let names = format.names();
    let mut skipped = Skipped::default();
    let mut records: Vec<Record> = Vec::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut any_line = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i as u64 + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with(comment) {
            continue;
        }
        any_line = true;
        let fields: Vec<&str> = trimmed.split_whitespace().collect();
        let count_ok = match format {
            Format::Swf => fields.len() == min_fields,
            Format::Gwf => fields.len() >= min_fields,
        };
        if !count_ok {
            let want = match format {
                Format::Swf => "an SWF line has 18 fields".to_string(),
                Format::Gwf => "a GWF line needs at least the 8 fields JobID-ReqNProcs".into(),
            };
            return Err(ReadError::new(
                Location::line(file, line),
                ReadErrorKind::Invalid(format!("{want}, found {}", fields.len())),
            ));
        }
        let at = |k: usize| Location::line(file, line).with_field(names[k]);
        // A whole number at least 0, or -1 (missing: None).
        let number = |k: usize, index: usize| -> Result<Option<f64>, ReadError> {
            let raw = fields[index];
            let v: f64 = raw
                .parse()
                .map_err(|_| ReadError::new(at(k), ReadErrorKind::NotANumber(raw.into())))?;
            if !v.is_finite() {
                return Err(ReadError::new(at(k), ReadErrorKind::NotFinite(raw.into())));
            }
            if v == -1.0 {
                return Ok(None);
            }
            if v < 0.0 || v.fract() != 0.0 {
                return Err(ReadError::new(
                    at(k),
                    ReadErrorKind::Invalid(format!(
                        "must be a whole number at least 0, or -1 for missing; found {raw}"
                    )),
                ));
            }
            Ok(Some(v))
        };
        let id = fields[0].to_string();
        let submit = number(1, 1)?;
        let run = number(2, 3)?;
        let allocated = number(3, 4)?;
        let requested = number(4, 7)?;
        // Only SWF's status is read: it marks partial executions.
        let status = match format {
            Format::Swf => number(5, 10)?,
            Format::Gwf => None,
        };
        for (k, v) in [(3, allocated), (4, requested)] {
            if v.is_some_and(|p| p > MAX_PROCESSORS) {
                return Err(ReadError::new(
                    at(k),
                    ReadErrorKind::Invalid(format!("more than {MAX_PROCESSORS} processors")),
                ));
            }
        }
        if format == Format::Swf && matches!(status, Some(s) if (2.0..=4.0).contains(&s)) {
            skipped.partial += 1;
            continue;
        }
        if let Some(&first_line) = seen.get(&id) {
            return Err(ReadError::new(
                at(0),
                ReadErrorKind::DuplicateId { id, first_line },
            ));
        }
        seen.insert(id.clone(), line);
        let processors = allocated
            .filter(|&p| p > 0.0)
            .or(requested.filter(|&p| p > 0.0));
        match (submit, run.filter(|&r| r > 0.0), processors) {
            (Some(submit_s), Some(run_s), Some(p)) => records.push(Record {
                line,
                id,
                submit_s,
                run_s,
                processors: p as u64,
            }),
            _ => skipped.missing += 1,
        }
    }
    if !any_line {
        return Err(ReadError::new(Location::file(file), ReadErrorKind::NoRows));
    }
    let origin_s = records
        .iter()
        .map(|r| r.submit_s)
        .fold(f64::INFINITY, f64::min);
    let mut jobs = Vec::with_capacity(records.len());
    for r in records {
        let hours = (r.submit_s - origin_s) / SECONDS_PER_HOUR - options.start_h;
        if hours < 0.0 || hours >= options.length_h {
            skipped.outside_window += 1;
            continue;
        }
        let servers = options.sizing.servers(r.processors);
        if r.processors < options.min_processors || options.max_servers.is_some_and(|m| servers > m)
        {
            skipped.filtered += 1;
            continue;
        }
        jobs.push(Job {
            id: r.id,
            arrival_h: hours,
            servers,
            runtime_h: r.run_s / SECONDS_PER_HOUR * options.runtime_multiplier,
            green_sla: 0.0,
            app: String::new(),
            line: r.line,
        });
    }
    // Stable: equal submit times keep the file's order.
    jobs.sort_by(|a, b| a.arrival_h.total_cmp(&b.arrival_h));
    if let GreenSlas::Uniform { seed } = options.green_slas {
        assign_green_slas(
            &mut jobs,
            &mut tailor_core::seeded_rng(seed),
            options.length_h,
        );
    }
    Ok(Loaded { jobs, skipped })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWF: &str = "\
; Version: 2.2
; Computer: a small test machine
;
1 0 10 3600 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1
2 1800 0 7200 -1 -1 -1 48 7200 -1 1 2 1 -1 1 -1 -1 -1
3 3600 5 -1 8 -1 -1 8 7200 -1 5 1 1 -1 1 -1 -1 -1
4 5400 0 100 1 -1 -1 1 7200 -1 2 1 1 -1 1 -1 -1 -1
4 5400 0 900 1 -1 -1 1 7200 -1 1 1 1 -1 1 -1 -1 -1

5 90000 0 60 512 -1 -1 512 7200 -1 1 1 1 -1 1 -1 -1 -1
";

    #[test]
    fn swf_jobs_come_out_in_hours_with_processors_allocated_else_requested() {
        let loaded = parse(SWF, "t.swf", Format::Swf, &ArchiveOptions::default()).unwrap();
        let got: Vec<(&str, f64, u32, f64, u64)> = loaded
            .jobs
            .iter()
            .map(|j| (j.id.as_str(), j.arrival_h, j.servers, j.runtime_h, j.line))
            .collect();
        assert_eq!(
            got,
            vec![
                ("1", 0.0, 4, 1.0, 4),
                ("2", 0.5, 48, 2.0, 5),
                ("4", 1.5, 1, 0.25, 8),
                ("5", 25.0, 512, 1.0 / 60.0, 10),
            ]
        );
        assert_eq!(
            loaded.skipped,
            Skipped {
                missing: 1,
                partial: 1,
                ..Skipped::default()
            }
        );
        assert!(loaded
            .jobs
            .iter()
            .all(|j| j.green_sla == 0.0 && j.app.is_empty()));
    }

    #[test]
    fn the_window_scaling_and_filters_of_the_appendices_apply() {
        let options = ArchiveOptions {
            start_h: 0.25,
            length_h: 24.0,
            max_servers: Some(10),
            ..ArchiveOptions::intrepid_sla(0.0, 7)
        };
        let loaded = parse(SWF, "t.swf", Format::Swf, &options).unwrap();
        // Job 1 is before the window, job 5 after it; job 2's 48 processors are 2 servers
        // (÷ 24), job 4's 1 is 1; runtimes × 8; arrivals from the window's start.
        let got: Vec<(&str, f64, u32, f64)> = loaded
            .jobs
            .iter()
            .map(|j| (j.id.as_str(), j.arrival_h, j.servers, j.runtime_h))
            .collect();
        assert_eq!(got, vec![("2", 0.25, 2, 16.0), ("4", 1.25, 1, 2.0)]);
        assert_eq!(loaded.skipped.outside_window, 2);
        let loaded = parse(
            SWF,
            "t.swf",
            Format::Swf,
            &ArchiveOptions {
                min_processors: 2,
                max_servers: Some(100),
                ..ArchiveOptions::default()
            },
        )
        .unwrap();
        let ids: Vec<&str> = loaded.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, vec!["1", "2"]);
        assert_eq!(loaded.skipped.filtered, 2);
    }

    #[test]
    fn green_slas_are_seeded_levels_and_zero_past_48_hours() {
        let mut text = String::from("; many jobs\n");
        for i in 0..400 {
            let run = if i % 50 == 0 { 200_000 } else { 3600 };
            text += &format!(
                "{} {} 0 {run} 2 -1 -1 2 -1 -1 1 1 1 -1 1 -1 -1 -1\n",
                i + 1,
                i * 60
            );
        }
        let options = ArchiveOptions {
            green_slas: GreenSlas::Uniform { seed: 11 },
            ..ArchiveOptions::default()
        };
        let a = parse(&text, "t.swf", Format::Swf, &options).unwrap();
        let b = parse(&text, "t.swf", Format::Swf, &options).unwrap();
        assert_eq!(a, b);
        let mut counts = [0usize; 5];
        for j in &a.jobs {
            let level = GREEN_SLA_LEVELS
                .iter()
                .position(|&l| l == j.green_sla)
                .unwrap();
            if j.runtime_h > 48.0 {
                assert_eq!(level, 0, "job {}", j.id);
            } else {
                counts[level] += 1;
            }
        }
        // 392 short jobs over 5 levels: each near 78.
        assert!(counts.iter().all(|&c| (50..110).contains(&c)), "{counts:?}");
        let c = parse(
            &text,
            "t.swf",
            Format::Swf,
            &ArchiveOptions {
                green_slas: GreenSlas::Uniform { seed: 12 },
                ..ArchiveOptions::default()
            },
        )
        .unwrap();
        assert_ne!(a, c);
        // In a 5-hour window, jobs that end after hour 5 get 0% too; the rest still draw.
        let window = parse(
            &text,
            "t.swf",
            Format::Swf,
            &ArchiveOptions {
                length_h: 5.0,
                ..options
            },
        )
        .unwrap();
        let (mut past, mut inside) = (0, std::collections::BTreeSet::new());
        for j in &window.jobs {
            if j.arrival_h + j.runtime_h > 5.0 {
                assert_eq!(j.green_sla, 0.0, "job {}", j.id);
                past += 1;
            } else {
                inside.insert(j.green_sla as u32);
            }
        }
        assert!(past >= 60 && inside.len() == 5, "{past} {inside:?}");
    }

    #[test]
    fn gwf_reads_unix_times_from_the_first_submit_and_names_its_fields() {
        let gwf = "\
# JobID SubmitTime WaitTime RunTime NProcs AverageCPUTimeUsed UsedMemory ReqNProcs ...
7 1136070690 0 11 1 4 35848 1 259200 -1 1 U1 G1 -1 Q1 -1 S1 S1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1
8 1136074290 2 7200 -1 -1 -1 64 -1 -1 1 U2 G1 -1 Q1 -1 S2 S2 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1
9\t1136077890\t0\t3600\t16\t-1\t-1\t16
";
        let loaded = parse(gwf, "g.gwf", Format::Gwf, &ArchiveOptions::default()).unwrap();
        let got: Vec<(&str, f64, u32, f64)> = loaded
            .jobs
            .iter()
            .map(|j| (j.id.as_str(), j.arrival_h, j.servers, j.runtime_h))
            .collect();
        assert_eq!(
            got,
            vec![
                ("7", 0.0, 1, 11.0 / 3600.0),
                ("8", 1.0, 64, 2.0),
                ("9", 2.0, 16, 1.0)
            ]
        );
        for (text, want) in [
            (
                "7 1136070690 0 x 1 4 35848 1",
                "g.gwf:2: field `RunTime`: not a number",
            ),
            ("7 1136070690 0 11 -3 4 35848 1", "g.gwf:2: field `NProcs`"),
            (
                "7 1136070690 0 11 1",
                "g.gwf:2: a GWF line needs at least the 8 fields",
            ),
        ] {
            let e = parse(
                &format!("# h\n{text}\n"),
                "g.gwf",
                Format::Gwf,
                &ArchiveOptions::default(),
            )
            .unwrap_err()
            .to_string();
            assert!(e.starts_with(want), "{text}: {e}");
        }
    }

    #[test]
    fn bad_swf_lines_are_refused_naming_file_line_and_field() {
        let ok = "1 0 10 3600 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1";
        for (line, want) in [
            (
                "2 x 10 3600 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1",
                "t.swf:3: field `submit time`: not a number",
            ),
            (
                "2 0 10 3600.5 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1",
                "t.swf:3: field `run time`",
            ),
            (
                "2 0 10 3600 4 -1 -1 -2 7200 -1 1 1 1 -1 1 -1 -1 -1",
                "t.swf:3: field `requested processors`",
            ),
            (
                "2 0 10 3600 inf -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1",
                "t.swf:3: field `allocated processors`: not a finite number",
            ),
            (
                "2 0 10 3600 4 -1 -1 4",
                "t.swf:3: an SWF line has 18 fields, found 8",
            ),
            (
                ok,
                "t.swf:3: field `job number`: duplicate id \"1\", first seen on line 2",
            ),
        ] {
            let e = parse(
                &format!("; header\n{ok}\n{line}\n"),
                "t.swf",
                Format::Swf,
                &ArchiveOptions::default(),
            )
            .unwrap_err()
            .to_string();
            assert!(e.starts_with(want), "{line}: {e}");
        }
        let e = parse(
            "; only comments\n\n",
            "t.swf",
            Format::Swf,
            &ArchiveOptions::default(),
        )
        .unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::NoRows);
        let e = parse(
            ok,
            "t.swf",
            Format::Swf,
            &ArchiveOptions {
                runtime_multiplier: 0.0,
                ..ArchiveOptions::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("t.swf: option runtime_multiplier"), "{e}");
    }

    #[test]
    fn sizing_follows_section_a_5_1_and_table_b_2() {
        let divide: Vec<u32> = [1, 24, 25, 512, 40_960]
            .iter()
            .map(|&p| Sizing::Divide(24).servers(p))
            .collect();
        assert_eq!(divide, vec![1, 1, 2, 22, 1707]);
        let b2: Vec<u32> = [256, 512, 1024, 2048, 4096, 8192, 40_960]
            .iter()
            .map(|&p| Sizing::IntrepidTableB2.servers(p))
            .collect();
        assert_eq!(b2, vec![2, 2, 4, 4, 8, 16, 16]);
        let pow2: Vec<u32> = [1, 2, 3, 5, 6, 11, 12, 32]
            .iter()
            .map(|&p| Sizing::PowerOfTwoServers.servers(p))
            .collect();
        assert_eq!(pow2, vec![1, 1, 2, 2, 4, 4, 8, 16]);
        assert_eq!(Format::parse("SWF"), Ok(Format::Swf));
        assert!(Format::parse("csv")
            .unwrap_err()
            .to_string()
            .contains("swf, gwf"));
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_read_or_refused_never_panics(text in "[ -~\n\t]{0,300}") {
            for format in [Format::Swf, Format::Gwf] {
                let _ = parse(&text, "x", format, &ArchiveOptions::default());
            }
        }

        #[test]
        fn swf_records_come_back_as_jobs(
            rows in proptest::collection::vec((0u32..1_000_000, 1u32..200_000, 1u32..5000), 1..40),
            divisor in 1u32..50,
        ) {
            let text: String = rows
                .iter()
                .enumerate()
                .map(|(i, (submit, run, procs))| {
                    format!("{} {submit} 0 {run} {procs} -1 -1 -1 -1 -1 1 1 1 -1 1 -1 -1 -1\n", i + 1)
                })
                .collect();
            let options = ArchiveOptions { sizing: Sizing::Divide(divisor), ..ArchiveOptions::default() };
            let loaded = parse(&text, "p.swf", Format::Swf, &options).unwrap();
            proptest::prop_assert_eq!(loaded.jobs.len(), rows.len());
            let origin = rows.iter().map(|r| r.0).min().unwrap();
            for job in &loaded.jobs {
                let (submit, run, procs) = rows[job.line as usize - 1];
                proptest::prop_assert_eq!(job.id.clone(), job.line.to_string());
                proptest::prop_assert!((job.arrival_h - f64::from(submit - origin) / 3600.0).abs() < 1e-9);
                proptest::prop_assert!((job.runtime_h - f64::from(run) / 3600.0).abs() < 1e-9);
                proptest::prop_assert_eq!(job.servers, procs.div_ceil(divisor));
            }
            proptest::prop_assert!(loaded.jobs.windows(2).all(|w| w[0].arrival_h <= w[1].arrival_h));
        }
    }
}

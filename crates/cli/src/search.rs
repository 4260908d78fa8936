//! The flags that pick and prepare the search workload, shared by `run`, `profile` and
//! `demo`, with progress on stderr.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use tailor_workloads::search::{
    default_data_dir, prepare, IndexOrigin, PrepareEvent, PreparedSearch, SearchSetup, Shard,
    DEFAULT_QUERIES, DEFAULT_SEGMENTS,
};

use crate::bounds;
use crate::progress::Bar;

/// How the `search` workload is set up.
#[derive(Debug, Clone, Args)]
pub(crate) struct SearchArgs {
    /// Corpus for the search workload: one JSON object per line with `title` and `body`,
    /// or one document per line. Default: GCIDE from Debian's dict-gcide package.
    #[arg(long, value_name = "FILE")]
    corpus: Option<PathBuf>,
    /// Index segments, the units a search is split into.
    #[arg(long, default_value_t = DEFAULT_SEGMENTS, value_parser = bounds::SEGMENTS)]
    segments: usize,
    /// Search queries to generate (kept and reused).
    #[arg(long = "query-count", default_value_t = DEFAULT_QUERIES, value_parser = bounds::COUNT)]
    query_count: usize,
    /// Seed of the generated search queries.
    #[arg(long, default_value_t = 1)]
    query_seed: u64,
    /// Where the index and queries are kept. Default: $TAILOR_DATA, else
    /// $XDG_CACHE_HOME/tailor, else ~/.cache/tailor.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Index one shard of the corpus: I/S is shard I (from 0) of S, the documents at
    /// positions I, I + S, I + 2S, ... (each shard keeps its own index and queries).
    #[arg(long, value_name = "I/S", value_parser = Shard::parse)]
    shard: Option<Shard>,
}

impl SearchArgs {
    /// The shard asked for (`--shard I/S`), if any.
    pub(crate) fn shard(&self) -> Option<Shard> {
        self.shard
    }

    /// These flags as given, for a command that must set up the same search (the
    /// defaults left out).
    pub(crate) fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        let mut push = |flag: &str, value: String| {
            flags.push(flag.to_string());
            flags.push(value);
        };
        if let Some(corpus) = &self.corpus {
            push("--corpus", corpus.display().to_string());
        }
        if self.segments != DEFAULT_SEGMENTS {
            push("--segments", self.segments.to_string());
        }
        if self.query_count != DEFAULT_QUERIES {
            push("--query-count", self.query_count.to_string());
        }
        if self.query_seed != 1 {
            push("--query-seed", self.query_seed.to_string());
        }
        if let Some(dir) = &self.data_dir {
            push("--data-dir", dir.display().to_string());
        }
        if let Some(s) = self.shard {
            push("--shard", format!("{}/{}", s.index, s.count));
        }
        flags
    }

    /// Whether the user gave their own corpus.
    pub(crate) fn has_corpus(&self) -> bool {
        self.corpus.is_some()
    }

    fn setup(&self) -> SearchSetup {
        SearchSetup {
            data_dir: self.data_dir.clone().unwrap_or_else(default_data_dir),
            corpus: self.corpus.clone(),
            segments: self.segments,
            queries: self.query_count,
            seed: self.query_seed,
            shard: self.shard,
        }
    }

    /// Opens or builds the index and reads or generates the queries, saying what it
    /// does on stderr.
    pub(crate) fn prepare(&self) -> anyhow::Result<PreparedSearch> {
        anyhow::ensure!(self.segments >= 1, "--segments must be at least 1");
        anyhow::ensure!(self.query_count >= 1, "--query-count must be at least 1");
        let setup = self.setup();
        let started = Instant::now();
        let mut bar: Option<Bar> = None;
        let prepared = prepare(&setup, &mut |event| match event {
            PrepareEvent::Indexing(done, total) => {
                bar.get_or_insert_with(|| Bar::new("indexing", total))
                    .set(done);
            }
            PrepareEvent::IndexReady(origin, dir) => {
                if let Some(b) = bar.take() {
                    b.finish();
                }
                let how = match origin {
                    IndexOrigin::Reused => "reused".to_string(),
                    IndexOrigin::Built => {
                        format!("built in {:.1} s", started.elapsed().as_secs_f64())
                    }
                    IndexOrigin::Rebuilt(why) => format!(
                        "rebuilt in {:.1} s (the old one: {why})",
                        started.elapsed().as_secs_f64()
                    ),
                };
                eprintln!("tailor: index {} {how}", dir.display());
            }
            PrepareEvent::QueriesReady(generated, path) => {
                let how = if generated { "generated" } else { "reused" };
                eprintln!("tailor: queries {} {how}", path.display());
            }
        })?;
        Ok(prepared)
    }
}

//! Getting a search workload ready: corpus, index and queries, each made once and kept in
//! a data directory for the next run.

use std::path::PathBuf;
use std::sync::Arc;

use super::corpus::{read_corpus_file, read_gcide, CorpusError};
use super::index::{IndexError, IndexOrigin, SearchIndex};
use super::queries::{generate_queries, read_queries, write_queries, QuerySpec};

/// Segments per index unless told otherwise: enough that two threads stay balanced to
/// the end of a query (16 gave the best degree-2 speedup in the measurements).
pub const DEFAULT_SEGMENTS: usize = 16;

/// Queries generated unless told otherwise.
pub const DEFAULT_QUERIES: usize = 2000;

/// What to prepare.
#[derive(Debug, Clone)]
pub struct SearchSetup {
    /// Where the index and queries are kept.
    pub data_dir: PathBuf,
    /// A corpus file (JSON lines or one document per line); `None` means GCIDE.
    pub corpus: Option<PathBuf>,
    /// Index segments.
    pub segments: usize,
    /// Queries to generate.
    pub queries: usize,
    /// The queries' seed.
    pub seed: u64,
    /// One shard of the corpus instead of all of it (fan-out, issue #24).
    pub shard: Option<Shard>,
}

/// One shard of a corpus split `count` ways: the documents at positions `index`,
/// `index + count`, `index + 2 count`, ... of the corpus, so the shards partition it and
/// each gets a like mix of documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: usize,
    /// How many shards the corpus is split into.
    pub count: usize,
}

impl Shard {
    /// The most shards a corpus may be split into.
    pub const MAX_COUNT: usize = 10_000;

    /// Parses `I/S`: shard I (from 0) of S.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let form = format!("expected I/S, shard I (from 0) of S shards, found {text:?}");
        let (i, s) = text.split_once('/').ok_or_else(|| form.clone())?;
        let (Ok(index), Ok(count)) = (i.trim().parse::<usize>(), s.trim().parse::<usize>()) else {
            return Err(form);
        };
        if count == 0 || count > Self::MAX_COUNT {
            return Err(format!(
                "S, the number of shards, must be from 1 to {}, found {count}",
                Self::MAX_COUNT
            ));
        }
        if index >= count {
            return Err(format!(
                "I, the shard, must be from 0 to {} for {count} shards, found {index}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// Whether the document at `position` of the corpus belongs to this shard.
    pub fn holds(&self, position: usize) -> bool {
        position % self.count == self.index
    }
}

impl SearchSetup {
    /// The defaults: GCIDE, [`DEFAULT_SEGMENTS`], [`DEFAULT_QUERIES`], seed 1, in
    /// [`default_data_dir`].
    pub fn new() -> SearchSetup {
        SearchSetup {
            data_dir: default_data_dir(),
            corpus: None,
            segments: DEFAULT_SEGMENTS,
            queries: DEFAULT_QUERIES,
            seed: 1,
            shard: None,
        }
    }

    /// A short name for the corpus, used in file names: `gcide`, or the file's stem and
    /// size, with `-shardIofS` for a shard.
    fn corpus_name(&self) -> Result<String, SearchError> {
        let whole = self.whole_corpus_name()?;
        Ok(match self.shard {
            Some(s) => format!("{whole}-shard{}of{}", s.index, s.count),
            None => whole,
        })
    }

    fn whole_corpus_name(&self) -> Result<String, SearchError> {
        match &self.corpus {
            None => Ok("gcide".into()),
            Some(path) => {
                let len = std::fs::metadata(path)
                    .map_err(|source| SearchError::Io {
                        path: path.clone(),
                        source,
                    })?
                    .len();
                let stem: String = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "corpus".into())
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                Ok(format!("{stem}-{len}"))
            }
        }
    }

    /// The index directory.
    pub fn index_dir(&self) -> Result<PathBuf, SearchError> {
        Ok(self.data_dir.join(format!(
            "index-{}-{}seg",
            self.corpus_name()?,
            self.segments
        )))
    }

    /// The queries file.
    pub fn queries_path(&self) -> Result<PathBuf, SearchError> {
        Ok(self.data_dir.join(format!(
            "queries-{}-{}seg-{}q-seed{}-mix{}.jsonl",
            self.corpus_name()?,
            self.segments,
            self.queries,
            self.seed,
            super::queries::MIX_VERSION
        )))
    }
}

impl Default for SearchSetup {
    fn default() -> Self {
        SearchSetup::new()
    }
}

/// `$TAILOR_DATA`, else `$XDG_CACHE_HOME/tailor`, else `$HOME/.cache/tailor`, else
/// `./tailor-data`.
pub fn default_data_dir() -> PathBuf {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("TAILOR_DATA")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("tailor")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("tailor")))
        .unwrap_or_else(|| PathBuf::from("tailor-data"))
}

/// Why a search workload could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The corpus could not be read.
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    /// The index could not be built or opened.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What preparing reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum PrepareEvent {
    /// Indexing: documents done, documents in all.
    Indexing(u64, u64),
    /// The index is ready, and how it came to be.
    IndexReady(IndexOrigin, PathBuf),
    /// The queries are ready: generated (true) or reused, and where.
    QueriesReady(bool, PathBuf),
}

/// A ready search workload.
#[derive(Debug)]
pub struct PreparedSearch {
    /// The index.
    pub index: Arc<SearchIndex>,
    /// The queries.
    pub queries: Vec<QuerySpec>,
    /// Where the queries are kept.
    pub queries_path: PathBuf,
}

/// An exclusive lock on `index_dir`'s lock file (`index_dir.lock`, beside it), waited for.
fn take_turn(index_dir: &std::path::Path) -> Result<std::fs::File, SearchError> {
    use fs4::fs_std::FileExt;
    let mut path = index_dir.as_os_str().to_owned();
    path.push(".lock");
    let path = PathBuf::from(path);
    let io = |source| SearchError::Io {
        path: path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    file.lock_exclusive().map_err(io)?;
    Ok(file)
}

/// Opens or builds the index and reads or generates the queries.
pub fn prepare(
    setup: &SearchSetup,
    events: &mut dyn FnMut(PrepareEvent),
) -> Result<PreparedSearch, SearchError> {
    std::fs::create_dir_all(&setup.data_dir).map_err(|source| SearchError::Io {
        path: setup.data_dir.clone(),
        source,
    })?;
    let dir = setup.index_dir()?;
    let name = setup.corpus_name()?;
    // Processes that prepare the same index (two replicas of a shard started together)
    // take turns: the first builds it, the next waits here, then finds it built. Held
    // until this function returns; the system drops it if the process dies.
    let _turn = take_turn(&dir)?;
    // The corpus is read only when the index must be built.
    let mut read_error = None;
    let corpus = setup.corpus.clone();
    let shard = setup.shard;
    let (index, origin) = {
        let mut indexing = |done, total| events(PrepareEvent::Indexing(done, total));
        let read = || {
            let docs = match &corpus {
                None => read_gcide(),
                Some(path) => read_corpus_file(path),
            };
            let docs = docs.map(|docs| match shard {
                Some(shard) => {
                    let all = docs.len();
                    let held: Vec<_> = docs
                        .into_iter()
                        .enumerate()
                        .filter(|(position, _)| shard.holds(*position))
                        .map(|(_, doc)| doc)
                        .collect();
                    (held, Some(all))
                }
                None => (docs, None),
            });
            let (docs, all) = docs.map_err(|e| {
                let text = e.to_string();
                read_error = Some(e);
                text
            })?;
            match (shard, all) {
                (Some(shard), Some(all)) if docs.is_empty() => Err(format!(
                    "shard {}/{}: the corpus has {all} documents, too few for {} shards",
                    shard.index, shard.count, shard.count
                )),
                _ => Ok(docs),
            }
        };
        match SearchIndex::open_or_build(&dir, &name, setup.segments, read, &mut indexing) {
            Ok(x) => x,
            Err(e) => {
                return Err(match read_error {
                    Some(corpus_error) => SearchError::Corpus(corpus_error),
                    None => SearchError::Index(e),
                })
            }
        }
    };
    events(PrepareEvent::IndexReady(origin, dir));
    let path = setup.queries_path()?;
    let (queries, generated) = match read_queries(&path) {
        Ok(q) if q.len() == setup.queries => (q, false),
        _ => {
            let q = generate_queries(&index, setup.queries, setup.seed)?;
            write_queries(&path, &q).map_err(|source| SearchError::Io {
                path: path.clone(),
                source,
            })?;
            (q, true)
        }
    };
    events(PrepareEvent::QueriesReady(generated, path.clone()));
    Ok(PreparedSearch {
        index: Arc::new(index),
        queries,
        queries_path: path,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::search::{generated_corpus, SearchJob};

    #[test]
    fn shards_parse_with_errors_that_name_the_part() {
        assert_eq!(Shard::parse("1/3"), Ok(Shard { index: 1, count: 3 }));
        assert_eq!(Shard::parse("0/1"), Ok(Shard { index: 0, count: 1 }));
        for (bad, says) in [
            ("3/3", "from 0 to 2"),
            ("0/0", "from 1 to"),
            ("1", "expected I/S"),
            ("a/2", "expected I/S"),
            ("-1/2", "expected I/S"),
            ("0/10001", "from 1 to 10000"),
        ] {
            let e = Shard::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_shards_partition_the_corpus_and_every_query_s_matches() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("corpus.jsonl");
        let mut f = std::fs::File::create(&corpus).unwrap();
        for doc in generated_corpus(600, 3) {
            let line = serde_json::json!({"title": doc.title, "body": doc.body});
            writeln!(f, "{line}").unwrap();
        }
        drop(f);
        let setup = |shard| SearchSetup {
            data_dir: dir.path().join("data"),
            corpus: Some(corpus.clone()),
            segments: 2,
            queries: 40,
            seed: 5,
            shard,
        };
        let whole = prepare(&setup(None), &mut |_| {}).unwrap();
        let shards: Vec<PreparedSearch> = (0..3)
            .map(|index| prepare(&setup(Some(Shard { index, count: 3 })), &mut |_| {}).unwrap())
            .collect();
        let docs = |p: &PreparedSearch| p.index.searcher().num_docs();
        assert_eq!(docs(&whole), 600);
        assert!(shards.iter().all(|s| docs(s) == 200));
        // Each shard keeps its own index and queries beside the whole corpus's.
        assert_ne!(shards[0].queries_path, whole.queries_path);
        assert_ne!(shards[0].queries_path, shards[1].queries_path);
        // The whole corpus's queries match as many documents as the shards' together.
        let count = |p: &PreparedSearch, q: &crate::search::QuerySpec| {
            SearchJob::new(p.index.clone(), q.build(&p.index).unwrap(), None)
                .with_limits(q.limits())
                .search_with_tantivy(None)
                .unwrap()
                .count
        };
        let mut matched = 0;
        for q in &whole.queries {
            let total = count(&whole, q);
            let parts: usize = shards.iter().map(|s| count(s, q)).sum();
            assert_eq!(total, parts, "{}", q.label());
            matched += usize::from(total > 0);
        }
        assert!(matched > 10, "only {matched} queries match anything");
    }

    #[test]
    fn a_shard_with_no_documents_is_refused_naming_the_shard() {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("tiny.txt");
        std::fs::write(&corpus, "one document\nanother document\n").unwrap();
        let setup = SearchSetup {
            data_dir: dir.path().join("data"),
            corpus: Some(corpus),
            segments: 1,
            queries: 5,
            seed: 1,
            shard: Some(Shard { index: 4, count: 5 }),
        };
        let e = prepare(&setup, &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("shard 4/5") && e.contains("2 documents"), "{e}");
    }

    #[test]
    fn two_preparations_of_one_empty_data_directory_both_succeed() {
        // Two replicas of a shard started together (issue #39): without the lock one
        // failed with tantivy's LockBusy.
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("corpus.jsonl");
        let mut f = std::fs::File::create(&corpus).unwrap();
        for doc in generated_corpus(2_000, 7) {
            let line = serde_json::json!({"title": doc.title, "body": doc.body});
            writeln!(f, "{line}").unwrap();
        }
        drop(f);
        let setup = SearchSetup {
            data_dir: dir.path().join("data"),
            corpus: Some(corpus),
            segments: 4,
            queries: 20,
            seed: 2,
            shard: Some(Shard { index: 1, count: 2 }),
        };
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| prepare(&setup, &mut |_| {}).map(|p| p.index.searcher().num_docs()))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in &results {
            assert_eq!(r.as_ref().map_err(|e| e.to_string()), Ok(&1_000));
        }
    }
}

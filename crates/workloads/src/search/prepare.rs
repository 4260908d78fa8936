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
        }
    }

    /// A short name for the corpus, used in file names: `gcide`, or the file's stem and
    /// size.
    fn corpus_name(&self) -> Result<String, SearchError> {
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
    // The corpus is read only when the index must be built.
    let mut read_error = None;
    let corpus = setup.corpus.clone();
    let (index, origin) = {
        let mut indexing = |done, total| events(PrepareEvent::Indexing(done, total));
        let read = || {
            let docs = match &corpus {
                None => read_gcide(),
                Some(path) => read_corpus_file(path),
            };
            docs.map_err(|e| {
                let text = e.to_string();
                read_error = Some(e);
                text
            })
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

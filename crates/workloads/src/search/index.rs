//! The tantivy index the search workload queries: built once into a fixed number of
//! segments (the units of intra-request parallelism, as index segments are in the FM
//! paper's Lucene service), checked on every open, and rebuilt when corrupt or partial.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::query::{Query, QueryParser};
use tantivy::schema::{Field, Schema, STORED, TEXT};
use tantivy::{doc, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument};

use super::corpus::Doc;

/// The file written last, after the final commit: an index without it (or with one that
/// disagrees with the index) is partial and gets rebuilt.
const MANIFEST: &str = "tailor-index.json";

/// Bumped whenever the schema or the way segments are cut changes.
const FORMAT_VERSION: u32 = 1;

/// What a complete index holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Manifest {
    version: u32,
    corpus: String,
    documents: u64,
    segments: usize,
}

/// Why an index could not be built or opened.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// tantivy failed.
    #[error("index {path}: {source}")]
    Tantivy {
        /// The index directory.
        path: PathBuf,
        /// tantivy's error.
        source: tantivy::TantivyError,
    },
    /// The file system failed.
    #[error("index {path}: {source}")]
    Io {
        /// The index directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Bad arguments.
    #[error("{0}")]
    Invalid(String),
}

/// An open index with its searcher.
pub struct SearchIndex {
    searcher: Searcher,
    // Kept so the searcher's segments stay loaded.
    _reader: IndexReader,
    title: Field,
    body: Field,
    dir: PathBuf,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("dir", &self.dir)
            .field("segments", &self.segments())
            .field("documents", &self.searcher.num_docs())
            .finish()
    }
}

/// What `open_or_build` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexOrigin {
    /// A complete index was already there.
    Reused,
    /// There was none.
    Built,
    /// One was there but partial, corrupt or of other settings (the reason); it was
    /// rebuilt.
    Rebuilt(String),
}

fn schema() -> (Schema, Field, Field) {
    let mut builder = Schema::builder();
    let title = builder.add_text_field("title", TEXT | STORED);
    let body = builder.add_text_field("body", TEXT | STORED);
    (builder.build(), title, body)
}

impl SearchIndex {
    /// Opens the index in `dir` if it is complete, holds `corpus` (a name for the
    /// documents) and has `segments` segments; otherwise (re)builds it from `docs`,
    /// calling `progress(documents indexed, documents in all)` as it goes. `docs` is only
    /// called when a build is needed.
    pub fn open_or_build(
        dir: &Path,
        corpus: &str,
        segments: usize,
        docs: impl FnOnce() -> Result<Vec<Doc>, String>,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(SearchIndex, IndexOrigin), IndexError> {
        if segments == 0 {
            return Err(IndexError::Invalid("--segments must be at least 1".into()));
        }
        let origin = if dir.exists() {
            match Self::open_checked(dir, corpus, segments) {
                Ok(index) => return Ok((index, IndexOrigin::Reused)),
                Err(reason) => {
                    std::fs::remove_dir_all(dir).map_err(|source| IndexError::Io {
                        path: dir.to_path_buf(),
                        source,
                    })?;
                    IndexOrigin::Rebuilt(reason)
                }
            }
        } else {
            IndexOrigin::Built
        };
        let docs = docs().map_err(IndexError::Invalid)?;
        Self::build(dir, corpus, segments, &docs, progress)?;
        let index = Self::open_checked(dir, corpus, segments).map_err(|reason| {
            IndexError::Invalid(format!(
                "index {}: freshly built but unusable: {reason}",
                dir.display()
            ))
        })?;
        Ok((index, origin))
    }

    /// Builds the index: `segments` commits of consecutive documents from one indexing
    /// thread with merging off, so each commit is one segment; the manifest goes last.
    fn build(
        dir: &Path,
        corpus: &str,
        segments: usize,
        docs: &[Doc],
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(), IndexError> {
        if docs.len() < segments {
            return Err(IndexError::Invalid(format!(
                "--segments {segments} is more than the corpus's {} documents",
                docs.len()
            )));
        }
        let tv = |source| IndexError::Tantivy {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|source| IndexError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let (schema, title, body) = schema();
        let index = Index::create_in_dir(dir, schema).map_err(tv)?;
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 200_000_000).map_err(tv)?;
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        let total = docs.len() as u64;
        let per = docs.len().div_ceil(segments);
        let mut done = 0u64;
        for chunk in docs.chunks(per) {
            for d in chunk {
                writer
                    .add_document(doc!(title => d.title.as_str(), body => d.body.as_str()))
                    .map_err(tv)?;
                done += 1;
                if done.is_multiple_of(1000) {
                    progress(done, total);
                }
            }
            writer.commit().map_err(tv)?;
        }
        writer.wait_merging_threads().map_err(tv)?;
        progress(total, total);
        let manifest = Manifest {
            version: FORMAT_VERSION,
            corpus: corpus.to_string(),
            documents: total,
            segments: docs.chunks(per).len(),
        };
        let text = serde_json::to_string_pretty(&manifest).expect("a manifest serializes");
        std::fs::write(dir.join(MANIFEST), text).map_err(|source| IndexError::Io {
            path: dir.to_path_buf(),
            source,
        })
    }

    /// Opens `dir` and checks it against its manifest and tantivy's checksums.
    fn open_checked(dir: &Path, corpus: &str, segments: usize) -> Result<SearchIndex, String> {
        let text = std::fs::read_to_string(dir.join(MANIFEST))
            .map_err(|e| format!("no manifest ({e}): a build did not finish"))?;
        let manifest: Manifest =
            serde_json::from_str(&text).map_err(|e| format!("unreadable manifest: {e}"))?;
        if manifest.version != FORMAT_VERSION || manifest.corpus != corpus {
            return Err(format!(
                "it holds {:?} (format {}), not {corpus:?} (format {FORMAT_VERSION})",
                manifest.corpus, manifest.version
            ));
        }
        let index = Index::open_in_dir(dir).map_err(|e| format!("tantivy cannot open it: {e}"))?;
        let damaged = index
            .validate_checksum()
            .map_err(|e| format!("checksums: {e}"))?;
        if !damaged.is_empty() {
            return Err(format!("{} files fail their checksums", damaged.len()));
        }
        let (_, title, body) = schema();
        if index.schema() != schema().0 {
            return Err("its schema is not tailor's".into());
        }
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| format!("tantivy cannot read it: {e}"))?;
        let searcher = reader.searcher();
        let found = searcher.segment_readers().len();
        if searcher.num_docs() != manifest.documents || found != manifest.segments {
            return Err(format!(
                "it has {} documents in {found} segments, its manifest says {} in {}",
                searcher.num_docs(),
                manifest.documents,
                manifest.segments
            ));
        }
        if segments != found && manifest.documents >= segments as u64 {
            return Err(format!(
                "it has {found} segments, {segments} were asked for"
            ));
        }
        Ok(SearchIndex {
            searcher,
            _reader: reader,
            title,
            body,
            dir: dir.to_path_buf(),
        })
    }

    /// The searcher (cheap to clone).
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// The title field.
    pub fn title(&self) -> Field {
        self.title
    }

    /// The body field.
    pub fn body(&self) -> Field {
        self.body
    }

    /// The number of segments.
    pub fn segments(&self) -> usize {
        self.searcher.segment_readers().len()
    }

    /// The document frequency of every body term across the index, for picking query
    /// terms by frequency class. Terms that are not plain lowercase letters are skipped.
    pub fn body_term_frequencies(&self) -> Result<HashMap<String, u64>, IndexError> {
        let tv = |source| IndexError::Tantivy {
            path: self.dir.clone(),
            source,
        };
        let io = |source| IndexError::Io {
            path: self.dir.clone(),
            source,
        };
        let mut freq: HashMap<String, u64> = HashMap::new();
        for segment in self.searcher.segment_readers() {
            let inverted = segment.inverted_index(self.body).map_err(tv)?;
            let mut stream = inverted.terms().stream().map_err(io)?;
            while stream.advance() {
                let Ok(word) = std::str::from_utf8(stream.key()) else {
                    continue;
                };
                if word.len() >= 2 && word.bytes().all(|b| b.is_ascii_lowercase()) {
                    *freq.entry(word.to_string()).or_default() +=
                        u64::from(stream.value().doc_freq);
                }
            }
        }
        Ok(freq)
    }

    /// Parses `text` in tantivy's query language over the body field (`title:word`
    /// reaches titles, `body:/ab.*/` is a regular expression). With `fuzzy` 1 or 2, every
    /// body term matches within that many edits, transpositions counting as one. A query
    /// over the cost bound of [`QueryCost`](super::QueryCost) is refused, naming the limit.
    pub fn parse_query(&self, text: &str, fuzzy: u8) -> Result<Box<dyn Query>, String> {
        if let Some(cost) = super::QueryCost::of(text) {
            cost.check(fuzzy)?;
        }
        let mut parser = QueryParser::for_index(self.searcher.index(), vec![self.body]);
        parser.allow_regexes();
        if fuzzy > 0 {
            parser.set_field_fuzzy(self.body, false, fuzzy, true);
        }
        parser.parse_query(text).map_err(|e| e.to_string())
    }

    /// Loads a stored document.
    pub fn doc(&self, address: tantivy::DocAddress) -> tantivy::Result<TantivyDocument> {
        self.searcher.doc(address)
    }
}

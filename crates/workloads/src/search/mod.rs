//! The search workload: tantivy over a real English corpus, each request split across
//! index segments as the FM paper's Lucene service is (Haque et al., ASPLOS 2015, §5).

mod collector_job;
mod corpus;
mod cost;
mod index;
mod job;
mod prepare;
mod queries;

pub use collector_job::CollectorJob;
pub use corpus::{
    generated_corpus, read_corpus_file, read_dictd, read_gcide, CorpusError, Doc, GCIDE_DICT,
    GCIDE_INDEX,
};
pub use cost::{
    check_query, QueryCost, MAX_AUTOMATON_TERMS, MAX_FUZZY_WORDS, MAX_PATTERN_BYTES, QUERY_FIELDS,
};
pub use index::{IndexError, IndexOrigin, SearchIndex};
pub use job::{Hit, SearchJob, SearchResult, SegmentPart, TOP_K};
pub use prepare::{
    default_data_dir, prepare, PrepareEvent, PreparedSearch, SearchError, SearchSetup, Shard,
    DEFAULT_QUERIES, DEFAULT_SEGMENTS,
};
pub use queries::{generate_queries, read_queries, write_queries, QuerySpec};

//! A search request as a [`Job`]: each unit searches one segment with the query's shared
//! weight, and the merge combines the per-segment top-k and counts, then loads the hits'
//! stored documents and their snippets, the per-request work a real engine does.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use tantivy::collector::{Collector, Count, SegmentCollector, TopDocs};
use tantivy::query::{EnableScoring, Query, Weight};
use tantivy::schema::Value;
use tantivy::snippet::SnippetGenerator;
use tantivy::{DocAddress, Executor, Score, TantivyDocument};

use tailor_core::Job;

use super::index::SearchIndex;

/// How many hits a search returns.
pub const TOP_K: usize = 10;

/// One hit of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// BM25 score.
    pub score: Score,
    /// Where the document is.
    pub address: DocAddress,
    /// Its title.
    pub title: String,
    /// A highlighted fragment of its body (empty for queries without plain terms).
    pub snippet: String,
}

/// What a search returns.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    /// Matching documents in all.
    pub count: usize,
    /// The best `k` (default [`TOP_K`]), best first.
    pub hits: Vec<Hit>,
}

/// The collector every search uses: the top `k` by score, and the count.
fn collector(k: usize) -> impl Collector<Fruit = (Vec<(Score, DocAddress)>, usize)> {
    (TopDocs::with_limit(k.max(1)).order_by_score(), Count)
}

/// One segment's part of a search: the collector's segment fruit, kept opaque.
pub type SegmentPart = Result<Box<dyn Any + Send>, String>;

/// Merges the segments' fruits, in segment order.
fn merge_parts<C: Collector>(collector: &C, parts: Vec<SegmentPart>) -> Result<C::Fruit, String> {
    let fruits = parts
        .into_iter()
        .map(|p| {
            p?.downcast::<<C::Child as SegmentCollector>::Fruit>()
                .map(|b| *b)
                .map_err(|_| "a segment's result has the wrong type".to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    collector.merge_fruits(fruits).map_err(|e| e.to_string())
}

/// Loads and highlights the stored documents of the first `load` candidates (as a
/// re-ranking stage reads them), and returns the best `k` with titles and snippets.
fn finish(
    index: &SearchIndex,
    query: &dyn Query,
    top: Vec<(Score, DocAddress)>,
    count: usize,
    (load, k): (usize, usize),
) -> Result<SearchResult, String> {
    let searcher = index.searcher();
    let snippets =
        SnippetGenerator::create(searcher, query, index.body()).map_err(|e| e.to_string())?;
    // The candidates past the top k: loaded and highlighted, as features for re-ranking.
    for &(_, address) in top.iter().take(load).skip(k) {
        let doc: TantivyDocument = searcher.doc(address).map_err(|e| e.to_string())?;
        std::hint::black_box(snippets.snippet_from_doc(&doc));
    }
    let hits = top
        .into_iter()
        .take(k)
        .map(|(score, address)| {
            let doc: TantivyDocument = searcher.doc(address).map_err(|e| e.to_string())?;
            let title = doc
                .get_first(index.title())
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string();
            Ok(Hit {
                score,
                address,
                title,
                snippet: snippets.snippet_from_doc(&doc).to_html(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(SearchResult { count, hits })
}

/// A search request whose units are the index's segments. The query's weight is built
/// once, by the first thread to need it, and shared by every thread of the request.
pub struct SearchJob {
    index: Arc<SearchIndex>,
    query: Box<dyn Query>,
    weight: OnceLock<Result<Box<dyn Weight>, String>>,
    demand_hint_ms: Option<f64>,
    executor: Option<Arc<Executor>>,
    /// Candidates collected, and stored documents loaded.
    limits: (usize, usize),
    /// Hits returned.
    k: usize,
}

impl std::fmt::Debug for SearchJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchJob")
            .field("query", &self.query)
            .finish()
    }
}

impl SearchJob {
    /// A request for `query` over `index`; `demand_hint_ms` is its profiled sequential
    /// time, for clairvoyant policies.
    pub fn new(
        index: Arc<SearchIndex>,
        query: Box<dyn Query>,
        demand_hint_ms: Option<f64>,
    ) -> Self {
        SearchJob {
            index,
            query,
            weight: OnceLock::new(),
            demand_hint_ms,
            executor: None,
            limits: (TOP_K, TOP_K),
            k: TOP_K,
        }
    }

    /// Returns the best `k` hits (at least 1) instead of [`TOP_K`], collecting and
    /// loading at least that many.
    pub fn with_k(mut self, k: usize) -> Self {
        self.k = k.max(1);
        self
    }

    /// (candidates collected, documents loaded, hits returned).
    fn sizes(&self) -> (usize, usize, usize) {
        let k = self.k;
        (self.limits.0.max(k), self.limits.1.max(k), k)
    }

    /// Collects the best `collect` candidates and loads the stored documents of the first
    /// `load` of them before returning the best [`TOP_K`] (default: `TOP_K` each).
    pub fn with_limits(mut self, (collect, load): (usize, usize)) -> Self {
        self.limits = (collect.max(TOP_K), load);
        self
    }

    /// Runs the whole search on tantivy's own executor, inside the merge, instead of as
    /// units: the `tantivy-executor-N` peer, FIX-N as tantivy users run it today. Run
    /// it under SEQ, so each request holds one worker while the executor's threads
    /// search its segments.
    pub fn on_executor(mut self, executor: Arc<Executor>) -> Self {
        self.executor = Some(executor);
        self
    }

    fn weight(&self) -> Result<&dyn Weight, String> {
        self.weight
            .get_or_init(|| {
                self.query
                    .weight(EnableScoring::enabled_from_searcher(self.index.searcher()))
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map(|w| w.as_ref())
            .map_err(Clone::clone)
    }

    /// The same search run by tantivy itself: `Searcher::search` (one thread), or
    /// `search_with_executor` on `executor` (tantivy's own multi-threaded segment search).
    pub fn search_with_tantivy(&self, executor: Option<&Executor>) -> Result<SearchResult, String> {
        let searcher = self.index.searcher();
        let (collect, load, k) = self.sizes();
        let c = collector(collect);
        let (top, count) = match executor {
            None => searcher.search(self.query.as_ref(), &c),
            Some(executor) => searcher.search_with_executor(
                self.query.as_ref(),
                &c,
                executor,
                EnableScoring::enabled_from_searcher(searcher),
            ),
        }
        .map_err(|e| e.to_string())?;
        finish(&self.index, self.query.as_ref(), top, count, (load, k))
    }
}

impl Job for SearchJob {
    type Part = SegmentPart;
    type Output = Result<SearchResult, String>;

    fn units(&self) -> usize {
        if self.executor.is_some() {
            0
        } else {
            self.index.segments()
        }
    }

    fn run(&self, unit: usize) -> SegmentPart {
        let weight = self.weight()?;
        let reader = self.index.searcher().segment_reader(unit as u32);
        let fruit = collector(self.sizes().0)
            .collect_segment(weight, unit as u32, reader)
            .map_err(|e| e.to_string())?;
        Ok(Box::new(fruit))
    }

    fn merge(&self, parts: Vec<SegmentPart>) -> Self::Output {
        if let Some(executor) = &self.executor {
            return self.search_with_tantivy(Some(executor));
        }
        let (collect, load, k) = self.sizes();
        let (top, count) = merge_parts(&collector(collect), parts)?;
        finish(&self.index, self.query.as_ref(), top, count, (load, k))
    }

    fn demand_hint_ms(&self) -> Option<f64> {
        self.demand_hint_ms
    }
}

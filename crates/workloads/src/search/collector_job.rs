//! Any tantivy collector as a [`Job`]: each unit collects one segment, the merge combines
//! the segments' fruits, so a service's own search (its collector, schema and index) runs
//! under a tailor policy with FM's incremental parallelism (issue 41's embedding kit).
//!
//! The FM paper parallelizes Lucene's search the same way, one segment per work item
//! (Haque et al., ASPLOS 2015, §5). [`super::SearchJob`] is tailor's own search workload
//! (top k, count, stored documents and snippets); this is the general form.

use std::sync::OnceLock;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::query::{EnableScoring, Query, Weight};
use tantivy::Searcher;

use tailor_core::Job;

/// A search of `query` over `searcher`'s segments with `collector`; its output is the
/// collector's merged fruit, as `Searcher::search` would return it. The query's weight is
/// built once, by the first thread to need it, and shared by the request's threads.
///
/// ```
/// use tailor_runtime::{Policy, Runtime, RuntimeConfig};
/// use tailor_workloads::search::CollectorJob;
/// use tantivy::collector::Count;
/// use tantivy::query::TermQuery;
/// use tantivy::schema::{IndexRecordOption, Schema, TEXT};
/// use tantivy::{doc, Index, Term};
///
/// let mut schema = Schema::builder();
/// let body = schema.add_text_field("body", TEXT);
/// let index = Index::create_in_ram(schema.build());
/// let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
/// for words in ["red fox", "red hen", "blue jay"] {
///     writer.add_document(doc!(body => words)).unwrap();
///     writer.commit().unwrap(); // one segment each: three units
/// }
/// let searcher = index.reader().unwrap().searcher();
/// let query = TermQuery::new(Term::from_field_text(body, "red"), IndexRecordOption::Basic);
/// let runtime = Runtime::start(RuntimeConfig::new(2, Policy::Fix { degree: 2 })).unwrap();
/// let job = CollectorJob::new(searcher, Box::new(query), Count);
/// assert_eq!(runtime.submit(job).unwrap().wait().unwrap().output, Ok(2));
/// ```
pub struct CollectorJob<C: Collector> {
    searcher: Searcher,
    query: Box<dyn Query>,
    collector: C,
    weight: OnceLock<Result<Box<dyn Weight>, String>>,
    demand_hint_ms: Option<f64>,
}

impl<C: Collector> std::fmt::Debug for CollectorJob<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollectorJob")
            .field("query", &self.query)
            .field("segments", &self.searcher.segment_readers().len())
            .finish()
    }
}

impl<C: Collector> CollectorJob<C> {
    /// A request for `query` over `searcher` (keep the searcher of one reader
    /// generation for a request: its segments are the units).
    pub fn new(searcher: Searcher, query: Box<dyn Query>, collector: C) -> Self {
        CollectorJob {
            searcher,
            query,
            collector,
            weight: OnceLock::new(),
            demand_hint_ms: None,
        }
    }

    /// Its expected sequential time, for clairvoyant policies.
    pub fn with_demand_hint_ms(mut self, ms: f64) -> Self {
        self.demand_hint_ms = Some(ms);
        self
    }

    fn weight(&self) -> Result<&dyn Weight, String> {
        self.weight
            .get_or_init(|| {
                let scoring = if self.collector.requires_scoring() {
                    EnableScoring::enabled_from_searcher(&self.searcher)
                } else {
                    EnableScoring::disabled_from_searcher(&self.searcher)
                };
                self.query.weight(scoring).map_err(|e| e.to_string())
            })
            .as_ref()
            .map(|w| w.as_ref())
            .map_err(Clone::clone)
    }
}

impl<C> Job for CollectorJob<C>
where
    C: Collector + 'static,
{
    type Part = Result<<C::Child as SegmentCollector>::Fruit, String>;
    type Output = Result<C::Fruit, String>;

    fn units(&self) -> usize {
        self.searcher.segment_readers().len()
    }

    fn run(&self, unit: usize) -> Self::Part {
        let weight = self.weight()?;
        let reader = self.searcher.segment_reader(unit as u32);
        self.collector
            .collect_segment(weight, unit as u32, reader)
            .map_err(|e| e.to_string())
    }

    fn merge(&self, parts: Vec<Self::Part>) -> Self::Output {
        let fruits = parts.into_iter().collect::<Result<Vec<_>, String>>()?;
        self.collector
            .merge_fruits(fruits)
            .map_err(|e| e.to_string())
    }

    fn demand_hint_ms(&self) -> Option<f64> {
        self.demand_hint_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::{Count, TopDocs};
    use tantivy::query::QueryParser;
    use tantivy::schema::{Schema, STORED, TEXT};
    use tantivy::{doc, Index};

    /// A service's own index: its schema, three segments.
    fn index() -> Index {
        let mut schema = Schema::builder();
        let text = schema.add_text_field("text", TEXT | STORED);
        let index = Index::create_in_ram(schema.build());
        let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for segment in 0..3 {
            for i in 0..20 {
                let words = if i % 3 == segment {
                    "apple pie"
                } else {
                    "plain bread"
                };
                writer.add_document(doc!(text => words)).unwrap();
            }
            writer.commit().unwrap();
        }
        index
    }

    #[test]
    fn any_collector_gives_what_tantivy_itself_gives() {
        let index = index();
        let searcher = index.reader().unwrap().searcher();
        assert_eq!(searcher.segment_readers().len(), 3);
        let field = index.schema().get_field("text").unwrap();
        let query = || {
            QueryParser::for_index(&index, vec![field])
                .parse_query("apple")
                .unwrap()
        };
        // A scoring collector and a counting one, each run unit by unit as the runtime
        // would, against tantivy's own search.
        let top = CollectorJob::new(
            searcher.clone(),
            query(),
            TopDocs::with_limit(5).order_by_score(),
        );
        assert_eq!(top.units(), 3);
        let parts = (0..top.units()).map(|u| top.run(u)).collect();
        let ours = top.merge(parts).unwrap();
        let theirs = searcher
            .search(query().as_ref(), &TopDocs::with_limit(5).order_by_score())
            .unwrap();
        assert_eq!(ours, theirs);
        let count = CollectorJob::new(searcher.clone(), query(), Count);
        let parts = (0..count.units()).map(|u| count.run(u)).collect();
        assert_eq!(count.merge(parts).unwrap(), 20);
        assert_eq!(count.demand_hint_ms(), None);
    }
}

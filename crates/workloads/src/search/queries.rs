//! Query generation for the search workload, in the manner of Lucene's nightly benchmark
//! task files (luceneutil): terms picked by document-frequency class, two- and three-term
//! AND and OR, phrases taken from the corpus, prefix and fuzzy queries. Seeded, written to
//! a file as JSON lines, and read back.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use tantivy::query::{
    BooleanQuery, FuzzyTermQuery, Occur, PhraseQuery, Query, RegexQuery, TermQuery,
};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{DocAddress, Term};

use super::index::{IndexError, SearchIndex};
use super::job::TOP_K;

/// One query, as written in the queries file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QuerySpec {
    /// A single term.
    Term {
        /// The term.
        term: String,
    },
    /// Every term must match.
    And {
        /// The terms.
        terms: Vec<String>,
    },
    /// Any term may match.
    Or {
        /// The terms.
        terms: Vec<String>,
    },
    /// A two-stage search: any term may match, the best 1,000 are collected and the
    /// stored documents of the best 100 loaded, as a re-ranking stage reads them.
    Rerank {
        /// The terms.
        terms: Vec<String>,
    },
    /// The terms in this order, adjacent.
    Phrase {
        /// The terms.
        terms: Vec<String>,
    },
    /// Terms starting with a prefix (a regex `PREFIX.*` over the term dictionary).
    Prefix {
        /// The prefix.
        prefix: String,
    },
    /// Terms within an edit distance.
    Fuzzy {
        /// The term.
        term: String,
        /// Levenshtein distance, 1 or 2.
        distance: u8,
    },
}

impl QuerySpec {
    /// The tantivy query over the index's body field.
    pub fn build(&self, index: &SearchIndex) -> Result<Box<dyn Query>, String> {
        let body = index.body();
        let term = |t: &str| Term::from_field_text(body, t);
        let term_query = |t: &str| {
            Box::new(TermQuery::new(term(t), IndexRecordOption::WithFreqs)) as Box<dyn Query>
        };
        Ok(match self {
            QuerySpec::Term { term } => term_query(term),
            QuerySpec::And { terms } | QuerySpec::Or { terms } | QuerySpec::Rerank { terms } => {
                let occur = if matches!(self, QuerySpec::And { .. }) {
                    Occur::Must
                } else {
                    Occur::Should
                };
                Box::new(BooleanQuery::new(
                    terms.iter().map(|t| (occur, term_query(t))).collect(),
                ))
            }
            QuerySpec::Phrase { terms } => {
                if terms.len() < 2 {
                    return Err("a phrase needs at least two terms".into());
                }
                Box::new(PhraseQuery::new(terms.iter().map(|t| term(t)).collect()))
            }
            QuerySpec::Prefix { prefix } => {
                if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_lowercase()) {
                    return Err(format!("prefix {prefix:?}: lowercase letters only"));
                }
                Box::new(
                    RegexQuery::from_pattern(&format!("{prefix}.*"), body)
                        .map_err(|e| e.to_string())?,
                )
            }
            QuerySpec::Fuzzy { term: t, distance } => {
                if !(1..=2).contains(distance) {
                    return Err(format!("fuzzy distance {distance}: must be 1 or 2"));
                }
                Box::new(FuzzyTermQuery::new(term(t), *distance, true))
            }
        })
    }

    /// The same search for `GET /search` of `tailor serve`: the query text in tantivy's
    /// language, the fuzzy distance and `k`. A re-rank becomes its three terms' OR with
    /// k = 100, which loads and highlights as many documents; the rest are exact.
    pub fn http_params(&self) -> (String, u8, usize) {
        let quote = |t: &String| format!("\"{t}\"");
        match self {
            QuerySpec::Term { term } => (quote(term), 0, TOP_K),
            QuerySpec::And { terms } => (
                terms
                    .iter()
                    .map(|t| format!("+{}", quote(t)))
                    .collect::<Vec<_>>()
                    .join(" "),
                0,
                TOP_K,
            ),
            QuerySpec::Or { terms } => (
                terms.iter().map(quote).collect::<Vec<_>>().join(" "),
                0,
                TOP_K,
            ),
            QuerySpec::Rerank { terms } => (
                terms.iter().map(quote).collect::<Vec<_>>().join(" "),
                0,
                self.limits().1,
            ),
            QuerySpec::Phrase { terms } => (format!("\"{}\"", terms.join(" ")), 0, TOP_K),
            QuerySpec::Prefix { prefix } => (format!("body:/{prefix}.*/"), 0, TOP_K),
            QuerySpec::Fuzzy { term, distance } => (quote(term), *distance, TOP_K),
        }
    }

    /// The same search as an OpenSearch (or Elasticsearch) `_search` body over a `body`
    /// text field: `term`, `bool` of `must` or `should` terms, `match_phrase`, `prefix`
    /// (tantivy's `PREFIX.*` over the term dictionary), `fuzzy` with transpositions
    /// counted as one edit and the `constant_score` rewrite: tantivy's `FuzzyTermQuery`
    /// as built above matches every term within the distance at a constant score, and
    /// enumerates them segment by segment. (OpenSearch's default, a scoring rewrite of
    /// the best `max_expansions` terms, is a different search, and it enumerates every
    /// segment's terms serially before any slice runs.) `size` is the
    /// documents loaded ([`QuerySpec::limits`]); a re-rank also rescores its best 1,000
    /// candidates with the same query, the nearest OpenSearch has to collecting 1,000 and
    /// loading 100. Hit counts are not tracked (tantivy's top-k collector does not count).
    pub fn opensearch_body(&self) -> serde_json::Value {
        use serde_json::json;
        let term = |t: &String| json!({"term": {"body": t}});
        let query = match self {
            QuerySpec::Term { term: t } => term(t),
            QuerySpec::And { terms } => {
                json!({"bool": {"must": terms.iter().map(term).collect::<Vec<_>>()}})
            }
            QuerySpec::Or { terms } | QuerySpec::Rerank { terms } => {
                json!({"bool": {"should": terms.iter().map(term).collect::<Vec<_>>()}})
            }
            QuerySpec::Phrase { terms } => json!({"match_phrase": {"body": terms.join(" ")}}),
            QuerySpec::Prefix { prefix } => json!({"prefix": {"body": prefix}}),
            QuerySpec::Fuzzy { term: t, distance } => json!({"fuzzy": {"body": {
                "value": t, "fuzziness": distance, "transpositions": true,
                "prefix_length": 0, "rewrite": "constant_score"}}}),
        };
        let (candidates, loaded) = self.limits();
        let mut body = json!({"query": query, "size": loaded, "track_total_hits": false});
        if candidates > loaded {
            body["rescore"] = json!({"window_size": candidates, "query": {"rescore_query": query}});
        }
        body
    }

    /// Candidates to collect and stored documents to load: 1,000 and 100 for a re-rank,
    /// [`TOP_K`] each otherwise.
    pub fn limits(&self) -> (usize, usize) {
        match self {
            QuerySpec::Rerank { .. } => (1000, 100),
            _ => (TOP_K, TOP_K),
        }
    }

    /// A short label of the query's kind, e.g. `or3` or `fuzzy2`.
    pub fn label(&self) -> String {
        match self {
            QuerySpec::Term { .. } => "term".into(),
            QuerySpec::And { terms } => format!("and{}", terms.len()),
            QuerySpec::Or { terms } => format!("or{}", terms.len()),
            QuerySpec::Rerank { .. } => "rerank".into(),
            QuerySpec::Phrase { .. } => "phrase".into(),
            QuerySpec::Prefix { .. } => "prefix".into(),
            QuerySpec::Fuzzy { distance, .. } => format!("fuzzy{distance}"),
        }
    }
}

/// Document-frequency classes, as fractions of the documents (luceneutil's high, medium
/// and low terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    High,
    Medium,
    Low,
}

/// The version of [`MIX`], part of the queries file's name, so a changed mix is not
/// mistaken for a kept one.
pub(crate) const MIX_VERSION: u32 = 2;

/// The query mix, in percent (weight, kind), in the spirit of luceneutil's task files,
/// where a third or more of the task categories are multi-term (prefix, wildcard, fuzzy).
/// Times on GCIDE in 16 segments here, one thread, stored documents and snippets
/// included: cheap Boolean queries and phrases (0.2 to 0.6 ms) are 40%, three-letter
/// prefixes (0.5 to 1.5 ms) 20%, re-ranks (about 2.2 ms, most of it loading and
/// highlighting 100 documents) 8%, two-letter prefixes and one-edit fuzzy queries (2 to
/// 4 ms) 22%, two-edit fuzzy queries (8 to 18 ms) 10%. The median falls among the
/// three-letter prefixes and the 99th percentile among the two-edit fuzzy queries
/// (BENCHMARKS.md has the shape measured).
const MIX: [(u32, Kind); 15] = [
    (4, Kind::Term(Class::High)),
    (1, Kind::Term(Class::Medium)),
    (1, Kind::Term(Class::Low)),
    (5, Kind::And(Class::High, Class::High)),
    (4, Kind::And(Class::High, Class::Medium)),
    (3, Kind::And3),
    (5, Kind::Or(Class::High, Class::Medium)),
    (4, Kind::Or(Class::High, Class::Low)),
    (3, Kind::Or3),
    (10, Kind::Phrase),
    (20, Kind::Prefix(3)),
    (8, Kind::Rerank),
    (14, Kind::Fuzzy(1)),
    (8, Kind::Prefix(2)),
    (10, Kind::Fuzzy(2)),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Term(Class),
    And(Class, Class),
    Or(Class, Class),
    And3,
    Or3,
    Rerank,
    Phrase,
    /// A prefix of this many letters of a frequent term.
    Prefix(usize),
    Fuzzy(u8),
}

/// Generates `count` queries over `index`, seeded. Terms come from the index's own term
/// dictionary, phrases from its stored documents.
pub fn generate_queries(
    index: &SearchIndex,
    count: usize,
    seed: u64,
) -> Result<Vec<QuerySpec>, IndexError> {
    let docs = index.searcher().num_docs().max(1) as f64;
    let mut terms: Vec<(String, u64)> = index.body_term_frequencies()?.into_iter().collect();
    terms.sort();
    let class_of = |df: u64| {
        let f = df as f64 / docs;
        if f >= 0.01 {
            Some(Class::High)
        } else if f >= 0.001 {
            Some(Class::Medium)
        } else if df >= 2 && f >= 0.0001 {
            Some(Class::Low)
        } else {
            None
        }
    };
    let pick_from = |class: Class| -> Vec<String> {
        terms
            .iter()
            .filter(|(t, df)| class_of(*df) == Some(class) && t.len() >= 3)
            .map(|(t, _)| t.clone())
            .collect()
    };
    let mut classes = [
        pick_from(Class::High),
        pick_from(Class::Medium),
        pick_from(Class::Low),
    ];
    // A small corpus may lack a class: borrow from the nearest one.
    for i in 0..3 {
        if classes[i].is_empty() {
            let fallback = (0..3).find(|j| !classes[*j].is_empty());
            match fallback {
                Some(j) => classes[i] = classes[j].clone(),
                None => {
                    return Err(IndexError::Invalid(
                        "the index has no terms of three or more letters to query".into(),
                    ))
                }
            }
        }
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let total: u32 = MIX.iter().map(|m| m.0).sum();
    let pick = |class: Class, rng: &mut rand_chacha::ChaCha8Rng| {
        let list = &classes[class as usize];
        list[rng.random_range(0..list.len())].clone()
    };
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let mut roll = rng.random_range(0..total);
        let kind = MIX
            .iter()
            .find(|(w, _)| {
                if roll < *w {
                    true
                } else {
                    roll -= w;
                    false
                }
            })
            .map(|m| m.1)
            .unwrap_or(Kind::Term(Class::High));
        let spec = match kind {
            Kind::Term(c) => QuerySpec::Term {
                term: pick(c, &mut rng),
            },
            Kind::And(a, b) => QuerySpec::And {
                terms: vec![pick(a, &mut rng), pick(b, &mut rng)],
            },
            Kind::Or(a, b) => QuerySpec::Or {
                terms: vec![pick(a, &mut rng), pick(b, &mut rng)],
            },
            Kind::And3 => QuerySpec::And {
                terms: vec![
                    pick(Class::High, &mut rng),
                    pick(Class::High, &mut rng),
                    pick(Class::Medium, &mut rng),
                ],
            },
            Kind::Or3 => QuerySpec::Or {
                terms: vec![
                    pick(Class::High, &mut rng),
                    pick(Class::Medium, &mut rng),
                    pick(Class::Medium, &mut rng),
                ],
            },
            Kind::Rerank => QuerySpec::Rerank {
                terms: vec![
                    pick(Class::High, &mut rng),
                    pick(Class::High, &mut rng),
                    pick(Class::Medium, &mut rng),
                ],
            },
            Kind::Phrase => match phrase_from_corpus(index, &mut rng) {
                Some(terms) => QuerySpec::Phrase { terms },
                None => continue,
            },
            Kind::Prefix(letters) => {
                let t = pick(Class::High, &mut rng);
                QuerySpec::Prefix {
                    prefix: t.chars().take(letters).collect(),
                }
            }
            Kind::Fuzzy(distance) => QuerySpec::Fuzzy {
                term: pick(Class::Medium, &mut rng),
                distance,
            },
        };
        out.push(spec);
    }
    Ok(out)
}

/// Two adjacent words of a random stored document, both lowercase letters only.
fn phrase_from_corpus(
    index: &SearchIndex,
    rng: &mut rand_chacha::ChaCha8Rng,
) -> Option<Vec<String>> {
    let searcher = index.searcher();
    let segments = searcher.segment_readers();
    for _ in 0..20 {
        let s = rng.random_range(0..segments.len());
        let max = segments[s].max_doc();
        if max == 0 {
            continue;
        }
        let address = DocAddress::new(s as u32, rng.random_range(0..max));
        let doc: tantivy::TantivyDocument = searcher.doc(address).ok()?;
        let body = doc
            .get_first(index.body())
            .and_then(|v| v.as_str())?
            .to_lowercase();
        let words: Vec<&str> = body
            .split(|c: char| !c.is_ascii_alphabetic())
            .filter(|w| !w.is_empty())
            .collect();
        if words.len() < 2 {
            continue;
        }
        let at = rng.random_range(0..words.len() - 1);
        let pair = [words[at], words[at + 1]];
        if pair.iter().all(|w| w.len() >= 2) {
            return Some(pair.iter().map(|w| w.to_string()).collect());
        }
    }
    None
}

/// Writes queries as JSON lines.
pub fn write_queries(path: &Path, queries: &[QuerySpec]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for q in queries {
        serde_json::to_writer(&mut out, q)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

/// Reads a queries file, naming the line of any bad entry.
pub fn read_queries(path: &Path) -> Result<Vec<QuerySpec>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line)
                .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?,
        );
    }
    if out.is_empty() {
        return Err(format!("{}: no queries", path.display()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_becomes_the_same_search_in_opensearch() {
        let terms = || vec!["horse".to_string(), "water".to_string()];
        let cases = [
            (
                QuerySpec::Term {
                    term: "horse".into(),
                },
                json!({"term": {"body": "horse"}}),
            ),
            (
                QuerySpec::And { terms: terms() },
                json!({"bool": {"must": [{"term": {"body": "horse"}}, {"term": {"body": "water"}}]}}),
            ),
            (
                QuerySpec::Or { terms: terms() },
                json!({"bool": {"should": [{"term": {"body": "horse"}}, {"term": {"body": "water"}}]}}),
            ),
            (
                QuerySpec::Phrase { terms: terms() },
                json!({"match_phrase": {"body": "horse water"}}),
            ),
            (
                QuerySpec::Prefix {
                    prefix: "hor".into(),
                },
                json!({"prefix": {"body": "hor"}}),
            ),
        ];
        for (spec, query) in cases {
            let body = spec.opensearch_body();
            assert_eq!(body["query"], query, "{spec:?}");
            assert_eq!(body["size"], TOP_K, "{spec:?}");
            assert_eq!(body["track_total_hits"], false);
            assert!(body.get("rescore").is_none());
        }
        let fuzzy = QuerySpec::Fuzzy {
            term: "hors".into(),
            distance: 2,
        }
        .opensearch_body();
        assert_eq!(fuzzy["query"]["fuzzy"]["body"]["fuzziness"], 2);
        assert_eq!(fuzzy["query"]["fuzzy"]["body"]["transpositions"], true);
        // tantivy's fuzzy query: every term within the distance, at a constant score.
        assert_eq!(fuzzy["query"]["fuzzy"]["body"]["rewrite"], "constant_score");
        assert!(fuzzy["query"]["fuzzy"]["body"]
            .get("max_expansions")
            .is_none());
        let rerank = QuerySpec::Rerank { terms: terms() }.opensearch_body();
        assert_eq!(rerank["size"], 100);
        assert_eq!(rerank["rescore"]["window_size"], 1000);
        assert_eq!(rerank["rescore"]["query"]["rescore_query"], rerank["query"]);
    }
}

//! The search workload on a small generated corpus: split across segments and run by the
//! runtime under every kind of policy, it returns exactly what a sequential tantivy search
//! returns; the index is reused, and rebuilt when damaged.

use std::sync::Arc;

use tailor_bench::{measure_profile, ProfileConfig, RequestSource, SearchSource};
use tailor_core::{Policy, Tables};
use tailor_runtime::{Runtime, RuntimeConfig, Shutdown};
use tailor_workloads::search::{
    generate_queries, generated_corpus, IndexOrigin, QuerySpec, SearchIndex, SearchJob,
};

fn build(dir: &std::path::Path, segments: usize) -> (SearchIndex, IndexOrigin) {
    SearchIndex::open_or_build(
        dir,
        "generated",
        segments,
        || Ok(generated_corpus(1200, 7)),
        &mut |_, _| {},
    )
    .unwrap()
}

#[test]
fn every_policy_and_degree_returns_the_sequential_top_k() {
    let dir = tempfile::tempdir().unwrap();
    let (index, origin) = build(&dir.path().join("index"), 6);
    assert_eq!(origin, IndexOrigin::Built);
    assert_eq!(index.segments(), 6);
    let index = Arc::new(index);
    let queries = generate_queries(&index, 150, 3).unwrap();
    // Every kind of query shows up.
    for kind in ["term", "and", "or", "rerank", "phrase", "prefix", "fuzzy"] {
        assert!(
            queries.iter().any(|q| q.label().starts_with(kind)),
            "no {kind} query in {queries:?}"
        );
    }
    let expected: Vec<_> = queries
        .iter()
        .map(|q| {
            SearchJob::new(index.clone(), q.build(&index).unwrap(), None)
                .with_limits(q.limits())
                .search_with_tantivy(None)
                .unwrap()
        })
        .collect();
    assert!(expected.iter().any(|r| r.count > 0 && !r.hits.is_empty()));
    let tables = Tables::default();
    for policy in ["seq", "fix:2", "fix:3", "fix:6", "fix:8", "interval:0.05:4"] {
        let mut rc = RuntimeConfig::new(2, Policy::parse(policy, &tables).unwrap());
        rc.workers = Some(2);
        let runtime = Runtime::start(rc).unwrap();
        let handles: Vec<_> = queries
            .iter()
            .map(|q| {
                let job = SearchJob::new(index.clone(), q.build(&index).unwrap(), None)
                    .with_limits(q.limits());
                runtime.submit(job).unwrap()
            })
            .collect();
        for ((h, want), q) in handles.into_iter().zip(&expected).zip(&queries) {
            let got = h.wait().unwrap().output.unwrap();
            assert_eq!(&got, want, "{policy}: {q:?}");
        }
        runtime.shutdown(Shutdown::Drain);
    }
    // tantivy's own executor, as the peer runs it, agrees too.
    let source = SearchSource::each_query(index.clone(), queries.clone())
        .unwrap()
        .on_tantivy_executor(2)
        .unwrap();
    for (i, want) in expected.iter().enumerate() {
        let job = source.job(i);
        assert_eq!(&job.search_with_tantivy(None).unwrap(), want);
    }
}

#[test]
fn a_profile_of_the_queries_has_one_row_per_query() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = build(&dir.path().join("index"), 4);
    let index = Arc::new(index);
    let queries = generate_queries(&index, 12, 5).unwrap();
    let source = SearchSource::each_query(index, queries).unwrap();
    let cfg = ProfileConfig {
        requests: 12,
        max_degree: 2,
        repeat: 2,
    };
    let profile = measure_profile(&cfg, &source, |_, _| {}).unwrap();
    assert_eq!(profile.requests().len(), 12);
    assert!(profile.requests().iter().all(|r| r.seq_ms() > 0.0));
}

#[test]
fn the_index_is_reused_and_rebuilt_when_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    build(&path, 3);
    assert_eq!(build(&path, 3).1, IndexOrigin::Reused);
    // Another segment count is another index.
    assert!(matches!(build(&path, 4).1, IndexOrigin::Rebuilt(_)));
    // A build that did not finish has no manifest.
    std::fs::remove_file(path.join("tailor-index.json")).unwrap();
    let (index, origin) = build(&path, 4);
    assert!(
        matches!(&origin, IndexOrigin::Rebuilt(why) if why.contains("manifest")),
        "{origin:?}"
    );
    assert_eq!(index.segments(), 4);
    drop(index);
    // A damaged segment file fails its checksum.
    let victim = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "idx"))
        .expect("a postings file");
    let mut bytes = std::fs::read(&victim).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xFF;
    std::fs::write(&victim, bytes).unwrap();
    let (_, origin) = build(&path, 4);
    assert!(matches!(origin, IndexOrigin::Rebuilt(_)), "{origin:?}");
    assert_eq!(build(&path, 4).1, IndexOrigin::Reused);
}

#[test]
fn queries_round_trip_through_their_file() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = build(&dir.path().join("index"), 2);
    let queries = generate_queries(&index, 40, 9).unwrap();
    assert_eq!(queries, generate_queries(&index, 40, 9).unwrap());
    let file = dir.path().join("q.jsonl");
    tailor_workloads::search::write_queries(&file, &queries).unwrap();
    assert_eq!(
        tailor_workloads::search::read_queries(&file).unwrap(),
        queries
    );
    std::fs::write(
        &file,
        "{\"kind\":\"term\",\"term\":\"x\"}\n{\"kind\":\"nope\"}\n",
    )
    .unwrap();
    let err = tailor_workloads::search::read_queries(&file).unwrap_err();
    assert!(err.contains("q.jsonl:2:"), "{err}");
    let bad = QuerySpec::Fuzzy {
        term: "x".into(),
        distance: 3,
    };
    assert!(bad.build(&index).is_err());
}

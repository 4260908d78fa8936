//! The README's Rust snippets are the ones the doc-tests compile and run
//! (src/readme_snippets.md, included by `ReadmeDoctests` in src/lib.rs).

fn rust_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```rust") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn the_readme_shows_the_snippets_the_doc_tests_run() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let tested = include_str!("../src/readme_snippets.md");
    let shown = rust_blocks(&readme);
    assert!(
        shown.len() >= 3,
        "README.md has {} Rust snippets",
        shown.len()
    );
    assert_eq!(
        shown,
        rust_blocks(tested),
        "README.md's Rust snippets differ from crates/runtime/src/readme_snippets.md, \
         which the doc-tests run: copy the README's into it"
    );
}

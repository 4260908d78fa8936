//! Text corpora for the search workload: GCIDE from the Debian package, a user's own file,
//! or a small generated one for tests.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use rand::{RngExt, SeedableRng};

/// Where Debian's `dict-gcide` package puts the dictionary and its index.
pub const GCIDE_DICT: &str = "/usr/share/dictd/gcide.dict.dz";
/// The dictd index beside it: `headword TAB offset TAB length`, both base64.
pub const GCIDE_INDEX: &str = "/usr/share/dictd/gcide.index";

/// One document: a title and a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// The title (a dictionary headword, or the user's `title`).
    pub title: String,
    /// The text searched.
    pub body: String,
}

/// Why a corpus could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// GCIDE is not installed.
    #[error(
        "the GCIDE corpus is not installed ({GCIDE_DICT} is missing): install it with \
         `apt-get install dict-gcide` (Debian/Ubuntu), or pass your own with --corpus FILE"
    )]
    GcideMissing,
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("{path}:{line}: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The corpus has no documents.
    #[error("{0}: no documents")]
    Empty(PathBuf),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CorpusError + '_ {
    move |source| CorpusError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Decodes dictd's base64 numbers (alphabet A-Z a-z 0-9 + /, most significant first).
fn dictd_number(s: &str) -> Option<u64> {
    let mut n = 0u64;
    for c in s.bytes() {
        let digit = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        n = n.checked_mul(64)?.checked_add(u64::from(digit))?;
    }
    (!s.is_empty()).then_some(n)
}

/// Reads a dictd dictionary: every index entry whose headword does not start with
/// `00-` (the database's own notes) is a document, its definition the body.
pub fn read_dictd(dict: &Path, index: &Path) -> Result<Vec<Doc>, CorpusError> {
    let mut text = Vec::new();
    let file = File::open(dict).map_err(io(dict))?;
    // dictzip files are gzip files with an index in the header's extra field.
    flate2::read::GzDecoder::new(BufReader::new(file))
        .read_to_end(&mut text)
        .map_err(io(dict))?;
    let reader = BufReader::new(File::open(index).map_err(io(index))?);
    let mut docs = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(io(index))?;
        let malformed = |reason: &str| CorpusError::Malformed {
            path: index.to_path_buf(),
            line: i + 1,
            reason: reason.to_string(),
        };
        let mut fields = line.split('\t');
        let (Some(word), Some(offset), Some(length)) =
            (fields.next(), fields.next(), fields.next())
        else {
            return Err(malformed(
                "expected headword, offset and length, tab-separated",
            ));
        };
        if word.starts_with("00-") || word.starts_with("00database") {
            continue;
        }
        let (Some(offset), Some(length)) = (dictd_number(offset), dictd_number(length)) else {
            return Err(malformed("offset and length must be dictd base64 numbers"));
        };
        let (start, end) = (offset as usize, (offset + length) as usize);
        let Some(body) = text.get(start..end) else {
            return Err(malformed("the entry lies beyond the end of the dictionary"));
        };
        docs.push(Doc {
            title: word.to_string(),
            body: String::from_utf8_lossy(body).into_owned(),
        });
    }
    if docs.is_empty() {
        return Err(CorpusError::Empty(index.to_path_buf()));
    }
    Ok(docs)
}

/// Reads GCIDE from where Debian's `dict-gcide` installs it.
pub fn read_gcide() -> Result<Vec<Doc>, CorpusError> {
    if !Path::new(GCIDE_DICT).exists() || !Path::new(GCIDE_INDEX).exists() {
        return Err(CorpusError::GcideMissing);
    }
    read_dictd(Path::new(GCIDE_DICT), Path::new(GCIDE_INDEX))
}

/// Reads a user's corpus: one JSON object per line with string fields `title` and `body`,
/// or, for lines that do not start with `{`, one document per line (the line is the body
/// and its first words the title). Blank lines are skipped.
pub fn read_corpus_file(path: &Path) -> Result<Vec<Doc>, CorpusError> {
    let reader = BufReader::new(File::open(path).map_err(io(path))?);
    let mut docs = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(io(path))?;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let malformed = |reason: String| CorpusError::Malformed {
            path: path.to_path_buf(),
            line: i + 1,
            reason,
        };
        if trimmed.starts_with('{') {
            let value: serde_json::Value =
                serde_json::from_str(trimmed).map_err(|e| malformed(format!("bad JSON: {e}")))?;
            let field = |name: &str| {
                value
                    .get(name)
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .ok_or_else(|| malformed(format!("field `{name}`: missing or not a string")))
            };
            docs.push(Doc {
                title: field("title")?,
                body: field("body")?,
            });
        } else {
            let title = trimmed
                .split_whitespace()
                .take(6)
                .collect::<Vec<_>>()
                .join(" ");
            docs.push(Doc {
                title,
                body: trimmed.to_string(),
            });
        }
    }
    if docs.is_empty() {
        return Err(CorpusError::Empty(path.to_path_buf()));
    }
    Ok(docs)
}

/// A small English-like corpus for tests: `count` documents of Zipf-distributed words
/// from a fixed vocabulary, seeded.
pub fn generated_corpus(count: usize, seed: u64) -> Vec<Doc> {
    const SYLLABLES: [&str; 24] = [
        "an", "be", "con", "de", "er", "fa", "gra", "hol", "in", "ju", "ka", "lo", "mo", "ne",
        "or", "pa", "qui", "ra", "so", "ta", "un", "ve", "wi", "zo",
    ];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let vocabulary: Vec<String> = (0..3000)
        .map(|i| {
            let mut w = String::new();
            let mut k = i + 1;
            while k > 0 {
                w.push_str(SYLLABLES[k % SYLLABLES.len()]);
                k /= SYLLABLES.len();
            }
            w
        })
        .collect();
    // Zipf by inverse-CDF over precomputed weights 1/rank.
    let weights: Vec<f64> = (1..=vocabulary.len()).map(|r| 1.0 / r as f64).collect();
    let total: f64 = weights.iter().sum();
    let mut cumulative = Vec::with_capacity(weights.len());
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cumulative.push(acc);
    }
    let word = |rng: &mut rand_chacha::ChaCha8Rng| {
        let u: f64 = rng.random();
        let i = cumulative
            .partition_point(|c| *c < u)
            .min(vocabulary.len() - 1);
        vocabulary[i].clone()
    };
    (0..count)
        .map(|d| {
            let len = rng.random_range(5..120);
            let body: Vec<String> = (0..len).map(|_| word(&mut rng)).collect();
            Doc {
                title: format!("doc{d} {}", body[0]),
                body: body.join(" "),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictd_numbers_decode() {
        assert_eq!(dictd_number("A"), Some(0));
        assert_eq!(dictd_number("Dj"), Some(3 * 64 + 35));
        assert_eq!(dictd_number("5I"), Some(57 * 64 + 8));
        assert_eq!(dictd_number(""), None);
        assert_eq!(dictd_number("a-b"), None);
    }

    #[test]
    fn reads_a_dictd_pair() {
        let dir = tempfile::tempdir().unwrap();
        let text = b"header notes\nApple\n  A fruit.\nBanana\n  Yellow.\n";
        let dict = dir.path().join("x.dict.dz");
        let mut gz = flate2::write::GzEncoder::new(
            File::create(&dict).unwrap(),
            flate2::Compression::default(),
        );
        std::io::Write::write_all(&mut gz, text).unwrap();
        gz.finish().unwrap();
        let index = dir.path().join("x.index");
        // Apple at 13 (N), 16 bytes (Q); Banana at 30 (e), 16 bytes (Q).
        std::fs::write(
            &index,
            "00-database-info\tA\tM\nApple\tN\tQ\nBanana\te\tQ\n",
        )
        .unwrap();
        let docs = read_dictd(&dict, &index).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].title, "Apple");
        assert_eq!(docs[0].body, "Apple\n  A fruit.");
        assert_eq!(docs[1].body, "Banana\n  Yellow.");
        std::fs::write(&index, "Apple\tN\n").unwrap();
        let err = read_dictd(&dict, &index).unwrap_err().to_string();
        assert!(err.contains("x.index:1:"), "{err}");
        std::fs::write(&index, "Apple\tN\tzzzz\n").unwrap();
        let err = read_dictd(&dict, &index).unwrap_err().to_string();
        assert!(err.contains("beyond the end"), "{err}");
    }

    #[test]
    fn reads_json_lines_and_plain_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.txt");
        std::fs::write(
            &path,
            "{\"title\": \"T\", \"body\": \"hello world\"}\n\nplain text line here\n",
        )
        .unwrap();
        let docs = read_corpus_file(&path).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].title, "T");
        assert_eq!(docs[1].body, "plain text line here");
        std::fs::write(&path, "{\"title\": 3, \"body\": \"x\"}\n").unwrap();
        let err = read_corpus_file(&path).unwrap_err().to_string();
        assert!(err.contains("c.txt:1:") && err.contains("title"), "{err}");
        std::fs::write(&path, "\n\n").unwrap();
        assert!(matches!(
            read_corpus_file(&path),
            Err(CorpusError::Empty(_))
        ));
    }

    #[test]
    fn generated_corpus_is_seeded() {
        let a = generated_corpus(50, 3);
        assert_eq!(a, generated_corpus(50, 3));
        assert_ne!(a, generated_corpus(50, 4));
        assert_eq!(a.len(), 50);
    }
}

//! Errors for reading tailor's files and parsing its value syntax.

use std::fmt;
use std::path::Path;

/// Where in an input a problem sits: the file, and when known the line and the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file's path as the user gave it, or a name such as `<stdin>`.
    pub file: String,
    /// The 1-based line, when the problem belongs to one line.
    pub line: Option<u64>,
    /// The column or JSON field, when the problem belongs to one.
    pub field: Option<String>,
}

impl Location {
    /// A location naming only the file.
    pub fn file(file: impl Into<String>) -> Self {
        Location {
            file: file.into(),
            line: None,
            field: None,
        }
    }

    /// A location naming a file and a line.
    pub fn line(file: impl Into<String>, line: u64) -> Self {
        Location {
            file: file.into(),
            line: Some(line),
            field: None,
        }
    }

    /// The same location narrowed to one field.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(clip(&field.into()));
        self
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        Ok(())
    }
}

/// What is wrong with an input file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadErrorKind {
    /// The file could not be opened or read.
    #[error("cannot read the file: {0}")]
    Io(String),
    /// The file holds nothing, not even a header.
    #[error("the file is empty")]
    Empty,
    /// The header is present but no data rows follow.
    #[error("the header has no rows under it")]
    NoRows,
    /// A column the format requires is absent from the header.
    #[error("missing column `{0}`")]
    MissingColumn(String),
    /// The header names a column the format does not know.
    #[error("unknown column `{0}`")]
    UnknownColumn(String),
    /// The header names the same column twice.
    #[error("column `{0}` appears twice in the header")]
    DuplicateColumn(String),
    /// A row has a different number of fields than the header.
    #[error("expected {expected} fields as in the header, found {found}")]
    FieldCount {
        /// Fields in the header.
        expected: usize,
        /// Fields in this row.
        found: usize,
    },
    /// A field that must be a number is not one.
    #[error("not a number: {0:?}")]
    NotANumber(String),
    /// A number is NaN or infinite.
    #[error("not a finite number: {0:?}")]
    NotFinite(String),
    /// A time that must be positive is zero or negative.
    #[error("a time must be positive, found {0}")]
    NotPositive(f64),
    /// A probability lies outside [0, 1].
    #[error("a probability must lie in [0, 1], found {0}")]
    BadProbability(f64),
    /// The probabilities of a distribution do not sum to one.
    #[error("probabilities sum to {0}, not 1 (within 1e-6)")]
    ProbabilitySum(f64),
    /// A column that must increase strictly down the file does not.
    #[error("must be strictly greater than {previous} on the row before")]
    NotIncreasing {
        /// The value on the previous row.
        previous: f64,
    },
    /// A column that must not decrease down the file does.
    #[error("must not be smaller than {previous} on the row before")]
    Decreasing {
        /// The value on the previous row.
        previous: f64,
    },
    /// An identifier is empty.
    #[error("the id is empty")]
    EmptyId,
    /// An identifier repeats one on an earlier line.
    #[error("duplicate id {id:?}, first seen on line {first_line}")]
    DuplicateId {
        /// The repeated identifier.
        id: String,
        /// The line where it first appeared.
        first_line: u64,
    },
    /// The file is not valid CSV or JSON.
    #[error("malformed: {0}")]
    Malformed(String),
    /// A value is well formed but not allowed here.
    #[error("{0}")]
    Invalid(String),
}

/// A file could not be read: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{location}: {kind}")]
pub struct ReadError {
    /// Where the problem is.
    pub location: Location,
    /// What the problem is.
    pub kind: ReadErrorKind,
}

impl ReadError {
    /// An error at `location`.
    pub fn new(location: Location, kind: ReadErrorKind) -> Self {
        ReadError { location, kind }
    }

    /// The file could not be read from disk.
    pub(crate) fn io(path: &Path, err: &std::io::Error) -> Self {
        ReadError::new(
            Location::file(path.display().to_string()),
            ReadErrorKind::Io(err.to_string()),
        )
    }
}

/// A command-line value (a `DEMAND`, `SPEEDUP` or `ARRIVALS` string) is malformed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// The value does not follow the documented syntax.
    #[error("{what} {value:?}: {reason}")]
    Syntax {
        /// Which kind of value, e.g. `demand`.
        what: &'static str,
        /// The value as given.
        value: String,
        /// Why it was rejected, with the accepted forms.
        reason: String,
    },
    /// The value names a file that could not be read.
    #[error(transparent)]
    File(#[from] ReadError),
}

impl SpecError {
    pub(crate) fn syntax(what: &'static str, value: &str, reason: impl Into<String>) -> Self {
        SpecError::Syntax {
            what,
            value: clip(value),
            reason: reason.into(),
        }
    }
}

/// At most this many characters of an offending value go into an error message.
pub const QUOTE_CHARS: usize = 80;

/// `text` cut to [`QUOTE_CHARS`] characters for an error message, saying how many bytes
/// were left out, so that a huge field never floods the terminal.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}... ({} more bytes)", &text[..cut], text.len() - cut),
    }
}

//! Shared CSV reading: header checks and number fields with file, line and field in errors.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{clip, Location, ReadError, ReadErrorKind};

/// A CSV file read into its header and rows, each row with its 1-based line.
pub(crate) struct CsvFile {
    pub(crate) file: String,
    pub(crate) header: Vec<String>,
    pub(crate) rows: Vec<(u64, Vec<String>)>,
}

/// Reads the file at `path` into memory, mapping I/O failures to a [`ReadError`].
pub(crate) fn read_text(path: &Path) -> Result<String, ReadError> {
    read_at_most(path, MAX_INPUT_BYTES)
}

/// [`read_text`] with a limit of `max_bytes`.
fn read_at_most(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| ReadError::io(path, &e))?;
    // Read at most one byte past the limit: a larger file (or an endless one such as
    // /dev/zero) is refused without being held in memory.
    let mut bytes = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::io(path, &e))?;
    if bytes.len() as u64 > max_bytes {
        let limit = if max_bytes >= 1 << 20 {
            format!("{} MiB", max_bytes >> 20)
        } else {
            format!("{max_bytes} bytes")
        };
        return Err(ReadError::new(
            Location::file(path.display().to_string()),
            ReadErrorKind::Invalid(format!(
                "the file is larger than {limit}, the most an input file may be"
            )),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        ReadError::new(
            Location::file(path.display().to_string()),
            ReadErrorKind::Malformed("not valid UTF-8".into()),
        )
    })
}

/// The largest input file (profile, distribution, trace, table) read: 256 MiB, several
/// million profiled requests.
pub(crate) const MAX_INPUT_BYTES: u64 = 256 << 20;

/// The most data rows a CSV input may have.
pub(crate) const MAX_ROWS: usize = 10_000_000;

impl CsvFile {
    /// Parses `text`; `file` names it in errors. Rejects an empty file, a header with
    /// no rows, and rows whose field count differs from the header's.
    pub(crate) fn parse(text: &str, file: &str) -> Result<CsvFile, ReadError> {
        CsvFile::parse_at_most(text, file, MAX_ROWS)
    }

    /// [`CsvFile::parse`] with a limit of `max_rows` data rows.
    fn parse_at_most(text: &str, file: &str, max_rows: usize) -> Result<CsvFile, ReadError> {
        if text.trim().is_empty() {
            return Err(ReadError::new(Location::file(file), ReadErrorKind::Empty));
        }
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| csv_error(file, &e))?
            .iter()
            .map(str::to_string)
            .collect();
        let mut rows = Vec::new();
        let mut lines = LineCounter::default();
        for record in reader.records() {
            let record = record.map_err(|e| csv_error(file, &e))?;
            let line = record
                .position()
                .map_or(0, |p| lines.line_of(text, p.byte() as usize));
            if record.len() != header.len() {
                return Err(ReadError::new(
                    Location::line(file, line),
                    ReadErrorKind::FieldCount {
                        expected: header.len(),
                        found: record.len(),
                    },
                ));
            }
            if rows.len() == max_rows {
                return Err(ReadError::new(
                    Location::line(file, line),
                    ReadErrorKind::Invalid(format!("more than {max_rows} rows, the most read")),
                ));
            }
            rows.push((line, record.iter().map(str::to_string).collect()));
        }
        if rows.is_empty() {
            return Err(ReadError::new(
                Location::line(file, 1),
                ReadErrorKind::NoRows,
            ));
        }
        Ok(CsvFile {
            file: file.to_string(),
            header,
            rows,
        })
    }

    /// Maps each header name to its index, rejecting duplicates and names for which
    /// `known` returns false.
    pub(crate) fn columns(
        &self,
        known: impl Fn(&str) -> bool,
    ) -> Result<HashMap<String, usize>, ReadError> {
        let mut map = HashMap::new();
        for (i, name) in self.header.iter().enumerate() {
            let at = || Location::line(&self.file, 1).with_field(name.clone());
            if !known(name) {
                return Err(ReadError::new(
                    at(),
                    ReadErrorKind::UnknownColumn(clip(name)),
                ));
            }
            if map.insert(name.clone(), i).is_some() {
                return Err(ReadError::new(
                    at(),
                    ReadErrorKind::DuplicateColumn(clip(name)),
                ));
            }
        }
        Ok(map)
    }

    /// The index of a required column.
    pub(crate) fn require(
        &self,
        columns: &HashMap<String, usize>,
        name: &str,
    ) -> Result<usize, ReadError> {
        columns.get(name).copied().ok_or_else(|| {
            ReadError::new(
                Location::line(&self.file, 1),
                ReadErrorKind::MissingColumn(name.to_string()),
            )
        })
    }

    /// The location of a field on a line.
    pub(crate) fn at(&self, line: u64, field: &str) -> Location {
        Location::line(&self.file, line).with_field(field)
    }

    /// Parses a finite number.
    pub(crate) fn number(&self, line: u64, field: &str, text: &str) -> Result<f64, ReadError> {
        parse_number(text).map_err(|kind| ReadError::new(self.at(line, field), kind))
    }

    /// Parses a finite, strictly positive time in milliseconds.
    pub(crate) fn positive_time(
        &self,
        line: u64,
        field: &str,
        text: &str,
    ) -> Result<f64, ReadError> {
        let value = self.number(line, field, text)?;
        if value <= 0.0 {
            return Err(ReadError::new(
                self.at(line, field),
                ReadErrorKind::NotPositive(value),
            ));
        }
        Ok(value)
    }
}

/// Turns the CSV reader's byte offsets, which only grow, into 1-based line numbers,
/// counting newlines once.
#[derive(Debug, Default)]
struct LineCounter {
    offset: usize,
    newlines: usize,
}

impl LineCounter {
    /// The line of the record the reader places at byte `offset`. The reader's offset
    /// (and its own line count) can point at blank lines skipped before the record, so
    /// those are stepped over.
    fn line_of(&mut self, text: &str, offset: usize) -> u64 {
        let bytes = text.as_bytes();
        let offset = offset.min(bytes.len()).max(self.offset);
        self.newlines += bytes[self.offset..offset]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        self.offset = offset;
        let mut line = 1 + self.newlines;
        for b in &bytes[offset..] {
            match b {
                b'\n' => line += 1,
                b'\r' => {}
                _ => break,
            }
        }
        line as u64
    }
}

/// Parses a finite decimal number, naming what is wrong otherwise.
pub(crate) fn parse_number(text: &str) -> Result<f64, ReadErrorKind> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| ReadErrorKind::NotANumber(clip(text)))?;
    if !value.is_finite() {
        return Err(ReadErrorKind::NotFinite(clip(text)));
    }
    Ok(value)
}

fn csv_error(file: &str, err: &csv::Error) -> ReadError {
    let location = match err.position() {
        Some(pos) => Location::line(file, pos.line()),
        None => Location::file(file),
    };
    let kind = match err.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => ReadErrorKind::FieldCount {
            expected: *expected_len as usize,
            found: *len as usize,
        },
        csv::ErrorKind::Utf8 { .. } => ReadErrorKind::Malformed("not valid UTF-8".into()),
        _ => ReadErrorKind::Malformed(err.to_string()),
    };
    ReadError::new(location, kind)
}

/// Formats a number for CSV output: the shortest text that reads back exactly.
pub(crate) fn fmt_number(value: f64) -> String {
    format!("{value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_and_oversized_input_is_refused_naming_the_limit() {
        let err = read_at_most(Path::new("/dev/zero"), 4096)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/dev/zero") && err.contains("larger than 4096 bytes"),
            "{err}"
        );
        let path = std::env::temp_dir().join(format!("tailor-limit-{}.csv", std::process::id()));
        std::fs::write(&path, "a\n1\n2\n3\n").unwrap();
        assert_eq!(read_at_most(&path, 8).unwrap(), "a\n1\n2\n3\n");
        assert!(read_at_most(&path, 7).is_err());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            CsvFile::parse_at_most("a\n1\n2\n3\n", "f", 3)
                .unwrap()
                .rows
                .len(),
            3
        );
        let err = CsvFile::parse_at_most("a\n1\n2\n3\n", "f", 2)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("f:4") && err.contains("more than 2 rows"),
            "{err}"
        );
    }

    #[test]
    fn blank_lines_are_skipped_but_an_empty_quoted_field_is_a_row() {
        let f = CsvFile::parse("a,b\n1,2\n\n3,4\n", "f").unwrap();
        assert_eq!(f.rows.len(), 2);
        assert_eq!(f.rows[1].0, 4);
        let e = CsvFile::parse("a\n1\n\"\"\n2\n", "f").unwrap();
        assert_eq!(
            e.rows.len(),
            3,
            "a quoted empty field is data, not a blank line"
        );
    }
}

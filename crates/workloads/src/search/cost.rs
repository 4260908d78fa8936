//! A cost bound for search queries, checked on the query's syntax tree before tantivy
//! builds it: the terms that scan the term dictionary (regular expressions, prefixes, and
//! every word of a fuzzy query) are counted and their patterns' lengths bounded.
//!
//! Why these: tantivy answers an ordinary term from its dictionary in one lookup, but a
//! regular expression, a prefix or a Levenshtein automaton walks the dictionary with an
//! automaton, in every segment; `body:/.*a.*/` matches nearly every term of the index, so
//! each such term costs about a full scan of the dictionary and of the postings it
//! matches. The query parser cannot see that cost, so a short query could hold the
//! workers for seconds (issue #23). The limits below keep the worst query within a few
//! hundred milliseconds on the demo's index; the server's deadline bounds the rest.

use tantivy::query_grammar::{parse_query, UserInputAst, UserInputLeaf};

/// The most automaton terms (regular expressions and prefixes) one query may have.
pub const MAX_AUTOMATON_TERMS: usize = 2;
/// The longest regular expression, in bytes.
pub const MAX_PATTERN_BYTES: usize = 64;
/// The most words a fuzzy query (`fuzzy` 1 or 2) may have: each is an automaton.
pub const MAX_FUZZY_WORDS: usize = 8;

/// What a query costs in the terms this module bounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryCost {
    /// Regular expressions and prefix terms.
    pub automata: usize,
    /// The longest regular expression, in bytes.
    pub longest_pattern: usize,
    /// Words in literal terms and phrases.
    pub words: usize,
}

impl QueryCost {
    /// The cost of `text` in tantivy's query language; `None` if it does not parse (the
    /// parser then reports the error itself).
    pub fn of(text: &str) -> Option<QueryCost> {
        let ast = parse_query(text).ok()?;
        let mut cost = QueryCost::default();
        cost.add(&ast);
        Some(cost)
    }

    fn add(&mut self, ast: &UserInputAst) {
        match ast {
            UserInputAst::Clause(clauses) => clauses.iter().for_each(|(_, c)| self.add(c)),
            UserInputAst::Boost(inner, _) => self.add(inner),
            UserInputAst::Leaf(leaf) => match leaf.as_ref() {
                UserInputLeaf::Regex { pattern, .. } => {
                    self.automata += 1;
                    self.longest_pattern = self.longest_pattern.max(pattern.len());
                }
                UserInputLeaf::Literal(literal) => {
                    self.automata += usize::from(literal.prefix);
                    self.words += literal.phrase.split_whitespace().count().max(1);
                }
                UserInputLeaf::Set { elements, .. } => self.words += elements.len(),
                _ => {}
            },
        }
    }

    /// Checks the cost against the limits for a query run with `fuzzy` edits; the error
    /// names the limit exceeded.
    pub fn check(&self, fuzzy: u8) -> Result<(), String> {
        if self.automata > MAX_AUTOMATON_TERMS {
            return Err(format!(
                "the query has {} regular-expression or prefix terms; at most \
                 {MAX_AUTOMATON_TERMS} (each scans the whole term dictionary)",
                self.automata
            ));
        }
        if self.longest_pattern > MAX_PATTERN_BYTES {
            return Err(format!(
                "a regular expression is {} bytes long; at most {MAX_PATTERN_BYTES}",
                self.longest_pattern
            ));
        }
        if fuzzy > 0 && self.words > MAX_FUZZY_WORDS {
            return Err(format!(
                "a fuzzy query (fuzzy={fuzzy}) has {} words; at most {MAX_FUZZY_WORDS} (each \
                 is an automaton over the term dictionary)",
                self.words
            ));
        }
        Ok(())
    }
}

/// The fields a query may name: the index's (`index.rs`). Terms without a field search
/// the body.
pub const QUERY_FIELDS: [&str; 2] = ["title", "body"];

/// Checks a query as the server's parser would, without the index: its syntax (tantivy's
/// query grammar, which the server's parser uses), the fields it names, its regular
/// expressions, and the cost bound. What it cannot see without the index it leaves to the
/// server. The fan-out front end calls this so that a bad query costs no shard a request.
pub fn check_query(text: &str, fuzzy: u8) -> Result<(), String> {
    let ast = parse_query(text).map_err(|_| format!("Syntax Error: {text}"))?;
    // The cost bound first, as the replicas check it: it bounds how many regular
    // expressions are compiled below, and how long.
    let mut cost = QueryCost::default();
    cost.add(&ast);
    cost.check(fuzzy)?;
    let mut problem = None;
    visit(&ast, &mut |leaf| {
        let (field, pattern) = match leaf {
            UserInputLeaf::Literal(l) => (l.field_name.as_deref(), None),
            UserInputLeaf::Regex { field, pattern } => (field.as_deref(), Some(pattern)),
            UserInputLeaf::Range { field, .. } | UserInputLeaf::Set { field, .. } => {
                (field.as_deref(), None)
            }
            UserInputLeaf::Exists { field } => (Some(field.as_str()), None),
            _ => (None, None),
        };
        if let Some(f) = field.filter(|f| !QUERY_FIELDS.contains(f)) {
            problem.get_or_insert(format!(
                "Field does not exist: '{f}' (the fields are {})",
                QUERY_FIELDS.join(" and ")
            ));
        }
        if let Some(p) = pattern {
            let field = tantivy::schema::Field::from_field_id(0);
            if let Err(e) = tantivy::query::RegexQuery::from_pattern(p, field) {
                problem.get_or_insert(format!("regular expression /{p}/: {e}"));
            }
        }
    });
    match problem {
        Some(p) => Err(p),
        None => Ok(()),
    }
}

/// Calls `f` on every leaf of `ast`.
fn visit(ast: &UserInputAst, f: &mut impl FnMut(&UserInputLeaf)) {
    match ast {
        UserInputAst::Clause(clauses) => clauses.iter().for_each(|(_, c)| visit(c, f)),
        UserInputAst::Boost(inner, _) => visit(inner, f),
        UserInputAst::Leaf(leaf) => f(leaf),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_terms_that_scan_the_dictionary() {
        let c = QueryCost::of("horse AND (body:/.*a.*/ OR title:\"gall\"*)").unwrap();
        assert_eq!(c.automata, 2);
        assert_eq!(c.longest_pattern, 5);
        assert_eq!(c.words, 2);
        assert!(c.check(0).is_ok());
        let many: String = (b'a'..=b'z')
            .map(|x| format!("body:/.*{}.*/ ", x as char))
            .collect();
        let c = QueryCost::of(&many).unwrap();
        assert_eq!(c.automata, 26);
        let why = c.check(0).unwrap_err();
        assert!(why.contains("26") && why.contains("at most 2"), "{why}");
    }

    #[test]
    fn queries_are_checked_without_the_index() {
        assert!(check_query("horse AND title:gall", 0).is_ok());
        assert!(check_query("body:/h.rse/", 0).is_ok());
        assert!(check_query("horse AND (", 0)
            .unwrap_err()
            .contains("Syntax Error"));
        assert!(check_query("colour:red", 0)
            .unwrap_err()
            .contains("'colour'"));
        assert!(check_query("body:/[a/", 0)
            .unwrap_err()
            .contains("regular expression"));
        let many: String = (b'a'..=b'c')
            .map(|x| format!("body:/{}.*/ ", x as char))
            .collect();
        assert!(check_query(&many, 0).unwrap_err().contains("at most 2"));
    }

    #[test]
    fn bounds_patterns_and_fuzzy_words() {
        let long = format!("body:/{}/", "a".repeat(65));
        assert!(QueryCost::of(&long).unwrap().check(0).is_err());
        let words = "one two three four five six seven eight nine";
        let c = QueryCost::of(words).unwrap();
        assert_eq!(c.words, 9);
        assert!(c.check(0).is_ok());
        assert!(c.check(1).unwrap_err().contains("at most 8"));
        assert!(QueryCost::of("\"a b c\"").unwrap().words == 3);
    }
}

package dev.tailor.lucene;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.FuzzyQuery;
import org.apache.lucene.search.MultiTermQuery;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.PrefixQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;

/**
 * tailor's generated search queries (the JSON lines of {@code ~/.cache/tailor/queries-*.jsonl},
 * crates/workloads/src/search/queries.rs) as Lucene queries over the {@code body} field: the
 * same kinds tailor's tantivy workload runs, so that FM in Lucene and FM in tailor are measured on
 * the same searches.
 */
public final class QuerySpecs {
  /** The field every query searches. */
  public static final String FIELD = "body";

  /** The documents a query collects by default (tailor's {@code TOP_K}). */
  public static final int TOP_K = 10;

  /**
   * One query: the Lucene query, the candidates it collects and the stored documents it loads (a
   * re-rank collects 1,000 and loads the best 100, as tailor's does).
   */
  public record Spec(String label, Query query, int candidates, int loaded) {}

  private QuerySpecs() {}

  /** Reads a query file; errors name the file and line. */
  public static List<Spec> read(Path file) throws IOException {
    ObjectMapper json = new ObjectMapper();
    List<Spec> out = new ArrayList<>();
    List<String> lines = Files.readAllLines(file);
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).trim();
      if (line.isEmpty()) {
        continue;
      }
      try {
        out.add(parse(json.readTree(line)));
      } catch (IOException | IllegalArgumentException e) {
        throw new IllegalArgumentException(file + ":" + (i + 1) + ": " + e.getMessage(), e);
      }
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException(file + ": no queries");
    }
    return out;
  }

  /** One query spec, as tailor writes it ({@code {"kind": "or", "terms": [...]}} and so on). */
  public static Spec parse(JsonNode spec) {
    String kind = text(spec, "kind");
    switch (kind) {
      case "term":
        return new Spec("term", term(text(spec, "term")), TOP_K, TOP_K);
      case "and":
      case "or":
      case "rerank":
        {
          List<String> terms = terms(spec);
          BooleanQuery.Builder b = new BooleanQuery.Builder();
          Occur occur = kind.equals("and") ? Occur.MUST : Occur.SHOULD;
          for (String t : terms) {
            b.add(term(t), occur);
          }
          boolean rerank = kind.equals("rerank");
          return new Spec(
              rerank ? "rerank" : kind + terms.size(),
              b.build(),
              rerank ? 1000 : TOP_K,
              rerank ? 100 : TOP_K);
        }
      case "phrase":
        {
          List<String> terms = terms(spec);
          if (terms.size() < 2) {
            throw new IllegalArgumentException("a phrase needs at least two terms");
          }
          return new Spec(
              "phrase", new PhraseQuery(FIELD, terms.toArray(new String[0])), TOP_K, TOP_K);
        }
      case "prefix":
        {
          String prefix = text(spec, "prefix");
          if (prefix.isEmpty() || !prefix.chars().allMatch(c -> c >= 'a' && c <= 'z')) {
            throw new IllegalArgumentException("prefix \"" + prefix + "\": lowercase letters only");
          }
          return new Spec("prefix", new PrefixQuery(new Term(FIELD, prefix)), TOP_K, TOP_K);
        }
      case "fuzzy":
        {
          int distance = spec.path("distance").asInt(-1);
          if (distance < 1 || distance > 2) {
            throw new IllegalArgumentException("fuzzy distance must be 1 or 2");
          }
          // tantivy's FuzzyTermQuery as tailor builds it: transpositions count as one edit, and
          // every term within the distance matches at a constant score, enumerated segment by
          // segment (so in the slices). Lucene's default rewrite would score the best terms
          // instead, and enumerate every segment's terms serially before any slice runs. The
          // same search as QuerySpec::opensearch_body's "rewrite": "constant_score".
          Query q =
              new FuzzyQuery(
                  new Term(FIELD, text(spec, "term")),
                  distance,
                  0,
                  FuzzyQuery.defaultMaxExpansions,
                  true,
                  MultiTermQuery.CONSTANT_SCORE_REWRITE);
          return new Spec("fuzzy" + distance, q, TOP_K, TOP_K);
        }
      default:
        throw new IllegalArgumentException(
            "unknown kind \"" + kind + "\" (term, and, or, rerank, phrase, prefix, fuzzy)");
    }
  }

  private static Query term(String t) {
    return new TermQuery(new Term(FIELD, t));
  }

  private static String text(JsonNode spec, String field) {
    JsonNode v = spec.get(field);
    if (v == null || !v.isTextual()) {
      throw new IllegalArgumentException("expected a string \"" + field + "\"");
    }
    return v.asText();
  }

  private static List<String> terms(JsonNode spec) {
    JsonNode v = spec.get("terms");
    if (v == null || !v.isArray() || v.isEmpty()) {
      throw new IllegalArgumentException("expected a non-empty array \"terms\"");
    }
    List<String> out = new ArrayList<>();
    for (JsonNode t : v) {
      if (!t.isTextual()) {
        throw new IllegalArgumentException("\"terms\" must hold strings");
      }
      out.add(t.asText());
    }
    return out;
  }
}

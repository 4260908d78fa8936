package dev.tailor.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.lucene.search.FuzzyQuery;
import org.apache.lucene.search.MultiTermQuery;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Lucene profile: tailor's query kinds on a small generated corpus, in tailor's format. */
class LuceneProfileTest {
  private static final String[] WORDS = {
    "horse", "water", "stone", "river", "green", "house", "music", "night", "light", "king"
  };

  @TempDir Path dir;

  private Path corpus(int docs) throws Exception {
    Random rng = new Random(7);
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < docs; i++) {
      StringBuilder body = new StringBuilder();
      for (int w = 0; w < 30; w++) {
        body.append(WORDS[rng.nextInt(WORDS.length)]).append(' ');
      }
      lines.add("{\"title\": \"doc " + i + "\", \"body\": \"" + body.toString().trim() + "\"}");
    }
    Path p = dir.resolve("corpus.jsonl");
    Files.write(p, lines);
    return p;
  }

  @Test
  void everyKindIsProfiledAtEveryDegreeWithItsSliceTimes() throws Exception {
    Path queries = dir.resolve("queries.jsonl");
    Files.write(
        queries,
        List.of(
            "{\"kind\":\"term\",\"term\":\"horse\"}",
            "{\"kind\":\"and\",\"terms\":[\"horse\",\"water\"]}",
            "{\"kind\":\"or\",\"terms\":[\"stone\",\"river\"]}",
            "{\"kind\":\"rerank\",\"terms\":[\"green\",\"house\",\"music\"]}",
            "{\"kind\":\"phrase\",\"terms\":[\"night\",\"light\"]}",
            "{\"kind\":\"prefix\",\"prefix\":\"ho\"}",
            "{\"kind\":\"fuzzy\",\"term\":\"hrose\",\"distance\":2}"));
    Path out = dir.resolve("profile.csv");
    Path units = dir.resolve("units.csv");
    LuceneProfile.run(
        new LuceneProfile.Settings(corpus(800), queries, out, units, 8, 3, 1, Integer.MAX_VALUE));
    List<String> rows = Files.readAllLines(out);
    assertEquals("request,t1_ms,t2_ms,t3_ms", rows.get(0));
    assertEquals(8, rows.size());
    for (String row : rows.subList(1, rows.size())) {
      String[] f = row.split(",");
      assertEquals(4, f.length, row);
      for (int d = 1; d <= 3; d++) {
        assertTrue(Double.parseDouble(f[d]) > 0, row);
      }
    }
    List<String> parts = Files.readAllLines(units);
    assertEquals("request,part,ms", parts.get(0));
    // One part per segment for each query at degree 1.
    assertEquals(7 * 8, parts.size() - 1);
  }

  @Test
  void aFuzzyQueryIsTantivysEveryTermAtAConstantScore() throws Exception {
    Path queries = dir.resolve("fuzzy.jsonl");
    Files.write(queries, List.of("{\"kind\":\"fuzzy\",\"term\":\"hrose\",\"distance\":2}"));
    QuerySpecs.Spec spec = QuerySpecs.read(queries).get(0);
    assertEquals("fuzzy2", spec.label());
    FuzzyQuery q = (FuzzyQuery) spec.query();
    assertEquals(2, q.getMaxEdits());
    assertTrue(q.getTranspositions());
    // Enumerated per segment, inside the slices, as tantivy does; not a serial top-terms rewrite.
    assertEquals(MultiTermQuery.CONSTANT_SCORE_REWRITE, q.getRewriteMethod());
  }

  @Test
  void badQueriesAndFlagsAreNamed() throws Exception {
    Path queries = dir.resolve("bad.jsonl");
    Files.write(queries, List.of("{\"kind\":\"term\",\"term\":\"horse\"}", "{\"kind\":\"regex\"}"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> QuerySpecs.read(queries));
    assertTrue(e.getMessage().contains("bad.jsonl:2: unknown kind \"regex\""), e.getMessage());
    IllegalArgumentException flag =
        assertThrows(
            IllegalArgumentException.class,
            () -> LuceneProfile.parse(new String[] {"--degrees", "0"}));
    assertTrue(flag.getMessage().contains("--degrees 0"), flag.getMessage());
  }
}

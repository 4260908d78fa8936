package dev.tailor.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FmTableTest {
  /** The table of tailor's Rust tests (crates/core/src/table.rs). */
  private static ObjectNode rustTable() {
    ObjectNode t = Tables.json(new double[][] {{0, 0, 0}, {0, 50, 0}});
    t.put("target_parallelism", 6.0);
    t.put("step_ms", 50.0);
    t.put("max_interval_ms", 150.0);
    return t;
  }

  private static FmTable parse(ObjectNode t) throws FmTableException {
    return FmTable.parse(t.toString(), "t.json");
  }

  private static FmTableException rejected(Consumer<ObjectNode> mutate) {
    ObjectNode t = rustTable();
    mutate.accept(t);
    return assertThrows(FmTableException.class, () -> parse(t), t::toString);
  }

  private static ObjectNode row(ObjectNode t, int i) {
    return (ObjectNode) t.withArray("rows").get(i);
  }

  @Test
  void readsTheSpecFormatAndLooksUpRows(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("fm-table.json");
    Files.writeString(file, rustTable().toPrettyString());
    FmTable t = FmTable.read(file);
    assertEquals(3, t.maxDegree());
    assertEquals(6.0, t.targetParallelism());
    assertEquals(0.99, t.percentile());
    assertEquals(50.0, t.stepMs());
    assertEquals(150.0, t.maxIntervalMs());
    assertEquals(2, t.rows().size());
    assertEquals(1, t.row(0).load(), "load 0 uses the first row");
    assertEquals(1, t.row(1).load());
    assertEquals(2, t.row(2).load());
    assertEquals(2, t.row(99).load(), "loads past the table use its last row");
    assertFalse(t.row(2).admitOnExit());
  }

  @Test
  void ignoresUnknownFieldsAsSerdeDoes() throws Exception {
    ObjectNode t = rustTable();
    t.put("planned_by", "tailor 0.1");
    assertEquals(2, parse(t).rows().size());
  }

  @Test
  void rejectsInconsistentTablesNamingTheField() {
    assertEquals("kind", rejected(t -> t.put("kind", "adaptive-degree-table")).field());
    assertEquals("rows", rejected(t -> t.putArray("rows")).field());
    assertEquals("rows[1].load", rejected(t -> row(t, 1).put("load", 3)).field());
    assertEquals("rows[0].load", rejected(t -> row(t, 0).put("load", 2)).field());
    assertEquals(
        "rows[0].intervals_ms",
        rejected(t -> ((ArrayNode) row(t, 0).get("intervals_ms")).remove(2)).field());
    assertEquals(
        "rows[1].intervals_ms",
        rejected(t -> ((ArrayNode) row(t, 1).get("intervals_ms")).set(1, -1.0)).field());
    assertEquals(
        "rows[1].intervals_ms",
        rejected(t -> ((ArrayNode) row(t, 1).get("intervals_ms")).set(2, Double.NaN)).field());
    assertEquals("max_degree", rejected(t -> t.put("max_degree", 0)).field());
    assertEquals("max_degree", rejected(t -> t.put("max_degree", -1)).field());
    assertEquals("max_degree", rejected(t -> t.put("max_degree", 2.5)).field());
    assertEquals("step_ms", rejected(t -> t.put("step_ms", -1.0)).field());
    assertEquals("percentile", rejected(t -> t.put("percentile", 7.0)).field());
    assertEquals("percentile", rejected(t -> t.put("percentile", 0.0)).field());
    assertEquals("target_parallelism", rejected(t -> t.put("target_parallelism", -2.0)).field());
    assertEquals("max_interval_ms", rejected(t -> t.put("max_interval_ms", -1.0)).field());
    assertEquals("rows[1].tail_ms", rejected(t -> row(t, 1).put("tail_ms", -1.0)).field());
    assertEquals("rows[0].admit_on_exit", rejected(t -> row(t, 0).put("admit_on_exit", 1)).field());
    assertEquals("rows[1].mean_ms", rejected(t -> row(t, 1).remove("mean_ms")).field());
    assertEquals("kind", rejected(t -> t.remove("kind")).field());
  }

  @Test
  void messagesSayWhatWasExpected() {
    FmTableException e =
        rejected(t -> ((ArrayNode) row(t, 0).get("intervals_ms")).remove(2));
    assertEquals(
        "t.json: rows[0].intervals_ms: expected 3 intervals (max_degree), found 2", e.getMessage());
    e = rejected(t -> t.put("kind", "other"));
    assertEquals(
        "t.json: kind: expected \"fm-interval-table\", found \"other\"", e.getMessage());
  }

  @Test
  void rejectsOverflowingIntervalsAsNonFinite() {
    String text = rustTable().toString().replace("[0.0,50.0,0.0]", "[0.0,1e400,0.0]");
    FmTableException e =
        assertThrows(FmTableException.class, () -> FmTable.parse(text, "t.json"));
    assertEquals("rows[1].intervals_ms", e.field());
    assertTrue(e.getMessage().contains("Infinity"), e.getMessage());
  }

  @Test
  void rejectsTextThatIsNoTable(@TempDir Path dir) {
    FmTableException e =
        assertThrows(FmTableException.class, () -> FmTable.parse("{\"kind\": 3", "t.json"));
    assertNull(e.field());
    assertTrue(e.getMessage().startsWith("t.json: is not JSON"), e.getMessage());
    e = assertThrows(FmTableException.class, () -> FmTable.parse("  ", "t.json"));
    assertEquals("t.json: the file is empty", e.getMessage());
    e = assertThrows(FmTableException.class, () -> FmTable.parse("[1, 2]", "t.json"));
    assertTrue(e.getMessage().contains("expected a JSON object"), e.getMessage());
    Path missing = dir.resolve("missing.json");
    e = assertThrows(FmTableException.class, () -> FmTable.read(missing));
    assertEquals(missing.toString(), e.source());
  }
}

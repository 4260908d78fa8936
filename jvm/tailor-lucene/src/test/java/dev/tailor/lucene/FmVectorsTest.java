package dev.tailor.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tailor.lucene.FmVectors.Case;
import dev.tailor.lucene.FmVectors.Decision;
import dev.tailor.lucene.FmVectors.Line;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The vectors reader and replay, on files written here rather than by the Rust binary. */
class FmVectorsTest {
  /** Rows: (0,0,0), (0,50,0), (50,10,20), and (100,0,0) admitting on an exit. */
  private static final FmTable TABLE =
      Tables.of(
          new double[][] {{0, 0, 0}, {0, 50, 0}, {50, 10, 20}, {100, 0, 0}},
          false,
          false,
          false,
          true);

  /** Four cases, their decisions worked out by hand from the Rust code. */
  private static List<Line> handCases() {
    return List.of(
        // Load 0 uses row 1, whose zero intervals start at degree 3; the guard sends
        // min(3 - 1, 10 - 1, 3 free) = 2, and a start gets 1 + 2.
        new Line(2, new Case(0, 0, 0.0, 1, 0, 10, 3, 0), new Decision(3, "now", 0.0, 2, 3)),
        // Row 2 before v1 = 50: degree 1, so no shortfall and nothing to send.
        new Line(3, new Case(0, 2, 49.9, 1, 1, 4, 10, 0), new Decision(1, "now", 0.0, 0, 1)),
        // Row 3: 30 >= 10 and 30 >= 10 + 20, degree 3; admission waits v0 = 50. Two threads
        // on it want one more, and one core is free; a start gets 1 + min(2, 5, 1).
        new Line(4, new Case(0, 3, 30.0, 2, 0, 6, 1, 0), new Decision(3, "delay", 50.0, 1, 2)),
        // Load 9 uses the last row, which admits on an exit; two queries wait: no helpers.
        new Line(5, new Case(0, 9, 5.0, 1, 0, 8, 4, 2), new Decision(3, "on_exit", 0.0, 0, 1)));
  }

  @Test
  void handWrittenCasesAgree(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("fm-vectors.jsonl");
    FmVectorsWriter.write(file, List.of(TABLE), handCases());
    FmVectors vectors = FmVectors.read(file);
    assertEquals(1, vectors.tables().size());
    assertEquals(handCases(), vectors.lines());
    FmVectors.Replay replay = vectors.replay(10);
    assertEquals(0, replay.disagreements(), replay.report());
    assertEquals(4, replay.cases());
  }

  @Test
  void aWrongDecisionIsReportedWithItsInputs(@TempDir Path dir) throws IOException {
    List<Line> cases = new ArrayList<>(handCases());
    Line third = cases.get(2);
    cases.set(2, new Line(4, third.input(), new Decision(3, "delay", 50.0, 2, 2)));
    Path file = dir.resolve("fm-vectors.jsonl");
    FmVectorsWriter.write(file, List.of(TABLE), cases);
    FmVectors.Replay replay = FmVectors.read(file).replay(10);
    assertEquals(1, replay.disagreements());
    String report = replay.report();
    assertTrue(report.contains("fm-vectors.jsonl:4: table=0 load=3 executed_ms=30.0"), report);
    assertTrue(report.contains("rust: degree=3 admission=delay delay_ms=50.0 helpers=2"), report);
    assertTrue(report.contains("java: degree=3 admission=delay delay_ms=50.0 helpers=1"), report);
  }

  @Test
  void generatedFilesRoundTrip(@TempDir Path dir) throws IOException {
    List<FmTable> tables =
        List.of(
            TABLE,
            Tables.constant(0, 0.1, 0.2, 0.5),
            Tables.of(new double[][] {{0.5, 2.5}, {0, 17.25}}, false, true));
    List<Line> lines = FmVectorsWriter.generate(40, tables, 500);
    Path file = dir.resolve("generated.jsonl");
    FmVectorsWriter.write(file, tables, lines);
    FmVectors vectors = FmVectors.read(file);
    assertEquals(lines, vectors.lines());
    assertEquals(0, vectors.replay(10).disagreements());
    assertTrue(lines.stream().anyMatch(l -> l.expected().admission().equals("on_exit")));
    assertTrue(lines.stream().anyMatch(l -> l.expected().admission().equals("delay")));
  }

  @Test
  void malformedFilesNameTheLineAndField(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("bad.jsonl");
    Files.writeString(file, "{\"kind\":\"other\",\"version\":1,\"tables\":[]}\n");
    IOException e = assertThrows(IOException.class, () -> FmVectors.read(file));
    assertTrue(e.getMessage().contains("bad.jsonl:1: kind"), e.getMessage());

    FmVectorsWriter.write(file, List.of(TABLE), handCases());
    List<String> text = new ArrayList<>(Files.readAllLines(file));
    text.set(2, text.get(2).replace("\"threads\":1", "\"threads\":-1"));
    Files.write(file, text);
    e = assertThrows(IOException.class, () -> FmVectors.read(file));
    assertTrue(e.getMessage().contains("bad.jsonl:3: threads"), e.getMessage());

    text.set(2, text.get(2).replace("\"table\":0", "\"table\":5"));
    text.set(2, text.get(2).replace("\"threads\":-1", "\"threads\":1"));
    Files.write(file, text);
    e = assertThrows(IOException.class, () -> FmVectors.read(file));
    assertTrue(e.getMessage().contains("bad.jsonl:3: table: 5"), e.getMessage());

    String header = text.get(0).replace("\"max_degree\":3", "\"max_degree\":2");
    Files.write(file, List.of(header));
    FmTableException t = assertThrows(FmTableException.class, () -> FmVectors.read(file));
    assertEquals("rows[0].intervals_ms", t.field());
    assertTrue(t.getMessage().contains("bad.jsonl:1: tables[0]"), t.getMessage());
  }
}

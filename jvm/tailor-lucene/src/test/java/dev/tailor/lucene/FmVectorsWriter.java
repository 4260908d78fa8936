package dev.tailor.lucene;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Writes files in the shared vectors format, for testing the reader and the replay without the
 * Rust binary: given cases with their decisions, or generated cases decided by the Java policy.
 */
final class FmVectorsWriter {
  private FmVectorsWriter() {}

  /** Writes the header with {@code tables}, then one line per case. */
  static void write(Path path, List<FmTable> tables, List<FmVectors.Line> lines)
      throws IOException {
    try (Writer out = Files.newBufferedWriter(path, StandardCharsets.UTF_8)) {
      ObjectNode header = Tables.JSON.createObjectNode();
      header.put("kind", FmVectors.KIND);
      header.put("version", FmVectors.VERSION);
      ArrayNode array = header.putArray("tables");
      tables.forEach(t -> array.add(Tables.json(t)));
      out.write(header.toString());
      out.write('\n');
      for (FmVectors.Line l : lines) {
        FmVectors.Case c = l.input();
        FmVectors.Decision d = l.expected();
        ObjectNode node = Tables.JSON.createObjectNode();
        node.put("table", c.table());
        node.put("load", c.load());
        node.put("executed_ms", c.executedMs());
        node.put("threads", c.threads());
        node.put("pending", c.pending());
        node.put("unclaimed", c.unclaimed());
        node.put("free_cores", c.freeCores());
        node.put("waiting", c.waiting());
        ObjectNode decision = node.putObject("decision");
        decision.put("degree", d.degree());
        decision.put("admission", d.admission());
        decision.put("delay_ms", d.delayMs());
        decision.put("helpers", d.helpers());
        decision.put("start_threads", d.startThreads());
        out.write(node.toString());
        out.write('\n');
      }
    }
  }

  /**
   * {@code count} seeded cases on {@code tables}, decided by the Java policy, with executed times
   * on, a hair before, or a hair after a boundary, as the Rust generator draws them.
   */
  static List<FmVectors.Line> generate(long seed, List<FmTable> tables, int count) {
    Random random = new Random(seed);
    List<FmVectors.Line> lines = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      int t = random.nextInt(tables.size());
      FmTable table = tables.get(t);
      int load = random.nextInt(table.rows().size() + 4);
      double[] v = table.row(load).intervalsMs();
      List<Double> boundaries = new ArrayList<>(List.of(0.0));
      double b = 0.0;
      for (int j = 1; j < v.length; j++) {
        b += v[j];
        boundaries.add(b);
      }
      double at = boundaries.get(random.nextInt(boundaries.size()));
      double executed;
      switch (random.nextInt(4)) {
        case 0:
          executed = at;
          break;
        case 1:
          executed = Math.max(at - 1e-9, 0.0);
          break;
        case 2:
          executed = at + 1e-9;
          break;
        default:
          executed = random.nextDouble() * (b + 10.0);
      }
      FmVectors.Case c =
          new FmVectors.Case(
              t,
              load,
              executed,
              1 + random.nextInt(table.maxDegree() + 1),
              random.nextInt(4),
              random.nextInt(21),
              random.nextInt(17),
              random.nextBoolean() ? 0 : 1 + random.nextInt(3));
      lines.add(new FmVectors.Line(i + 2, c, FmVectors.decide(table, c)));
    }
    return lines;
  }
}

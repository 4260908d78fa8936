package dev.tailor.lucene;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** Hand-written FM tables for tests, as tailor's {@code IntervalTable::from_schedules} makes. */
final class Tables {
  static final ObjectMapper JSON = new ObjectMapper();

  private Tables() {}

  /** A table whose row q (load q + 1) is {@code schedules[q]}, admitting on an exit if flagged. */
  static FmTable of(double[][] schedules, boolean... onExit) {
    try {
      return FmTable.parse(json(schedules, onExit).toString(), "test table");
    } catch (FmTableException e) {
      throw new AssertionError(e);
    }
  }

  /** As {@link #of}, with the table's horizon y ({@code max_interval_ms}) at {@code yMs}. */
  static FmTable withHorizon(double yMs, double[][] schedules) {
    try {
      ObjectNode t = json(schedules);
      t.put("max_interval_ms", yMs);
      return FmTable.parse(t.toString(), "test table");
    } catch (FmTableException e) {
      throw new AssertionError(e);
    }
  }

  /** One row for every load: {@code schedule}. */
  static FmTable constant(double... schedule) {
    return of(new double[][] {schedule});
  }

  /** The table's JSON, with placeholder planning metadata and predictions. */
  static ObjectNode json(double[][] schedules, boolean... onExit) {
    ObjectNode t = JSON.createObjectNode();
    t.put("kind", FmTable.KIND);
    t.put("max_degree", schedules.length == 0 ? 1 : schedules[0].length);
    t.put("target_parallelism", 8.0);
    t.put("percentile", 0.99);
    t.put("step_ms", 5.0);
    t.put("max_interval_ms", 100.0);
    ArrayNode rows = t.putArray("rows");
    for (int i = 0; i < schedules.length; i++) {
      ObjectNode r = rows.addObject();
      r.put("load", i + 1);
      ArrayNode v = r.putArray("intervals_ms");
      for (double x : schedules[i]) {
        v.add(x);
      }
      r.put("admit_on_exit", i < onExit.length && onExit[i]);
      r.put("tail_ms", 0.0);
      r.put("mean_ms", 0.0);
      r.put("parallelism", 0.0);
    }
    return t;
  }

  /** A table's JSON as the spec writes it (for vector files). */
  static ObjectNode json(FmTable table) {
    ObjectNode t = JSON.createObjectNode();
    t.put("kind", FmTable.KIND);
    t.put("max_degree", table.maxDegree());
    t.put("target_parallelism", table.targetParallelism());
    t.put("percentile", table.percentile());
    t.put("step_ms", table.stepMs());
    t.put("max_interval_ms", table.maxIntervalMs());
    ArrayNode rows = t.putArray("rows");
    for (FmTable.Row row : table.rows()) {
      ObjectNode r = rows.addObject();
      r.put("load", row.load());
      ArrayNode v = r.putArray("intervals_ms");
      for (double x : row.intervalsMs()) {
        v.add(x);
      }
      r.put("admit_on_exit", row.admitOnExit());
      r.put("tail_ms", row.tailMs());
      r.put("mean_ms", row.meanMs());
      r.put("parallelism", row.parallelism());
    }
    return t;
  }
}

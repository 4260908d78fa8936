package dev.tailor.lucene;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * FM's interval table (Haque et al., ASPLOS 2015, §4.1): for each load, the schedule S = (v0, v1,
 * ..., v_{n-1}) a query follows. This is the {@code fm-table.json} that {@code tailor plan fm}
 * writes (shared/spec/formats.md), checked by the same rules as the Rust reader ({@code
 * IntervalTable::parse} in crates/core/src/table.rs), so a file one side accepts the other accepts
 * too.
 */
public final class FmTable {
  /** The {@code kind} of an FM interval table file. */
  public static final String KIND = "fm-interval-table";

  private static final ObjectMapper JSON = new ObjectMapper();

  private final int maxDegree;
  private final double targetParallelism;
  private final double percentile;
  private final double stepMs;
  private final double maxIntervalMs;
  private final List<Row> rows;

  private FmTable(
      int maxDegree,
      double targetParallelism,
      double percentile,
      double stepMs,
      double maxIntervalMs,
      List<Row> rows) {
    this.maxDegree = maxDegree;
    this.targetParallelism = targetParallelism;
    this.percentile = percentile;
    this.stepMs = stepMs;
    this.maxIntervalMs = maxIntervalMs;
    this.rows = List.copyOf(rows);
  }

  /** One row of the table: the schedule of a query that arrives or runs at this load. */
  public static final class Row {
    private final int load;
    private final double[] intervalsMs;
    private final boolean admitOnExit;
    private final double tailMs;
    private final double meanMs;
    private final double parallelism;

    Row(
        int load,
        double[] intervalsMs,
        boolean admitOnExit,
        double tailMs,
        double meanMs,
        double parallelism) {
      this.load = load;
      this.intervalsMs = intervalsMs.clone();
      this.admitOnExit = admitOnExit;
      this.tailMs = tailMs;
      this.meanMs = meanMs;
      this.parallelism = parallelism;
    }

    /** The load (queries in the system) this row is for. */
    public int load() {
      return load;
    }

    /** The schedule (v0, v1, ..., v_{n-1}) in ms, a copy. */
    public double[] intervalsMs() {
      return intervalsMs.clone();
    }

    /** The paper's (e1, d1): wait for another query to leave, then start at degree 1. */
    public boolean admitOnExit() {
      return admitOnExit;
    }

    /** The planner's predicted percentile latency for this row, in ms. */
    public double tailMs() {
      return tailMs;
    }

    /** The planner's predicted mean latency for this row, in ms. */
    public double meanMs() {
      return meanMs;
    }

    /** The planner's predicted total average parallelism ap_R(S, load). */
    public double parallelism() {
      return parallelism;
    }

    /**
     * The degree a query of this row runs at after executing {@code executedMs} since it started:
     * 1 until v1, 2 until v1 + v2, ..., then n (§4.1's schedule). Zero-length intervals are
     * skipped, so (0, 0, ...) starts at degree n.
     *
     * <p>The boundaries are summed one interval at a time and compared with {@code >=}, in the
     * order of the Rust {@code IntervalRow::degree_at}, so both give the same degree for the same
     * doubles, bit for bit.
     */
    public int degreeAt(double executedMs) {
      double boundary = 0.0;
      int degree = 1;
      for (int i = 1; i < intervalsMs.length; i++) {
        boundary += intervalsMs[i];
        if (executedMs >= boundary) {
          degree++;
        } else {
          break;
        }
      }
      return degree;
    }

    /** The delay v0 before a query may start, unless the row admits on an exit. */
    public double admissionDelayMs() {
      return intervalsMs[0];
    }

    /**
     * The executed time at which {@link #degreeAt} first exceeds {@code current}, or positive
     * infinity if it never does: v1 + ... + v_current, summed as {@link #degreeAt} sums.
     */
    double nextIncreaseMs(int current) {
      if (current >= intervalsMs.length) {
        return Double.POSITIVE_INFINITY;
      }
      double boundary = 0.0;
      for (int i = 1; i <= current; i++) {
        boundary += intervalsMs[i];
      }
      return boundary;
    }
  }

  /** Reads and checks a table file. */
  public static FmTable read(Path path) throws FmTableException {
    String text;
    try {
      text = Files.readString(path, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new FmTableException(path.toString(), "cannot be read (" + e + ")", e);
    }
    return parse(text, path.toString());
  }

  /** Parses and checks table JSON; {@code source} names it in errors. */
  public static FmTable parse(String text, String source) throws FmTableException {
    if (text.isBlank()) {
      throw new FmTableException(source, null, "the file is empty");
    }
    JsonNode node;
    try {
      node = JSON.readTree(text);
    } catch (JsonProcessingException e) {
      throw new FmTableException(source, "is not JSON: " + e.getOriginalMessage(), e);
    }
    return fromJson(node, source);
  }

  /**
   * Checks a parsed table, in the order of the Rust reader: every field's type, then the kind,
   * the rows' loads, and the values.
   */
  static FmTable fromJson(JsonNode node, String source) throws FmTableException {
    Fields f = new Fields(source);
    if (node == null || !node.isObject()) {
      throw new FmTableException(source, null, "expected a JSON object");
    }
    String kind = f.string(node, "", "kind");
    int maxDegree = f.count(node, "", "max_degree");
    double targetParallelism = f.number(node, "", "target_parallelism");
    double percentile = f.number(node, "", "percentile");
    double stepMs = f.number(node, "", "step_ms");
    double maxIntervalMs = f.number(node, "", "max_interval_ms");
    JsonNode rowsNode = f.array(node, "", "rows");
    List<Row> rows = new ArrayList<>(rowsNode.size());
    for (int i = 0; i < rowsNode.size(); i++) {
      JsonNode r = rowsNode.get(i);
      String at = "rows[" + i + "]";
      if (!r.isObject()) {
        throw new FmTableException(source, at, "expected an object");
      }
      JsonNode intervalsNode = f.array(r, at, "intervals_ms");
      double[] intervals = new double[intervalsNode.size()];
      for (int j = 0; j < intervals.length; j++) {
        JsonNode v = intervalsNode.get(j);
        if (!v.isNumber()) {
          throw new FmTableException(
              source, at + ".intervals_ms", "expected numbers, found " + v.toString());
        }
        intervals[j] = v.doubleValue();
      }
      rows.add(
          new Row(
              f.count(r, at, "load"),
              intervals,
              f.bool(r, at, "admit_on_exit"),
              f.number(r, at, "tail_ms"),
              f.number(r, at, "mean_ms"),
              f.number(r, at, "parallelism")));
    }

    if (!KIND.equals(kind)) {
      throw new FmTableException(
          source, "kind", "expected \"" + KIND + "\", found \"" + kind + "\"");
    }
    if (rows.isEmpty()) {
      throw new FmTableException(source, "rows", "the table has no rows");
    }
    for (int i = 0; i < rows.size(); i++) {
      if (rows.get(i).load != i + 1) {
        throw new FmTableException(
            source,
            "rows[" + i + "].load",
            "expected load " + (i + 1) + ", found " + rows.get(i).load);
      }
    }
    if (maxDegree == 0) {
      throw new FmTableException(source, "max_degree", "must be at least 1");
    }
    positive(source, "target_parallelism", targetParallelism);
    positive(source, "step_ms", stepMs);
    if (!(Double.isFinite(maxIntervalMs) && maxIntervalMs >= 0.0)) {
      throw new FmTableException(
          source, "max_interval_ms", "must be finite and non-negative, found " + maxIntervalMs);
    }
    if (!(percentile > 0.0 && percentile <= 1.0)) {
      throw new FmTableException(source, "percentile", "must lie in (0, 1], found " + percentile);
    }
    for (int i = 0; i < rows.size(); i++) {
      Row row = rows.get(i);
      String at = "rows[" + i + "]";
      nonNegative(source, at + ".tail_ms", row.tailMs);
      nonNegative(source, at + ".mean_ms", row.meanMs);
      nonNegative(source, at + ".parallelism", row.parallelism);
      if (row.intervalsMs.length != maxDegree) {
        throw new FmTableException(
            source,
            at + ".intervals_ms",
            "expected "
                + maxDegree
                + " intervals (max_degree), found "
                + row.intervalsMs.length);
      }
      for (double v : row.intervalsMs) {
        if (!(Double.isFinite(v) && v >= 0.0)) {
          throw new FmTableException(
              source, at + ".intervals_ms", "intervals must be finite and non-negative, found " + v);
        }
      }
    }
    return new FmTable(maxDegree, targetParallelism, percentile, stepMs, maxIntervalMs, rows);
  }

  /** n, the maximum degree, which is also the length of every schedule. */
  public int maxDegree() {
    return maxDegree;
  }

  /** target_p: the total software parallelism the table aims not to exceed. */
  public double targetParallelism() {
    return targetParallelism;
  }

  /** beta, the percentile the table minimizes, in (0, 1]. */
  public double percentile() {
    return percentile;
  }

  /** The grid step of every interval, in ms. */
  public double stepMs() {
    return stepMs;
  }

  /** y, the largest interval on the grid, in ms. */
  public double maxIntervalMs() {
    return maxIntervalMs;
  }

  /** The rows; {@code rows().get(i)} is for load i + 1. */
  public List<Row> rows() {
    return rows;
  }

  /** The row for {@code load}: loads above the last row use the last row, load 0 the first. */
  public Row row(int load) {
    return rows.get(Math.min(Math.max(load, 1), rows.size()) - 1);
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder("FmTable(max_degree=").append(maxDegree);
    for (Row r : rows) {
      s.append(", ").append(r.load).append(": ").append(Arrays.toString(r.intervalsMs));
      if (r.admitOnExit) {
        s.append(" on exit");
      }
    }
    return s.append(')').toString();
  }

  private static void positive(String source, String field, double value)
      throws FmTableException {
    if (!(Double.isFinite(value) && value > 0.0)) {
      throw new FmTableException(source, field, "must be positive and finite, found " + value);
    }
  }

  private static void nonNegative(String source, String field, double value)
      throws FmTableException {
    if (!(Double.isFinite(value) && value >= 0.0)) {
      throw new FmTableException(source, field, "must be finite and non-negative, found " + value);
    }
  }

  /**
   * Typed access to the field {@code name} of {@code object}; errors name it by its full path,
   * {@code prefix.name} ({@code rows[2].load}), or {@code name} at the top level.
   */
  private static final class Fields {
    private final String source;

    Fields(String source) {
      this.source = source;
    }

    private static String path(String prefix, String name) {
      return prefix.isEmpty() ? name : prefix + "." + name;
    }

    private JsonNode get(JsonNode object, String prefix, String name) throws FmTableException {
      JsonNode v = object.get(name);
      if (v == null || v.isNull()) {
        throw new FmTableException(source, path(prefix, name), "missing");
      }
      return v;
    }

    private FmTableException wrongType(String prefix, String name, String expected, JsonNode v) {
      return new FmTableException(
          source, path(prefix, name), "expected " + expected + ", found " + v.toString());
    }

    String string(JsonNode object, String prefix, String name) throws FmTableException {
      JsonNode v = get(object, prefix, name);
      if (!v.isTextual()) {
        throw wrongType(prefix, name, "a string", v);
      }
      return v.textValue();
    }

    int count(JsonNode object, String prefix, String name) throws FmTableException {
      JsonNode v = get(object, prefix, name);
      if (!v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() < 0) {
        throw wrongType(prefix, name, "a non-negative integer", v);
      }
      return v.intValue();
    }

    double number(JsonNode object, String prefix, String name) throws FmTableException {
      JsonNode v = get(object, prefix, name);
      if (!v.isNumber()) {
        throw wrongType(prefix, name, "a number", v);
      }
      return v.doubleValue();
    }

    boolean bool(JsonNode object, String prefix, String name) throws FmTableException {
      JsonNode v = get(object, prefix, name);
      if (!v.isBoolean()) {
        throw wrongType(prefix, name, "true or false", v);
      }
      return v.booleanValue();
    }

    JsonNode array(JsonNode object, String prefix, String name) throws FmTableException {
      JsonNode v = get(object, prefix, name);
      if (!v.isArray()) {
        throw wrongType(prefix, name, "an array", v);
      }
      return v;
    }
  }
}

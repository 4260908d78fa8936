package dev.tailor.lucene;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The shared test vectors of FM's decisions (JSON Lines, written by {@code tailor vectors fm}; see
 * jvm/README.md): a header with the tables, then one case per line with the Rust decision. {@link
 * #replay} decides every case in Java and reports where the two disagree.
 */
final class FmVectors {
  static final String KIND = "tailor-fm-vectors";
  static final int VERSION = 1;

  /** The inputs of one case. */
  record Case(
      int table,
      int load,
      double executedMs,
      int threads,
      int pending,
      int unclaimed,
      int freeCores,
      int waiting) {
    @Override
    public String toString() {
      return String.format(
          Locale.ROOT,
          "table=%d load=%d executed_ms=%s threads=%d pending=%d unclaimed=%d free_cores=%d"
              + " waiting=%d",
          table,
          load,
          Double.toString(executedMs),
          threads,
          pending,
          unclaimed,
          freeCores,
          waiting);
    }
  }

  /** A decision: admission is "now", "delay" or "on_exit"; delayMs is v0 for "delay", else 0. */
  record Decision(int degree, String admission, double delayMs, int helpers, int startThreads) {
    /** Equal, with delays compared bit for bit. */
    boolean same(Decision o) {
      return degree == o.degree
          && admission.equals(o.admission)
          && Double.doubleToLongBits(delayMs) == Double.doubleToLongBits(o.delayMs)
          && helpers == o.helpers
          && startThreads == o.startThreads;
    }

    @Override
    public String toString() {
      return String.format(
          Locale.ROOT,
          "degree=%d admission=%s delay_ms=%s helpers=%d start_threads=%d",
          degree,
          admission,
          Double.toString(delayMs),
          helpers,
          startThreads);
    }
  }

  /** A case as read: its line in the file, its inputs, and the decision written there. */
  record Line(int number, Case input, Decision expected) {}

  /** What a replay found: the cases, how many disagreed, and the first few, described. */
  record Replay(int cases, int disagreements, List<String> first) {
    String report() {
      StringBuilder s =
          new StringBuilder()
              .append(disagreements)
              .append(" of ")
              .append(cases)
              .append(" cases disagree");
      for (String d : first) {
        s.append("\n  ").append(d);
      }
      return s.toString();
    }
  }

  private final String source;
  private final List<FmTable> tables;
  private final List<Line> lines;

  FmVectors(String source, List<FmTable> tables, List<Line> lines) {
    this.source = source;
    this.tables = List.copyOf(tables);
    this.lines = List.copyOf(lines);
  }

  List<FmTable> tables() {
    return tables;
  }

  List<Line> lines() {
    return lines;
  }

  /** The Java decision for a case: what FmPolicy decides on its table. */
  static Decision decide(FmTable table, Case c) {
    int degree = table.row(c.load()).degreeAt(c.executedMs());
    FmPolicy.Admission admission = new FmPolicy(table).admission(c.load());
    String kind;
    switch (admission.kind()) {
      case NOW:
        kind = "now";
        break;
      case DELAY:
        kind = "delay";
        break;
      case ON_EXIT:
        kind = "on_exit";
        break;
      default:
        throw new AssertionError(admission);
    }
    return new Decision(
        degree,
        kind,
        admission.delayMs(),
        FmPolicy.helpersGranted(
            degree, c.threads(), c.pending(), c.unclaimed(), c.freeCores(), c.waiting()),
        FmPolicy.startThreads(degree, c.unclaimed(), c.freeCores(), c.waiting()));
  }

  /** Decides every case in Java; describes up to {@code limit} disagreements. */
  Replay replay(int limit) {
    int disagreements = 0;
    List<String> first = new ArrayList<>();
    for (Line l : lines) {
      Decision java = decide(tables.get(l.input().table()), l.input());
      if (!java.same(l.expected())) {
        disagreements++;
        if (first.size() < limit) {
          first.add(
              source
                  + ":"
                  + l.number()
                  + ": "
                  + l.input()
                  + "\n    rust: "
                  + l.expected()
                  + "\n    java: "
                  + java);
        }
      }
    }
    return new Replay(lines.size(), disagreements, first);
  }

  /** Reads a vectors file, naming the line and field of anything malformed. */
  static FmVectors read(Path path) throws IOException {
    String source = path.toString();
    List<FmTable> tables = new ArrayList<>();
    List<Line> lines = new ArrayList<>();
    try (BufferedReader in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
      String text;
      int number = 0;
      while ((text = in.readLine()) != null) {
        number++;
        if (text.isBlank()) {
          continue;
        }
        JsonNode node;
        try {
          node = Tables.JSON.readTree(text);
        } catch (JsonProcessingException e) {
          throw new IOException(source + ":" + number + ": not JSON: " + e.getOriginalMessage());
        }
        if (number == 1) {
          readHeader(node, source, tables);
        } else {
          lines.add(readCase(node, source + ":" + number, number, tables.size()));
        }
      }
      if (number == 0) {
        throw new IOException(source + ": the file is empty");
      }
    }
    return new FmVectors(source, tables, lines);
  }

  private static void readHeader(JsonNode node, String source, List<FmTable> tables)
      throws IOException {
    String at = source + ":1";
    if (!KIND.equals(node.path("kind").asText(null))) {
      throw new IOException(at + ": kind: expected \"" + KIND + "\", found " + node.get("kind"));
    }
    if (node.path("version").asInt(-1) != VERSION) {
      throw new IOException(at + ": version: expected " + VERSION + ", found " + node.get("version"));
    }
    JsonNode array = node.path("tables");
    if (!array.isArray() || array.isEmpty()) {
      throw new IOException(at + ": tables: expected a non-empty array");
    }
    for (int i = 0; i < array.size(); i++) {
      tables.add(FmTable.fromJson(array.get(i), at + ": tables[" + i + "]"));
    }
  }

  private static Line readCase(JsonNode node, String at, int number, int tables)
      throws IOException {
    Case c =
        new Case(
            count(node, "table", at),
            count(node, "load", at),
            number(node, "executed_ms", at),
            count(node, "threads", at),
            count(node, "pending", at),
            count(node, "unclaimed", at),
            count(node, "free_cores", at),
            count(node, "waiting", at));
    if (c.table() >= tables) {
      throw new IOException(at + ": table: " + c.table() + " but the header has " + tables);
    }
    JsonNode d = node.path("decision");
    if (!d.isObject()) {
      throw new IOException(at + ": decision: missing");
    }
    JsonNode admission = d.path("admission");
    if (!admission.isTextual()) {
      throw new IOException(at + ": decision.admission: expected a string");
    }
    Decision expected =
        new Decision(
            count(d, "degree", at),
            admission.textValue(),
            number(d, "delay_ms", at),
            count(d, "helpers", at),
            count(d, "start_threads", at));
    return new Line(number, c, expected);
  }

  private static int count(JsonNode node, String field, String at) throws IOException {
    JsonNode v = node.get(field);
    if (v == null || !v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() < 0) {
      throw new IOException(at + ": " + field + ": expected a count that fits an int, found " + v);
    }
    return v.intValue();
  }

  private static double number(JsonNode node, String field, String at) throws IOException {
    JsonNode v = node.get(field);
    if (v == null || !v.isNumber()) {
      throw new IOException(at + ": " + field + ": expected a number, found " + v);
    }
    return v.doubleValue();
  }
}

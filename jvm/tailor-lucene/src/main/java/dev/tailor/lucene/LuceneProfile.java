package dev.tailor.lucene;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;

/**
 * Measures a query set on Lucene at degrees 1..N, each query alone on an idle machine, and writes
 * tailor's demand profile ({@code request,t1_ms,...,tN_ms}; shared/spec/formats.md), so that
 * {@code tailor plan fm} plans FM for Lucene as the FM paper planned it for Lucene (Haque et al.,
 * ASPLOS 2015, §6: each request's speedup measured offline at every degree).
 *
 * <p>The index has {@code --segments} segments (no merging) and every segment is a slice, as
 * tailor's tantivy index is searched segment by segment. Degree d runs a query's slices on the
 * calling thread and d - 1 pool threads (Lucene's {@code TaskExecutor}). Each time is the median of
 * {@code --repeat} runs after one warm-up pass at every degree. A query's degrees are timed side by
 * side, in turn, not in one pass over every query per degree: timed that way on a shared two-core
 * VM, some queries ran 2-8x faster at degree 2 than at degree 1, which two threads cannot do:
 * likely a slow spell of the machine during one pass, which falls on that degree alone
 * (docs/opensearch.md, 2026-11-29). With {@code --units-out}, each query's slice times at degree
 * 1 are written too ({@code request,part,ms}).
 *
 * <pre>
 * java -cp ... dev.tailor.lucene.LuceneProfile --corpus docs.jsonl --queries queries.jsonl \
 *     --out profile.csv [--segments 16] [--degrees 4] [--repeat 3] [--limit N] [--units-out F]
 * </pre>
 *
 * The corpus is JSON lines with {@code title} and {@code body} (what {@code tailor serve --corpus}
 * reads); the queries are tailor's generated query file ({@link QuerySpecs}). The analyzer is
 * Lucene's standard tokenizer with lower-casing and no stop words; tailor's tantivy index splits on
 * non-alphanumeric characters and lower-cases, so the two term dictionaries differ a little (in
 * apostrophes and the like).
 */
public final class LuceneProfile {
  private LuceneProfile() {}

  /** The settings of one profile. */
  public record Settings(
      Path corpus,
      Path queries,
      Path out,
      Path unitsOut,
      int segments,
      int degrees,
      int repeat,
      int limit) {}

  /** Runs from the command line; exits 2 on bad arguments. */
  public static void main(String[] args) throws Exception {
    Settings s;
    try {
      s = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      System.exit(2);
      return;
    }
    run(s);
  }

  static Settings parse(String[] args) {
    Path corpus = null, queries = null, out = null, units = null;
    int segments = 16, degrees = 4, repeat = 3, limit = Integer.MAX_VALUE;
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(flag + " needs a value");
      }
      String v = args[++i];
      switch (flag) {
        case "--corpus" -> corpus = Path.of(v);
        case "--queries" -> queries = Path.of(v);
        case "--out" -> out = Path.of(v);
        case "--units-out" -> units = Path.of(v);
        case "--segments" -> segments = positive(flag, v);
        case "--degrees" -> degrees = positive(flag, v);
        case "--repeat" -> repeat = positive(flag, v);
        case "--limit" -> limit = positive(flag, v);
        default -> throw new IllegalArgumentException("unknown flag " + flag);
      }
    }
    if (corpus == null || queries == null || out == null) {
      throw new IllegalArgumentException("--corpus, --queries and --out are required");
    }
    return new Settings(corpus, queries, out, units, segments, degrees, repeat, limit);
  }

  private static int positive(String flag, String v) {
    try {
      int n = Integer.parseInt(v);
      if (n >= 1) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(flag + " " + v + ": expected an integer of at least 1");
  }

  /** Builds the index, measures every query at every degree and writes the profile. */
  public static void run(Settings s) throws IOException, InterruptedException {
    List<QuerySpecs.Spec> specs = QuerySpecs.read(s.queries());
    if (specs.size() > s.limit()) {
      specs = specs.subList(0, s.limit());
    }
    try (Directory dir = index(s.corpus(), s.segments());
        DirectoryReader reader = DirectoryReader.open(dir)) {
      System.err.printf(
          Locale.ROOT,
          "tailor-lucene: %d documents in %d segments; %d queries at degrees 1..%d%n",
          reader.numDocs(),
          reader.leaves().size(),
          specs.size(),
          s.degrees());
      double[][] ms = new double[specs.size()][s.degrees()];
      List<double[]> units = new ArrayList<>();
      List<ExecutorService> pools = new ArrayList<>();
      try {
        // One searcher per degree. At degree 1 the slices run one after another on the calling
        // thread (an executor that runs each task where it is given), still one per segment.
        SegmentSearcher[] searchers = new SegmentSearcher[s.degrees()];
        for (int d = 1; d <= s.degrees(); d++) {
          ExecutorService pool = d > 1 ? Executors.newFixedThreadPool(d - 1) : null;
          if (pool != null) {
            pools.add(pool);
          }
          searchers[d - 1] = new SegmentSearcher(reader, pool != null ? pool : Runnable::run);
        }
        for (SegmentSearcher searcher : searchers) {
          for (QuerySpecs.Spec q : specs) {
            searcher.run(q); // warm-up, every degree
          }
        }
        // A query's degrees are timed side by side, in an order rotated per query and repeat, so
        // that a slow spell of the machine (a steal burst, a JIT recompilation) falls on all its
        // degrees alike instead of on one degree's pass.
        for (int i = 0; i < specs.size(); i++) {
          double[][] runs = new double[s.degrees()][s.repeat()];
          for (int r = 0; r < s.repeat(); r++) {
            for (int k = 0; k < s.degrees(); k++) {
              int d = (i + r + k) % s.degrees();
              SegmentSearcher searcher = searchers[d];
              searcher.slices.clear();
              long t0 = System.nanoTime();
              searcher.run(specs.get(i));
              runs[d][r] = (System.nanoTime() - t0) / 1e6;
            }
          }
          for (int d = 0; d < s.degrees(); d++) {
            Arrays.sort(runs[d]);
            ms[i][d] = runs[d][runs[d].length / 2];
          }
          units.add(searchers[0].slices.stream().mapToDouble(Double::doubleValue).toArray());
        }
      } finally {
        pools.forEach(ExecutorService::shutdownNow);
      }
      write(s, ms, units);
    }
  }

  private static void write(Settings s, double[][] ms, List<double[]> units) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(s.out()))) {
      StringBuilder header = new StringBuilder("request");
      for (int d = 1; d <= s.degrees(); d++) {
        header.append(",t").append(d).append("_ms");
      }
      w.println(header);
      for (int i = 0; i < ms.length; i++) {
        StringBuilder row = new StringBuilder(id(i));
        for (double t : ms[i]) {
          row.append(',').append(String.format(Locale.ROOT, "%.6f", t));
        }
        w.println(row);
      }
    }
    if (s.unitsOut() != null) {
      try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(s.unitsOut()))) {
        w.println("request,part,ms");
        for (int i = 0; i < units.size(); i++) {
          double[] parts = units.get(i);
          for (int p = 0; p < parts.length; p++) {
            w.println(id(i) + "," + p + "," + String.format(Locale.ROOT, "%.6f", parts[p]));
          }
        }
      }
    }
  }

  private static String id(int i) {
    return String.format(Locale.ROOT, "q%05d", i + 1);
  }

  /** Indexes the corpus in memory in {@code segments} segments of equal size, never merged. */
  static Directory index(Path corpus, int segments) throws IOException {
    ObjectMapper json = new ObjectMapper();
    List<JsonNode> docs = new ArrayList<>();
    try (BufferedReader r = Files.newBufferedReader(corpus)) {
      String line;
      int n = 0;
      while ((line = r.readLine()) != null) {
        n++;
        if (line.isBlank()) {
          continue;
        }
        JsonNode doc = json.readTree(line);
        if (!doc.path("body").isTextual()) {
          throw new IllegalArgumentException(corpus + ":" + n + ": expected a string \"body\"");
        }
        docs.add(doc);
      }
    }
    if (docs.size() < segments) {
      throw new IllegalArgumentException(
          corpus + ": " + docs.size() + " documents, fewer than the " + segments + " segments");
    }
    Directory dir = new ByteBuffersDirectory();
    IndexWriterConfig config =
        new IndexWriterConfig(new StandardAnalyzer(CharArraySet.EMPTY_SET))
            .setMergePolicy(NoMergePolicy.INSTANCE)
            .setRAMBufferSizeMB(1024);
    try (IndexWriter w = new IndexWriter(dir, config)) {
      for (int seg = 0; seg < segments; seg++) {
        int from = (int) ((long) docs.size() * seg / segments);
        int to = (int) ((long) docs.size() * (seg + 1) / segments);
        for (JsonNode d : docs.subList(from, to)) {
          Document doc = new Document();
          doc.add(new TextField("title", d.path("title").asText(""), Field.Store.YES));
          doc.add(new TextField(QuerySpecs.FIELD, d.get("body").asText(), Field.Store.YES));
          w.addDocument(doc);
        }
        w.commit();
      }
    }
    return dir;
  }

  /** A searcher with one slice per segment that times each slice. */
  static final class SegmentSearcher extends IndexSearcher {
    final List<Double> slices = java.util.Collections.synchronizedList(new ArrayList<>());

    SegmentSearcher(DirectoryReader reader, java.util.concurrent.Executor executor) {
      super(reader, executor);
    }

    @Override
    protected LeafSlice[] slices(List<LeafReaderContext> leaves) {
      return slices(leaves, Integer.MAX_VALUE, 1);
    }

    @Override
    protected void search(
        List<LeafReaderContext> leaves,
        org.apache.lucene.search.Weight weight,
        org.apache.lucene.search.Collector collector)
        throws IOException {
      long t0 = System.nanoTime();
      super.search(leaves, weight, collector);
      slices.add((System.nanoTime() - t0) / 1e6);
    }

    /** Collects the query's candidates and loads its best documents, as tailor's job does. */
    TopDocs run(QuerySpecs.Spec q) throws IOException {
      TopDocs top = search(q.query(), q.candidates());
      var stored = storedFields();
      ScoreDoc[] hits = top.scoreDocs;
      for (int i = 0; i < Math.min(q.loaded(), hits.length); i++) {
        stored.document(hits[i].doc);
      }
      return top;
    }
  }
}

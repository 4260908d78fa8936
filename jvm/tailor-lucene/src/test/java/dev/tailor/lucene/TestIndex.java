package dev.tailor.lucene;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.store.ByteBuffersDirectory;

/**
 * A small generated index: seeded documents over a skewed vocabulary, in one segment per commit
 * (no merges), and seeded queries over the same words.
 */
final class TestIndex implements AutoCloseable {
  static final String FIELD = "body";
  private static final int VOCABULARY = 300;

  final ByteBuffersDirectory directory = new ByteBuffersDirectory();
  final DirectoryReader reader;

  /** {@code docs} documents in {@code segments} segments, drawn with {@code seed}. */
  TestIndex(long seed, int docs, int segments) throws IOException {
    Random random = new Random(seed);
    IndexWriterConfig config =
        new IndexWriterConfig(new StandardAnalyzer())
            .setMergePolicy(NoMergePolicy.INSTANCE)
            .setMaxBufferedDocs(docs + 1)
            .setRAMBufferSizeMB(256);
    try (IndexWriter writer = new IndexWriter(directory, config)) {
      int perSegment = (docs + segments - 1) / segments;
      for (int i = 0; i < docs; i++) {
        Document doc = new Document();
        doc.add(new StringField("id", Integer.toString(i), Field.Store.YES));
        StringBuilder body = new StringBuilder();
        int words = 20 + random.nextInt(180);
        for (int w = 0; w < words; w++) {
          body.append(word(random)).append(' ');
        }
        doc.add(new TextField(FIELD, body.toString(), Field.Store.NO));
        writer.addDocument(doc);
        if ((i + 1) % perSegment == 0) {
          writer.commit();
        }
      }
      writer.commit();
    }
    reader = DirectoryReader.open(directory);
  }

  /** A word, the low ranks far likelier (roughly Zipf). */
  static String word(Random random) {
    double u = random.nextDouble();
    return "w" + (int) (VOCABULARY * u * u * u);
  }

  /** Seeded term, disjunction, conjunction and phrase queries. */
  static List<Query> queries(long seed, int count) {
    Random random = new Random(seed);
    List<Query> queries = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      switch (i % 4) {
        case 0:
          queries.add(new TermQuery(new Term(FIELD, word(random))));
          break;
        case 1:
          {
            BooleanQuery.Builder b = new BooleanQuery.Builder();
            int terms = 2 + random.nextInt(4);
            for (int t = 0; t < terms; t++) {
              b.add(new TermQuery(new Term(FIELD, word(random))), Occur.SHOULD);
            }
            queries.add(b.build());
            break;
          }
        case 2:
          {
            BooleanQuery.Builder b = new BooleanQuery.Builder();
            b.add(new TermQuery(new Term(FIELD, word(random))), Occur.MUST);
            b.add(new TermQuery(new Term(FIELD, word(random))), Occur.MUST);
            queries.add(b.build());
            break;
          }
        default:
          queries.add(new PhraseQuery(FIELD, word(random), word(random)));
      }
    }
    return queries;
  }

  @Override
  public void close() throws IOException {
    reader.close();
    directory.close();
  }
}

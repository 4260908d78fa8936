package dev.tailor.lucene;

import java.io.IOException;
import java.util.Collection;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.search.CollectorManager;
import org.apache.lucene.search.ScoreMode;
import org.apache.lucene.search.SimpleCollector;

/**
 * Counts hits, taking {@code sleepMs} per segment so that slices outlast a helper's wake-up, and
 * measures from outside the executor how many helper threads work inside slices at once.
 */
final class SliceProbe implements CollectorManager<SliceProbe.Counter, Integer> {
  private final long sleepMs;
  private final AtomicInteger helpersInside = new AtomicInteger();
  private final AtomicInteger peakHelpersInside = new AtomicInteger();
  private final AtomicLong firstHelperNanos = new AtomicLong(Long.MAX_VALUE);

  SliceProbe(long sleepMs) {
    this.sleepMs = sleepMs;
  }

  /** The most helper threads ever inside a slice at once, across every query using the probe. */
  int peakHelpersInside() {
    return peakHelpersInside.get();
  }

  /** When a helper first entered a slice (System.nanoTime()), or Long.MAX_VALUE if none did. */
  long firstHelperNanos() {
    return firstHelperNanos.get();
  }

  @Override
  public Counter newCollector() {
    return new Counter();
  }

  @Override
  public Integer reduce(Collection<Counter> collectors) {
    return collectors.stream().mapToInt(c -> c.hits).sum();
  }

  final class Counter extends SimpleCollector {
    int hits;

    @Override
    protected void doSetNextReader(LeafReaderContext context) throws IOException {
      boolean helper = Thread.currentThread().getName().startsWith("fm-helper");
      if (helper) {
        firstHelperNanos.accumulateAndGet(System.nanoTime(), Math::min);
        peakHelpersInside.accumulateAndGet(helpersInside.incrementAndGet(), Math::max);
      }
      try {
        Thread.sleep(sleepMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException(e);
      } finally {
        if (helper) {
          helpersInside.decrementAndGet();
        }
      }
    }

    @Override
    public void collect(int doc) {
      hits++;
    }

    @Override
    public ScoreMode scoreMode() {
      return ScoreMode.COMPLETE_NO_SCORES;
    }
  }
}

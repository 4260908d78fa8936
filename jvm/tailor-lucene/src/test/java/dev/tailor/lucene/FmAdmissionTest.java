package dev.tailor.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tailor.lucene.FmPolicy.AdmissionKind;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.lucene.util.ThreadInterruptedException;
import org.junit.jupiter.api.Test;

/** Admission by the arriving query's row, and what the executor does with runnables. */
class FmAdmissionTest {
  private static final double NEVER = 1e9;

  @Test
  void aQueryArrivingAtADelayedRowWaitsV0() throws Exception {
    FmTable table = Tables.of(new double[][] {{0, 0}, {40, 0}});
    try (FmExecutor fm = new FmExecutor(table, 2)) {
      try (FmQueryScope first = fm.enter()) {
        assertEquals(AdmissionKind.NOW, first.admission().kind());
        AtomicReference<FmQueryScope> second = new AtomicReference<>();
        long[] waitedNanos = new long[1];
        Thread t =
            new Thread(
                () -> {
                  long start = System.nanoTime();
                  try (FmQueryScope q = fm.enter()) {
                    waitedNanos[0] = System.nanoTime() - start;
                    second.set(q);
                  }
                });
        t.start();
        t.join(10_000);
        assertEquals(2, second.get().arrivalLoad());
        assertEquals(AdmissionKind.DELAY, second.get().admission().kind());
        assertTrue(waitedNanos[0] >= TimeUnit.MILLISECONDS.toNanos(40), "waited " + waitedNanos[0]);
      }
      assertEquals(1, fm.stats().admissionsDelayed());
      assertEquals(2, fm.stats().queries());
    }
  }

  @Test
  void aQueryArrivingAtAnOnExitRowStartsWhenAnotherLeaves() throws Exception {
    FmTable table = Tables.of(new double[][] {{0, 0}, {NEVER, 0}}, false, true);
    try (FmExecutor fm = new FmExecutor(table, 2)) {
      CountDownLatch started = new CountDownLatch(1);
      FmQueryScope first = fm.enter();
      Thread t =
          new Thread(
              () -> {
                try (FmQueryScope q = fm.enter()) {
                  started.countDown();
                }
              });
      t.start();
      assertFalse(started.await(100, TimeUnit.MILLISECONDS), "it waits for an exit");
      assertEquals(2, fm.load());
      first.close();
      assertTrue(started.await(10, TimeUnit.SECONDS), "the exit admitted it");
      t.join(10_000);
      assertEquals(1, fm.stats().admissionsOnExit());
      assertEquals(0, fm.load());
    }
  }

  @Test
  void anOnExitQueryWithNothingRunningStartsAtOnce() {
    try (FmExecutor fm = new FmExecutor(Tables.of(new double[][] {{0, 0}}, true), 2)) {
      try (FmQueryScope q = fm.enter()) {
        assertEquals(AdmissionKind.ON_EXIT, q.admission().kind());
      }
      assertEquals(0, fm.stats().admissionsOnExit(), "it did not wait");
    }
  }

  @Test
  void anInterruptedWaitLeavesTheLoad() throws Exception {
    FmTable table = Tables.of(new double[][] {{0, 0}, {0, 0}}, false, true);
    try (FmExecutor fm = new FmExecutor(table, 2);
        FmQueryScope first = fm.enter()) {
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      Thread t =
          new Thread(
              () -> {
                try {
                  fm.enter().close();
                } catch (Throwable e) {
                  thrown.set(e);
                }
              });
      t.start();
      while (fm.load() < 2) {
        Thread.sleep(1);
      }
      t.interrupt();
      t.join(10_000);
      assertTrue(thrown.get() instanceof ThreadInterruptedException, String.valueOf(thrown.get()));
      assertEquals(1, fm.load());
    }
  }

  @Test
  void scopesDoNotNest() {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 0), 2);
        FmQueryScope q = fm.enter()) {
      assertThrows(IllegalStateException.class, fm::enter);
      assertTrue(fm.inScope());
    }
  }

  @Test
  void withoutAScopeARunnableRunsAtOnceOnTheCaller() {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 0), 2)) {
      AtomicReference<Thread> ran = new AtomicReference<>();
      fm.execute(() -> ran.set(Thread.currentThread()));
      assertSame(Thread.currentThread(), ran.get());
    }
  }

  @Test
  void everyHeldRunnableRunsExactlyOnce() {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, NEVER), 2)) {
      AtomicInteger runs = new AtomicInteger();
      List<Thread> threads = new ArrayList<>();
      Runnable batch =
          () -> {
            runs.incrementAndGet();
            synchronized (threads) {
              threads.add(Thread.currentThread());
            }
          };
      try (FmQueryScope q = fm.enter()) {
        for (int i = 0; i < 3; i++) {
          fm.execute(batch);
        }
        assertEquals(0, runs.get(), "held: the table sends no helper before 1e9 ms");
        fm.execute(runs::incrementAndGet); // a new batch: the old one's copies run now
        assertEquals(3, runs.get());
      }
      assertEquals(4, runs.get(), "the scope's exit ran the last one");
      assertTrue(threads.stream().allMatch(t -> t == Thread.currentThread()));
    }
  }
}

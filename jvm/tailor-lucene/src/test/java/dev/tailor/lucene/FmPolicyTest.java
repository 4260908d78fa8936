package dev.tailor.lucene;

import static dev.tailor.lucene.FmPolicy.helpersGranted;
import static dev.tailor.lucene.FmPolicy.startThreads;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tailor.lucene.FmPolicy.Admission;
import dev.tailor.lucene.FmPolicy.AdmissionKind;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The Rust tests of table.rs, policy.rs and guard.rs, on the Java side. */
class FmPolicyTest {
  /** Rows: (0,0,0), (0,50,0), (50,10,20), and load 4 admitting on an exit. */
  private static final FmTable TABLE =
      Tables.of(
          new double[][] {{0, 0, 0}, {0, 50, 0}, {50, 10, 20}, {100, 0, 0}},
          false,
          false,
          false,
          true);

  @Test
  void degreeFollowsTheSchedule() {
    assertEquals(3, TABLE.row(1).degreeAt(0.0));
    FmTable.Row r = TABLE.row(2);
    assertEquals(1, r.degreeAt(0.0));
    assertEquals(1, r.degreeAt(49.9));
    // v2 = 0: degree 2 is skipped, straight to 3 at 50 ms.
    assertEquals(3, r.degreeAt(50.0));
    FmTable.Row four = Tables.constant(5, 10, 20, 5).row(1);
    assertEquals(1, four.degreeAt(9.0));
    assertEquals(2, four.degreeAt(10.0));
    assertEquals(3, four.degreeAt(30.0));
    assertEquals(4, four.degreeAt(35.0));
    assertEquals(5.0, four.admissionDelayMs());
    assertEquals(1, Tables.constant(7).row(1).degreeAt(1e12), "a single interval is v0 only");
  }

  @Test
  void boundariesAreSummedOneIntervalAtATime() {
    // 0.1 + 0.2 = 0.30000000000000004 in doubles: exactly 0.3 has not reached it.
    FmTable.Row r = Tables.constant(0, 0.1, 0.2).row(1);
    assertEquals(2, r.degreeAt(0.3));
    assertEquals(3, r.degreeAt(0.1 + 0.2));
    assertEquals(0.1 + 0.2, r.nextIncreaseMs(2));
  }

  @Test
  void nextIncreaseIsTheNextBoundary() {
    FmPolicy fm = new FmPolicy(Tables.constant(5, 10, 20, 5));
    assertEquals(10.0, fm.nextIncreaseMs(1, 1));
    assertEquals(30.0, fm.nextIncreaseMs(1, 2));
    assertEquals(35.0, fm.nextIncreaseMs(1, 3));
    assertEquals(Double.POSITIVE_INFINITY, fm.nextIncreaseMs(1, 4));
  }

  @Test
  void admitsByTheRowOfTheLoad() {
    FmPolicy fm = new FmPolicy(TABLE);
    assertEquals(Admission.NOW, fm.admission(0));
    assertEquals(Admission.NOW, fm.admission(1));
    assertEquals(new Admission(AdmissionKind.DELAY, 50.0), fm.admission(3));
    assertEquals(Admission.ON_EXIT, fm.admission(4));
    assertEquals(Admission.ON_EXIT, fm.admission(40), "loads past the table use its last row");
  }

  @Test
  void degreesFollowTheRowAndNeverFall() {
    FmPolicy fm = new FmPolicy(TABLE);
    assertEquals(3, fm.degree(1, 0.0, 1));
    assertEquals(1, fm.degree(2, 0.0, 1));
    assertEquals(3, fm.degree(2, 50.0, 1));
    assertEquals(3, fm.degree(2, 0.0, 3), "a rising load never lowers a degree");
  }

  @Test
  void aBacklogGetsNoHelpers() {
    assertEquals(0, helpersGranted(16, 1, 0, 16, 15, 1));
    assertEquals(1, startThreads(16, 16, 15, 3));
  }

  @Test
  void helpersAreCappedByCoresUnitsAndTheShortfall() {
    assertEquals(3, helpersGranted(16, 1, 0, 16, 3, 0));
    assertEquals(2, helpersGranted(16, 1, 1, 4, 10, 0));
    assertEquals(1, helpersGranted(4, 2, 1, 16, 10, 0));
    assertEquals(0, helpersGranted(8, 3, 0, 2, 10, 0));
    assertEquals(4, startThreads(4, 16, 10, 0));
    assertEquals(2, startThreads(4, 2, 10, 0));
    assertEquals(1, startThreads(1, 16, 10, 0));
    assertEquals(1, startThreads(8, 16, 0, 0));
    assertEquals(1, startThreads(0, 16, 10, 0), "degree 0 is taken as 1");
  }

  @Test
  void ticketsNeverExceedTheUnitsLeftButOne() {
    for (int wanted = 1; wanted <= 8; wanted++) {
      for (int threads = 1; threads <= 4; threads++) {
        for (int pending = 0; pending <= 4; pending++) {
          for (int unclaimed = 0; unclaimed <= 10; unclaimed++) {
            for (int free = 0; free <= 6; free++) {
              int n = helpersGranted(wanted, threads, pending, unclaimed, free, 0);
              String at = wanted + " " + threads + " " + pending + " " + unclaimed + " " + free;
              assertTrue(n >= 0 && n <= free, at);
              if (n > 0) {
                assertTrue(pending + n < unclaimed, at);
                assertTrue(threads + pending + n <= wanted, at);
              }
            }
          }
        }
      }
    }
  }

  @Test
  void hugeCountsSaturateInsteadOfOverflowing() {
    int max = Integer.MAX_VALUE;
    assertEquals(0, helpersGranted(max, max, max, max, max, 0));
    assertEquals(5, helpersGranted(max, 1, 0, max, 5, 0));
  }

  @Test
  void degreeIsMonotoneInExecutedTime() {
    Random random = new Random(20_150_314L);
    for (int t = 0; t < 200; t++) {
      int n = 1 + random.nextInt(8);
      double[] v = new double[n];
      for (int i = 0; i < n; i++) {
        v[i] = random.nextInt(3) == 0 ? 0.0 : random.nextDouble() * 30;
      }
      FmTable.Row row = Tables.constant(v).row(1);
      int last = 1;
      for (double x = 0; x < 250; x += random.nextDouble()) {
        int d = row.degreeAt(x);
        assertTrue(d >= last && d <= n, "seed 20150314, table " + t + " at " + x);
        last = d;
      }
    }
  }

  @Test
  void aHelperYieldsOnlyWhenThreadsExceedTheCoresOrQueriesWait() {
    for (int cores = 1; cores <= 6; cores++) {
      for (int running = 0; running <= 8; running++) {
        for (int busy = 0; busy <= 8; busy++) {
          for (int waiting = 0; waiting <= 2; waiting++) {
            boolean yields = FmPolicy.helperYields(running, busy, cores, waiting);
            assertEquals(waiting > 0 || running + busy > cores, yields);
            // A helper that stays never leaves the threads above the cores.
            if (!yields) {
              assertTrue(running + busy <= cores);
            }
          }
        }
      }
    }
  }

  @Test
  void underTheRowRuleAHelperStaysWhileTheRowForTheLoadNowGivesItsThread() {
    // Load 1 adds the second thread at once, load 2 after 10 ms, load 3 never before y.
    FmPolicy p = new FmPolicy(Tables.of(new double[][] {{0, 0}, {0, 10}, {0, 100}}));
    assertTrue(p.rowKeeps(1, 0.0, 2, 0));
    assertFalse(p.rowKeeps(2, 9.9, 2, 0), "load 2's row gives the thread only from 10 ms");
    assertTrue(p.rowKeeps(2, 10.0, 2, 0));
    assertFalse(p.rowKeeps(3, 50.0, 2, 0), "load 3's row gives none");
    assertFalse(p.rowKeeps(3, 150.0, 2, 0), "load 3's boundary is at y = 100: it gives none ever");
    assertFalse(p.rowKeeps(1, 50.0, 3, 0), "no row gives a third thread");
    assertFalse(p.rowKeeps(1, 50.0, 2, 1), "a query waiting to start always takes the core");
    assertEquals(FmPolicy.Yield.ROW, FmPolicy.Yield.named("Row"));
    assertEquals(FmPolicy.Yield.CORES, FmPolicy.Yield.named("cores"));
    assertEquals(FmPolicy.Yield.MEAN, FmPolicy.Yield.named("MEAN"));
    assertNull(FmPolicy.Yield.named("never"));
  }

  @Test
  void theMeanLoadFollowsTheArrivalsAndTheSustainedLoadIsNeverBelowTheLoadNow() {
    double mean = 1.0;
    for (int i = 0; i < 5 * FmPolicy.MEAN_LOAD_ARRIVALS; i++) {
      mean = FmPolicy.meanLoadAfter(mean, 4);
    }
    assertTrue(Math.abs(mean - 4.0) < 0.05, "five spans of arrivals at load 4: " + mean);
    // One span of arrivals at load 1 brings it about 63% of the way back.
    for (int i = 0; i < FmPolicy.MEAN_LOAD_ARRIVALS; i++) {
      mean = FmPolicy.meanLoadAfter(mean, 1);
    }
    assertTrue(mean > 1.9 && mean < 2.2, "one span at load 1 after load 4: " + mean);
    assertEquals(1.0, FmPolicy.meanLoadAfter(1.0, 1), 0.0);
    assertEquals(3, FmPolicy.sustainedLoad(2, 3.4), "the mean, rounded, when above the load now");
    assertEquals(4, FmPolicy.sustainedLoad(2, 3.5));
    assertEquals(5, FmPolicy.sustainedLoad(5, 1.2), "never below the load now");
    assertEquals(2, FmPolicy.sustainedLoad(2, 2.49));
  }
}

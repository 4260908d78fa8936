/**
 * Few-to-Many (FM) incremental parallelism for Lucene's {@link
 * org.apache.lucene.search.IndexSearcher} (Haque et al., "Few-to-Many: Incremental Parallelism for
 * Reducing Tail Latency in Interactive Services", ASPLOS 2015, §4).
 *
 * <ul>
 *   <li>{@link dev.tailor.lucene.FmTable}: the interval table that {@code tailor plan fm} writes
 *       (shared/spec/formats.md, {@code fm-table.json}).
 *   <li>{@link dev.tailor.lucene.FmPolicy}: FM's decisions as pure functions, bit for bit those of
 *       the Rust crate {@code tailor-core}, proved on shared test vectors.
 *   <li>{@link dev.tailor.lucene.FmExecutor}: the executor that holds a query's slice tasks back
 *       and lets helper threads take them at the table's interval times.
 *   <li>{@link dev.tailor.lucene.FmQueryScope} and {@link dev.tailor.lucene.FmSearcher}: how a
 *       query is identified to the executor.
 *   <li>{@link dev.tailor.lucene.FmStats}: what FM decided (degrees, waits, refusals).
 * </ul>
 */
package dev.tailor.lucene;

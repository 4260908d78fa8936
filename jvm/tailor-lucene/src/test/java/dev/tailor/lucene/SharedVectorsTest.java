package dev.tailor.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * Replays the shared vectors that the Rust binary writes: every Java decision must equal the Rust
 * one. The file is {@code -Dtailor.vectors} (set by the pom to the repository's {@code
 * target/fm-vectors.jsonl}); a missing file fails the test unless {@code
 * -Dtailor.vectors.optional=true}, which skips it.
 */
class SharedVectorsTest {
  static final String COMMAND =
      "cargo run --release -p tailor-cli -- vectors fm --cases 10000 --seed 1"
          + " --out target/fm-vectors.jsonl";

  @Test
  void javaDecidesAsRustDoes() throws IOException {
    Path path = Path.of(System.getProperty("tailor.vectors", "../../target/fm-vectors.jsonl"));
    if (!Files.exists(path)) {
      String why =
          "no shared FM vectors at "
              + path.toAbsolutePath().normalize()
              + ": run `"
              + COMMAND
              + "` in the repository root first"
              + " (or pass -Dtailor.vectors.optional=true to skip this test)";
      assumeFalse(Boolean.getBoolean("tailor.vectors.optional"), why);
      fail(why);
    }
    FmVectors vectors = FmVectors.read(path);
    assertFalse(vectors.lines().isEmpty(), path + " has no cases");
    FmVectors.Replay replay = vectors.replay(10);
    assertEquals(0, replay.disagreements(), replay.report());
    System.out.printf(
        "shared FM vectors: %d cases on %d tables, no disagreement (%s)%n",
        replay.cases(), vectors.tables().size(), path);
  }
}

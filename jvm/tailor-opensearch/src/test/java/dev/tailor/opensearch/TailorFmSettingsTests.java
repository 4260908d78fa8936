package dev.tailor.opensearch;

import org.hamcrest.MatcherAssert;
import static org.hamcrest.Matchers.containsString;

import java.nio.file.Files;
import java.nio.file.Path;
import org.opensearch.common.settings.Settings;
import org.opensearch.test.OpenSearchTestCase;

/** The plugin's settings and its errors for a missing or bad table, without a node. */
public class TailorFmSettingsTests extends OpenSearchTestCase {

  public void testNoTableOffPassesThrough() throws Exception {
    try (TailorFmPlugin plugin = new TailorFmPlugin(Settings.EMPTY, createTempDir())) {
      assertNull(plugin.fm());
      assertNull(plugin.activeFm());
      assertFalse(plugin.enabled());
      assertEquals(6, plugin.getSettings().size());
      assertEquals("core", plugin.decider().toString());
      assertEquals("the request count is on by default", 1, plugin.getActionFilters().size());
    }
  }

  public void testEnabledWithoutTableFails() {
    Settings s = Settings.builder().put("tailor.fm.enabled", true).build();
    IllegalArgumentException e =
        expectThrows(IllegalArgumentException.class, () -> new TailorFmPlugin(s, createTempDir()));
    MatcherAssert.assertThat(e.getMessage(), containsString("[tailor.fm.table] is not set"));
  }

  public void testMissingTableFails() {
    Path config = createTempDir();
    Settings s = Settings.builder().put("tailor.fm.table", "nope/fm-table.json").build();
    IllegalArgumentException e =
        expectThrows(IllegalArgumentException.class, () -> new TailorFmPlugin(s, config));
    MatcherAssert.assertThat(e.getMessage(), containsString("no FM table at " + config.resolve("nope/fm-table.json")));
  }

  public void testBadTableNamesTheField() throws Exception {
    Path config = createTempDir();
    String table = Files.readString(getDataPath("/fm-table.json"));
    Files.writeString(config.resolve("bad.json"), table.replace("\"max_degree\": 4", "\"max_degree\": 3"));
    Settings s = Settings.builder().put("tailor.fm.table", "bad.json").build();
    IllegalArgumentException e =
        expectThrows(IllegalArgumentException.class, () -> new TailorFmPlugin(s, config));
    MatcherAssert.assertThat(e.getMessage(), containsString("is not a valid FM table"));
    MatcherAssert.assertThat(e.getMessage(), containsString("rows[0].intervals_ms"));
  }

  public void testTableUnderConfigDir() throws Exception {
    Path config = createTempDir();
    Files.copy(getDataPath("/fm-table.json"), config.resolve("fm-table.json"));
    Settings s =
        Settings.builder()
            .put("tailor.fm.table", "fm-table.json")
            .put("tailor.fm.enabled", true)
            .put("tailor.fm.cores", 3)
            .build();
    try (TailorFmPlugin plugin = new TailorFmPlugin(s, config)) {
      assertNotNull(plugin.activeFm());
      assertEquals(3, plugin.fm().cores());
      assertEquals(4, plugin.fm().policy().table().maxDegree());
    }
  }

  public void testTheRequestCountCanBeTurnedOff() throws Exception {
    Settings s = Settings.builder().put("tailor.fm.count_search_requests", false).build();
    try (TailorFmPlugin plugin = new TailorFmPlugin(s, createTempDir())) {
      assertTrue(plugin.getActionFilters().isEmpty());
    }
  }

  public void testDeciderRuleIsCoreOrRow() throws Exception {
    Settings row = Settings.builder().put("tailor.fm.decider", "row").build();
    try (TailorFmPlugin plugin = new TailorFmPlugin(row, createTempDir())) {
      assertEquals("row", plugin.decider().toString());
    }
    Settings bad = Settings.builder().put("tailor.fm.decider", "free").build();
    IllegalArgumentException e =
        expectThrows(IllegalArgumentException.class, () -> new TailorFmPlugin(bad, createTempDir()));
    MatcherAssert.assertThat(
        e.getMessage(), containsString("[tailor.fm.decider] must be core or row, found [free]"));
  }

  public void testYieldRuleIsCoresOrRow() throws Exception {
    Path config = createTempDir();
    Files.copy(getDataPath("/fm-table.json"), config.resolve("fm-table.json"));
    Settings table = Settings.builder().put("tailor.fm.table", "fm-table.json").build();
    try (TailorFmPlugin plugin = new TailorFmPlugin(table, config)) {
      assertEquals("the guard's yield by default", "cores", plugin.fm().yieldRule().toString());
    }
    Settings row = Settings.builder().put(table).put("tailor.fm.yield", "row").build();
    try (TailorFmPlugin plugin = new TailorFmPlugin(row, config)) {
      assertEquals("row", plugin.fm().yieldRule().toString());
    }
    Settings bad = Settings.builder().put("tailor.fm.yield", "never").build();
    IllegalArgumentException e =
        expectThrows(IllegalArgumentException.class, () -> new TailorFmPlugin(bad, createTempDir()));
    MatcherAssert.assertThat(
        e.getMessage(), containsString("[tailor.fm.yield] must be cores, row or mean, found [never]"));
  }

  public void testCoresAtLeastOne() {
    Settings s = Settings.builder().put("tailor.fm.cores", 0).build();
    IllegalArgumentException e =
        expectThrows(IllegalArgumentException.class, () -> new TailorFmPlugin(s, createTempDir()));
    MatcherAssert.assertThat(e.getMessage(), containsString("tailor.fm.cores"));
  }
}

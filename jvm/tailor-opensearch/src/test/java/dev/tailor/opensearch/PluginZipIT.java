package dev.tailor.opensearch;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.apache.lucene.tests.util.LuceneTestCase;
import org.opensearch.common.settings.Setting;
import org.opensearch.common.settings.Settings;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.PluginInfo;
import org.opensearch.plugins.PluginsService;
import org.opensearch.plugins.SearchPlugin;
import org.opensearch.test.OpenSearchTestCase;

/**
 * The plugin zip as a node sees it after {@code opensearch-plugin install}: unpacked into
 * plugins/tailor-fm, read by OpenSearch's own {@link PluginsService} (descriptor, version check,
 * jar hell against the node's classpath, its own class loader). Run by failsafe after package, on
 * a classpath without the plugin's classes, tailor-lucene or jackson-databind, which must come
 * from the zip.
 */
// ExtrasFS would add stray "extraN" entries to plugins/, which PluginsService reads as plugins.
@LuceneTestCase.SuppressFileSystems("ExtrasFS")
public class PluginZipIT extends OpenSearchTestCase {

  public void testZipLoadsAsAnInstalledPlugin() throws Exception {
    assertNotNull("runs under OpenSearch's test security manager", System.getSecurityManager());
    Path zip = Path.of(System.getProperty("tailor.plugin.zip"));
    assertTrue("built by package: " + zip, Files.isRegularFile(zip));
    expectThrows(ClassNotFoundException.class, () -> Class.forName("dev.tailor.lucene.FmExecutor"));

    Path home = createTempDir();
    Path dir = home.resolve("plugins").resolve("tailor-fm");
    unzip(zip, dir);
    List<String> files;
    try (var s = Files.list(dir)) {
      files = s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
    }
    logger.info("zip root: {}", files);
    assertTrue(files.contains("plugin-descriptor.properties"));
    assertFalse("no extra permissions asked", files.contains("plugin-security.policy"));
    assertFalse("OpenSearch brings Lucene", files.stream().anyMatch(f -> f.startsWith("lucene-")));
    assertFalse("OpenSearch brings jackson-core", files.stream().anyMatch(f -> f.startsWith("jackson-core")));

    PluginInfo info = PluginInfo.readFromProperties(dir);
    assertEquals("tailor-fm", info.getName());
    assertEquals("dev.tailor.opensearch.TailorFmPlugin", info.getClassname());
    assertEquals("17", info.getJavaVersion());
    assertEquals("2.19.6", info.getOpenSearchVersionRangesString());

    Path config = home.resolve("config");
    Files.createDirectories(config);
    Files.copy(getDataPath("/fm-table.json"), config.resolve("fm-table.json"));
    Settings settings =
        Settings.builder()
            .put("path.home", home)
            .put("tailor.fm.enabled", true)
            .put("tailor.fm.table", "fm-table.json")
            .put("tailor.fm.cores", 2)
            .build();
    PluginsService service = new PluginsService(settings, config, null, home.resolve("plugins"), List.of());
    List<Plugin> plugins = service.filterPlugins(Plugin.class);
    try {
      assertEquals(1, plugins.size());
      Plugin plugin = plugins.get(0);
      assertEquals("dev.tailor.opensearch.TailorFmPlugin", plugin.getClass().getName());
      assertNotSame(
          "loaded by the plugin's own class loader",
          getClass().getClassLoader(),
          plugin.getClass().getClassLoader());
      assertTrue(((SearchPlugin) plugin).getIndexSearcherExecutorProvider().isPresent());
      assertEquals(
          List.of(
              "tailor.fm.enabled",
              "tailor.fm.table",
              "tailor.fm.cores",
              "tailor.fm.count_search_requests",
              "tailor.fm.decider",
              "tailor.fm.yield"),
          plugin.getSettings().stream().map(Setting::getKey).collect(Collectors.toList()));
      assertTrue(info.getExtendedPlugins().isEmpty());
    } finally {
      for (Plugin p : plugins) {
        p.close(); // stops FM's threads
      }
    }
  }

  private static void unzip(Path zip, Path dir) throws IOException {
    Files.createDirectories(dir);
    try (ZipInputStream in = new ZipInputStream(Files.newInputStream(zip))) {
      ZipEntry e;
      while ((e = in.getNextEntry()) != null) {
        Path out = dir.resolve(e.getName()).normalize();
        assertTrue("inside the plugin dir: " + e.getName(), out.startsWith(dir));
        if (e.isDirectory()) {
          Files.createDirectories(out);
        } else {
          Files.createDirectories(out.getParent());
          Files.copy(new NonClosing(in), out);
        }
      }
    }
  }

  /** ZipInputStream must stay open between entries. */
  private static final class NonClosing extends java.io.FilterInputStream {
    NonClosing(InputStream in) {
      super(in);
    }

    @Override
    public void close() {}
  }
}

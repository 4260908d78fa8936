package dev.tailor.opensearch.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.transport.Netty4Plugin;

/**
 * A single OpenSearch 2.19.6 node for live measurements (scripts/opensearch-live.py): HTTP on
 * loopback through the netty4 transport, and every other plugin loaded from {@code HOME/plugins},
 * as a node started from a distribution loads what {@code opensearch-plugin install} unpacked.
 * The classpath must hold OpenSearch and netty4 but not the tailor-fm plugin, whose jars come
 * from its zip (the plugin's own class loader and OpenSearch's jar hell check, as in a real node).
 *
 * <pre>
 * java -cp CP dev.tailor.opensearch.bench.BenchNode HOME [key=value ...]
 * </pre>
 *
 * Each {@code key=value} is a node setting ({@code http.port=9200}, {@code tailor.fm.table=...}).
 * The node runs until the process is killed; a shutdown hook closes it. It is a harness, not a
 * way to run OpenSearch in production: there is no security manager and no bootstrap check.
 */
public final class BenchNode {
  private BenchNode() {}

  /** A node whose classpath plugins are only the netty4 transport. */
  private static final class Netty4Node extends Node {
    Netty4Node(Environment env) {
      super(env, List.of(Netty4Plugin.class), true);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: BenchNode HOME [key=value ...]");
      System.exit(2);
    }
    Path home = Path.of(args[0]).toAbsolutePath();
    if (!Files.isDirectory(home.resolve("config"))) {
      System.err.println("error: " + home.resolve("config") + " is not a directory");
      System.exit(2);
    }
    Settings.Builder b =
        Settings.builder()
            .put("path.home", home.toString())
            .put("cluster.name", "tailor-bench")
            .put("node.name", "bench")
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("transport.type", "netty4")
            .put("http.type", "netty4");
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      if (eq <= 0) {
        System.err.println("error: argument " + i + " is not key=value: " + args[i]);
        System.exit(2);
      }
      b.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    Settings settings = b.build();
    LogConfigurator.configureWithoutConfig(settings);
    Environment env =
        InternalSettingsPreparer.prepareEnvironment(
            settings, Map.of(), home.resolve("config"), () -> "bench");
    Node node = new Netty4Node(env);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    node.close();
                  } catch (Exception e) {
                    e.printStackTrace();
                  } finally {
                    stopped.countDown();
                  }
                },
                "bench-node-close"));
    node.start();
    System.out.println("bench node started: " + home);
    stopped.await();
  }
}

package dev.tailor.opensearch;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.common.xcontent.json.JsonXContent;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.plugins.Plugin;
import org.opensearch.test.OpenSearchSingleNodeTestCase;
import org.opensearch.transport.Netty4Plugin;

/** {@code GET /_tailor/fm/stats} over real HTTP (netty4) on a node with the plugin. */
public class TailorFmRestTests extends OpenSearchSingleNodeTestCase {

  @Override
  protected Collection<Class<? extends Plugin>> getPlugins() {
    return List.of(TailorFmPlugin.class, Netty4Plugin.class);
  }

  @Override
  protected boolean addMockHttpTransport() {
    return false;
  }

  @Override
  protected Settings nodeSettings() {
    return Settings.builder()
        .put("tailor.fm.enabled", true)
        .put("tailor.fm.table", getDataPath("/fm-table.json").toAbsolutePath().toString())
        .put("tailor.fm.cores", 2)
        .build();
  }

  public void testStatsEndpoint() throws Exception {
    InetSocketAddress address =
        getInstanceFromNode(HttpServerTransport.class).boundAddress().publishAddress().address();
    URI uri = URI.create("http://" + address.getHostString() + ":" + address.getPort() + "/_tailor/fm/stats");
    HttpResponse<String> resp =
        HttpClient.newHttpClient()
            .send(HttpRequest.newBuilder(uri).GET().build(), HttpResponse.BodyHandlers.ofString());
    logger.info("GET {} -> {} {}", uri, resp.statusCode(), resp.body());
    assertEquals(200, resp.statusCode());
    Map<String, Object> json = XContentHelper.convertToMap(JsonXContent.jsonXContent, resp.body(), false);
    assertEquals(Boolean.TRUE, json.get("enabled"));
    assertEquals(2, ((Number) json.get("cores")).intValue());
    assertTrue(json.containsKey("degrees"));
    assertTrue(json.containsKey("admissions_waited"));
    assertTrue(json.containsKey("helpers"));
  }
}

package dev.tailor.opensearch;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.http.HttpHost;
import org.apache.http.util.EntityUtils;
import org.opensearch.client.Request;
import org.opensearch.client.Response;
import org.opensearch.client.RestClient;
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
    String body;
    try (RestClient rest =
        RestClient.builder(new HttpHost(address.getHostString(), address.getPort(), "http")).build()) {
      Response resp = rest.performRequest(new Request("GET", "/_tailor/fm/stats"));
      assertEquals(200, resp.getStatusLine().getStatusCode());
      body = EntityUtils.toString(resp.getEntity(), StandardCharsets.UTF_8);
    }
    logger.info("GET /_tailor/fm/stats on {} -> {}", address, body);
    Map<String, Object> json = XContentHelper.convertToMap(JsonXContent.jsonXContent, body, false);
    assertEquals(Boolean.TRUE, json.get("enabled"));
    assertEquals(2, ((Number) json.get("cores")).intValue());
    assertTrue(json.containsKey("degrees"));
    assertTrue(json.containsKey("admissions_waited"));
    assertTrue(json.containsKey("helpers"));
    assertEquals("cores", json.get("yield"));
    // No query has arrived: the mean load is an idle node's.
    assertEquals(1.0, ((Number) json.get("mean_load")).doubleValue(), 0.0);
  }
}

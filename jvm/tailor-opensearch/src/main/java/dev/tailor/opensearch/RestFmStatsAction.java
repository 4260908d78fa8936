package dev.tailor.opensearch;

import static org.opensearch.rest.RestRequest.Method.GET;

import java.util.List;
import org.opensearch.client.node.NodeClient;
import org.opensearch.core.rest.RestStatus;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.rest.BaseRestHandler;
import org.opensearch.rest.BytesRestResponse;
import org.opensearch.rest.RestRequest;

/**
 * {@code GET /_tailor/fm/stats[?recent=N]}: FM's statistics on the node that serves the request (they are
 * per node: each node has its own executor and load). With {@code recent=N}, the last N finished
 * queries (at most {@link dev.tailor.lucene.FmStats#RECENT}) are listed one by one, oldest first:
 * run time in microseconds, highest degree and the load it found on arrival (its table row).
 */
final class RestFmStatsAction extends BaseRestHandler {
  private final TailorFmPlugin plugin;

  RestFmStatsAction(TailorFmPlugin plugin) {
    this.plugin = plugin;
  }

  @Override
  public String getName() {
    return "tailor_fm_stats";
  }

  @Override
  public List<Route> routes() {
    return List.of(new Route(GET, "/_tailor/fm/stats"));
  }

  @Override
  protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
    int recent = request.paramAsInt("recent", 0);
    if (recent < 0) {
      throw new IllegalArgumentException("recent must be 0 or more, found " + recent);
    }
    return channel -> {
      XContentBuilder b = channel.newBuilder();
      plugin.statsToXContent(b, recent);
      channel.sendResponse(new BytesRestResponse(RestStatus.OK, b));
    };
  }
}

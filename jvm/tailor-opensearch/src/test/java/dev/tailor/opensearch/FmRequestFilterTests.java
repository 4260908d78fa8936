package dev.tailor.opensearch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;
import org.opensearch.action.ActionRequest;
import org.opensearch.action.search.SearchAction;
import org.opensearch.action.search.SearchRequest;
import org.opensearch.action.search.SearchResponse;
import org.opensearch.action.support.ActionFilterChain;
import org.opensearch.common.settings.Settings;
import org.opensearch.core.action.ActionListener;
import org.opensearch.core.action.ActionResponse;
import org.opensearch.tasks.Task;
import org.opensearch.test.OpenSearchTestCase;

/** The filter that tells FM of the node's search requests, against a chain that holds them. */
public class FmRequestFilterTests extends OpenSearchTestCase {

  /** A chain that keeps the listener it is given, or throws. */
  private static final class HeldChain<Q extends ActionRequest, R extends ActionResponse>
      implements ActionFilterChain<Q, R> {
    final AtomicReference<ActionListener<R>> listener = new AtomicReference<>();
    RuntimeException failure;

    @Override
    public void proceed(Task task, String action, Q request, ActionListener<R> l) {
      if (failure != null) {
        throw failure;
      }
      listener.set(l);
    }
  }

  private TailorFmPlugin plugin(boolean enabled) throws Exception {
    Path config = createTempDir();
    Files.copy(getDataPath("/fm-table.json"), config.resolve("fm-table.json"));
    Settings s =
        Settings.builder()
            .put("tailor.fm.table", "fm-table.json")
            .put("tailor.fm.enabled", enabled)
            .put("tailor.fm.cores", 2)
            .build();
    return new TailorFmPlugin(s, config);
  }

  private static ActionListener<SearchResponse> ignore() {
    return ActionListener.wrap(r -> {}, e -> {});
  }

  public void testASearchCountsFromItsStartToItsResponseOrFailure() throws Exception {
    try (TailorFmPlugin plugin = plugin(true)) {
      FmRequestFilter filter = new FmRequestFilter(plugin);
      HeldChain<SearchRequest, SearchResponse> first = new HeldChain<>();
      HeldChain<SearchRequest, SearchResponse> second = new HeldChain<>();
      filter.apply(null, SearchAction.NAME, new SearchRequest(), ignore(), first);
      filter.apply(null, SearchAction.NAME, new SearchRequest(), ignore(), second);
      assertEquals(2, plugin.fm().requestsInFlight());
      first.listener.get().onResponse(null);
      assertEquals(1, plugin.fm().requestsInFlight());
      second.listener.get().onFailure(new RuntimeException("shard failed"));
      assertEquals(0, plugin.fm().requestsInFlight());
    }
  }

  public void testAChainThatThrowsLeavesNoRequestCounted() throws Exception {
    try (TailorFmPlugin plugin = plugin(true)) {
      HeldChain<SearchRequest, SearchResponse> chain = new HeldChain<>();
      chain.failure = new IllegalStateException("rejected");
      expectThrows(
          IllegalStateException.class,
          () -> new FmRequestFilter(plugin).apply(null, SearchAction.NAME, new SearchRequest(), ignore(), chain));
      assertEquals(0, plugin.fm().requestsInFlight());
    }
  }

  public void testOtherActionsAndFmOffAreNotCounted() throws Exception {
    try (TailorFmPlugin on = plugin(true); TailorFmPlugin off = plugin(false)) {
      HeldChain<SearchRequest, SearchResponse> chain = new HeldChain<>();
      new FmRequestFilter(on).apply(null, "indices:data/read/get", new SearchRequest(), ignore(), chain);
      assertNotNull("the chain proceeds", chain.listener.get());
      assertEquals(0, on.fm().requestsInFlight());
      HeldChain<SearchRequest, SearchResponse> offChain = new HeldChain<>();
      new FmRequestFilter(off).apply(null, SearchAction.NAME, new SearchRequest(), ignore(), offChain);
      assertNotNull(offChain.listener.get());
      assertEquals(0, off.fm().requestsInFlight());
    }
  }
}

/*
 * A bookie of the suite with its HTTP admin server on: the conf rewritten to enable it on a
 * port of its own, the port read back, and the wait until the server answers is_ready (the
 * Java bookie starts its admin server only after it has registered). Shared by s14 and s15.
 */
package bookiers.interop;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

final class AdminPort {
    private AdminPort() {}

    /** How long a bookie's admin server may take to answer is_ready 200 after start(). */
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

    /**
     * A bookie of impl (not started) with httpServerEnabled=true on its own free port; with
     * prometheus, the Java side's Prometheus provider too, as the Apache Pulsar Helm chart
     * runs it (its metrics then come from the admin server's /metrics).
     */
    static BookieProcess bookie(Cluster cluster, Impl impl, int index, Path dir, boolean prometheus)
            throws Exception {
        BookieProcess b = new BookieProcess(cluster, impl, index, Cluster.freePort(), dir);
        int http = Cluster.freePort();
        List<String> keys = new ArrayList<>(List.of("httpServerEnabled=true", "httpServerPort=" + http,
                "httpServerHost=127.0.0.1"));
        if (prometheus) {
            keys.addAll(List.of("httpServerClass=org.apache.bookkeeper.http.vertx.VertxHttpServer",
                    "statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider",
                    "prometheusStatsHttpPort=" + http));
        }
        keys.add("");
        String conf = b.confText().replace("httpServerEnabled=false\n", String.join("\n", keys));
        Check.isTrue("conf of the HTTP bookie has httpServerEnabled=true", conf.contains("httpServerEnabled=true"),
                conf);
        Files.writeString(b.confFile, conf, StandardCharsets.UTF_8);
        return b;
    }

    /** The admin port written into b's conf by {@link #bookie}. */
    static int port(BookieProcess b) throws Exception {
        for (String line : Files.readAllLines(b.confFile, StandardCharsets.UTF_8)) {
            if (line.startsWith("httpServerPort=")) {
                return Integer.parseInt(line.substring("httpServerPort=".length()));
            }
        }
        throw new IllegalStateException("no httpServerPort in " + b.confFile);
    }

    /** The admin server's base URL, http://127.0.0.1:PORT. */
    static String base(BookieProcess b) throws Exception {
        return "http://127.0.0.1:" + port(b);
    }

    /**
     * Waits until b's is_ready answers 200. A failure names every distinct answer seen (the
     * last one alone can be a stale keep-alive connection) and b's log tail.
     */
    static void waitReady(BookieProcess b) throws Exception {
        String url = base(b) + "/api/v1/bookie/is_ready";
        HttpClient http = HttpClient.newHttpClient();
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        java.util.LinkedHashMap<String, Integer> seen = new java.util.LinkedHashMap<>();
        while (System.nanoTime() < deadline) {
            String answer;
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url))
                        .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return;
                }
                answer = r.statusCode() + " " + r.body();
            } catch (java.io.IOException e) {
                answer = e.toString();
            }
            seen.merge(answer, 1, Integer::sum);
            Thread.sleep(200);
        }
        throw new Check.Failure(url + " never answered 200 in " + READY_TIMEOUT.toSeconds() + " s; answers (count): "
                + seen + "; bookie alive: " + b.isAlive() + "; log tail:\n" + b.logTail(30));
    }
}

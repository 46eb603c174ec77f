/*
 * s14_admin_http: the HTTP admin API of bookie-rs against the stock Java bookie's, endpoint by
 * endpoint, on the same cluster state.
 *
 * Two extra bookies join the running cluster for the scenario: one stock Java bookie and one
 * bookie-rs, both with httpServerEnabled=true (VertxHttpServer and the Prometheus provider on
 * the Java side, as the Apache Pulsar Helm chart runs it). Ledgers are written on an ensemble
 * of every bookie (so both hold every entry), one ledger is marked under-replicated with the
 * stock LedgerUnderreplicationManager, and then every stock 4.17 endpoint is asked with each
 * method Java serves, first of the Java bookie and at once of ours (a request that changes
 * state is asked of both, or, for a ledger delete, of each on its own twin ledger).
 *
 * Compared: the HTTP status and the recursive key set of the JSON answer (object keys as
 * paths, array elements merged under "[]"; a body that is not JSON compares as "text"),
 * never the values, except for the requests in SAME_VALUES, whose whole answers are data
 * both read from the same place (ZooKeeper, the same ledger's entries) and must be equal.
 * Every difference fails the scenario unless EXCEPTIONS lists that request with the reason;
 * an exception that is no longer needed fails it too, so the list stays true. The table
 * (endpoint, method, Java status, ours, keys equal, values equal) is printed and written to
 * the run dir as admin-http-table-<cluster impl>-<mode> (markdown); docs/config.md §2.1 holds
 * the measured one.
 *
 * Owns: the two extra bookies (killed at the end, whatever happens) and the ledgers it writes
 * (deleted at the end).
 */
package bookiers.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.conf.ServerConfiguration;
import org.apache.bookkeeper.meta.LedgerManagerFactory;
import org.apache.bookkeeper.meta.LedgerUnderreplicationManager;
import org.apache.bookkeeper.meta.MetadataDrivers;

/** Scenario 14. */
final class AdminHttp {
    private AdminHttp() {
    }

    /** A bookie id no bookie has (targets of recovery / decommission requests). */
    static final String NO_SUCH_BOOKIE = "127.0.0.1:2";
    /** The missing replica recorded on the under-replicated ledger. */
    static final String MISSING_REPLICA = "127.0.0.1:1";

    /**
     * Requests whose difference is expected, with the reason. Key: "METHOD path" exactly as in
     * the table. Value: why bookie-rs answers differently (docs/config.md §2.2).
     */
    static final Map<String, String> EXCEPTIONS = Map.ofEntries(
            // Our journal has a random id and record sequence numbers, not <id>.txn files:
            // the key names the journal, so it differs by construction.
            Map.entry("GET /api/v1/bookie/last_log_mark",
                    "the key names the journal file: Java <id>(<hex>.txn), ours <id>(<hex>)"),
            // The keys are the Java bookie's own RocksDB location paths (DbLedgerStorage); we
            // have no location DB and answer {}, as Java does over a storage without one.
            Map.entry("GET /api/v1/bookie/entry_location_compact",
                    "keys are Java's RocksDB location paths; ours {} (no location DB, as Java's storages without one)"));

    /** Requests whose whole answer (JSON tree, or text) must be equal, not just the keys. */
    static final java.util.Set<String> SAME_VALUES = java.util.Set.of(
            "GET /api/v1/bookie/list_bookies?type=rw",
            "GET /api/v1/bookie/list_bookies?type=ro",
            "GET /api/v1/bookie/gc/suspend_compaction",
            "GET /api/v1/bookie/sanity",
            "GET /api/v1/ledger/list",
            "GET /api/v1/ledger/list?print_metadata=true",
            "GET /api/v1/ledger/list?print_metadata=true&decode_meta=true",
            "GET /api/v1/ledger/metadata?ledger_id=<read>",
            "GET /api/v1/ledger/read?ledger_id=<read>",
            "GET /api/v1/ledger/read?ledger_id=<read>&start_entry_id=1&end_entry_id=2",
            "GET /api/v1/ledger/read?ledger_id=<read>&page=1",
            "GET /api/v1/autorecovery/status",
            "GET /api/v1/autorecovery/who_is_auditor",
            "GET /api/v1/autorecovery/list_under_replicated_ledger",
            "GET /api/v1/autorecovery/list_under_replicated_ledger?printmissingreplica=true",
            "GET /api/v1/autorecovery/list_under_replicated_ledger?missingreplica=" + MISSING_REPLICA,
            "GET /api/v1/autorecovery/lost_bookie_recovery_delay");

    /**
     * Custom metadata bytes for one ledger of the cluster state: encoded surrogates, a bad
     * three-byte sequence, truncated four-byte ones. Java's {@code new String(bytes, UTF_8)}
     * gives one U+FFFD for each of the first two, Rust's {@code from_utf8_lossy} one per byte.
     */
    static final byte[] MALFORMED_UTF8 = {(byte) 0xED, (byte) 0xA0, (byte) 0x80, (byte) 0xED, (byte) 0xA0, 0x41,
        (byte) 0xED, (byte) 0xBF, (byte) 0xBF, (byte) 0xF0, (byte) 0x9F, 0x42, (byte) 0xE0, (byte) 0x80, 0x43};

    /** One row of the table. */
    record Row(String method, String path, int javaStatus, int rustStatus, boolean keysEqual, String javaKeys,
            String rustKeys, boolean valuesEqual, String javaBody, String rustBody) {
        String key() {
            return method + " " + path;
        }

        boolean same() {
            return javaStatus == rustStatus && keysEqual && (!SAME_VALUES.contains(key()) || valuesEqual);
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    static void run(Ctx ctx) throws Exception {
        Cluster cluster = ctx.cluster;
        // Fresh dirs per cluster and mode: each cluster has its own instance id, so a bookie
        // dir of an earlier pass would carry a cookie of another cluster.
        String pass = cluster.impl().name + "-" + ctx.mode;
        Path dir = cluster.runDir.resolve("admin-http-" + pass);
        BookieProcess javaBookie = AdminPort.bookie(cluster, Impl.JAVA, 90, dir.resolve("java"), true);
        BookieProcess rustBookie = AdminPort.bookie(cluster, Impl.RUST, 91, dir.resolve("rust"), true);
        List<LedgerHandle> ledgers = new ArrayList<>();
        BookKeeper bk = null;
        try {
            // Both start in parallel, as the cluster's bookies do.
            Thread jt = new Thread(() -> startQuietly(javaBookie), "start-http-java");
            jt.start();
            startQuietly(rustBookie);
            jt.join();
            Check.isTrue("the Java HTTP bookie started", javaBookie.isAlive(), javaBookie.logTail(30));
            Check.isTrue("the rust HTTP bookie started", rustBookie.isAlive(), rustBookie.logTail(30));
            String j = AdminPort.base(javaBookie);
            String r = AdminPort.base(rustBookie);
            AdminPort.waitReady(javaBookie);
            AdminPort.waitReady(rustBookie);

            // Cluster state: every bookie holds every entry of these ledgers.
            int n = cluster.bookies().size() + 2;
            bk = ctx.newClient();
            LedgerHandle read = writeLedger(bk, n, 5);
            LedgerHandle delJava = writeLedger(bk, n, 1);
            LedgerHandle delRust = writeLedger(bk, n, 1);
            // Metadata holding bytes that Java's UTF-8 decoder replaces differently from a
            // maximal-subpart one (print_metadata prints the raw bytes as a string).
            LedgerHandle malformed = bk.createLedger(n, n, n, DigestType.CRC32C, Ctx.PASSWORD,
                    Map.of("interop-malformed-utf8", MALFORMED_UTF8));
            malformed.close();
            ledgers.add(malformed);
            ledgers.add(read);
            readLedger = read.getId();
            ledgers.add(delJava);
            ledgers.add(delRust);
            resetUnderreplication(cluster);

            List<Row> rows = new ArrayList<>();
            Asker a = new Asker(j, r, rows);
            a.both("GET", "/heartbeat", null);
            a.both("GET", "/metrics", null);
            a.both("GET", "/api/v1/config/server_config", null);
            a.both("GET", "/api/v1/bookie/info", null);
            a.both("GET", "/api/v1/bookie/state", null);
            a.both("GET", "/api/v1/bookie/is_ready", null);
            a.both("GET", "/api/v1/bookie/list_bookies?type=rw", null);
            a.both("GET", "/api/v1/bookie/list_bookies?type=ro", null);
            a.both("GET", "/api/v1/bookie/list_bookies?type=rw&print_hostnames=true", null);
            a.both("GET", "/api/v1/bookie/list_bookie_info", null);
            a.both("GET", "/api/v1/bookie/last_log_mark", null);
            a.both("GET", "/api/v1/bookie/list_disk_file", null);
            a.both("GET", "/api/v1/bookie/list_disk_file?file_type=journal", null);
            a.both("GET", "/api/v1/bookie/gc", null);
            a.both("PUT", "/api/v1/bookie/gc", "");
            a.both("GET", "/api/v1/bookie/gc_details", null);
            a.both("GET", "/api/v1/bookie/gc/suspend_compaction", null);
            a.both("PUT", "/api/v1/bookie/gc/suspend_compaction", "{\"suspendMajor\":true,\"suspendMinor\":true}");
            a.both("PUT", "/api/v1/bookie/gc/suspend_compaction", "{}");
            a.both("PUT", "/api/v1/bookie/gc/resume_compaction", "{\"resumeMajor\":true,\"resumeMinor\":true}");
            a.both("GET", "/api/v1/bookie/gc/resume_compaction", null);
            a.both("GET", "/api/v1/bookie/state/readonly", null);
            a.both("PUT", "/api/v1/bookie/state/readonly", "{\"readOnly\":true}");
            a.both("GET", "/api/v1/bookie/state", null);
            a.both("PUT", "/api/v1/bookie/state/readonly", "{\"readOnly\":false}");
            a.both("GET", "/api/v1/bookie/sanity", null);
            a.both("GET", "/api/v1/bookie/cluster_info", null);
            a.both("PUT", "/api/v1/bookie/expand_storage", "");
            a.both("GET", "/api/v1/bookie/entry_location_compact", null);
            a.both("PUT", "/api/v1/bookie/entry_location_compact", "{\"entryLocationRocksDBCompact\":true}");
            a.both("GET", "/api/v1/bookie/expand_storage", null);
            a.both("PUT", "/api/v1/bookie/entry_location_compact", "");
            a.both("PUT", "/api/v1/bookie/entry_location_compact", "{\"entryLocationRocksDBCompact\":false}");
            a.both("PUT", "/api/v1/bookie/entry_location_compact",
                    "{\"entryLocationRocksDBCompact\":true,\"entryLocations\":\"/no/such/locations\"}");
            a.both("PUT", "/api/v1/bookie/entry_location_compact", "{not json");
            a.both("GET", "/api/v1/ledger/list", null);
            a.both("GET", "/api/v1/ledger/list?print_metadata=true", null);
            a.both("GET", "/api/v1/ledger/list?print_metadata=true&decode_meta=true", null);
            a.both("GET", "/api/v1/ledger/metadata?ledger_id=" + read.getId(), null);
            a.both("GET", "/api/v1/ledger/metadata?ledger_id=999999", null);
            a.both("GET", "/api/v1/ledger/read?ledger_id=" + read.getId(), null);
            a.both("GET", "/api/v1/ledger/read?ledger_id=" + read.getId() + "&start_entry_id=1&end_entry_id=2",
                    null);
            a.both("GET", "/api/v1/ledger/read?ledger_id=" + read.getId() + "&page=1", null);
            a.twins("DELETE", "/api/v1/ledger/delete?ledger_id=", delJava.getId(), delRust.getId());
            a.both("DELETE", "/api/v1/ledger/delete", null);
            a.both("GET", "/api/v1/autorecovery/status", null);
            a.both("PUT", "/api/v1/autorecovery/status?enabled=false", "");
            a.both("GET", "/api/v1/autorecovery/status", null);
            a.both("PUT", "/api/v1/autorecovery/status?enabled=true", "");
            a.both("PUT", "/api/v1/autorecovery/status", "");
            a.both("GET", "/api/v1/autorecovery/who_is_auditor", null);
            a.both("GET", "/api/v1/autorecovery/list_under_replicated_ledger", null);
            markUnderreplicated(cluster, read.getId());
            a.both("GET", "/api/v1/autorecovery/list_under_replicated_ledger", null);
            a.both("GET", "/api/v1/autorecovery/list_under_replicated_ledger?printmissingreplica=true", null);
            a.both("GET", "/api/v1/autorecovery/list_under_replicated_ledger?missingreplica=" + MISSING_REPLICA, null);
            a.both("GET", "/api/v1/autorecovery/list_under_replicated_ledger?excludingmissingreplica="
                    + MISSING_REPLICA, null);
            a.both("GET", "/api/v1/bookie/cluster_info", null);
            a.both("GET", "/api/v1/autorecovery/lost_bookie_recovery_delay", null);
            a.both("PUT", "/api/v1/autorecovery/lost_bookie_recovery_delay", "{\"delay_seconds\":5}");
            a.both("GET", "/api/v1/autorecovery/lost_bookie_recovery_delay", null);
            a.both("PUT", "/api/v1/autorecovery/trigger_audit", "");
            a.both("PUT", "/api/v1/autorecovery/bookie",
                    "{\"bookie_src\":[\"" + NO_SUCH_BOOKIE + "\"],\"delete_cookie\":false}");
            a.both("PUT", "/api/v1/autorecovery/decommission", "{\"bookie_src\":\"" + NO_SUCH_BOOKIE + "\"}");
            resetUnderreplication(cluster);

            report(cluster, ctx.mode, rows);
        } finally {
            for (LedgerHandle lh : ledgers) {
                try {
                    bk.deleteLedger(lh.getId());
                } catch (Exception e) {
                    // deleted through the API already (the twins), or the client is gone
                }
            }
            javaBookie.kill();
            rustBookie.kill();
            // The next scenario's clients must not pick a bookie that is gone: wait for the
            // two registrations to expire (zkTimeout 4 s).
            waitUnregistered(cluster, javaBookie);
            waitUnregistered(cluster, rustBookie);
        }
    }

    private static void waitUnregistered(Cluster cluster, BookieProcess b) throws Exception {
        String node = Cluster.LEDGERS_ROOT + "/available/" + b.bookieId();
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (cluster.zk().exists(node, false) != null) {
            if (System.nanoTime() > deadline) {
                throw new Check.Failure(node + " still registered 30 s after its bookie was killed");
            }
            Thread.sleep(100);
        }
    }

    /** Asks both bookies and records rows. */
    static final class Asker {
        final String java;
        final String rust;
        final List<Row> rows;
        final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

        Asker(String java, String rust, List<Row> rows) {
            this.java = java;
            this.rust = rust;
            this.rows = rows;
        }

        void both(String method, String path, String body) throws Exception {
            HttpResponse<String> jr = send(java, method, path, body);
            HttpResponse<String> rr = send(rust, method, path, body);
            rows.add(row(method, path, jr, rr));
        }

        /** The same request on two different ledgers (one per bookie). */
        void twins(String method, String prefix, long javaLedger, long rustLedger) throws Exception {
            HttpResponse<String> jr = send(java, method, prefix + javaLedger, null);
            HttpResponse<String> rr = send(rust, method, prefix + rustLedger, null);
            rows.add(row(method, prefix + "<id>", jr, rr));
        }

        HttpResponse<String> send(String base, String method, String path, String body) throws Exception {
            HttpRequest.BodyPublisher pub = body == null ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(body);
            HttpRequest req = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                    .method(method, pub).build();
            return http.send(req, HttpResponse.BodyHandlers.ofString());
        }

        static Row row(String method, String path, HttpResponse<String> jr, HttpResponse<String> rr) {
            String jk = keys(jr.body());
            String rk = keys(rr.body());
            return new Row(method, readPath(path), jr.statusCode(), rr.statusCode(), jk.equals(rk), jk, rk,
                    tree(jr.body()).equals(tree(rr.body())), jr.body(), rr.body());
        }
    }

    /** The id of the ledger both read (its id differs between runs: the table names it). */
    static long readLedger = -1;

    static String readPath(String path) {
        return readLedger < 0 ? path : path.replace("ledger_id=" + readLedger, "ledger_id=<read>");
    }

    /** A body as a JSON tree, or as a text node when it is not JSON. */
    static JsonNode tree(String body) {
        try {
            JsonNode n = JSON.readTree(body);
            return n == null ? JSON.getNodeFactory().textNode(body) : n;
        } catch (Exception e) {
            return JSON.getNodeFactory().textNode(body);
        }
    }

    /** The recursive key set of a JSON body, or "text" when it is not JSON (values ignored). */
    static String keys(String body) {
        JsonNode node;
        try {
            node = JSON.readTree(body);
        } catch (Exception e) {
            return "text";
        }
        if (node == null || node.isMissingNode()) {
            return "text";
        }
        TreeSet<String> out = new TreeSet<>();
        walk(node, "$", out);
        return kind(node) + " " + out;
    }

    private static String kind(JsonNode n) {
        return n.isObject() ? "object" : n.isArray() ? "array" : n.isTextual() ? "string" : n.isNull() ? "null"
                : "scalar";
    }

    private static void walk(JsonNode n, String path, TreeSet<String> out) {
        if (n.isObject()) {
            Iterator<Map.Entry<String, JsonNode>> it = n.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                String p = path + "." + e.getKey();
                out.add(p);
                walk(e.getValue(), p, out);
            }
        } else if (n.isArray()) {
            for (JsonNode c : n) {
                walk(c, path + "[]", out);
            }
        }
    }

    private static void report(Cluster cluster, String mode, List<Row> rows) throws Exception {
        StringBuilder table = new StringBuilder();
        table.append("| endpoint | method | Java | ours | keys equal | values equal | note |\n")
                .append("|---|---|---|---|---|---|---|\n");
        List<String> failures = new ArrayList<>();
        for (Row row : rows) {
            String exception = EXCEPTIONS.get(row.key());
            String note;
            if (row.same()) {
                note = exception == null ? "" : "STALE EXCEPTION (now the same): " + exception;
                if (exception != null) {
                    failures.add(row.key() + ": listed in EXCEPTIONS but now answers as Java: remove it");
                }
            } else if (exception != null) {
                note = "exception: " + exception;
            } else {
                note = "DIFFERENT";
                failures.add(row.key() + ": Java " + row.javaStatus() + " " + row.javaKeys() + " / ours "
                        + row.rustStatus() + " " + row.rustKeys()
                        + (row.keysEqual() && !row.valuesEqual() ? " (values differ)" : "")
                        + "\n    Java body: " + clip(row.javaBody()) + "\n    ours body: " + clip(row.rustBody()));
            }
            table.append("| `").append(row.path().replace("|", "\\|")).append("` | ").append(row.method())
                    .append(" | ").append(row.javaStatus()).append(" | ").append(row.rustStatus()).append(" | ")
                    .append(row.keysEqual() ? "yes" : "no").append(" | ")
                    .append(SAME_VALUES.contains(row.key()) ? (row.valuesEqual() ? "yes" : "no") : "(not compared)")
                    .append(" | ").append(note).append(" |\n");
        }
        Files.writeString(cluster.runDir.resolve("admin-http-table-" + cluster.impl().name + "-" + mode + ".md"),
                table.toString(), StandardCharsets.UTF_8);
        System.out.println("s14_admin_http (" + mode + ", in the cluster of " + cluster.impl().name
                + " bookies): Java bookie vs bookie-rs, same cluster state\n" + table);
        Check.isTrue(failures.size() + " admin endpoint(s) answer differently from Java (not in EXCEPTIONS)",
                failures.isEmpty(), String.join("\n", failures));
    }

    private static String clip(String s) {
        String one = s.replace("\n", " ");
        return one.length() > 700 ? one.substring(0, 700) + "..." : one;
    }

    private static void startQuietly(BookieProcess b) {
        try {
            b.start();
        } catch (Exception e) {
            System.out.println("interop: s14 could not start " + b.impl.name + " HTTP bookie: " + e.getMessage());
        }
    }

    private static LedgerHandle writeLedger(BookKeeper bk, int ensemble, int entries) throws Exception {
        LedgerHandle lh = bk.createLedger(ensemble, ensemble, ensemble, DigestType.CRC32C, Ctx.PASSWORD);
        for (int i = 0; i < entries; i++) {
            lh.addEntry(("admin-http-entry-" + i).getBytes(StandardCharsets.US_ASCII));
        }
        lh.close();
        return lh;
    }

    private static ServerConfiguration metadataConf(Cluster cluster) {
        ServerConfiguration conf = new ServerConfiguration();
        conf.setMetadataServiceUri(cluster.metadataServiceUri());
        return conf;
    }

    /** Marks ledger as missing MISSING_REPLICA with the stock under-replication manager. */
    private static void markUnderreplicated(Cluster cluster, long ledger) throws Exception {
        MetadataDrivers.runFunctionWithLedgerManagerFactory(metadataConf(cluster), (LedgerManagerFactory f) -> {
            try (LedgerUnderreplicationManager m = f.newLedgerUnderreplicationManager()) {
                m.markLedgerUnderreplicated(ledger, MISSING_REPLICA);
                return null;
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
    }

    /** No under-replicated ledgers, replication enabled, no lost-bookie delay node. */
    private static void resetUnderreplication(Cluster cluster) throws Exception {
        String base = Cluster.LEDGERS_ROOT + "/underreplication";
        if (cluster.zk().exists(base + "/ledgers", false) != null) {
            org.apache.zookeeper.ZKUtil.deleteRecursive(cluster.zk(), base + "/ledgers");
        }
        for (String p : new String[] {base + "/lostBookieRecoveryDelay", base + "/disable"}) {
            if (cluster.zk().exists(p, false) != null) {
                cluster.zk().delete(p, -1);
            }
        }
    }
}

/*
 * The test cluster: one in-process ZooKeeper on loopback, BookKeeper metadata laid out as
 * `bookkeeper shell initnewcluster` does, and N bookie child processes of one implementation.
 *
 * Owns: the ZooKeeper server, a ZooKeeper session the suite uses for checks, every child process
 * the suite starts (bookies and shell JVMs), and the run directory.
 * Invariants: every process started is tracked and SIGKILLed by close() and by a JVM shutdown
 * hook, so a failed or interrupted run leaves nothing behind; metadata is (re)initialised with
 * BookKeeperAdmin.initNewCluster (the stock API behind `initnewcluster`), never hand-written.
 *
 * Side clusters (side()): a scenario that needs bookies with other keys (TLS, authorization)
 * gets its own set of bookies under its own ledgers root on the same ZooKeeper, with its own
 * run subdirectory; closing one kills only its bookies, and the shared cluster (/ledgers) is
 * never touched by it.
 */
package bookiers.interop;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.apache.bookkeeper.client.BookKeeperAdmin;
import org.apache.bookkeeper.conf.ServerConfiguration;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZKUtil;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

/** ZooKeeper + metadata + a set of bookies of one implementation. */
public final class Cluster implements AutoCloseable {
    static final String LEDGERS_ROOT = "/ledgers";
    /** Pulsar's nettyMaxFrameSizeBytes (5 MiB + 10 KiB), used by client and bookies. */
    static final int PULSAR_FRAME_SIZE = 5253120;
    /** Short bookie ZK sessions so a SIGKILLed bookie's registration expires quickly. */
    static final int BOOKIE_ZK_TIMEOUT_MS = 4000;

    private static final List<Process> ALL_PROCESSES = new CopyOnWriteArrayList<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Cluster::killAllProcesses, "interop-cleanup"));
    }

    final Path runDir;
    private final Path repoRoot;
    /** The shared cluster whose ZooKeeper a side cluster uses; null for the shared cluster. */
    private final Cluster parent;
    /** Ledgers root of this cluster's metadata: LEDGERS_ROOT for the shared cluster. */
    private final String ledgersRoot;
    /** Extra bk_server.conf keys per bookie index (override the generated ones). */
    private final IntFunction<Map<String, String>> extraKeys;
    /** Running side clusters of cachedSide, by name (shared cluster only). */
    private final Map<String, Cluster> sides = new java.util.LinkedHashMap<>();
    private ZooKeeperServer zkServer;
    private ServerCnxnFactory zkFactory;
    private int zkPort;
    private ZooKeeper zk;
    private final List<BookieProcess> bookies = new ArrayList<>();
    private Impl impl;

    Cluster(Path runDir, Path repoRoot) {
        this(runDir, repoRoot, null, LEDGERS_ROOT, i -> Map.of());
    }

    private Cluster(Path runDir, Path repoRoot, Cluster parent, String ledgersRoot,
            IntFunction<Map<String, String>> extraKeys) {
        this.runDir = runDir;
        this.repoRoot = repoRoot;
        this.parent = parent;
        this.ledgersRoot = ledgersRoot;
        this.extraKeys = extraKeys;
    }

    /**
     * A side cluster of this (shared) cluster's ZooKeeper: metadata under /name, run dir
     * runDir/name, bookie i started with extraKeys(i) on top of the generated keys. Start its
     * bookies with startBookies; close() kills them and leaves the shared cluster as it is.
     */
    Cluster side(String name, IntFunction<Map<String, String>> keys) throws IOException {
        if (parent != null) {
            throw new IllegalStateException("a side cluster of a side cluster");
        }
        Path dir = runDir.resolve(name);
        Files.createDirectories(dir);
        return new Cluster(dir, repoRoot, this, "/" + name, keys);
    }

    /**
     * The side cluster `name` with impl's bookies, kept running across scenarios and modes of
     * this implementation's pass (a Java TLS cluster took 35-45 s to start here under load):
     * made and started on first use, bookies that are down restarted on later uses; closed by
     * this cluster's stopBookies(), i.e. when the pass ends. keys must be the same on every call.
     */
    synchronized Cluster cachedSide(String name, IntFunction<Map<String, String>> keys, Impl impl, int n)
            throws Exception {
        Cluster c = sides.get(name);
        if (c != null && c.impl == impl && c.bookies.size() == n) {
            c.healBookies();
            return c;
        }
        if (c != null) {
            c.close();
            sides.remove(name);
        }
        c = side(name, keys);
        sides.put(name, c);
        c.startBookies(impl, n);
        return c;
    }

    String ledgersRoot() {
        return ledgersRoot;
    }

    Map<String, String> extraKeys(int index) {
        return extraKeys.apply(index);
    }

    static void killAllProcesses() {
        for (Process p : ALL_PROCESSES) {
            if (p.isAlive()) {
                p.destroyForcibly();
            }
        }
        for (Process p : ALL_PROCESSES) {
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    void track(Process p) {
        ALL_PROCESSES.add(p);
        ALL_PROCESSES.removeIf(q -> !q.isAlive() && q != p);
    }

    /** Starts ZooKeeper (in this JVM, from the classes the dependency brings) on a free loopback port. */
    void startZooKeeper() throws Exception {
        Path zkDir = runDir.resolve("zookeeper");
        Files.createDirectories(zkDir);
        System.setProperty("zookeeper.forceSync", "no");
        System.setProperty("zookeeper.admin.enableServer", "false");
        zkServer = new ZooKeeperServer(zkDir.resolve("snap").toFile(), zkDir.resolve("log").toFile(), 500);
        zkPort = freePort();
        zkFactory = ServerCnxnFactory.createFactory(new InetSocketAddress("127.0.0.1", zkPort), 0);
        zkFactory.startup(zkServer);
        CountDownLatch connected = new CountDownLatch(1);
        zk = new ZooKeeper(zkConnect(), 30_000, ev -> {
            if (ev.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("ZooKeeper on " + zkConnect() + " did not accept a session in 30 s");
        }
    }

    String zkConnect() {
        return parent != null ? parent.zkConnect() : "127.0.0.1:" + zkPort;
    }

    String metadataServiceUri() {
        return "zk+hierarchical://" + zkConnect() + ledgersRoot;
    }

    ZooKeeper zk() {
        return parent != null ? parent.zk() : zk;
    }

    /** Path of the log4j2 config given to Java child processes (bookies, shell). */
    String bookieLogConfig() throws IOException {
        Path p = runDir.resolve("log4j2-child.properties");
        if (!Files.exists(p)) {
            Files.writeString(p, String.join("\n",
                    "status = error",
                    "appender.console.type = Console",
                    "appender.console.name = STDOUT",
                    "appender.console.layout.type = PatternLayout",
                    "appender.console.layout.pattern = %d{HH:mm:ss.SSS} %-5p [%t] %c{1} - %m%n",
                    "rootLogger.level = info",
                    "rootLogger.appenderRef.stdout.ref = STDOUT", ""), StandardCharsets.UTF_8);
        }
        return p.toString();
    }

    /** The bookie-rs binary: $BOOKIE_BIN, else target/release/bookie, else target/debug/bookie. */
    Path rustBinary() {
        String env = System.getenv("BOOKIE_BIN");
        if (env != null && !env.isEmpty()) {
            return Path.of(env).toAbsolutePath();
        }
        for (String rel : new String[] {"target/release/bookie", "target/debug/bookie"}) {
            Path p = repoRoot.resolve(rel);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    /**
     * Wipes any previous metadata, lays out a new cluster and starts n bookies of impl in parallel.
     * On failure every bookie started so far is killed and the first error is thrown.
     */
    void startBookies(Impl impl, int n) throws Exception {
        this.impl = impl;
        stopBookies();
        if (zk().exists(ledgersRoot, false) != null) {
            ZKUtil.deleteRecursive(zk(), ledgersRoot);
        }
        ServerConfiguration conf = new ServerConfiguration();
        conf.setMetadataServiceUri(metadataServiceUri());
        if (!BookKeeperAdmin.initNewCluster(conf)) {
            throw new IllegalStateException("BookKeeperAdmin.initNewCluster returned false");
        }
        checkNewClusterLayout();
        Path implDir = runDir.resolve(impl.name);
        for (int i = 0; i < n; i++) {
            bookies.add(new BookieProcess(this, impl, i, freePort(), implDir.resolve("bookie-" + i)));
        }
        List<Thread> starters = new ArrayList<>();
        List<Exception> errors = Collections.synchronizedList(new ArrayList<>());
        for (BookieProcess b : bookies) {
            Thread t = new Thread(() -> {
                try {
                    b.start();
                } catch (Exception e) {
                    errors.add(e);
                }
            }, "start-" + b.bookieId());
            t.start();
            starters.add(t);
        }
        for (Thread t : starters) {
            t.join();
        }
        if (!errors.isEmpty()) {
            stopBookies();
            throw errors.get(0);
        }
    }

    /**
     * Checks that what initNewCluster wrote is the layout docs/registration.md §2
     * describes (the layout a Rust bookie must accept), so a drift between the stock
     * code and that document shows up here rather than as a puzzling bookie start-up failure.
     */
    private void checkNewClusterLayout() throws Exception {
        String layout = new String(zk().getData(ledgersRoot + "/LAYOUT", false, null), StandardCharsets.UTF_8);
        String want = "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1";
        if (!layout.equals(want)) {
            throw new IllegalStateException("initNewCluster wrote LAYOUT " + layout.replace("\n", "\\n")
                    + ", docs/registration.md says " + want.replace("\n", "\\n"));
        }
        String instanceId = new String(zk().getData(ledgersRoot + "/INSTANCEID", false, null), StandardCharsets.UTF_8);
        java.util.UUID.fromString(instanceId); // throws if not a bare UUID string
        for (String p : new String[] {ledgersRoot + "/available", ledgersRoot + "/available/readonly"}) {
            if (zk().exists(p, false) == null) {
                throw new IllegalStateException("initNewCluster did not create " + p);
            }
        }
    }

    Impl impl() {
        return impl;
    }

    List<BookieProcess> bookies() {
        return bookies;
    }

    BookieProcess byId(String bookieId) {
        for (BookieProcess b : bookies) {
            if (b.bookieId().equals(bookieId)) {
                return b;
            }
        }
        throw new IllegalArgumentException("no bookie " + bookieId + " in this cluster");
    }

    /** Restarts every bookie that is not running (after a kill or a crash); returns how many. */
    int healBookies() throws Exception {
        int restarted = 0;
        for (BookieProcess b : bookies) {
            if (!b.isAlive()) {
                b.start();
                restarted++;
            }
        }
        return restarted;
    }

    void stopBookies() throws InterruptedException {
        synchronized (this) {
            for (Cluster c : sides.values()) {
                c.stopBookies();
            }
            sides.clear();
        }
        for (BookieProcess b : bookies) {
            b.kill();
        }
        bookies.clear();
    }

    /** Total `du` of every bookie's ledger directory. */
    BookieProcess.Usage totalLedgerDirUsage() throws IOException, InterruptedException {
        BookieProcess.Usage sum = new BookieProcess.Usage(0, 0);
        for (BookieProcess b : bookies) {
            sum = sum.plus(b.ledgerDirUsage());
        }
        return sum;
    }

    /** Ledger dir usage of each bookie, for failure messages. */
    String ledgerDirUsageByBookie() throws IOException, InterruptedException {
        StringBuilder sb = new StringBuilder();
        for (BookieProcess b : bookies) {
            sb.append(sb.length() == 0 ? "" : ", ").append(b.bookieId()).append(' ').append(b.ledgerDirUsage());
        }
        return sb.toString();
    }

    /** Starts a tracked child JVM running mainClass; the caller waits on it. */
    Process startJavaChild(String mainClass, List<String> args, File log) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx256m");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-Dlog4j2.configurationFile=" + bookieLogConfig());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        cmd.addAll(args);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.to(log)).start();
        track(p);
        return p;
    }

    /**
     * The first port and the size of the range freePort hands out: 20000-31999, below Linux's
     * ephemeral range (net.ipv4.ip_local_port_range, 32768-60999), from which both
     * {@code new ServerSocket(0)} and every outgoing connection (a bookie's ZooKeeper session)
     * take their ports.
     */
    private static final int PORT_RANGE_START = 20_000;
    private static final int PORT_RANGE_LEN = 12_000;
    /** The next offset into the range; starts where this JVM's pid points. */
    private static int nextPort = (int) (ProcessHandle.current().pid() * 7919 % PORT_RANGE_LEN);

    /**
     * A loopback port that nothing listens on now and that this run has not handed out before.
     * Not ServerSocket(0): a port it returns and releases can be returned again to the next
     * caller, and two servers of one scenario then race for it (CI saw the Java bookie's admin
     * port answered by another bookie's protocol port, which closes on an HTTP request).
     */
    static synchronized int freePort() throws IOException {
        for (int tries = 0; tries < PORT_RANGE_LEN; tries++) {
            int port = PORT_RANGE_START + nextPort;
            nextPort = (nextPort + 1) % PORT_RANGE_LEN;
            try (ServerSocket s = new ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
                return port;
            } catch (IOException busy) {
                // in use: try the next one
            }
        }
        throw new IOException("no free loopback port in " + PORT_RANGE_START + ".."
                + (PORT_RANGE_START + PORT_RANGE_LEN));
    }

    @Override
    public void close() {
        try {
            stopBookies();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (parent != null) {
            return; // a side cluster owns only its bookies
        }
        killAllProcesses();
        try {
            if (zk != null) {
                zk.close();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (zkFactory != null) {
            zkFactory.shutdown();
        }
        if (zkServer != null) {
            zkServer.shutdown();
        }
    }
}

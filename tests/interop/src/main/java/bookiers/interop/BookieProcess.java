/*
 * One bookie under test, run as a child process so that it can be SIGKILLed.
 *
 * Owns: the bookie's port, journal dir, ledger dir, generated bk_server.conf and log file.
 * Invariants: a restart reuses exactly the same port, dirs and conf (that is what crash
 * durability and cookie validation need); start() returns only once the bookie both accepts
 * TCP connections and has an ephemeral registration node in ZooKeeper owned by a session other
 * than the one seen before the restart, or throws with the process's log tail; a process that
 * exits during start-up is reported at once, never waited on until the timeout.
 */
package bookiers.interop;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

/** A bookie child process (stock Java bookie or the bookie-rs binary). */
public final class BookieProcess {
    /** Time allowed for a bookie to come up and register. */
    static final long START_TIMEOUT_MS = 45_000;

    final Impl impl;
    final int index;
    final int port;
    final Path dir;
    final Path journalDir;
    final Path ledgerDir;
    final Path confFile;
    final Path logFile;
    private final Cluster cluster;
    private Process process;
    private long lastSessionOwner = -1;
    private int starts;

    BookieProcess(Cluster cluster, Impl impl, int index, int port, Path dir) throws IOException {
        this.cluster = cluster;
        this.impl = impl;
        this.index = index;
        this.port = port;
        this.dir = dir;
        this.journalDir = dir.resolve("journal");
        this.ledgerDir = dir.resolve("ledgers");
        this.confFile = dir.resolve("bk_server.conf");
        this.logFile = dir.resolve("bookie.log");
        Files.createDirectories(journalDir);
        Files.createDirectories(ledgerDir);
        Files.writeString(confFile, confText(), StandardCharsets.UTF_8);
    }

    /** Bookie id as registered in ZooKeeper (advertisedAddress:bookiePort). */
    String bookieId() {
        return "127.0.0.1:" + port;
    }

    /** Stock bk_server.conf keys; the same file is handed to both implementations. */
    String confText() {
        Map<String, String> kv = new java.util.LinkedHashMap<>();
        kv.put("bookiePort", String.valueOf(port));
        kv.put("advertisedAddress", "127.0.0.1");
        kv.put("listeningInterface", "lo");
        kv.put("allowLoopback", "true");
        kv.put("journalDirectories", journalDir.toString());
        kv.put("ledgerDirectories", ledgerDir.toString());
        kv.put("metadataServiceUri", cluster.metadataServiceUri());
        kv.put("zkServers", cluster.zkConnect());
        kv.put("zkLedgersRootPath", cluster.ledgersRoot());
        kv.put("zkTimeout", String.valueOf(Cluster.BOOKIE_ZK_TIMEOUT_MS));
        kv.put("journalWriteData", "true");
        kv.put("journalSyncData", "true");
        kv.put("journalMaxGroupWaitMSec", "1");
        kv.put("nettyMaxFrameSizeBytes", String.valueOf(Cluster.PULSAR_FRAME_SIZE));
        kv.put("httpServerEnabled", "false");
        kv.put("ledgerStorageClass", "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage");
        // Garbage collection fast enough for scenario 9 to see space come back.
        kv.put("gcWaitTime", "1000");
        kv.put("flushInterval", "1000");
        // Scenario 13: the over-replication check every 5 s instead of once a day.
        kv.put("gcOverreplicatedLedgerWaitTime", "5000");
        // Small entry logs, so that a scenario's data soon leaves the active one: the Java
        // bookie reclaims nothing from its active entry log, and with 8 MiB logs scenario 13's
        // 10 MiB copy could sit mostly in one (CI: the old bookie gave back less than half of
        // the moved ledger's bytes in 120 s). With 4 MiB at most 4 of its 10 MiB stay there.
        kv.put("logSizeLimit", String.valueOf(4 * 1024 * 1024));
        kv.put("minorCompactionThreshold", "0.2");
        kv.put("minorCompactionInterval", "2");
        kv.put("majorCompactionThreshold", "0.8");
        kv.put("majorCompactionInterval", "4");
        // Compaction is throttled to 1,000 entries/s by default; scenario 1 leaves hundreds of
        // MiB of deleted data behind, and a throttled compaction run holds the GC thread long
        // enough that scenario 9's fully-deleted entry logs waited > 90 s under load.
        kv.put("compactionRateByEntries", "1000000");
        kv.put("compactionRateByBytes", String.valueOf(1L << 30));
        // Bounded memory for 4 JVM bookies on a 2-core / 24 GiB machine.
        kv.put("dbStorage_writeCacheMaxSizeMb", "64");
        kv.put("dbStorage_readAheadCacheMaxSizeMb", "16");
        kv.put("dbStorage_rocksDB_blockCacheSize", String.valueOf(16 * 1024 * 1024));
        // RocksDB fallocates each WAL to ~1.1 x write buffer (default 64 MiB): ~70 MiB jumps in
        // `du` that have nothing to do with entry data (scenario 9 measures du).
        kv.put("dbStorage_rocksDB_writeBufferSizeMB", "4");
        kv.put("journalPreAllocSizeMB", "4");
        kv.put("diskUsageThreshold", "0.99");
        kv.put("diskUsageWarnThreshold", "0.98");
        kv.put("numAddWorkerThreads", "1");
        kv.put("numReadWorkerThreads", "2");
        kv.put("numHighPriorityWorkerThreads", "1");
        kv.put("serverNumIOThreads", "2");
        // A side cluster's own keys (TLS, authorization) on top of these.
        kv.putAll(cluster.extraKeys(index));
        StringBuilder sb = new StringBuilder("# generated by tests/interop for bookie ")
                .append(index).append(" (").append(impl.name).append(")\n");
        kv.forEach((k, v) -> sb.append(k).append('=').append(v).append('\n'));
        return sb.toString();
    }

    synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** Starts (or restarts) the process and waits until it is registered and serving. */
    synchronized void start() throws Exception {
        if (isAlive()) {
            throw new IllegalStateException("bookie " + bookieId() + " already running");
        }
        starts++;
        List<String> cmd = new ArrayList<>();
        if (impl == Impl.JAVA) {
            cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            cmd.add("-Xms64m");
            cmd.add("-Xmx256m");
            cmd.add("-XX:MaxDirectMemorySize=256m");
            cmd.add("-XX:+UseSerialGC");
            cmd.add("-XX:TieredStopAtLevel=1");
            cmd.add("-Dlog4j2.configurationFile=" + cluster.bookieLogConfig());
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add("org.apache.bookkeeper.server.Main");
            cmd.add("--conf");
            cmd.add(confFile.toString());
        } else {
            Path bin = cluster.rustBinary();
            if (bin == null || !Files.isExecutable(bin)) {
                throw new BookieStartException("rust bookie binary not found or not executable: "
                        + (bin == null ? "(none of BOOKIE_BIN, target/release/bookie, target/debug/bookie)" : bin));
            }
            cmd.add(bin.toString());
            cmd.add("--conf");
            cmd.add(confFile.toString());
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
        pb.environment().putIfAbsent("RUST_BACKTRACE", "1");
        pb.environment().putIfAbsent("NO_COLOR", "1"); // plain text in bookie.log and report tails
        Files.writeString(logFile, "==== start #" + starts + " " + String.join(" ", cmd) + "\n",
                StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE,
                java.nio.file.StandardOpenOption.APPEND);
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new BookieStartException("cannot exec " + cmd.get(0) + ": " + e.getMessage());
        }
        cluster.track(process);
        waitReady();
    }

    private void waitReady() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_TIMEOUT_MS);
        String node = cluster.ledgersRoot() + "/available/" + bookieId();
        ZooKeeper zk = cluster.zk();
        boolean portOpen = false;
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new BookieStartException("bookie " + bookieId() + " (" + impl.name + ") exited with code "
                        + process.exitValue() + " during start-up; log tail:\n" + logTail(40));
            }
            if (!portOpen) {
                portOpen = canConnect();
            }
            if (portOpen) {
                Stat st = zk.exists(node, false);
                if (st != null && st.getEphemeralOwner() != 0 && st.getEphemeralOwner() != lastSessionOwner) {
                    lastSessionOwner = st.getEphemeralOwner();
                    return;
                }
            }
            Thread.sleep(100);
        }
        String what = portOpen ? "registered its node " + node + " (new session)" : "opened port " + port;
        kill();
        throw new BookieStartException("bookie " + bookieId() + " (" + impl.name + ") never " + what + " within "
                + START_TIMEOUT_MS + " ms; log tail:\n" + logTail(40));
    }

    private boolean canConnect() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** SIGKILL (Process.destroyForcibly is SIGKILL on Linux) and wait for the process to be gone. */
    synchronized void kill() throws InterruptedException {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("bookie " + bookieId() + " survived SIGKILL for 20 s");
            }
        }
    }

    /** Sends a signal (e.g. "STOP", "CONT") to the running bookie process. */
    synchronized void signal(String sig) throws IOException, InterruptedException {
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException("bookie " + bookieId() + " is not running");
        }
        Process k = new ProcessBuilder("kill", "-" + sig, String.valueOf(process.pid())).inheritIO().start();
        if (k.waitFor() != 0) {
            throw new IOException("kill -" + sig + " " + process.pid() + " failed");
        }
    }

    /** Bytes in the bookie's log file now (0 when there is none yet). */
    long logLength() {
        try {
            return Files.size(logFile);
        } catch (IOException e) {
            return 0;
        }
    }

    /**
     * The last `max` lines logged since byte `from` that report an error (ERROR, an
     * exception, a panic), or when there is none the last warnings, each cut to 300
     * characters; "" when there are neither.
     */
    String complaintsSince(long from, int max) {
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(logFile.toFile(), "r")) {
            long len = f.length();
            if (len <= from) {
                return "";
            }
            byte[] buf = new byte[(int) Math.min(len - from, 8L << 20)];
            f.seek(len - buf.length);
            f.readFully(buf);
            List<String> errors = new ArrayList<>();
            List<String> warnings = new ArrayList<>();
            for (String line : new String(buf, StandardCharsets.UTF_8).split("\n")) {
                String cut = line.length() > 300 ? line.substring(0, 300) + "..." : line;
                if (line.contains("ERROR") || line.contains("Exception") || line.contains("panicked")) {
                    errors.add(cut);
                } else if (line.contains("WARN")) {
                    warnings.add(cut);
                }
            }
            // Errors first: the Java bookie warns on every fencing read.
            List<String> hits = errors.isEmpty() ? warnings : errors;
            List<String> last = hits.subList(Math.max(0, hits.size() - max), hits.size());
            return last.isEmpty() ? "" : "    | " + String.join("\n    | ", last);
        } catch (IOException e) {
            return "    (no log: " + e.getMessage() + ")";
        }
    }

    /** Last lines of the bookie's combined stdout/stderr. */
    String logTail(int lines) {
        try {
            List<String> all = Files.readAllLines(logFile, StandardCharsets.UTF_8);
            return "    | " + String.join("\n    | ", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "    (no log: " + e.getMessage() + ")";
        }
    }

    /** Disk usage of a directory: allocated blocks (`du -sk`) and apparent size (`du -sb`). */
    record Usage(long allocated, long apparent) {
        Usage plus(Usage o) {
            return new Usage(allocated + o.allocated, apparent + o.apparent);
        }

        @Override
        public String toString() {
            return allocated + " B allocated / " + apparent + " B apparent";
        }
    }

    /** Usage of the ledger directory. */
    Usage ledgerDirUsage() throws IOException, InterruptedException {
        return new Usage(du(ledgerDir.toFile(), "-sk") * 1024L, du(ledgerDir.toFile(), "-sb"));
    }

    /**
     * Per-file usage of the ledger directory: path to {allocated bytes, apparent bytes}, from
     * `find -printf` (512-byte blocks and size). A scenario that measures its own ledger's bytes
     * compares two of these file by file, so that the garbage collector deleting or compacting
     * other scenarios' files at the same time does not cancel out what it measures.
     */
    Map<String, Usage> ledgerDirFiles() throws IOException, InterruptedException {
        Process p = new ProcessBuilder("find", ledgerDir.toString(), "-type", "f", "-printf", "%b %s %p\\n")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        Map<String, Usage> files = new java.util.HashMap<>();
        for (String line : out.split("\n")) {
            String[] f = line.split(" ", 3);
            // A file removed while find walks the directory prints an error line: skip it, it
            // is gone either way.
            if (f.length == 3 && f[0].chars().allMatch(Character::isDigit) && f[1].chars().allMatch(Character::isDigit)
                    && !f[0].isEmpty() && !f[1].isEmpty()) {
                files.put(f[2], new Usage(Long.parseLong(f[0]) * 512L, Long.parseLong(f[1])));
            }
        }
        return files;
    }

    private static long du(File f, String flags) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("du", flags, f.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        p.waitFor();
        return Long.parseLong(out.split("\\s+")[0]);
    }

    /** Thrown when a bookie cannot be started; the message carries its log tail. */
    static final class BookieStartException extends Exception {
        BookieStartException(String msg) {
            super(msg);
        }
    }
}

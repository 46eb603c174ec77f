/*
 * Entry point of the conformance suite: runs every selected scenario against every selected
 * implementation and wire mode, prints a scenario x implementation x mode table, applies the
 * ratchet and ends with the line `N passed, N failed` that CI reads.
 *
 * Ratchet: every pair against `java` is required; a pair against `rust` is required only if
 * tests/interop/expected-pass.txt lists it (`s01_readback v2`). Unlisted rust pairs still run and
 * are printed in the table and in their own summary line, but do not fail the run. The process
 * exits 0 iff no required pair failed (and at least one pair ran).
 *
 * Invariants: one ZooKeeper for the whole run; one set of 4 bookies per implementation, reused by
 * every scenario and both modes; after each scenario its clients are closed and any bookie that
 * is down is restarted before the next one; a scenario that exceeds its timeout is failed, never
 * waited on forever; a cluster that cannot start fails its pairs at once with the bookie's log.
 */
package bookiers.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/** Main class: `java -cp ... bookiers.interop.Suite [--impl java|rust|both] [--scenario N] [--mode v2|v3]`. */
public final class Suite {
    private Suite() {
    }

    /** Outcome of one scenario x impl x mode. */
    record Result(Scenarios.Def def, Impl impl, String mode, boolean passed, double seconds, String detail,
            boolean required) {
    }

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            // ZooKeeper installs an uncaught-exception handler that logs to the client log only;
            // a suite that cannot run must say why on the console.
            System.out.flush();
            System.err.println("interop: the suite itself failed: " + t);
            t.printStackTrace();
            System.out.println("0 passed, 1 failed");
            System.exit(2);
        }
    }

    private static void run(String[] args) throws Exception {
        List<Impl> impls = new ArrayList<>(List.of(Impl.JAVA, Impl.RUST));
        List<String> modes = new ArrayList<>(List.of("v2", "v3"));
        Set<Integer> only = new LinkedHashSet<>();
        Path interopDir = Path.of(System.getProperty("interop.dir", "tests/interop")).toAbsolutePath();
        Path repoRoot = Path.of(System.getProperty("repo.root", ".")).toAbsolutePath().normalize();
        boolean keep = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--impl" -> {
                    String v = args[++i];
                    impls = v.equals("both") ? List.of(Impl.JAVA, Impl.RUST) : List.of(Impl.parse(v));
                }
                case "--mode" -> {
                    String v = args[++i];
                    if (!v.equals("v2") && !v.equals("v3") && !v.equals("both")) {
                        usage("unknown mode " + v);
                    }
                    modes = v.equals("both") ? List.of("v2", "v3") : List.of(v);
                }
                case "--scenario" -> {
                    for (String s : args[++i].split(",")) {
                        only.add(Integer.parseInt(s.trim().replaceFirst("^s0*", "")));
                    }
                }
                case "--keep" -> keep = true;
                default -> usage("unknown argument " + args[i]);
            }
        }
        Path runDir = interopDir.resolve("target/runs/run-" + System.currentTimeMillis());
        Files.createDirectories(runDir);
        configureClientLogging(runDir);

        List<Scenarios.Def> defs = new ArrayList<>();
        for (Scenarios.Def d : Scenarios.all()) {
            if (only.isEmpty() || only.contains(d.number())) {
                defs.add(d);
            }
        }
        if (defs.isEmpty()) {
            usage("no scenario matches " + only);
        }
        Set<String> expected = readRatchet(interopDir.resolve("expected-pass.txt"));

        long t0 = System.nanoTime();
        List<Result> results = new ArrayList<>();
        try (Cluster cluster = new Cluster(runDir, repoRoot)) {
            cluster.startZooKeeper();
            System.out.println("interop: ZooKeeper on " + cluster.zkConnect() + ", run dir " + runDir);
            for (Impl impl : impls) {
                runImpl(cluster, impl, modes, defs, expected, results);
            }
        }
        double total = (System.nanoTime() - t0) / 1e9;
        boolean ok = report(results, total);
        boolean anyFailure = results.stream().anyMatch(r -> !r.passed());
        if (!anyFailure && !keep) {
            deleteTree(runDir);
        } else {
            System.out.println("run dir kept (bookie logs, confs, shell output): " + runDir);
        }
        System.out.flush();
        System.exit(ok ? 0 : 1);
    }

    private static void runImpl(Cluster cluster, Impl impl, List<String> modes, List<Scenarios.Def> defs,
            Set<String> expected, List<Result> results) throws InterruptedException {
        System.out.println("interop: starting 4 " + impl.name + " bookies");
        long s0 = System.nanoTime();
        String startError = null;
        try {
            cluster.startBookies(impl, 4);
            System.out.printf("interop: %s bookies up in %.1fs: %s%n", impl.name, (System.nanoTime() - s0) / 1e9,
                    cluster.bookies().stream().map(BookieProcess::bookieId).toList());
        } catch (Exception e) {
            startError = "cluster of 4 " + impl.name + " bookies did not start: " + e.getMessage();
            System.out.println("interop: " + startError);
        }
        long budgetS = Long.parseLong(System.getenv().getOrDefault("INTEROP_BUDGET_S", "900"));
        for (String mode : modes) {
            for (Scenarios.Def d : defs) {
                boolean required = impl == Impl.JAVA || expected.contains(d.name() + " " + mode);
                double spent = (System.nanoTime() - s0) / 1e9;
                Result r;
                if (startError != null) {
                    r = new Result(d, impl, mode, false, 0, startError, required);
                } else if (spent > budgetS) {
                    r = new Result(d, impl, mode, false, 0, String.format("not run: the %s pairs already took %.0f s,"
                            + " over the per-implementation budget INTEROP_BUDGET_S=%d s", impl.name, spent, budgetS),
                            required);
                } else {
                    r = runOne(cluster, impl, mode, d, required);
                }
                results.add(r);
                System.out.printf("interop: %-22s %-4s %-3s %s %6.1fs%s%n", d.name(), impl.name, mode,
                        r.passed() ? "PASS" : "FAIL", r.seconds(), r.passed() ? "" : "  -- " + firstLine(r.detail()));
            }
        }
        try {
            cluster.stopBookies();
        } catch (InterruptedException e) {
            throw e;
        }
    }

    private static Result runOne(Cluster cluster, Impl impl, String mode, Scenarios.Def d, boolean required) {
        Ctx ctx = new Ctx(cluster, mode.equals("v2"));
        long t0 = System.nanoTime();
        java.util.Map<String, Long> logStart = new java.util.HashMap<>();
        for (BookieProcess b : cluster.bookies()) {
            logStart.put(b.bookieId(), b.logLength());
        }
        String failure = null;
        try {
            int restarted = cluster.healBookies();
            if (restarted > 0) {
                System.out.println("interop: restarted " + restarted + " bookie(s) that were down before " + d.name());
            }
        } catch (Exception e) {
            failure = "a bookie that was down could not be restarted before the scenario: " + e.getMessage();
        }
        if (failure == null) {
            ExecutorService ex = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, d.name() + "-" + impl.name + "-" + mode);
                t.setDaemon(true);
                return t;
            });
            Future<?> f = ex.submit(() -> {
                d.body().run(ctx);
                return null;
            });
            try {
                f.get(d.timeoutSeconds(), TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                f.cancel(true);
                failure = "timed out after " + d.timeoutSeconds() + " s" + threadDump(d.name() + "-" + impl.name + "-" + mode);
            } catch (java.util.concurrent.ExecutionException e) {
                failure = describe(e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                failure = "interrupted";
            } finally {
                ex.shutdownNow();
            }
        }
        ctx.closeAll();
        if (failure != null) {
            StringBuilder logs = new StringBuilder();
            for (BookieProcess b : cluster.bookies()) {
                if (!b.isAlive()) {
                    logs.append("\n  bookie ").append(b.bookieId()).append(" is not running; log tail:\n")
                            .append(b.logTail(20));
                }
                // What each bookie complained about during the pair: the run dir with the
                // whole logs stays on the machine that ran it (CI's is not kept).
                String complaints = b.complaintsSince(logStart.getOrDefault(b.bookieId(), 0L), 12);
                if (!complaints.isEmpty()) {
                    logs.append("\n  bookie ").append(b.bookieId())
                            .append(": errors (or else warnings) it logged during the scenario, last 12:\n")
                            .append(complaints);
                }
            }
            failure += logs;
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        return new Result(d, impl, mode, failure == null, secs, failure, required);
    }

    private static String describe(Throwable t) {
        if (t instanceof Check.Failure) {
            return t.getMessage();
        }
        StringBuilder sb = new StringBuilder("unexpected " + t.getClass().getName() + ": " + t.getMessage());
        StackTraceElement[] st = t.getStackTrace();
        for (int i = 0; i < Math.min(8, st.length); i++) {
            sb.append("\n      at ").append(st[i]);
        }
        if (t.getCause() != null && t.getCause() != t) {
            sb.append("\n    caused by ").append(t.getCause());
        }
        return sb.toString();
    }

    private static String threadDump(String prefix) {
        StringBuilder sb = new StringBuilder();
        Thread.getAllStackTraces().forEach((t, st) -> {
            if (t.getName().equals(prefix)) {
                sb.append("\n    stuck thread ").append(t.getName()).append(':');
                for (int i = 0; i < Math.min(10, st.length); i++) {
                    sb.append("\n      at ").append(st[i]);
                }
            }
        });
        return sb.toString();
    }

    private static boolean report(List<Result> results, double totalSeconds) {
        System.out.println();
        System.out.println("==== bookie-rs interop results ====");
        System.out.printf("%-22s %-4s %-4s %-6s %8s  %s%n", "scenario", "impl", "mode", "result", "time", "ratchet");
        results.sort(Comparator.comparing((Result r) -> r.impl()).thenComparing(r -> r.def().number())
                .thenComparing(Result::mode));
        int reqPass = 0;
        int reqFail = 0;
        int optPass = 0;
        int optFail = 0;
        List<String> promote = new ArrayList<>();
        for (Result r : results) {
            String ratchet = r.required() ? (r.impl() == Impl.JAVA ? "required" : "expected-pass")
                    : "not required (not in expected-pass.txt)";
            System.out.printf("%-22s %-4s %-4s %-6s %7.1fs  %s%n", r.def().name(), r.impl().name, r.mode(),
                    r.passed() ? "PASS" : "FAIL", r.seconds(), ratchet);
            if (r.required()) {
                if (r.passed()) {
                    reqPass++;
                } else {
                    reqFail++;
                }
            } else if (r.passed()) {
                optPass++;
                promote.add(r.def().name() + " " + r.mode());
            } else {
                optFail++;
            }
        }
        boolean anyFail = results.stream().anyMatch(r -> !r.passed());
        if (anyFail) {
            System.out.println();
            System.out.println("==== failures (what was expected, what came back) ====");
            for (Result r : results) {
                if (!r.passed()) {
                    System.out.printf("-- %s %s %s%s%n   %s%n", r.def().name(), r.impl().name, r.mode(),
                            r.required() ? " [REQUIRED]" : " [not required]", r.detail().replace("\n", "\n   "));
                }
            }
        }
        System.out.println();
        if (optPass + optFail > 0) {
            System.out.println("rust pairs not in expected-pass.txt: " + optPass + " passed, " + optFail
                    + " failed (not counted below)");
            if (!promote.isEmpty()) {
                System.out.println("now passing, add to tests/interop/expected-pass.txt: " + promote);
            }
        }
        System.out.printf("total time %.1fs%n", totalSeconds);
        System.out.println(reqPass + " passed, " + reqFail + " failed");
        return reqFail == 0;
    }

    private static String firstLine(String s) {
        int i = s.indexOf('\n');
        String l = i < 0 ? s : s.substring(0, i);
        return l.length() > 200 ? l.substring(0, 200) + "..." : l;
    }

    static Set<String> readRatchet(Path file) throws IOException {
        Set<String> names = new java.util.HashSet<>();
        for (Scenarios.Def d : Scenarios.all()) {
            names.add(d.name());
        }
        Set<String> out = new LinkedHashSet<>();
        if (!Files.exists(file)) {
            return out;
        }
        int lineNo = 0;
        for (String raw : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            lineNo++;
            String line = raw.replaceFirst("#.*", "").trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split("\\s+");
            if (parts.length != 2 || !names.contains(parts[0]) || !(parts[1].equals("v2") || parts[1].equals("v3"))) {
                throw new IllegalArgumentException(file + ":" + lineNo + ": expected '<scenario> <v2|v3>' with a"
                        + " known scenario name, got '" + raw + "'");
            }
            out.add(parts[0] + " " + parts[1]);
        }
        return out;
    }

    /** Sends the suite JVM's own (client) logging to a file so the report stays readable. */
    private static void configureClientLogging(Path runDir) throws IOException {
        Path cfg = runDir.resolve("log4j2-client.properties");
        Files.writeString(cfg, String.join("\n",
                "status = error",
                "appender.file.type = File",
                "appender.file.name = FILE",
                "appender.file.fileName = " + runDir.resolve("client.log"),
                "appender.file.layout.type = PatternLayout",
                "appender.file.layout.pattern = %d{HH:mm:ss.SSS} %-5p [%t] %c{1} - %m%n",
                "rootLogger.level = info",
                "rootLogger.appenderRef.file.ref = FILE", ""), StandardCharsets.UTF_8);
        System.setProperty("log4j2.configurationFile", cfg.toString());
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            for (Path q : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(q);
            }
        }
    }

    private static void usage(String msg) {
        System.err.println("interop: " + msg);
        System.err.println("usage: run.sh [--impl java|rust|both] [--scenario N[,N...]] [--mode v2|v3|both] [--keep]");
        System.exit(2);
    }
}

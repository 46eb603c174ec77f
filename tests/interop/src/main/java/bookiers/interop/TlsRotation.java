/*
 * s18_tls_rotation: certificates rotated on disk (tlsCertFilesRefreshDurationSeconds) reach new
 * connections of the stock client without a bookie restart.
 *
 * Owns: a side cluster of its own per mode (Cluster.side, not cachedSide: the rotation changes
 * the bookies' files for good, so each mode starts from the first CA again), 3 bookies of the
 * pass's implementation, all PEM, tlsClientAuthentication=true, refresh every REFRESH_SECONDS.
 * The bookies' key, certificate and trust store are copies under <side dir>/tls, the files
 * their bk_server.conf names; the scenario rewrites them in place.
 *
 * Steps: (1) a client of CA-A (trusts ca.crt, certificate signed by ca) writes and reads an
 * E3W3A3 ledger (every bookie acknowledges every entry); a fresh client of CA-B (trusts only
 * ca2.crt, certificate signed by ca2) gets SecurityException from each bookie on a direct read.
 * (2) Each bookie's trust store, key and certificate are overwritten in place with ca2.crt and
 * a key and certificate signed by ca2. (3) Polling with a deadline (DEADLINE_MS), a fresh client
 * of CA-B asks each bookie for a direct read until every bookie answers OK; the time is printed.
 * (4) A new client of CA-B reads the ledger written before the rotation and writes and reads a
 * new E3W3A3 ledger (mutual TLS: the bookies now accept a client certificate of the new CA).
 * (5) The CA-A clients' connections made before the rotation still serve them (a refreshed
 * context applies to new connections only, in Java's TLSContextFactory and ours). (6) A fresh
 * client of CA-A gets SecurityException from each bookie.
 *
 * How the Java bookie refreshes (BookKeeper TLSContextFactory.getSSLContext, 4.17): when a new
 * connection asks for its TLS handler and more than the interval has passed since the context
 * was built, it compares each watched file's mtime (FileModifiedTimeUpdater, FileTime.equals)
 * with the one it saw last, and rebuilds on a change (a failure is logged at info and the old
 * context kept). bookie-rs checks the files' contents every interval (docs/tls.md §2.1). The
 * rewrite keeps the paths (truncate and write, as `cp` does) and makes sure each mtime changes:
 * on a filesystem with coarse timestamps a same-second rewrite would keep the mtime and the Java
 * bookie would never see it, so the mtime is pushed a second on if it did not move. The files
 * are written one after another (trust store, key, certificate), so a check may fall between
 * two of them: both bookies then build from a mix or fail and keep the old context, and the next
 * check sees the later files; the polling absorbs that.
 */
package bookiers.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.net.BookieId;

/** Scenario 18. */
final class TlsRotation {
    private TlsRotation() {
    }

    /** tlsCertFilesRefreshDurationSeconds of the side cluster's bookies. */
    static final int REFRESH_SECONDS = 2;
    /** How long after the rotation every bookie must serve the new certificate: the interval plus a wide margin. */
    static final long DEADLINE_MS = 30_000;
    /** Pause between two rounds of probes (not an assertion). */
    static final long POLL_MS = 250;
    static final int BOOKIES = 3;

    static void s18(Ctx ctx) throws Exception {
        TlsCerts certs = TlsCerts.of(ctx.cluster.runDir);
        Impl impl = ctx.cluster.impl();
        String name = "s18-" + impl.name + "-" + ctx.mode;
        Path live = ctx.cluster.runDir.resolve(name).resolve("tls");
        Cluster side = ctx.cluster.side(name, i -> bookieKeys(live));
        Files.createDirectories(live);
        Files.copy(certs.caCert(), trust(live));
        Files.copy(certs.bookieKey(), key(live));
        Files.copy(certs.bookieCert(), cert(live));
        long t0 = System.nanoTime();
        Ctx sctx = new Ctx(side, ctx.v2);
        try {
            side.startBookies(impl, BOOKIES);
            System.out.printf("interop: %s: %d %s TLS bookies ready in %.1fs%n", side.ledgersRoot(), BOOKIES,
                    impl.name, (System.nanoTime() - t0) / 1e9);
            Consumer<ClientConfiguration> clientOfA = Tls.tlsClient(certs, TlsCerts.Client.AUTHORIZED, certs.caCert());
            // TlsCerts' UNTRUSTED client: the authorized subject, signed by ca2.
            Consumer<ClientConfiguration> clientOfB = Tls.tlsClient(certs, TlsCerts.Client.UNTRUSTED,
                    certs.otherCaCert());
            List<BookieId> bookies = new ArrayList<>();
            for (BookieProcess b : side.bookies()) {
                bookies.add(BookieId.parse(b.bookieId()));
            }

            // (1) Before: CA-A served, CA-B refused.
            BookKeeper writerA = sctx.newClient(clientOfA);
            BookKeeper readerA = sctx.newClient(clientOfA);
            long before = Tls.writeAndRead(writerA, readerA, 3, 3, 3, Tls.SIZES.length,
                    "client of the first CA, before the rotation");
            expectEveryBookie(sctx, clientOfB, bookies, before, BKException.Code.SecurityException,
                    "before the rotation, a new client that trusts only the second CA");

            // (2) The rotation, in place.
            rewriteInPlace(trust(live), certs.otherCaCert());
            rewriteInPlace(key(live), certs.bookieKeyOtherCa());
            rewriteInPlace(cert(live), certs.bookieCertOtherCa());
            long rotated = System.nanoTime();

            // (3) Every bookie serves a new client of CA-B within the deadline.
            Map<BookieId, Long> servedAfterMs = new LinkedHashMap<>();
            Map<BookieId, Integer> last = new LinkedHashMap<>();
            while (servedAfterMs.size() < bookies.size()) {
                for (BookieId b : bookies) {
                    if (servedAfterMs.containsKey(b)) {
                        continue;
                    }
                    int rc = probe(sctx, clientOfB, b, before);
                    last.put(b, rc);
                    if (rc == BKException.Code.OK) {
                        servedAfterMs.put(b, (System.nanoTime() - rotated) / 1_000_000);
                    }
                }
                long elapsedMs = (System.nanoTime() - rotated) / 1_000_000;
                if (servedAfterMs.size() < bookies.size()) {
                    if (elapsedMs > DEADLINE_MS) {
                        StringBuilder sb = new StringBuilder();
                        last.forEach((b, rc) -> sb.append("\n  ").append(b).append(": ").append(Tls.name(rc)));
                        Check.isTrue("every bookie serves a new client of the second CA within " + DEADLINE_MS
                                + " ms of the rotation (tlsCertFilesRefreshDurationSeconds=" + REFRESH_SECONDS
                                + ")", false, "after " + elapsedMs + " ms, last direct reads:" + sb);
                    }
                    Thread.sleep(POLL_MS);
                }
            }
            System.out.println("interop: s18 " + impl.name + " " + ctx.mode
                    + ": a new client of the second CA served, ms after the rotation: " + servedAfterMs);

            // (4) New clients of CA-B: the old ledger reads back, a new one is written and read.
            BookKeeper readerB = sctx.newClient(clientOfB);
            LedgerHandle rh = readerB.openLedger(before, DigestType.CRC32C, Ctx.PASSWORD);
            Check.eq("client of the second CA: LAC of the ledger written before the rotation",
                    (long) Tls.SIZES.length - 1, rh.getLastAddConfirmed());
            Ctx.verifyAll(rh, 0, rh.getLastAddConfirmed(), Tls.sizedPayload(before), 4L * Payloads.MIB);
            rh.close();
            BookKeeper writerB = sctx.newClient(clientOfB);
            Tls.writeAndRead(writerB, readerB, 3, 3, 3, Tls.SIZES.length, "client of the second CA, after the rotation");

            // (5) Connections up before the rotation keep their TLS session.
            Tls.writeAndRead(writerA, readerA, 3, 3, 3, Tls.SIZES.length,
                    "client of the first CA on its connections made before the rotation");

            // (6) A new connection of a CA-A client is refused: the bookies' certificate is of CA-B now.
            expectEveryBookie(sctx, clientOfA, bookies, before, BKException.Code.SecurityException,
                    "after the rotation, a new client that trusts only the first CA");
        } finally {
            sctx.closeAll();
            side.close();
        }
    }

    private static Path trust(Path live) {
        return live.resolve("trust.crt");
    }

    private static Path key(Path live) {
        return live.resolve("bookie.key");
    }

    private static Path cert(Path live) {
        return live.resolve("bookie.crt");
    }

    /** PEM key, certificate and trust store from live, mutual TLS, refresh every REFRESH_SECONDS. */
    private static Map<String, String> bookieKeys(Path live) {
        Map<String, String> kv = new LinkedHashMap<>();
        kv.put("tlsProviderFactoryClass", Tls.TLS_FACTORY);
        kv.put("tlsKeyStoreType", "PEM");
        kv.put("tlsKeyStore", key(live).toString());
        kv.put("tlsCertificatePath", cert(live).toString());
        kv.put("tlsTrustStoreType", "PEM");
        kv.put("tlsTrustStore", trust(live).toString());
        kv.put("tlsClientAuthentication", "true");
        kv.put("tlsCertFilesRefreshDurationSeconds", String.valueOf(REFRESH_SECONDS));
        return kv;
    }

    /**
     * Overwrites target with from's bytes at the same path (truncate and write, same inode), and
     * makes sure its mtime moved: the Java bookie only sees a change of mtime.
     */
    private static void rewriteInPlace(Path target, Path from) throws IOException {
        FileTime was = Files.getLastModifiedTime(target);
        Files.write(target, Files.readAllBytes(from));
        if (Files.getLastModifiedTime(target).equals(was)) {
            Files.setLastModifiedTime(target, FileTime.fromMillis(was.toMillis() + 1000));
        }
    }

    /** A direct read of entry 0 of ledger from bookie by a new client (so a new connection): client rc. */
    private static int probe(Ctx sctx, Consumer<ClientConfiguration> tls, BookieId bookie, long ledger)
            throws Exception {
        ClientConfiguration c = sctx.clientConf();
        tls.accept(c);
        BookKeeper bk = new BookKeeper(c);
        try {
            return Tls.rawRead(bk, bookie, ledger);
        } finally {
            bk.close();
        }
    }

    /** Each bookie answers a new client's direct read with want. */
    private static void expectEveryBookie(Ctx sctx, Consumer<ClientConfiguration> tls, List<BookieId> bookies,
            long ledger, int want, String who) throws Exception {
        List<String> wrong = new ArrayList<>();
        for (BookieId b : bookies) {
            int rc = probe(sctx, tls, b, ledger);
            if (rc != want) {
                wrong.add(b + ": " + Tls.name(rc));
            }
        }
        Check.isTrue(who + " gets " + Tls.name(want) + " on a direct read from every bookie", wrong.isEmpty(),
                String.join("; ", wrong));
    }
}

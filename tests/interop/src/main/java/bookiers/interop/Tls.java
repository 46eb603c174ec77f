/*
 * s16_tls and s17_tls_authz: the stock client over TLS (BookKeeper's TLSContextFactory, its
 * START_TLS upgrade) to bookies configured with the stock TLS keys, and the stock
 * BookieAuthZFactory deciding by the role in the client certificate.
 *
 * Each scenario runs on a side cluster of its own (Cluster.cachedSide: 4 bookies of the pass's
 * implementation under their own ledgers root on the suite's ZooKeeper, kept for both modes
 * and killed when the implementation's pass ends), so the shared cluster's bookies keep their
 * plaintext configuration for every other scenario.
 * Certificates come from TlsCerts (openssl, at run time).
 *
 * s16: PEM keys on bookies 0-1, JKS key and trust stores on bookie 2 and a PKCS12 store on
 * bookie 3, tlsClientAuthentication=true,
 * no auth plugin. A TLS client with an authorized certificate writes (ensemble of all 4, so the
 * PKCS12 bookie acknowledges every entry) and a second one reads back entries of 1 B to 1 MiB;
 * every bookie's registration carries the "tls" extension; a plaintext client (no TLS keys,
 * so no START_TLS) still writes and reads on the same bookies, and reads the TLS client's
 * ledger: without an auth plugin TLS is offered, not required (BookieRequestProcessor). A
 * client that trusts only another CA gets SecurityException: the handshake checks the chain.
 *
 * s17: the same cluster keys plus bookieAuthProviderFactoryClass=BookieAuthZFactory and
 * authorizedRoles=pulsar. The authorized client writes and reads; then each refused case
 * (plaintext, TLS without a client certificate, a certificate of an untrusted CA, an expired
 * one, one with no role, one with another role) sends a direct add (of a fresh ledger) and a
 * direct read (of the authorized ledger) to one bookie through the client's BookieClient, each
 * from a new client, and must get one of the client rcs REFUSALS lists for its case, op and
 * mode: what the stock client gets from the stock Java bookie (measured, see REFUSALS), which
 * a bookie-rs must give as well. Afterwards the authorized clients are still served.
 */
package bookiers.interop;

import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.ReferenceCounted;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongFunction;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.InteropAccess;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.client.api.WriteFlag;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.net.BookieId;
import org.apache.bookkeeper.proto.BookieProtocol;
import org.apache.bookkeeper.proto.DataFormats.BookieServiceInfoFormat;
import org.apache.bookkeeper.proto.DataFormats.LedgerMetadataFormat;
import org.apache.bookkeeper.proto.checksum.DigestManager;

/** Scenarios 16 and 17. */
final class Tls {
    private Tls() {
    }

    static final String TLS_FACTORY = "org.apache.bookkeeper.tls.TLSContextFactory";
    static final String AUTHZ_FACTORY = "org.apache.bookkeeper.tls.BookieAuthZFactory";
    /** Entry sizes of the TLS ledgers: 1 B to 1 MiB (records of 16 KiB and frames of many). */
    static final int[] SIZES = {1, 100, 1024, 16 * 1024 - 1, 16 * 1024 + 1, 64 * 1024, 256 * 1024, Payloads.MIB};

    // ---------------------------------------------------------------- s16

    static void s16(Ctx ctx) throws Exception {
        TlsCerts certs = TlsCerts.of(ctx.cluster.runDir);
        Cluster side = startSide(ctx, "s16",
                i -> bookieKeys(certs, i == 3 ? Store.PKCS12 : i == 2 ? Store.JKS : Store.PEM, false));
        Ctx sctx = new Ctx(side, ctx.v2);
        try {
            BookKeeper writer = sctx.newClient(tlsClient(certs, TlsCerts.Client.AUTHORIZED, certs.caCert()));
            BookKeeper reader = sctx.newClient(tlsClient(certs, TlsCerts.Client.AUTHORIZED, certs.caCert()));
            // Ensemble of all 4 bookies, every one in every write quorum and the ack quorum:
            // each entry is acknowledged over TLS by the JKS and the PKCS12 bookies too.
            long tlsLedger = writeAndRead(writer, reader, 4, 4, 4, 3 * SIZES.length, "TLS client");
            // A pipelined ledger of many small entries (E3W2A2, as Pulsar's default).
            LedgerHandle lh = writer.createLedger(3, 2, 2, DigestType.CRC32C, Ctx.PASSWORD);
            long seed = lh.getId();
            LongFunction<byte[]> small = e -> Payloads.bytes(seed, e, Payloads.smallSize(seed, e));
            Ctx.writeAll(lh, 500, small, 100, 8L * Payloads.MIB);
            lh.close();
            LedgerHandle rh = reader.openLedger(lh.getId(), DigestType.CRC32C, Ctx.PASSWORD);
            Ctx.verifyAll(rh, 0, 499, small, 4L * Payloads.MIB);
            rh.close();

            checkTlsExtension(side, writer);

            // Plaintext on the same bookies: no auth plugin, so TLS is not mandatory.
            BookKeeper plain = sctx.newClient();
            writeAndRead(plain, plain, 4, 4, 4, SIZES.length, "plaintext client");
            LedgerHandle ph = plain.openLedger(tlsLedger, DigestType.CRC32C, Ctx.PASSWORD);
            Ctx.verifyAll(ph, 0, ph.getLastAddConfirmed(), sizedPayload(tlsLedger), 4L * Payloads.MIB);
            ph.close();

            // A client that trusts another CA: the bookie's chain is checked, so neither a
            // direct add nor a direct read gets through (the client fails the handshake).
            // Each probe is the first request of a new client: the stock PerChannelBookieClient's
            // channelInactive errors out *every* pending op with BookieHandleNotAvailable, also one
            // queued for the next connection, so a read sent right after the failed add on the
            // same client could get -8 from the first connection's late close (seen in CI).
            BookieId b0 = BookieId.parse(side.bookies().get(0).bookieId());
            int add = rawAdd(sctx.newClient(tlsClient(certs, TlsCerts.Client.AUTHORIZED, certs.otherCaCert())),
                    b0, PROBE_LEDGER + 99, ctx.v2);
            int read = rawRead(sctx.newClient(tlsClient(certs, TlsCerts.Client.AUTHORIZED, certs.otherCaCert())),
                    b0, tlsLedger);
            Check.eq("direct add / read by a client that trusts only another CA, to " + b0,
                    name(BKException.Code.SecurityException) + " / " + name(BKException.Code.SecurityException),
                    name(add) + " / " + name(read));
        } finally {
            sctx.closeAll();
        }
    }

    // ---------------------------------------------------------------- s17

    /** A refused client case of s17. */
    enum Refused {
        PLAINTEXT, NO_CLIENT_CERT, UNTRUSTED_CA, EXPIRED, NO_ROLE, WRONG_ROLE
    }

    /**
     * Client rcs of a direct add and a direct read (the stock client's per-bookie BookieClient,
     * so the quorum logic does not hide the bookie's answer) to one bookie of 4 stock Java
     * bookies with BookieAuthZFactory (authorizedRoles=pulsar), per case: {add v2, read v2,
     * add v3, read v3}, each the set of codes accepted. The add is entry 0 of a ledger no one
     * wrote (probeLedger), with a good digest; the read is entry 0 of a closed ledger the
     * authorized client wrote on every bookie; each is the first request of a new client.
     * Measured with tests/interop/run.sh --impl java --scenario 17 (2026-12-01, stock 4.17.3
     * client and bookie, JDK 17, Netty OpenSSL provider, TLS 1.3); a bookie-rs must give the same.
     * (Through LedgerHandle the refused adds never complete: the client retries the ensemble
     * change for good, so the scenario asks one bookie directly.)
     */
    static final Map<Refused, List<Set<Integer>>> REFUSALS = new LinkedHashMap<>();

    static {
        Set<Integer> eua = Set.of(BKException.Code.UnauthorizedAccessException);
        // No START_TLS: BookieAuthZFactory's pre-authorization gate answers EUA (AuthHandler).
        REFUSALS.put(Refused.PLAINTEXT, List.of(eua, eua, eua, eua));
        // The bookie fails the handshake on the client's certificate (or its absence) and sends
        // an alert. With TLS 1.3 the client has finished its side already; which of two stock
        // PerChannelBookieClient handlers reaches the op first decides its code, and that is
        // the client's own timing, not the bookie's answer:
        //  - the handshake-success listener sent the request before the alert was read: the
        //    close errors out the outstanding request, BookieHandleNotAvailable (-8; the Java
        //    bookie's answer in every run so far);
        //  - the alert was read first: exceptionCaught's SSLException branch errors out the
        //    still-pending op, SecurityException (-24; seen once from a bookie-rs in CI, whose
        //    alert comes sooner).
        // Either is a refusal in the handshake; an EUA (a refusal after it) or OK fails the row.
        Set<Integer> inHandshake = Set.of(BKException.Code.BookieHandleNotAvailableException,
                BKException.Code.SecurityException);
        REFUSALS.put(Refused.NO_CLIENT_CERT, List.of(inHandshake, inHandshake, inHandshake, inHandshake));
        REFUSALS.put(Refused.UNTRUSTED_CA, List.of(inHandshake, inHandshake, inHandshake, inHandshake));
        REFUSALS.put(Refused.EXPIRED, List.of(inHandshake, inHandshake, inHandshake, inHandshake));
        // Handshake done, authorization refused: the bookie keeps the connection and answers
        // EUA (v2 clients first choke on the bookie's v3 EIO frame, then close; the request
        // already sent still gets its EUA, hence one probe per fresh client). In v2 that EUA
        // races the client's own close: the client sends its request right after its side of
        // the handshake, before it reads the EIO, so the EIO and the EUA can reach it in one
        // read, and the close on the EIO then errors the request out first with
        // BookieHandleNotAvailable (-8; seen once from a bookie-rs in CI, WRONG_ROLE v2 add,
        // 2026-12-04). Either is a refusal after the handshake; OK fails the row, and v3
        // (no EIO to choke on) must answer EUA.
        Set<Integer> v2Refused = Set.of(BKException.Code.UnauthorizedAccessException,
                BKException.Code.BookieHandleNotAvailableException);
        REFUSALS.put(Refused.NO_ROLE, List.of(v2Refused, v2Refused, eua, eua));
        REFUSALS.put(Refused.WRONG_ROLE, List.of(v2Refused, v2Refused, eua, eua));
    }

    static void s17(Ctx ctx) throws Exception {
        TlsCerts certs = TlsCerts.of(ctx.cluster.runDir);
        Cluster side = startSide(ctx, "s17", i -> bookieKeys(certs, Store.PEM, true));
        Ctx sctx = new Ctx(side, ctx.v2);
        try {
            BookKeeper writer = sctx.newClient(tlsClient(certs, TlsCerts.Client.AUTHORIZED, certs.caCert()));
            BookKeeper reader = sctx.newClient(tlsClient(certs, TlsCerts.Client.AUTHORIZED, certs.caCert()));
            long ledger = writeAndRead(writer, reader, 4, 4, 4, SIZES.length, "authorized client");

            List<String> got = new ArrayList<>();
            List<String> wrong = new ArrayList<>();
            for (Refused r : Refused.values()) {
                // One client per probe: each request is the first on its connection (see the
                // v2 note at REFUSALS).
                BookieId b0 = BookieId.parse(side.bookies().get(0).bookieId());
                long t0 = System.nanoTime();
                int add = rawAdd(sctx.newClient(refusedClient(certs, r)), b0, probeLedger(r, ctx), ctx.v2);
                int read = rawRead(sctx.newClient(refusedClient(certs, r)), b0, ledger);
                double secs = (System.nanoTime() - t0) / 1e9;
                List<Set<Integer>> want = REFUSALS.get(r);
                Set<Integer> wantAdd = want.get(ctx.v2 ? 0 : 2);
                Set<Integer> wantRead = want.get(ctx.v2 ? 1 : 3);
                String line = String.format("%s %s: add %s, read %s (%.1f s)", r, ctx.mode, name(add),
                        name(read), secs);
                got.add(line);
                if (!wantAdd.contains(add) || !wantRead.contains(read)) {
                    wrong.add(line + "; expected add " + names(wantAdd) + ", read " + names(wantRead));
                }
            }
            System.out.println("interop: s17 " + side.impl().name + " " + ctx.mode + " refusals: "
                    + String.join("; ", got));
            Check.isTrue("refused clients get the BKException codes of the Java bookie", wrong.isEmpty(),
                    String.join("\n  ", wrong));

            // The refusals closed (or refused) those connections only: the authorized
            // clients are still served.
            writeAndRead(writer, reader, 4, 4, 4, SIZES.length, "authorized client after the refusals");
        } finally {
            sctx.closeAll();
        }
    }

    // ---------------------------------------------------------------- helpers

    /**
     * The scenario's side cluster of this pass's implementation (one per scenario, kept for both
     * modes, see Cluster.cachedSide).
     */
    private static Cluster startSide(Ctx ctx, String scenario, java.util.function.IntFunction<Map<String, String>> keys)
            throws Exception {
        long t0 = System.nanoTime();
        Impl impl = ctx.cluster.impl();
        Cluster side = ctx.cluster.cachedSide(scenario + "-" + impl.name, keys, impl, 4);
        System.out.printf("interop: %s: 4 %s TLS bookies ready in %.1fs%n", side.ledgersRoot(), impl.name,
                (System.nanoTime() - t0) / 1e9);
        return side;
    }

    /** How a bookie of s16/s17 holds its key (tlsKeyStoreType) and trust anchors. */
    enum Store { PEM, PKCS12, JKS }

    /** The bookie's stock TLS keys (PEM key, PKCS12 or JKS store), mutual TLS, optionally BookieAuthZFactory. */
    static Map<String, String> bookieKeys(TlsCerts certs, Store store, boolean authz) {
        Map<String, String> kv = new LinkedHashMap<>();
        kv.put("tlsProviderFactoryClass", TLS_FACTORY);
        switch (store) {
            case PKCS12 -> {
                kv.put("tlsKeyStoreType", "PKCS12");
                kv.put("tlsKeyStore", certs.bookieP12().toString());
                kv.put("tlsKeyStorePasswordPath", certs.bookieP12PasswordFile().toString());
            }
            case JKS -> {
                kv.put("tlsKeyStoreType", "JKS");
                kv.put("tlsKeyStore", certs.bookieJks().toString());
                kv.put("tlsKeyStorePasswordPath", certs.bookieP12PasswordFile().toString());
            }
            case PEM -> {
                kv.put("tlsKeyStoreType", "PEM");
                kv.put("tlsKeyStore", certs.bookieKey().toString());
                kv.put("tlsCertificatePath", certs.bookieCert().toString());
            }
        }
        if (store == Store.JKS) {
            kv.put("tlsTrustStoreType", "JKS");
            kv.put("tlsTrustStore", certs.caJks().toString());
            kv.put("tlsTrustStorePasswordPath", certs.bookieP12PasswordFile().toString());
        } else {
            kv.put("tlsTrustStoreType", "PEM");
            kv.put("tlsTrustStore", certs.caCert().toString());
        }
        kv.put("tlsClientAuthentication", "true");
        if (authz) {
            kv.put("bookieAuthProviderFactoryClass", AUTHZ_FACTORY);
            kv.put("authorizedRoles", "pulsar");
        }
        return kv;
    }

    /** Client keys as a Pulsar broker sets them (PEM), with client certificate who, trusting trust. */
    static Consumer<ClientConfiguration> tlsClient(TlsCerts certs, TlsCerts.Client who, Path trust) {
        return c -> {
            c.setProperty("tlsProviderFactoryClass", TLS_FACTORY);
            c.setProperty("tlsTrustStoreType", "PEM");
            c.setProperty("tlsTrustStore", trust.toString());
            if (who == null) {
                c.setProperty("tlsClientAuthentication", "false");
            } else {
                c.setProperty("tlsClientAuthentication", "true");
                c.setProperty("tlsKeyStoreType", "PEM");
                c.setProperty("tlsKeyStore", certs.clientKey(who).toString());
                c.setProperty("tlsCertificatePath", certs.clientCert(who).toString());
            }
        };
    }

    private static Consumer<ClientConfiguration> refusedClient(TlsCerts certs, Refused r) {
        return switch (r) {
            case PLAINTEXT -> c -> { };
            case NO_CLIENT_CERT -> tlsClient(certs, null, certs.caCert());
            case UNTRUSTED_CA -> tlsClient(certs, TlsCerts.Client.UNTRUSTED, certs.caCert());
            case EXPIRED -> tlsClient(certs, TlsCerts.Client.EXPIRED, certs.caCert());
            case NO_ROLE -> tlsClient(certs, TlsCerts.Client.NO_ROLE, certs.caCert());
            case WRONG_ROLE -> tlsClient(certs, TlsCerts.Client.WRONG_ROLE, certs.caCert());
        };
    }

    static LongFunction<byte[]> sizedPayload(long ledger) {
        return e -> Payloads.bytes(ledger, e, SIZES[(int) (e % SIZES.length)]);
    }

    /** Writes n entries of SIZES (cycled) with writer, closes, reads them back with reader. */
    static long writeAndRead(BookKeeper writer, BookKeeper reader, int e, int w, int a, int n, String who)
            throws Exception {
        LedgerHandle lh = writer.createLedger(e, w, a, DigestType.CRC32C, Ctx.PASSWORD);
        LongFunction<byte[]> payload = sizedPayload(lh.getId());
        try {
            Ctx.writeAll(lh, n, payload, 16, 4L * Payloads.MIB);
            lh.close();
            LedgerHandle rh = reader.openLedger(lh.getId(), DigestType.CRC32C, Ctx.PASSWORD);
            Check.eq(who + ": LAC of ledger " + lh.getId(), (long) n - 1, rh.getLastAddConfirmed());
            Ctx.verifyAll(rh, 0, n - 1, payload, 4L * Payloads.MIB);
            rh.close();
        } catch (Check.Failure f) {
            throw new Check.Failure(who + ": " + f.getMessage(), f);
        }
        return lh.getId();
    }

    /** Ledger ids of the direct adds start here: no ledger of the scenarios has one. */
    static final long PROBE_LEDGER = 7_000_000L;

    /** A ledger of its own per case and mode, so a wrongly accepted add cannot change another's answer. */
    private static long probeLedger(Refused r, Ctx ctx) {
        return PROBE_LEDGER + (ctx.v2 ? 0 : 100) + r.ordinal();
    }

    /**
     * A direct add of entry 0 of ledger (good digest; the ledger is new to the bookie, so the
     * master key is taken as given) to bookie through bk's BookieClient: client rc, or
     * NO_ANSWER after 30 s.
     */
    static int rawAdd(BookKeeper bk, BookieId bookie, long ledger, boolean v2) throws Exception {
        byte[] key = DigestManager.generateMasterKey(Ctx.PASSWORD);
        DigestManager dm = DigestManager.instantiate(ledger, Ctx.PASSWORD, LedgerMetadataFormat.DigestType.CRC32C,
                PooledByteBufAllocator.DEFAULT, v2);
        byte[] data = "may a refused client add?".getBytes(StandardCharsets.UTF_8);
        ReferenceCounted toSend = dm.computeDigestAndPackageForSending(0, -1, data.length, Unpooled.wrappedBuffer(data),
                key, BookieProtocol.FLAG_NONE);
        CompletableFuture<Integer> rc = new CompletableFuture<>();
        InteropAccess.bookieClient(bk).addEntry(bookie, ledger, key, 0, toSend,
                (r, l, e, addr, c) -> rc.complete(r), null, BookieProtocol.FLAG_NONE, false,
                EnumSet.noneOf(WriteFlag.class));
        try {
            return rc.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            return NO_ANSWER;
        }
    }

    /** A direct read of entry 0 of ledger from bookie: client rc, or NO_ANSWER after 30 s. */
    static int rawRead(BookKeeper bk, BookieId bookie, long ledger) throws Exception {
        CompletableFuture<Integer> rc = new CompletableFuture<>();
        InteropAccess.bookieClient(bk).readEntry(bookie, ledger, 0, (r, l, e, buf, c) -> rc.complete(r), null,
                BookieProtocol.FLAG_NONE);
        try {
            return rc.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            return NO_ANSWER;
        }
    }

    /** Stand-in rc: the request had no answer within 30 s. */
    static final int NO_ANSWER = Integer.MIN_VALUE;

    /** The names of a set of client rcs, "a or b", in code order. */
    static String names(Set<Integer> rcs) {
        List<String> out = new ArrayList<>();
        for (int rc : new TreeSet<>(rcs)) {
            out.add(name(rc));
        }
        return String.join(" or ", out);
    }

    static String name(int rc) {
        if (rc == NO_ANSWER) {
            return "no answer in 30 s";
        }
        return rc == BKException.Code.OK ? "OK" : BKException.create(rc).getClass().getSimpleName() + " (" + rc + ")";
    }

    /** Every bookie's registration is BookieServiceInfoFormat with extensions ["tls"], as Java writes it. */
    private static void checkTlsExtension(Cluster side, BookKeeper bk) throws Exception {
        for (BookieProcess b : side.bookies()) {
            String id = b.bookieId();
            byte[] data = side.zk().getData(side.ledgersRoot() + "/available/" + id, false, null);
            byte[] want = BookieServiceInfoFormat.newBuilder()
                    .addEndpoints(BookieServiceInfoFormat.Endpoint.newBuilder()
                            .setId("bookie").setPort(b.port).setHost("127.0.0.1").setProtocol("bookie-rpc")
                            .addExtensions("tls"))
                    .build().toByteArray();
            Check.eq("data of " + side.ledgersRoot() + "/available/" + id + " (hex BookieServiceInfoFormat)",
                    Scenarios.hex(want), Scenarios.hex(data));
            org.apache.bookkeeper.discover.BookieServiceInfo info = bk.getMetadataClientDriver()
                    .getRegistrationClient().getBookieServiceInfo(BookieId.parse(id)).get(10, TimeUnit.SECONDS)
                    .getValue();
            boolean tls = info.getEndpoints().stream().anyMatch(ep -> ep.getProtocol().equals("bookie-rpc")
                    && ep.getExtensions() != null && ep.getExtensions().contains("tls"));
            Check.isTrue("the stock registration client sees extension \"tls\" on " + id, tls, "got " + info);
        }
    }
}

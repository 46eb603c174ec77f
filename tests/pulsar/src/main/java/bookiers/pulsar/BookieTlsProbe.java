// bookiers.pulsar.BookieTlsProbe: proves that the bookies of a TLS scenario refuse a plaintext
// BookKeeper client and serve one with the broker's TLS keys, with the stock BookKeeper 4.17.2
// client the broker itself uses.
//
// 1. plaintext: a client without TLS creates a ledger (ensemble/write/ack 3/3/2, metadata only)
//    and adds one entry. Bookies with BookieAuthZFactory answer an unauthorized add with EUA, so
//    the add must fail (BKUnauthorizedAccessException); the ledger is deleted.
// 2. tls: the same with TLSContextFactory, mutual TLS and the broker's PEM key, certificate and
//    CA (the keys the broker's bookkeeperTLS* settings name): the entry is added and read back
//    equal; the ledger is deleted.
// Prints `plaintext refused: <exception>` and `tls accepted: ...`; exit status 0 only if both
// hold. An add that hangs is bounded by the client's 10 s add timeout.
//
//   java -cp target/classes:target/lib/* bookiers.pulsar.BookieTlsProbe \
//        <metadataServiceUri> <v2|v3> <key.pem> <cert.pem> <ca.pem>
package bookiers.pulsar;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.LedgerEntry;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;

public final class BookieTlsProbe {
    private static final byte[] PASSWORD = "probe".getBytes(StandardCharsets.UTF_8);

    private BookieTlsProbe() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: BookieTlsProbe <metadataServiceUri> <v2|v3> <key.pem> <cert.pem> <ca.pem>");
            System.exit(2);
        }
        boolean v2 = args[1].equals("v2");
        byte[] data = ("probe entry over " + args[1]).getBytes(StandardCharsets.UTF_8);

        boolean refused;
        try (BookKeeper bk = new BookKeeper(base(args[0], v2))) {
            LedgerHandle lh = bk.createLedger(3, 3, 2, BookKeeper.DigestType.CRC32C, PASSWORD);
            try {
                lh.addEntry(data);
                System.out.println("plaintext NOT refused: entry 0 of ledger " + lh.getId() + " added");
                refused = false;
            } catch (BKException e) {
                System.out.println("plaintext refused: " + e.getClass().getSimpleName() + " (" + e.getMessage() + ")");
                refused = true;
            }
            bk.deleteLedger(lh.getId());
        }

        boolean accepted;
        ClientConfiguration tls = base(args[0], v2);
        tls.setTLSProviderFactoryClass("org.apache.bookkeeper.tls.TLSContextFactory");
        tls.setTLSClientAuthentication(true);
        tls.setTLSKeyStoreType("PEM");
        tls.setTLSKeyStore(args[2]);
        tls.setTLSCertificatePath(args[3]);
        tls.setTLSTrustStoreType("PEM");
        tls.setTLSTrustStore(args[4]);
        try (BookKeeper bk = new BookKeeper(tls)) {
            LedgerHandle lh = bk.createLedger(3, 3, 2, BookKeeper.DigestType.CRC32C, PASSWORD);
            long id = lh.getId();
            try {
                lh.addEntry(data);
                lh.close();
                try (LedgerHandle rh = bk.openLedger(id, BookKeeper.DigestType.CRC32C, PASSWORD)) {
                    LedgerEntry e = rh.readEntries(0, 0).nextElement();
                    accepted = Arrays.equals(e.getEntry(), data);
                    System.out.println("tls accepted: ledger " + id + " entry 0 added and read back "
                            + (accepted ? "equal" : "DIFFERENT"));
                }
            } catch (BKException e) {
                System.out.println("tls NOT accepted: " + e.getClass().getSimpleName() + " (" + e.getMessage() + ")");
                accepted = false;
            }
            bk.deleteLedger(id);
        }
        System.exit(refused && accepted ? 0 : 1);
    }

    private static ClientConfiguration base(String metadataServiceUri, boolean v2) {
        ClientConfiguration c = new ClientConfiguration();
        c.setMetadataServiceUri(metadataServiceUri);
        c.setUseV2WireProtocol(v2);
        c.setAddEntryTimeout(10);
        c.setReadEntryTimeout(10);
        // Pulsar's frame size, as the broker sets it.
        c.setNettyMaxFrameSizeBytes(5253120);
        return c;
    }
}

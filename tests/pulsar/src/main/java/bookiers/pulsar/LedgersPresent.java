// bookiers.pulsar.LedgersPresent: whether each ledger given still has metadata in the metadata
// store, read with the stock BookKeeper client, for scenario retention_gc (a ledger the broker
// trimmed must be deleted from metadata; one a subscription still needs must not be).
//
// Output, one line per ledger id given: `ledger <id> present` or `ledger <id> absent`. Any other
// failure of a metadata read (not "no such ledger") exits 1, so a metadata store that cannot be
// read is never taken for deleted ledgers.
//
//   java -cp target/classes:target/lib/* bookiers.pulsar.LedgersPresent <metadataServiceUri> <id>[,<id>..]
package bookiers.pulsar;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.api.BookKeeper;
import org.apache.bookkeeper.conf.ClientConfiguration;

public final class LedgersPresent {
    private LedgersPresent() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: LedgersPresent <metadataServiceUri> <id>[,<id>..]");
            System.exit(2);
        }
        try (BookKeeper bk = BookKeeper.newBuilder(new ClientConfiguration().setMetadataServiceUri(args[0])).build()) {
            for (String s : args[1].split(",")) {
                if (s.isBlank()) continue;
                long id = Long.parseLong(s.trim());
                String state;
                try {
                    bk.getLedgerMetadata(id).get(120, TimeUnit.SECONDS);
                    state = "present";
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof BKException.BKNoSuchLedgerExistsOnMetadataServerException
                            || e.getCause() instanceof BKException.BKNoSuchLedgerExistsException) {
                        state = "absent";
                    } else {
                        throw e;
                    }
                }
                System.out.println("ledger " + id + " " + state);
            }
        }
        System.exit(0);
    }
}

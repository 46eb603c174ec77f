// bookiers.pulsar.AllLedgers: every ledger in the metadata store (not only a topic's: the cursor
// and system-topic ledgers too) with its BookKeeper metadata, read with the stock client's list
// and metadata operations, for scenarios that must show that a bookie is in no ensemble at all
// (rolling_swap: the replaced bookies are gone from every ledger).
//
// Output, one line per ledger, in the order the metadata store lists them (TopicLedgers' shape):
//   ledger <id> state <OPEN|IN_RECOVERY|CLOSED> lastEntryId <n> ensembles <k> [<firstEntry>:<bookie>,..]..
// A ledger deleted between the list and the metadata read is skipped; any other failure exits 1.
//
//   java -cp target/classes:target/lib/* bookiers.pulsar.AllLedgers <metadataServiceUri>
package bookiers.pulsar;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.api.BKException;
import org.apache.bookkeeper.client.api.BookKeeper;
import org.apache.bookkeeper.client.api.LedgerMetadata;
import org.apache.bookkeeper.client.api.ListLedgersResult;
import org.apache.bookkeeper.conf.ClientConfiguration;

public final class AllLedgers {
    private AllLedgers() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: AllLedgers <metadataServiceUri>");
            System.exit(2);
        }
        try (BookKeeper bk = BookKeeper.newBuilder(new ClientConfiguration().setMetadataServiceUri(args[0])).build();
             ListLedgersResult list = bk.newListLedgersOp().execute().get(120, TimeUnit.SECONDS)) {
            for (long id : list.toIterable()) {
                LedgerMetadata md;
                try {
                    md = bk.getLedgerMetadata(id).get(120, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof BKException bke
                            && bke.getCode() == BKException.Code.NoSuchLedgerExistsOnMetadataServerException) {
                        continue;
                    }
                    throw e;
                }
                System.out.println(TopicLedgers.describe(id, md));
            }
        }
        System.exit(0);
    }
}

// bookiers.pulsar.TopicLedgers: the ledgers behind a topic and each one's BookKeeper metadata, read
// with the admin API (the managed ledger's ledger list) and the stock BookKeeper client (the
// ledger metadata in the metadata store), for scenarios that must show where a ledger's entries
// live: which bookies, and whether its ensemble changed.
//
// Output, per ledger of the topic in order:
//   ledger <id> state <OPEN|IN_RECOVERY|CLOSED> lastEntryId <n> ensembles <k> [<firstEntry>:<bookie>,..]..
// where each [..] is one ensemble with the first entry it holds (k > 1: the ensemble changed).
//
//   java -cp target/classes:target/lib/* bookiers.pulsar.TopicLedgers <adminUrl> <metadataServiceUri> <topic>
package bookiers.pulsar;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.bookkeeper.client.api.BookKeeper;
import org.apache.bookkeeper.client.api.LedgerMetadata;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.net.BookieId;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.common.policies.data.ManagedLedgerInternalStats.LedgerInfo;

public final class TopicLedgers {
    private TopicLedgers() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: TopicLedgers <adminUrl> <metadataServiceUri> <topic>");
            System.exit(2);
        }
        try (PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(args[0]).readTimeout(120, TimeUnit.SECONDS).build();
             BookKeeper bk = BookKeeper.newBuilder(new ClientConfiguration().setMetadataServiceUri(args[1])).build()) {
            List<LedgerInfo> ledgers = admin.topics().getInternalStats(args[2]).ledgers;
            for (LedgerInfo l : ledgers) {
                LedgerMetadata md = bk.getLedgerMetadata(l.ledgerId).get(120, TimeUnit.SECONDS);
                System.out.println(describe(l.ledgerId, md));
            }
        }
        System.exit(0);
    }

    /** One output line: `ledger <id> state .. lastEntryId .. ensembles <k> [<firstEntry>:<bookie>,..]..`
     *  (also AllLedgers' format). */
    static String describe(long ledgerId, LedgerMetadata md) {
        StringBuilder line = new StringBuilder("ledger " + ledgerId + " state " + md.getState()
                + " lastEntryId " + md.getLastEntryId() + " ensembles " + md.getAllEnsembles().size());
        for (Map.Entry<Long, ? extends List<BookieId>> e : md.getAllEnsembles().entrySet()) {
            line.append(" [").append(e.getKey()).append(':')
                    .append(e.getValue().stream().map(BookieId::toString).collect(Collectors.joining(",")))
                    .append(']');
        }
        return line.toString();
    }
}

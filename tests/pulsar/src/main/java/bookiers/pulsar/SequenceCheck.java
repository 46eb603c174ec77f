// bookiers.pulsar.SequenceCheck: reads a topic from the earliest message with a stock Reader and
// checks it holds SequenceProducer's numbered stream: message n is number n (no gap, no duplicate,
// no reordering) with exactly the bytes SequencePayload gives for it. Reads until the broker says
// no message is left (Reader.hasMessageAvailable, which asks for the topic's last message id), so
// messages written but never acknowledged may follow the acknowledged ones and are checked too.
//
// Output: `consumed <n> in order, contents equal (first <sha> last <sha>)`, or the first bad
// message. Exit status 0 only if all is in order and n >= minCount (and n == --exact, if given).
//
//   java -cp target/classes:target/lib/* bookiers.pulsar.SequenceCheck <serviceUrl> <topic>
//        <bytes> <minCount> [--exact N] [--seed S]
package bookiers.pulsar;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.SizeUnit;

public final class SequenceCheck {
    private SequenceCheck() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: SequenceCheck <serviceUrl> <topic> <bytes> <minCount> [--exact N] [--seed S]");
            System.exit(2);
        }
        String serviceUrl = args[0];
        String topic = args[1];
        int size = Integer.parseInt(args[2]);
        long minCount = Long.parseLong(args[3]);
        long exact = -1;
        long seed = 16;
        for (int a = 4; a < args.length; a++) {
            switch (args[a]) {
                case "--exact" -> exact = Long.parseLong(args[++a]);
                case "--seed" -> seed = Long.parseLong(args[++a]);
                default -> throw new IllegalArgumentException("unknown option " + args[a]);
            }
        }
        long n = 0;
        String first = "-";
        String lastSha = "-";
        try (PulsarClient client = PulsarClient.builder().serviceUrl(serviceUrl)
                .memoryLimit(0, SizeUnit.BYTES)
                .operationTimeout(300, TimeUnit.SECONDS)
                .build();
             Reader<byte[]> reader = client.newReader().topic(topic).startMessageId(MessageId.earliest)
                .expireTimeOfIncompleteChunkedMessage(60, TimeUnit.MINUTES)
                .create()) {
            while (reader.hasMessageAvailable()) {
                Message<byte[]> m = reader.readNext(300, TimeUnit.SECONDS);
                if (m == null) {
                    System.out.println("BAD: message " + n + " announced but not read within 300 s");
                    System.exit(1);
                }
                byte[] got = m.getValue();
                long index = SequencePayload.indexOf(got);
                if (index != n) {
                    System.out.println("BAD: message " + n + " is number " + index + " (" + got.length + " bytes, id "
                            + m.getMessageId() + ")");
                    System.exit(1);
                }
                byte[] want = SequencePayload.of(n, size, seed);
                if (!Arrays.equals(got, want)) {
                    System.out.println("BAD: message " + n + " bytes differ (sha256 sent " + SequencePayload.sha256(want)
                            + " received " + SequencePayload.sha256(got) + ", " + got.length + " bytes)");
                    System.exit(1);
                }
                lastSha = SequencePayload.sha256(got);
                if (n == 0) first = lastSha;
                n++;
            }
        }
        System.out.println("consumed " + n + " in order, contents equal (first sha256 " + first + " last " + lastSha + ")");
        boolean ok = n >= minCount && (exact < 0 || n == exact);
        if (!ok) {
            System.out.println("BAD: consumed " + n + ", wanted at least " + minCount + (exact >= 0 ? " and exactly " + exact : ""));
        }
        System.exit(ok ? 0 : 1);
    }
}

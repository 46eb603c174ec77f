// bookiers.pulsar.FileRoundTrip: one file through a stock Pulsar broker as ONE chunked message,
// for scripts/pulsar-demo.sh.
//
// Reads the file (at most 2 GiB - 1: one Java array), publishes it with the stock Java client
// (enableChunking, batching off, chunks of the broker's maxMessageSize, stock 5 MiB), unloads the
// topic so the broker's managed-ledger cache is dropped and the read comes back from the bookies,
// consumes it on a new subscription from earliest, and compares the SHA-256 of what was sent with
// what was received. Prints, for the demo script to show:
//   file <path> <bytes> bytes sha256 <hex>
//   published <bytes> in <ms> ms: <MB/s> MB/s (<MiB/s> MiB/s), <n> entries (chunks) in the topic
//   consumed <bytes> in <ms> ms: <MB/s> MB/s (<MiB/s> MiB/s)
//   sha256 sent <hex> received <hex> equal|DIFFERENT
// MB = 10^6 bytes, MiB = 2^20. Publish time: from send() to the broker's acknowledgement of the
// last chunk (each chunk is acknowledged only once the bookies' ack quorum has it on disk).
// Consume time: from subscribe to the whole message assembled. Exit status 0 only if equal.
//
//   java -cp target/classes:target/lib/* bookiers.pulsar.FileRoundTrip <serviceUrl> <adminUrl> <topic> <file>
package bookiers.pulsar;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SizeUnit;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

public final class FileRoundTrip {
    private FileRoundTrip() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: FileRoundTrip <serviceUrl> <adminUrl> <topic> <file>");
            System.exit(2);
        }
        String topic = args[2];
        Path file = Path.of(args[3]);
        long size = Files.size(file);
        if (size == 0 || size > Integer.MAX_VALUE - 8) {
            System.err.println("FileRoundTrip: " + file + " has " + size + " bytes; 1 byte .. 2 GiB - 9 can be sent");
            System.exit(2);
        }
        byte[] payload = Files.readAllBytes(file);
        String sent = sha256(payload);
        System.out.println("file " + file + " " + payload.length + " bytes sha256 " + sent);

        try (PulsarClient client = PulsarClient.builder().serviceUrl(args[0])
                // The whole message is pending at once; the stock 64 MiB client memory limit would
                // refuse a larger one. 0 = no limit.
                .memoryLimit(0, SizeUnit.BYTES)
                .operationTimeout(300, TimeUnit.SECONDS)
                .build();
             PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(args[1])
                .readTimeout(300, TimeUnit.SECONDS).build()) {

            try (Producer<byte[]> producer = client.newProducer().topic(topic)
                    .enableBatching(false).enableChunking(true)
                    .sendTimeout(0, TimeUnit.SECONDS)
                    .create()) {
                long t0 = System.nanoTime();
                producer.send(payload);
                long ms = (System.nanoTime() - t0) / 1_000_000;
                long entries = admin.topics().getInternalStats(topic).numberOfEntries;
                System.out.printf("published %d in %d ms: %s, %d entries (chunks) in the topic%n",
                        payload.length, ms, rate(payload.length, ms), entries);
            }
            // The managed ledger is closed and reopened on the next subscribe: the read below
            // comes from the bookies, not from the broker's cache.
            admin.topics().unload(topic);

            long t1 = System.nanoTime();
            try (Consumer<byte[]> consumer = client.newConsumer().topic(topic)
                    .subscriptionName("demo-" + System.currentTimeMillis())
                    .subscriptionType(SubscriptionType.Exclusive)
                    .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                    // The stock 60 s would drop a half-assembled message that takes longer.
                    .expireTimeOfIncompleteChunkedMessage(60, TimeUnit.MINUTES)
                    .subscribe()) {
                Message<byte[]> m = consumer.receive(60, TimeUnit.MINUTES);
                if (m == null) throw new IllegalStateException("no message within 60 min");
                byte[] got = m.getValue();
                long ms = (System.nanoTime() - t1) / 1_000_000;
                consumer.acknowledge(m);
                System.out.printf("consumed %d in %d ms: %s%n", got.length, ms, rate(got.length, ms));
                String received = sha256(got);
                boolean equal = sent.equals(received) && got.length == payload.length;
                System.out.println("sha256 sent " + sent + " received " + received + " "
                        + (equal ? "equal" : "DIFFERENT"));
                System.exit(equal ? 0 : 1);
            }
        }
    }

    private static String rate(long bytes, long ms) {
        double s = Math.max(ms, 1) / 1000.0;
        return String.format("%.1f MB/s (%.1f MiB/s)", bytes / 1e6 / s, bytes / 1048576.0 / s);
    }

    private static String sha256(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }
}

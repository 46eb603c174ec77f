// bookiers.pulsar.ChunkedRoundTrip: chunked messages through a stock Pulsar broker.
//
// Produces one message per size given (comma-separated; one producer, in order) with the stock
// Java client (enableChunking, batching off, chunks of the broker's maxMessageSize), unloads the
// topic so the broker's managed-ledger cache is dropped and the reads come back from the bookies,
// then consumes them on a new subscription from earliest and compares each one's SHA-256 with
// what was sent. Each message has its own payload (seed + its index). Prints machine-readable
// lines that tests/pulsar/scenarios/*.sh and benches/memory/pulsar-readback.sh read, per message:
//   published <bytes> in <ms> ms (<MiB/s>)
//   consumed <bytes> in <ms> ms (<MiB/s>)
//   sha256 sent <hex> received <hex> equal|DIFFERENT
// Exit status 0 only if every message came back equal, in order.
//
//   java -cp target/classes:target/lib/* bookiers.pulsar.ChunkedRoundTrip \
//        <serviceUrl> <adminUrl> <topic> <bytes>[,<bytes>..] [seed]
package bookiers.pulsar;

import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SizeUnit;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

public final class ChunkedRoundTrip {
    private ChunkedRoundTrip() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: ChunkedRoundTrip <serviceUrl> <adminUrl> <topic> <bytes>[,<bytes>..] [seed]");
            System.exit(2);
        }
        String serviceUrl = args[0];
        String adminUrl = args[1];
        String topic = args[2];
        String[] sizeArgs = args[3].split(",");
        int[] sizes = new int[sizeArgs.length];
        for (int i = 0; i < sizes.length; i++) sizes[i] = Math.toIntExact(Long.parseLong(sizeArgs[i].trim()));
        long seed = args.length > 4 ? Long.parseLong(args[4]) : 10L;

        // Only the digests are kept between producing and consuming: a message is made, sent,
        // and dropped before the next, so the heap holds one payload (plus the one received).
        String[] sent = new String[sizes.length];

        try (PulsarClient client = PulsarClient.builder().serviceUrl(serviceUrl)
                // A whole 1 GB message is pending at once; the stock 64 MiB client memory limit
                // would refuse it. 0 = no limit.
                .memoryLimit(0, SizeUnit.BYTES)
                .operationTimeout(300, TimeUnit.SECONDS)
                .build();
             PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(adminUrl)
                .readTimeout(300, TimeUnit.SECONDS).build()) {

            try (Producer<byte[]> producer = client.newProducer().topic(topic)
                    .enableBatching(false).enableChunking(true)
                    .sendTimeout(0, TimeUnit.SECONDS)
                    .create()) {
                for (int n = 0; n < sizes.length; n++) {
                    byte[] payload = payload(sizes[n], seed + n);
                    sent[n] = sha256(payload);
                    System.out.println("payload " + sizes[n] + " bytes sha256 " + sent[n]);
                    long t0 = System.nanoTime();
                    MessageId id = producer.send(payload);
                    long pubMs = (System.nanoTime() - t0) / 1_000_000;
                    System.out.printf("published %d in %d ms (%.1f MiB/s) id %s%n", sizes[n], pubMs,
                            mibs(sizes[n], pubMs), id);
                }
            }

            // Drop the broker's cache of this topic: the managed ledger is closed and reopened on
            // the next subscribe, so every chunk is read back from the bookies.
            admin.topics().unload(topic);
            System.out.println("unloaded " + topic);

            boolean allEqual = true;
            try (Consumer<byte[]> consumer = client.newConsumer().topic(topic)
                    .subscriptionName("readback-" + System.currentTimeMillis())
                    .subscriptionType(SubscriptionType.Exclusive)
                    .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                    // Reading 1 GB back can take minutes here; the stock 60 s would drop the
                    // half-assembled message.
                    .expireTimeOfIncompleteChunkedMessage(60, TimeUnit.MINUTES)
                    .maxPendingChunkedMessage(2)
                    .subscribe()) {
                for (int n = 0; n < sizes.length; n++) {
                    long t1 = System.nanoTime();
                    Message<byte[]> m = consumer.receive(60, TimeUnit.MINUTES);
                    if (m == null) throw new IllegalStateException("message " + n + ": none within 60 min");
                    byte[] got = m.getValue();
                    consumer.acknowledge(m);
                    long conMs = (System.nanoTime() - t1) / 1_000_000;
                    System.out.printf("consumed %d in %d ms (%.1f MiB/s)%n", got.length, conMs,
                            mibs(got.length, conMs));
                    String received = sha256(got);
                    boolean equal = sent[n].equals(received) && got.length == sizes[n];
                    allEqual &= equal;
                    System.out.println("sha256 sent " + sent[n] + " received " + received + " "
                            + (equal ? "equal" : "DIFFERENT"));
                }
            }
            System.exit(allEqual ? 0 : 1);
        }
    }

    /** N pseudo-random bytes from seed (the same seed gives the same bytes). */
    private static byte[] payload(int size, long seed) {
        byte[] payload = new byte[size];
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int i = 0; i + 8 <= size; i += 8) {
            long v = rnd.nextLong();
            for (int b = 0; b < 8; b++) payload[i + b] = (byte) (v >>> (8 * b));
        }
        return payload;
    }

    private static double mibs(long bytes, long ms) {
        return ms == 0 ? 0 : bytes / 1048576.0 / (ms / 1000.0);
    }

    private static String sha256(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }
}

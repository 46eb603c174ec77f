// bookiers.pulsar.PublishLoad: the producer / consumer load of benches/pulsar-compare.sh (issue
// #16's user-level benchmark), written with the stock Java client because pulsar-perf's jar is
// not served here.
//
//   PublishLoad <serviceUrl> <adminUrl> <topic> rate <bytes> <msgs/s> <seconds>
//   PublishLoad <serviceUrl> <adminUrl> <topic> max <bytes> <in flight> <seconds>
//   PublishLoad <serviceUrl> <adminUrl> <topic> catchup
//
// rate: an open-loop producer. Message i is due at start + i / rate; its latency is from when it
// was due to the broker's acknowledgement (so a stall counts for every message that should have
// been sent during it, not only the one that waited: no coordinated omission). max: as many
// sends in flight as given, for the time given; throughput and latency from send to ack.
// catchup: unloads the topic (the broker's managed-ledger cache is dropped, and the broker is
// started with a small cache besides), then consumes everything from earliest on a new
// subscription: the rate at which the bookies serve a consumer that has fallen behind.
// Messages above the broker's maxMessageSize (stock 5 MiB) are chunked (enableChunking); batching
// is off, so one message of up to 5 MiB is one entry. Prints one line, for the script to parse:
//   rate|max <bytes> B: <sent> sent <acked> acked <failed> failed in <s> s = <msg/s> msg/s <MB/s> MB/s;
//       latency ms p50 <x> p99 <y> p99.9 <z> max <m>
//   catchup <n> msgs <bytes> B in <ms> ms = <msg/s> msg/s <MB/s> MB/s
// MB = 10^6 bytes. Exit status 0 when every message sent was acknowledged (rate, max) or some were
// consumed (catchup).
package bookiers.pulsar;

import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SizeUnit;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

public final class PublishLoad {
    private PublishLoad() {}

    /** Latencies in nanoseconds, appended from the client's callback threads. */
    private static final class Latencies {
        private long[] v = new long[1 << 16];
        private int n;

        synchronized void add(long ns) {
            if (n == v.length) v = Arrays.copyOf(v, n * 2);
            v[n++] = ns;
        }

        synchronized String summary() {
            long[] s = Arrays.copyOf(v, n);
            Arrays.sort(s);
            return String.format("latency ms p50 %.2f p99 %.2f p99.9 %.2f max %.2f",
                    at(s, 0.50), at(s, 0.99), at(s, 0.999), n == 0 ? 0.0 : s[n - 1] / 1e6);
        }

        private static double at(long[] s, double q) {
            if (s.length == 0) return 0.0;
            int i = (int) Math.min(s.length - 1, Math.ceil(q * s.length) - 1);
            return s[Math.max(i, 0)] / 1e6;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) usage();
        String serviceUrl = args[0], adminUrl = args[1], topic = args[2], mode = args[3];
        try (PulsarClient client = PulsarClient.builder().serviceUrl(serviceUrl)
                .memoryLimit(0, SizeUnit.BYTES)
                .operationTimeout(300, TimeUnit.SECONDS)
                .build();
             PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(adminUrl)
                .readTimeout(300, TimeUnit.SECONDS).build()) {
            switch (mode) {
                case "rate", "max" -> {
                    if (args.length != 7) usage();
                    int bytes = Integer.parseInt(args[4]);
                    long arg = Long.parseLong(args[5]);
                    long seconds = Long.parseLong(args[6]);
                    System.exit(produce(client, topic, mode, bytes, arg, seconds));
                }
                case "catchup" -> System.exit(catchUp(client, admin, topic));
                default -> usage();
            }
        }
    }

    private static int produce(PulsarClient client, String topic, String mode, int bytes,
            long arg, long seconds) throws Exception {
        byte[] payload = new byte[bytes];
        new Random(bytes).nextBytes(payload);
        Latencies lat = new Latencies();
        AtomicLong acked = new AtomicLong(), failed = new AtomicLong();
        long sent = 0;
        try (Producer<byte[]> producer = client.newProducer().topic(topic)
                .enableBatching(false).enableChunking(true)
                .blockIfQueueFull(true).maxPendingMessages(0)
                .sendTimeout(0, TimeUnit.SECONDS)
                .create()) {
            // One message first, so the topic's ledger is open before the clock starts.
            producer.send(payload);
            boolean open = mode.equals("rate");
            Semaphore inFlight = new Semaphore(open ? Integer.MAX_VALUE : (int) arg);
            long t0 = System.nanoTime(), end = t0 + seconds * 1_000_000_000L;
            double interval = open ? 1e9 / arg : 0;
            while (true) {
                long due = open ? t0 + (long) (sent * interval) : System.nanoTime();
                if (due >= end) break;
                long now = System.nanoTime();
                if (open && due > now) {
                    long wait = due - now;
                    TimeUnit.NANOSECONDS.sleep(wait);
                }
                inFlight.acquire();
                long from = open ? due : System.nanoTime();
                producer.sendAsync(payload).whenComplete((id, err) -> {
                    if (err == null) {
                        lat.add(System.nanoTime() - from);
                        acked.incrementAndGet();
                    } else {
                        failed.incrementAndGet();
                    }
                    inFlight.release();
                });
                sent++;
            }
            producer.flush();
            // Every send completes (acknowledged or failed) before the summary.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (acked.get() + failed.get() < sent && System.nanoTime() < deadline) {
                TimeUnit.MILLISECONDS.sleep(10);
            }
            double s = (System.nanoTime() - t0) / 1e9;
            System.out.printf("%s %d B: %d sent %d acked %d failed in %.1f s = %.0f msg/s %.1f MB/s; %s%n",
                    mode, bytes, sent, acked.get(), failed.get(), s, acked.get() / s,
                    acked.get() * (double) bytes / 1e6 / s, lat.summary());
        }
        return acked.get() == sent && failed.get() == 0 ? 0 : 1;
    }

    private static int catchUp(PulsarClient client, PulsarAdmin admin, String topic) throws Exception {
        admin.topics().unload(topic);
        long n = 0, bytes = 0;
        long t0 = System.nanoTime(), last = t0;
        try (Consumer<byte[]> consumer = client.newConsumer().topic(topic)
                .subscriptionName("catchup-" + System.currentTimeMillis())
                .subscriptionType(SubscriptionType.Exclusive)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                .receiverQueueSize(1000)
                .expireTimeOfIncompleteChunkedMessage(60, TimeUnit.MINUTES)
                .subscribe()) {
            while (true) {
                Message<byte[]> m = consumer.receive(10, TimeUnit.SECONDS);
                if (m == null) break;
                n++;
                bytes += m.getData().length;
                last = System.nanoTime();
                consumer.acknowledgeAsync(m);
            }
        }
        double ms = (last - t0) / 1e6;
        System.out.printf("catchup %d msgs %d B in %.0f ms = %.0f msg/s %.1f MB/s%n",
                n, bytes, ms, n / Math.max(ms / 1000, 1e-3), bytes / 1e6 / Math.max(ms / 1000, 1e-3));
        return n > 0 ? 0 : 1;
    }

    private static void usage() {
        System.err.println("usage: PublishLoad <serviceUrl> <adminUrl> <topic> rate <bytes> <msgs/s> <seconds>\n"
                + "       PublishLoad <serviceUrl> <adminUrl> <topic> max <bytes> <in flight> <seconds>\n"
                + "       PublishLoad <serviceUrl> <adminUrl> <topic> catchup");
        System.exit(2);
    }
}

// bookiers.pulsar.OrderedRoundTrip: scenario `ordered` of tests/pulsar (issue #16 point 1): small
// messages through a stock broker, read back in order by an Exclusive and by a Failover
// subscription, every message's bytes checked (SequencePayload).
//
// 1. one producer, batching off (every message its own BookKeeper entry), asynchronous sends:
//    <count> messages of <bytes> bytes;
// 2. the topic is unloaded (the managed ledger is closed, the broker's cache dropped), so the
//    reads below come from the bookies;
// 3. Exclusive subscription from earliest: all <count> messages, number n at position n, bytes
//    equal;
// 4. Failover subscription from earliest with two consumers: the active one receives the first
//    half and is closed; the other one takes over and must continue where the first stopped
//    (messages redelivered at the switch, numbers below the next expected one, are counted and
//    skipped; a gap or a wrong byte fails).
// Acknowledgements are sent at once (acknowledgementGroupTime 0), each one awaited.
//
// Output: `published <count> ..`, `exclusive: <count> in order, contents equal`,
// `failover: <a> from <name>, then <b> from <name> (<r> redelivered at the switch), in order,
// contents equal`, or a `BAD:` line. Exit status 0 only if both subscriptions saw everything.
//
//   java -cp target/classes:target/lib/* bookiers.pulsar.OrderedRoundTrip <serviceUrl> <adminUrl>
//        <topic> <count> <bytes>
package bookiers.pulsar;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

public final class OrderedRoundTrip {
    private static final long SEED = 1;

    private OrderedRoundTrip() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: OrderedRoundTrip <serviceUrl> <adminUrl> <topic> <count> <bytes>");
            System.exit(2);
        }
        String topic = args[2];
        int count = Integer.parseInt(args[3]);
        int size = Integer.parseInt(args[4]);
        try (PulsarClient client = PulsarClient.builder().serviceUrl(args[0]).operationTimeout(300, TimeUnit.SECONDS).build();
             PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(args[1]).readTimeout(300, TimeUnit.SECONDS).build()) {
            // Subscriptions exist before the first message, so both start at message 0.
            client.newConsumer().topic(topic).subscriptionName("ordered-exclusive")
                    .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe().close();
            client.newConsumer().topic(topic).subscriptionName("ordered-failover").subscriptionType(SubscriptionType.Failover)
                    .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe().close();

            long t0 = System.nanoTime();
            try (Producer<byte[]> producer = client.newProducer().topic(topic).enableBatching(false)
                    .sendTimeout(0, TimeUnit.SECONDS).blockIfQueueFull(true).create()) {
                List<CompletableFuture<MessageId>> sends = new ArrayList<>(count);
                for (int i = 0; i < count; i++) sends.add(producer.sendAsync(SequencePayload.of(i, size, SEED)));
                CompletableFuture.allOf(sends.toArray(new CompletableFuture<?>[0])).join();
                System.out.println("published " + count + " x " + size + " bytes in " + ms(t0) + " ms, last id "
                        + sends.get(count - 1).join());
            }
            admin.topics().unload(topic);
            System.out.println("unloaded " + topic);

            long t1 = System.nanoTime();
            try (Consumer<byte[]> c = consumer(client, topic, "ordered-exclusive", SubscriptionType.Exclusive, "exclusive")) {
                for (int n = 0; n < count; n++) {
                    Message<byte[]> m = c.receive(300, TimeUnit.SECONDS);
                    if (m == null) bad("exclusive: message " + n + " not received within 300 s");
                    check("exclusive", n, m.getValue(), size);
                    c.acknowledge(m);
                }
            }
            System.out.println("exclusive: " + count + " in order, contents equal (" + ms(t1) + " ms)");

            long t2 = System.nanoTime();
            Consumer<byte[]> a = consumer(client, topic, "ordered-failover", SubscriptionType.Failover, "failover-a");
            Consumer<byte[]> b = consumer(client, topic, "ordered-failover", SubscriptionType.Failover, "failover-b");
            // Which one is active is the broker's choice: the one the first message goes to.
            Consumer<byte[]> active = null;
            Message<byte[]> m = null;
            for (int tries = 0; tries < 3000 && m == null; tries++) {
                for (Consumer<byte[]> c : List.of(a, b)) {
                    m = c.receive(100, TimeUnit.MILLISECONDS);
                    if (m != null) {
                        active = c;
                        break;
                    }
                }
            }
            if (m == null) bad("failover: no consumer received message 0 within 300 s");
            Consumer<byte[]> standby = active == a ? b : a;
            int half = count / 2;
            int next = 0;
            while (true) {
                check("failover (" + active.getConsumerName() + ")", next, m.getValue(), size);
                active.acknowledge(m);
                next++;
                if (next == half) break;
                m = active.receive(300, TimeUnit.SECONDS);
                if (m == null) bad("failover: message " + next + " not received within 300 s");
            }
            String first = active.getConsumerName();
            active.close();
            int redelivered = 0;
            while (next < count) {
                m = standby.receive(300, TimeUnit.SECONDS);
                if (m == null) bad("failover: after the switch, message " + next + " not received by " + standby.getConsumerName());
                long index = SequencePayload.indexOf(m.getValue());
                if (index >= 0 && index < next) {
                    redelivered++;
                    standby.acknowledge(m);
                    continue;
                }
                check("failover (" + standby.getConsumerName() + ")", next, m.getValue(), size);
                standby.acknowledge(m);
                next++;
            }
            standby.close();
            System.out.println("failover: " + half + " from " + first + ", then " + (count - half) + " from "
                    + standby.getConsumerName() + " (" + redelivered + " redelivered at the switch), in order, contents equal ("
                    + ms(t2) + " ms)");
        }
        System.exit(0);
    }

    private static Consumer<byte[]> consumer(PulsarClient client, String topic, String sub, SubscriptionType type, String name)
            throws Exception {
        return client.newConsumer().topic(topic).subscriptionName(sub).subscriptionType(type).consumerName(name)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                .acknowledgmentGroupTime(0, TimeUnit.MILLISECONDS).subscribe();
    }

    private static void check(String who, int n, byte[] got, int size) {
        long index = SequencePayload.indexOf(got);
        if (index != n) bad(who + ": message " + n + " is number " + index);
        if (!Arrays.equals(got, SequencePayload.of(n, size, SEED))) bad(who + ": message " + n + " bytes differ");
    }

    private static void bad(String why) {
        System.out.println("BAD: " + why);
        System.exit(1);
    }

    private static long ms(long t0) {
        return (System.nanoTime() - t0) / 1_000_000;
    }
}

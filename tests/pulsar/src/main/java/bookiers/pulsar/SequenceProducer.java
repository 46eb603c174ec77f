// bookiers.pulsar.SequenceProducer: one producer sends a numbered stream (SequencePayload) to a
// topic and prints each acknowledgement as it arrives, so a scenario knows exactly which messages
// the broker acknowledged before it killed something.
//
// Sends are asynchronous with at most --window outstanding (default 64), so messages are in flight
// when a scenario kills a process; sendTimeout is 0 (a send waits for as long as the broker needs
// to reconnect or change ensembles). Chunked mode (--chunked): enableChunking, batching off, the
// broker's maxMessageSize (5 MiB) as the chunk size. Otherwise batching is the client's stock
// default unless --no-batching. --rate R paces the sends to R messages a second (a stream that
// goes on while a scenario changes something under it, e.g. fills a bookie's disk).
//
// Output (stdout, one line each, flushed):
//   acked <i> <ledgerId>:<entryId>     message i acknowledged (callbacks come in send order)
//   paused <n>                         (--pause-at n --pause-file F) n acknowledged, no new sends
//                                      until file F exists
//   all-acked <count>                  every message acknowledged
//   holding                            (--hold) producer kept open (topic loaded, ledger open)
//                                      until the process is killed
// Exit status 0 when every message was acknowledged (and --hold not given); 1 on a failed send.
//
//   java -cp target/classes:target/lib/* bookiers.pulsar.SequenceProducer <serviceUrl> <topic>
//        <count> <bytes> [--chunked] [--no-batching] [--window N] [--seed S]
//        [--pause-at N --pause-file F] [--hold] [--rate R]
package bookiers.pulsar;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.ProducerBuilder;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SizeUnit;

public final class SequenceProducer {
    private SequenceProducer() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: SequenceProducer <serviceUrl> <topic> <count> <bytes> [--chunked] [--no-batching]"
                    + " [--window N] [--seed S] [--pause-at N --pause-file F] [--hold] [--rate R]");
            System.exit(2);
        }
        String serviceUrl = args[0];
        String topic = args[1];
        long count = Long.parseLong(args[2]);
        int size = Integer.parseInt(args[3]);
        boolean chunked = false;
        boolean batching = true;
        boolean hold = false;
        int window = 64;
        long seed = 16;
        long pauseAt = -1;
        Path pauseFile = null;
        double rate = 0;
        for (int a = 4; a < args.length; a++) {
            switch (args[a]) {
                case "--chunked" -> chunked = true;
                case "--no-batching" -> batching = false;
                case "--hold" -> hold = true;
                case "--window" -> window = Integer.parseInt(args[++a]);
                case "--seed" -> seed = Long.parseLong(args[++a]);
                case "--pause-at" -> pauseAt = Long.parseLong(args[++a]);
                case "--pause-file" -> pauseFile = Path.of(args[++a]);
                case "--rate" -> rate = Double.parseDouble(args[++a]);
                default -> throw new IllegalArgumentException("unknown option " + args[a]);
            }
        }
        if ((pauseAt >= 0) != (pauseFile != null)) throw new IllegalArgumentException("--pause-at needs --pause-file");

        try (PulsarClient client = PulsarClient.builder().serviceUrl(serviceUrl)
                .memoryLimit(0, SizeUnit.BYTES)
                .operationTimeout(300, TimeUnit.SECONDS)
                .build()) {
            ProducerBuilder<byte[]> pb = client.newProducer().topic(topic).sendTimeout(0, TimeUnit.SECONDS)
                    .blockIfQueueFull(true);
            if (chunked) pb = pb.enableBatching(false).enableChunking(true);
            else pb = pb.enableBatching(batching);
            try (Producer<byte[]> producer = pb.create()) {
                Semaphore outstanding = new Semaphore(window);
                AtomicLong nextAck = new AtomicLong(0);
                AtomicReference<Throwable> failure = new AtomicReference<>();
                CompletableFuture<?> last = CompletableFuture.completedFuture(null);
                long startNanos = System.nanoTime();
                for (long i = 0; i < count && failure.get() == null; i++) {
                    if (i == pauseAt) {
                        // Wait for every earlier send to be acknowledged, then for the scenario.
                        outstanding.acquire(window);
                        outstanding.release(window);
                        System.out.println("paused " + nextAck.get());
                        while (!Files.exists(pauseFile)) Thread.sleep(100);
                    }
                    if (rate > 0) {
                        long due = startNanos + (long) (i * 1e9 / rate);
                        long wait = due - System.nanoTime();
                        if (wait > 0) TimeUnit.NANOSECONDS.sleep(wait);
                    }
                    outstanding.acquire();
                    final long index = i;
                    last = producer.sendAsync(SequencePayload.of(i, size, seed)).whenComplete((MessageId id, Throwable e) -> {
                        outstanding.release();
                        if (e != null) {
                            failure.compareAndSet(null, e);
                            System.out.println("failed " + index + " " + e);
                            return;
                        }
                        long want = nextAck.getAndIncrement();
                        if (want != index) {
                            failure.compareAndSet(null, new IllegalStateException("ack of " + index + " before " + want));
                        }
                        System.out.println("acked " + index + " " + id);
                    });
                }
                try {
                    last.join();
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
                outstanding.acquire(window);
                if (failure.get() != null) {
                    System.out.println("FAILED " + failure.get());
                    System.exit(1);
                }
                System.out.println("all-acked " + nextAck.get());
                if (hold) {
                    System.out.println("holding");
                    Thread.sleep(Long.MAX_VALUE);
                }
            }
        }
        System.exit(0);
    }
}

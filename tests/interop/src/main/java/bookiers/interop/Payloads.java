/*
 * Deterministic entry payloads: the bytes of entry e of a ledger are a pure function of
 * (seed, e, size), so a scenario regenerates what it expects on read instead of holding every
 * written byte in memory (scenario 1 writes hundreds of MiB).
 */
package bookiers.interop;

import java.util.SplittableRandom;

/** Payload and size generators. */
final class Payloads {
    static final int KIB = 1024;
    static final int MIB = 1024 * 1024;

    private Payloads() {
    }

    /** size bytes derived from (seed, entryId); different entries differ with high probability. */
    static byte[] bytes(long seed, long entryId, int size) {
        byte[] b = new byte[size];
        SplittableRandom r = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + entryId);
        int i = 0;
        for (; i + 8 <= size; i += 8) {
            long v = r.nextLong();
            for (int k = 0; k < 8; k++) {
                b[i + k] = (byte) (v >>> (8 * k));
            }
        }
        long v = r.nextLong();
        for (int k = 0; i < size; i++, k++) {
            b[i] = (byte) (v >>> (8 * k));
        }
        return b;
    }

    /**
     * A random size in [1, 64 KiB], log-uniform so that every order of magnitude is covered while
     * the mean stays near 6 KiB (a uniform draw would make scenario 1 write ~5x more data).
     */
    static int smallSize(long seed, long entryId) {
        SplittableRandom r = new SplittableRandom(seed * 31 + entryId * 0x632BE59BD9B4E019L);
        int s = (int) Math.floor(Math.exp(r.nextDouble() * Math.log(64.0 * KIB + 1)));
        return Math.max(1, Math.min(64 * KIB, s));
    }
}

// bookiers.pulsar.SequencePayload: the payload of message number i of a numbered stream, shared by
// the producers and checkers of tests/pulsar's scenarios, so a checker can recompute what any
// message must hold without the producer's help.
//
// Format of message i (size bytes, size >= 8): bytes 0..7 are i as a big-endian long; the rest are
// pseudo-random bytes of SplittableRandom(seed * 1_000_003 + i). A message with the wrong index,
// length or bytes is told apart from the right one.
package bookiers.pulsar;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.SplittableRandom;

final class SequencePayload {
    private SequencePayload() {}

    /** The bytes of message i of a stream of size-byte messages made from seed. */
    static byte[] of(long i, int size, long seed) {
        if (size < 8) throw new IllegalArgumentException("message size " + size + " < 8");
        byte[] b = new byte[size];
        ByteBuffer.wrap(b).putLong(i);
        SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + i);
        int p = 8;
        while (p < size) {
            long v = rnd.nextLong();
            for (int k = 0; k < 8 && p < size; k++, p++) b[p] = (byte) (v >>> (8 * k));
        }
        return b;
    }

    /** The index a message claims (its first 8 bytes), or -1 when it is too short to hold one. */
    static long indexOf(byte[] b) {
        return b.length < 8 ? -1 : ByteBuffer.wrap(b).getLong();
    }

    static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}

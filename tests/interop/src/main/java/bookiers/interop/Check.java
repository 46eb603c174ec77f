/*
 * Assertions for scenarios. Every failure message says what was checked, what was expected and
 * what came back, because that text is what the run report prints.
 */
package bookiers.interop;

import java.util.Arrays;
import java.util.Objects;

/** Assertion helpers; each throws {@link Failure} with an expected/actual message. */
final class Check {
    private Check() {
    }

    /** A scenario check that did not hold. */
    static class Failure extends AssertionError {
        Failure(String msg) {
            super(msg);
        }

        Failure(String msg, Throwable cause) {
            super(msg, cause);
        }
    }

    static void eq(String what, Object expected, Object actual) {
        if (!Objects.equals(expected, actual)) {
            throw new Failure(what + ": expected " + expected + ", got " + actual);
        }
    }

    static void isTrue(String what, boolean cond, String detail) {
        if (!cond) {
            throw new Failure(what + ": " + detail);
        }
    }

    static void bytes(String what, byte[] expected, byte[] actual) {
        if (Arrays.equals(expected, actual)) {
            return;
        }
        if (actual == null) {
            throw new Failure(what + ": expected " + expected.length + " bytes, got null");
        }
        int n = Math.min(expected.length, actual.length);
        int i = 0;
        while (i < n && expected[i] == actual[i]) {
            i++;
        }
        throw new Failure(what + ": expected " + expected.length + " bytes, got " + actual.length
                + " bytes; first difference at offset " + i
                + (i < n ? String.format(" (expected 0x%02x, got 0x%02x)", expected[i], actual[i]) : ""));
    }

    /** Runs body, which must throw an exception of type expected (checked by class, then by name). */
    static Throwable throwsType(String what, Class<? extends Throwable> expected, ThrowingRunnable body) {
        try {
            body.run();
        } catch (Throwable t) {
            Throwable cause = unwrap(t);
            if (expected.isInstance(cause)) {
                return cause;
            }
            throw new Failure(what + ": expected " + expected.getSimpleName() + ", got "
                    + cause.getClass().getName() + ": " + cause.getMessage(), cause);
        }
        throw new Failure(what + ": expected " + expected.getSimpleName() + ", got success");
    }

    static Throwable unwrap(Throwable t) {
        Throwable c = t;
        while ((c instanceof java.util.concurrent.ExecutionException
                || c instanceof java.util.concurrent.CompletionException) && c.getCause() != null) {
            c = c.getCause();
        }
        return c;
    }

    /** A block that may throw anything. */
    interface ThrowingRunnable {
        void run() throws Exception;
    }
}

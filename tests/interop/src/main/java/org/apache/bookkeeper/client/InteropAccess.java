/*
 * Owned by tests/interop (bookie-rs conformance suite).
 *
 * Lives in the client package only to reach BookKeeper#getBookieClient(), which is
 * package-private in 4.17. The suite uses the raw per-bookie client to send single requests to
 * one chosen bookie (direct reads after GC, adds and fence reads with a wrong master key), so a
 * test can see the bookie's own answer instead of the quorum logic's summary of it.
 * No BookKeeper code is copied here; this only forwards to the dependency.
 */
package org.apache.bookkeeper.client;

import org.apache.bookkeeper.proto.BookieClient;

/** Accessor for package-private parts of the stock client that the suite needs. */
public final class InteropAccess {
    private InteropAccess() {
    }

    /** The client's per-bookie RPC client (same wire mode as the BookKeeper client). */
    public static BookieClient bookieClient(BookKeeper bk) {
        return bk.getBookieClient();
    }
}

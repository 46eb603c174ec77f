/*
 * The two bookie implementations the suite can run against.
 */
package bookiers.interop;

/** Which bookie implementation a cluster runs. */
public enum Impl {
    /** The stock Java bookie (org.apache.bookkeeper.server.Main from the Maven dependency). */
    JAVA("java"),
    /** The bookie-rs binary `bookie`. */
    RUST("rust");

    final String name;

    Impl(String name) {
        this.name = name;
    }

    static Impl parse(String s) {
        for (Impl i : values()) {
            if (i.name.equals(s)) {
                return i;
            }
        }
        throw new IllegalArgumentException("unknown impl '" + s + "' (java|rust)");
    }
}

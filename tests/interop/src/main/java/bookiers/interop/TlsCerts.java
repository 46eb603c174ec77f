/*
 * The certificates of the TLS scenarios (s16, s17, s18), made at run time with the openssl CLI
 * into <run dir>/tls-certs, once per run.
 *
 * Owns: two CAs (the trusted one and an untrusted one), the bookie's key and certificate (PEM,
 * and the same pair as a PKCS12 store with its password file, and as a JKS key store beside a
 * JKS trust store holding the CA, written by the JDK's own JKS KeyStore), a second bookie key and
 * certificate signed by the second CA (what s18 rotates to), and one client key and
 * certificate per client case. Every certificate is X.509 v3 (`x509 -req` without `-extfile`
 * makes v1 ones, which rustls refuses and Java accepts), with P-256 keys in PKCS#8 PEM (what
 * `req -nodes` writes, and what Java's PEM reader needs).
 *
 * Client subjects carry BookKeeper's role convention in the first OU (`0:<roles>;1:<cluster>`,
 * org.apache.bookkeeper.util.CertUtils): AUTHORIZED has role pulsar, NO_ROLE has no `0:` part,
 * WRONG_ROLE has role other; UNTRUSTED is AUTHORIZED's subject signed by the second CA;
 * EXPIRED is AUTHORIZED's subject valid from two days ago to one day ago (`openssl ca
 * -startdate/-enddate`, since `x509 -req` in OpenSSL 3.0 cannot backdate notBefore).
 */
package bookiers.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Key;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.List;

/** The TLS material of one run. */
final class TlsCerts {
    /** Client certificate cases. */
    enum Client {
        AUTHORIZED("/O=interop/OU=0:pulsar;1:c1/CN=broker", false, 365),
        NO_ROLE("/O=interop/OU=1:c1/CN=norole", false, 365),
        WRONG_ROLE("/O=interop/OU=0:other/CN=other", false, 365),
        UNTRUSTED("/O=interop/OU=0:pulsar;1:c1/CN=untrusted", true, 365),
        EXPIRED("/O=interop/OU=0:pulsar;1:c1/CN=expired", false, 0);

        final String subject;
        final boolean otherCa;
        /** Validity in days from now; 0 = expired (two days ago to one day ago). */
        final int days;

        Client(String subject, boolean otherCa, int days) {
            this.subject = subject;
            this.otherCa = otherCa;
            this.days = days;
        }
    }

    /** The password of the PKCS12 bookie store (its file ends in a newline, as most do). */
    static final String P12_PASSWORD = "interop-p12-secret";

    final Path dir;

    private static TlsCerts made;

    private TlsCerts(Path dir) {
        this.dir = dir;
    }

    /** The certificates of this run, made on first use under runDir/tls-certs. */
    static synchronized TlsCerts of(Path runDir) throws Exception {
        if (made == null || !made.dir.startsWith(runDir)) {
            TlsCerts c = new TlsCerts(runDir.resolve("tls-certs"));
            c.make();
            made = c;
        }
        return made;
    }

    Path caCert() {
        return dir.resolve("ca.crt");
    }

    /** The CA that signs UNTRUSTED; nobody trusts it. */
    Path otherCaCert() {
        return dir.resolve("ca2.crt");
    }

    Path bookieKey() {
        return dir.resolve("bookie.key");
    }

    Path bookieCert() {
        return dir.resolve("bookie.crt");
    }

    /** The bookie's key after s18's rotation (its certificate is signed by the second CA). */
    Path bookieKeyOtherCa() {
        return dir.resolve("bookie-ca2.key");
    }

    Path bookieCertOtherCa() {
        return dir.resolve("bookie-ca2.crt");
    }

    Path bookieP12() {
        return dir.resolve("bookie.p12");
    }

    Path bookieP12PasswordFile() {
        return dir.resolve("bookie.p12.pw");
    }

    /** The bookie's key and chain as a real JKS store (password P12_PASSWORD, its file). */
    Path bookieJks() {
        return dir.resolve("bookie.jks");
    }

    /** The CA as the trusted certificate entry of a JKS store (password P12_PASSWORD). */
    Path caJks() {
        return dir.resolve("ca.jks");
    }

    Path clientKey(Client c) {
        return dir.resolve("client-" + c.name().toLowerCase() + ".key");
    }

    Path clientCert(Client c) {
        return dir.resolve("client-" + c.name().toLowerCase() + ".crt");
    }

    private void make() throws Exception {
        Files.createDirectories(dir);
        // v3 extensions for every leaf: without -extfile, `x509 -req` writes X.509 v1.
        Files.writeString(dir.resolve("leaf.ext"), String.join("\n",
                "basicConstraints=CA:FALSE",
                "keyUsage=digitalSignature,keyEncipherment",
                "extendedKeyUsage=serverAuth,clientAuth",
                "subjectAltName=IP:127.0.0.1,DNS:localhost", ""), StandardCharsets.UTF_8);
        for (String ca : new String[] {"ca", "ca2"}) {
            openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", ca + ".key", "-out", ca + ".crt", "-days", "3650", "-subj", "/O=interop/CN=" + ca);
        }
        leaf("bookie", "/O=interop/CN=127.0.0.1", "ca", 365);
        leaf("bookie-ca2", "/O=interop/CN=127.0.0.1", "ca2", 365);
        for (Client c : Client.values()) {
            leaf("client-" + c.name().toLowerCase(), c.subject, c.otherCa ? "ca2" : "ca", c.days);
        }
        Files.writeString(bookieP12PasswordFile(), P12_PASSWORD + "\n", StandardCharsets.UTF_8);
        openssl("pkcs12", "-export", "-in", "bookie.crt", "-inkey", "bookie.key", "-certfile", "ca.crt",
                "-name", "bookie", "-out", "bookie.p12", "-passout", "file:bookie.p12.pw");
        writeJks();
        // The expired client must really be expired, or s17 would test nothing.
        String dates = openssl("x509", "-in", clientCert(Client.EXPIRED).getFileName().toString(), "-noout",
                "-checkend", "0");
        if (!dates.contains("will expire")) {
            throw new IllegalStateException("openssl made an EXPIRED client cert that is not expired: " + dates);
        }
    }

    /** bookie.jks (the PKCS12 store's key entry) and ca.jks, by the JDK's JKS provider. */
    private void writeJks() throws Exception {
        char[] pw = P12_PASSWORD.toCharArray();
        KeyStore p12 = KeyStore.getInstance("PKCS12");
        try (var in = Files.newInputStream(bookieP12())) {
            p12.load(in, pw);
        }
        Key key = p12.getKey("bookie", pw);
        Certificate[] chain = p12.getCertificateChain("bookie");
        KeyStore jks = KeyStore.getInstance("JKS");
        jks.load(null, null);
        jks.setKeyEntry("bookie", key, pw, chain);
        try (var out = Files.newOutputStream(bookieJks())) {
            jks.store(out, pw);
        }
        KeyStore trust = KeyStore.getInstance("JKS");
        trust.load(null, null);
        try (var in = Files.newInputStream(caCert())) {
            trust.setCertificateEntry("ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        try (var out = Files.newOutputStream(caJks())) {
            trust.store(out, pw);
        }
    }

    private void leaf(String name, String subject, String ca, int days) throws Exception {
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", name + ".key",
                "-out", name + ".csr", "-subj", subject);
        if (days > 0) {
            openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key", "-CAcreateserial",
                    "-days", String.valueOf(days), "-extfile", "leaf.ext", "-out", name + ".crt");
        } else {
            // `openssl ca` can set both dates; -preserveDN keeps the OU where the subject has it.
            Files.writeString(dir.resolve("expired-ca.cnf"), String.join("\n",
                    "[ca]", "default_ca = d", "[d]", "database = index.txt", "new_certs_dir = .", "serial = serial",
                    "default_md = sha256", "policy = p", "unique_subject = no",
                    "[p]", "organizationName = optional", "organizationalUnitName = optional",
                    "commonName = supplied", ""), StandardCharsets.UTF_8);
            Files.writeString(dir.resolve("index.txt"), "", StandardCharsets.UTF_8);
            Files.writeString(dir.resolve("serial"), "1000\n", StandardCharsets.UTF_8);
            java.time.format.DateTimeFormatter f = java.time.format.DateTimeFormatter.ofPattern("yyyyMMddHHmmss'Z'")
                    .withZone(java.time.ZoneOffset.UTC);
            java.time.Instant now = java.time.Instant.now();
            openssl("ca", "-batch", "-config", "expired-ca.cnf", "-cert", ca + ".crt", "-keyfile", ca + ".key",
                    "-in", name + ".csr", "-out", name + ".crt", "-startdate",
                    f.format(now.minus(java.time.Duration.ofDays(2))), "-enddate",
                    f.format(now.minus(java.time.Duration.ofDays(1))), "-extfile", "leaf.ext", "-notext",
                    "-preserveDN");
        }
        String text = openssl("x509", "-in", name + ".crt", "-noout", "-text");
        if (!text.contains("Version: 3")) {
            throw new IllegalStateException("openssl made a certificate that is not X.509 v3: " + name);
        }
    }

    /** Runs openssl in dir; returns its output (exit code 1 allowed only for -checkend). */
    private String openssl(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add("openssl");
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int rc = p.waitFor();
        boolean checkend = cmd.contains("-checkend");
        if (rc != 0 && !(checkend && rc == 1)) {
            throw new IOException(String.join(" ", cmd) + " exited with " + rc + ": " + out);
        }
        return out;
    }
}

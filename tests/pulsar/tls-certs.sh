#!/usr/bin/env bash
# tests/pulsar/tls-certs.sh: the TLS material of the Pulsar TLS scenario, made at run time with the
# openssl CLI (as tests/interop's TlsCerts.java does). Source it, then `pl_tls_certs DIR N`.
#
# Makes in DIR: ca.key/ca.crt (a P-256 CA), bookieI.key/bookieI.crt for I in 0..N-1 (subject
# /O=bookie-rs/OU=0:bookie;1:bookie-rs/CN=bookieI, SAN IP:127.0.0.1,DNS:localhost) and
# broker.key/broker.crt, the broker's BookKeeper client certificate, subject
# /O=bookie-rs/OU=0:pulsar;1:bookie-rs/CN=broker: its first OU carries the role `pulsar` in
# BookKeeper's convention (`0:<roles>;1:<cluster>`, CertUtils.getRolesFromOU), which a bookie with
# BookieAuthZFactory and authorizedRoles=pulsar accepts (docs/tls.md §4). The bookies' own role
# `bookie` is not authorized, so a bookie certificate could not pass as a client.
#
# Every leaf is X.509 v3 (`x509 -req` without -extfile writes v1, which rustls refuses), with a
# P-256 key in unencrypted PKCS#8 PEM (what `req -nodes` writes and Java's PEM reader needs).

# pl_tls_certs DIR N: makes the CA, N bookie certificates and the broker's; fails loudly.
pl_tls_certs() {
    local dir=$1 n=$2 i
    mkdir -p "$dir"
    (
        set -e
        cd "$dir"
        printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=digitalSignature,keyEncipherment" \
            "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" >leaf.ext
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt \
            -days 3650 -subj "/O=bookie-rs/CN=bookie-rs test CA"
        pl_tls_leaf() {
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
            openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
                -extfile leaf.ext -out "$1.crt"
            openssl x509 -in "$1.crt" -noout -text | grep -q 'Version: 3' \
                || { echo "tls-certs: $1.crt is not X.509 v3" >&2; return 1; }
        }
        for ((i = 0; i < n; i++)); do
            pl_tls_leaf "bookie$i" "/O=bookie-rs/OU=0:bookie;1:bookie-rs/CN=bookie$i"
        done
        pl_tls_leaf broker "/O=bookie-rs/OU=0:pulsar;1:bookie-rs/CN=broker"
    ) >"$dir/openssl.log" 2>&1 || { echo "tls-certs: openssl failed:" >&2; tail -20 "$dir/openssl.log" >&2; return 1; }
}

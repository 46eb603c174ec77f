#!/usr/bin/env python3
"""Clients that never read their responses (issue #10, load (c)): each of N connections adds
ENTRIES entries of ENTRY_KIB KiB to its own ledger, then asks for every one of them back, over
and over, for SECONDS, and never reads its socket. The bookie must stop reading such a client
once the client's share of the send budget is queued; sends then block in the kernel.
Prints, per client, how many requests it got into the bookie's socket, and the bookie's
VmRSS/VmHWM from /proc at the end. Used by memory-bound.sh.

Usage: never_reads.py PORT BOOKIE_PID N ENTRY_KIB ENTRIES SECONDS
"""
import socket, struct, sys, threading, time

port, pid, n, kib, entries, secs = (int(a) for a in sys.argv[1:7])
KEY = b"k" * 20
VERSION, ADD, READ = 2, 1, 2


def header(op):
    return struct.pack(">i", (VERSION << 24) | (op << 16))


def add(ledger, entry, payload):
    # Entry bytes as a client builds them: ledger, entry, LAC, length, a CRC32C digest
    # (the bookie stores it as it is) and the payload.
    body = struct.pack(">qqqq", ledger, entry, entry - 1, len(payload) * (entry + 1))
    body += b"\0\0\0\0" + payload
    frame = header(ADD) + KEY + body
    return struct.pack(">i", len(frame)) + frame


def read(ledger, entry):
    frame = header(READ) + struct.pack(">qq", ledger, entry)
    return struct.pack(">i", len(frame)) + frame


sent = [0] * n
stop = time.time() + secs


def client(i):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(1.0)
    ledger = 1_000_000 + i
    payload = bytes([i % 251]) * (kib << 10)
    wire = [add(ledger, e, payload) for e in range(entries)]
    reads = b"".join(read(ledger, e) for e in range(entries))
    wire.append(reads)
    pending = b"".join(wire)
    while time.time() < stop:
        if not pending:
            pending = reads
        try:
            k = s.send(pending[: 1 << 20])
            pending = pending[k:]
            sent[i] += k
        except socket.timeout:
            pass  # the bookie stopped reading us: exactly what is expected
    # Exit without reading or closing politely (the process ending closes the sockets).


threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()


def status():
    d = {}
    for line in open(f"/proc/{pid}/status"):
        k, v = line.split(":", 1)
        d[k] = v.strip()
    return d["VmRSS"], d["VmHWM"]


print(
    f"never-reading clients={n} entry={kib} KiB: sent "
    + ", ".join(f"{b / 2**20:.1f}" for b in sent)
    + f" MiB into the bookie's sockets; bookie VmRSS/VmHWM = {status()}"
)

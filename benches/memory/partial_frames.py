#!/usr/bin/env python3
"""Holds N connections to a bookie, each sending a 4-byte prefix that announces a 5,000,000-byte
frame and then HOLD_MIB MiB of it (never the rest), for SECONDS; then prints how much was
accepted and the bookie's VmRSS/VmHWM from /proc. Used by partial-frames.sh.

Usage: partial_frames.py PORT BOOKIE_PID N HOLD_MIB SECONDS
"""
import socket, struct, sys, time, select
port, pid, n, hold, secs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) << 20, int(sys.argv[5])
frame = 5_000_000
conns = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port)); s.setblocking(False)
    conns.append([s, struct.pack(">i", frame) + bytes(hold)])
def status():
    d = {}
    for l in open(f"/proc/{pid}/status"):
        k, v = l.split(":", 1); d[k] = v.strip()
    return d["VmRSS"], d["VmHWM"]
end = time.time() + secs
while time.time() < end:
    for c in conns:
        if c[1]:
            try:
                k = c[0].send(c[1][:1 << 20]); c[1] = c[1][k:]
            except BlockingIOError:
                pass
    time.sleep(0.05)
sent = sum(hold + 4 - len(c[1]) for c in conns)
print(f"n={n} sent={sent/2**20:.0f} MiB of {n*(hold+4)/2**20:.0f} MiB; bookie VmRSS/VmHWM = {status()}")

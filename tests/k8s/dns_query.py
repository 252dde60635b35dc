#!/usr/bin/env python3
"""Asks one DNS server for a name's A records over UDP and prints them, one a line.

  dns_query.py SERVER NAME   exit 0 with at least one address, 1 otherwise (the rcode on stderr)

The one-node cluster of the tests (node.sh) checks the path a hostNetwork pod of the chart takes
to a Service name: the kube-dns Service's address, through kube-proxy, to CoreDNS.
"""
import random
import socket
import struct
import sys


def query(server, name, timeout=2.0):
    qid = random.randrange(1 << 16)
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\0"
    packet = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + question + struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(packet, (server, 53))
        data = s.recv(4096)
    rid, flags, qd, an = struct.unpack(">HHHH", data[:8])
    if rid != qid:
        raise OSError("answer to another query")
    pos = 12
    for _ in range(qd):  # skip the question
        while data[pos]:
            pos += data[pos] + 1
        pos += 5
    addrs = []
    for _ in range(an):
        if data[pos] & 0xC0 == 0xC0:
            pos += 2
        else:
            while data[pos]:
                pos += data[pos] + 1
            pos += 1
        rtype, _, _, rdlen = struct.unpack(">HHIH", data[pos:pos + 10])
        pos += 10
        if rtype == 1 and rdlen == 4:
            addrs.append(socket.inet_ntoa(data[pos:pos + 4]))
        pos += rdlen
    return flags & 0xF, addrs


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: dns_query.py SERVER NAME")
    try:
        rcode, addrs = query(sys.argv[1], sys.argv[2])
    except OSError as e:
        print(f"dns_query.py: {e}", file=sys.stderr)
        return 1
    for a in addrs:
        print(a)
    if not addrs:
        print(f"dns_query.py: no address (rcode {rcode})", file=sys.stderr)
    return 0 if addrs else 1


if __name__ == "__main__":
    sys.exit(main())

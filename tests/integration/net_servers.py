#!/usr/bin/python3
"""The far ends of the network tests (tests/integration/net_*.sh), run on
the host side: an HTTP server of a folder whose PUT answers with the
SHA-256 of the body it received, and, with --dns, a DNS server that
answers one name's A query (everything else: NXDOMAIN).

usage: net_servers.py DIR PORT [--dns ADDRESS NAME IPV4]
"""
import hashlib
import http.server
import socket
import socketserver
import struct
import sys
import threading


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_PUT(self):
        left = int(self.headers.get("Content-Length", "0"))
        digest = hashlib.sha256()
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
        body = (digest.hexdigest() + "\n").encode()
        self.send_response(200 if left == 0 else 400)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def dns(address, name, ipv4):
    want = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((address, 53))
    while True:
        q, peer = s.recvfrom(512)
        if len(q) < 12:
            continue
        end = q.find(b"\0", 12)
        if end < 0 or len(q) < end + 5:
            continue
        qname, qtype = q[12:end + 1], struct.unpack("!H", q[end + 1:end + 3])[0]
        question = q[12:end + 5]
        hit = qname.lower() == want
        rcode = 0 if hit else 3
        answers = b""
        if hit and qtype == 1:
            answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(ipv4)
        header = q[:2] + struct.pack("!HHHHH", 0x8180 | rcode, 1, 1 if answers else 0, 0, 0)
        s.sendto(header + question + answers, peer)


def main():
    folder, port = sys.argv[1], int(sys.argv[2])
    if len(sys.argv) == 7 and sys.argv[3] == "--dns":
        threading.Thread(target=dns, args=sys.argv[4:7], daemon=True).start()
    handler = lambda *a: Handler(*a, directory=folder)
    Server(("0.0.0.0", port), handler).serve_forever()


main()

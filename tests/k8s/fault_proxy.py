#!/usr/bin/env python3
"""A fault-injecting HTTPS proxy in front of the test cluster's kube-apiserver (cluster.sh).

  fault_proxy.py WORK_DIR PORT_FILE [--cordon-before-patch NODE] [--endless-continue]
                 [--delay SECONDS] [--hold-patch NODE --hold-dir DIR [--hold-answer]]

It serves with the API server's own certificate (so clients verify it against the cluster's CA),
forwards every request with the client's credentials, and writes its port to PORT_FILE once it
listens. Faults:
  --cordon-before-patch NODE  before forwarding the first PATCH of nodes/NODE, cordons NODE as
                              the cluster admin: the forwarded patch then meets a real 409
  --endless-continue          every node list answers a fresh metadata.continue token
  --delay SECONDS             every request waits this long before it is forwarded
  --hold-patch NODE           holds the first PATCH of nodes/NODE that adds a taint: writes
                              DIR/held (its client's User-Agent and the patch), then waits for
                              DIR/release to exist, forwards it then and writes the API server's
                              status to DIR/released. The client may be killed meanwhile: the held
                              patch is then a write of a dead client still in flight, which
                              reaches the API server after the release
  --hold-answer               with --hold-patch: forwards the patch at once and holds its answer
                              instead (the write is done, its client never learns it)
Watches (?watch=1) are streamed line by line, so that a watch through the proxy stays live.
"""
import argparse
import http.client
import http.server
import json
import os
import ssl
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("work")
ap.add_argument("port_file")
ap.add_argument("--cordon-before-patch", default="")
ap.add_argument("--endless-continue", action="store_true")
ap.add_argument("--delay", type=float, default=0.0)
ap.add_argument("--hold-patch", default="")
ap.add_argument("--hold-dir", default="")
ap.add_argument("--hold-answer", action="store_true")
args = ap.parse_args()

env = dict(line.split("=", 1) for line in open(os.path.join(args.work, "env")).read().split())
api_port = int(env["API_PORT"])
admin_token = open(os.path.join(args.work, "pki", "tokens.csv")).read().split(",")[0]
upstream_ctx = ssl.create_default_context(cafile=os.path.join(args.work, "ca.crt"))
lock = threading.Lock()
state = {"cordoned": False, "pages": 0, "held": False}


def write_file(name, text):
    tmp = os.path.join(args.hold_dir, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(args.hold_dir, name))


def wait_release():
    while not os.path.exists(os.path.join(args.hold_dir, "release")):
        time.sleep(0.05)


def upstream(method, path, headers, body):
    c = http.client.HTTPSConnection("127.0.0.1", api_port, context=upstream_ctx, timeout=30)
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.getheader("Content-Type", "application/json"), data


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def stream_watch(self, path, headers):
        c = http.client.HTTPSConnection("127.0.0.1", api_port, context=upstream_ctx, timeout=600)
        c.request(self.command, path, headers=headers)
        r = c.getresponse()
        self.send_response(r.status)
        self.send_header("Content-Type", r.getheader("Content-Type", "application/json"))
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                line = r.readline()
                if not line:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True
        finally:
            c.close()

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        if args.delay:
            time.sleep(args.delay)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() in ("authorization", "content-type", "accept", "user-agent")}
        path = self.path
        if args.endless_continue and "continue=endless-" in path:  # ours: the API never made it
            base, _, query = path.partition("?")
            query = "&".join(q for q in query.split("&") if not q.startswith("continue="))
            path = base + ("?" + query if query else "")
        query = path.partition("?")[2].split("&")
        if self.command == "GET" and ("watch=1" in query or "watch=true" in query):
            self.stream_watch(path, headers)
            return
        hold = False
        if (args.hold_patch and self.command == "PATCH" and
                self.path.split("?")[0] == "/api/v1/nodes/" + args.hold_patch and body and
                b"nccl-triage.io/fault" in body):
            with lock:
                hold = not state["held"]
                state["held"] = True
        if hold and not args.hold_answer:
            write_file("held", "%s\n%s\n" % (self.headers.get("User-Agent", ""),
                                              body.decode(errors="replace")))
            wait_release()
        node = args.cordon_before_patch
        if self.command == "PATCH" and node and self.path.startswith("/api/v1/nodes/" + node):
            with lock:
                first = not state["cordoned"]
                state["cordoned"] = True
            if first:
                upstream("PATCH", "/api/v1/nodes/" + node,
                         {"Authorization": "Bearer " + admin_token,
                          "Content-Type": "application/merge-patch+json"},
                         json.dumps({"spec": {"unschedulable": True}}).encode())
        status, ctype, data = upstream(self.command, path, headers, body)
        if hold and args.hold_answer:
            write_file("held", "%s\n%s\n" % (self.headers.get("User-Agent", ""),
                                              body.decode(errors="replace")))
            wait_release()
        if hold:
            write_file("released", "%d\n%s\n" % (status, data.decode(errors="replace")[:2000]))
        if (args.endless_continue and self.command == "GET" and
                self.path.split("?")[0] == "/api/v1/nodes" and status == 200):
            with lock:
                state["pages"] += 1
                page = state["pages"]
            j = json.loads(data)
            j.setdefault("metadata", {})["continue"] = "endless-%d" % page
            data = json.dumps(j).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PATCH = do_POST = do_PUT = do_DELETE = handle_any


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(os.path.join(args.work, "pki", "apiserver.crt"),
                    os.path.join(args.work, "pki", "apiserver.key"))
server.socket = ctx.wrap_socket(server.socket, server_side=True)
tmp = args.port_file + ".tmp"
with open(tmp, "w") as f:
    f.write(str(server.server_address[1]))
os.rename(tmp, args.port_file)
server.serve_forever()

#!/usr/bin/env python3
"""A Service in front of coordinator processes, as kube-proxy makes one from the endpoints of a
Service whose selector holds the leader label: TCP connections go to a backend whose pod carries
the label (LABEL, read from the API server) and whose /readyz answers 200, both polled every POLL
seconds, as the endpoints follow the pods' labels and readiness; with none, a connection is
refused at once (closed), as a Service without endpoints does. Without LABEL it follows readiness
alone (the chart's Service with one replica).

usage: service_proxy.py PORT_FILE BACKENDS_FILE [KUBECONFIG NAMESPACE LABEL]
BACKENDS_FILE holds one GRPC_PORT:HTTP_PORT:POD a line, read again at every poll (a replica added
later joins the Service). KUBECONFIG is the tests' (cluster.sh: server, certificate-authority,
token); LABEL a selector such as nccl-triage.io/coordinator-role=leader, matched in NAMESPACE.
Writes the port it listens on (127.0.0.1, chosen by the kernel) to PORT_FILE, and each change of
endpoints to standard output.
"""
import asyncio
import json
import os
import random
import re
import ssl
import sys
import time
import urllib.parse
import urllib.request

POLL = 0.5


def read_kubeconfig(path):
    text = open(path).read()
    server = re.search(r'server:\s*"?([^",}\s]+)"?', text).group(1)
    ca = re.search(r'certificate-authority:\s*"?([^",}\s]+)"?', text).group(1)
    token = re.search(r'token:\s*"?([^",}\s]+)"?', text).group(1)
    return server, ca, token


async def main():
    port_file = sys.argv[1]
    backends_file = sys.argv[2]
    label = None
    if len(sys.argv) == 6:
        server, ca, token = read_kubeconfig(sys.argv[3])
        namespace, label = sys.argv[4], sys.argv[5]
        context = ssl.create_default_context(cafile=ca)
        url = "%s/api/v1/namespaces/%s/pods?labelSelector=%s" % (
            server, namespace, urllib.parse.quote(label))
    endpoints = []

    def backends():
        try:
            with open(backends_file) as f:
                rows = [line.strip().split(":") for line in f if ":" in line]
            return [(int(r[0]), int(r[1]), r[2] if len(r) > 2 else "") for r in rows]
        except (OSError, ValueError, IndexError):
            return []

    def ready(http_port):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % http_port, timeout=2) as r:
                return r.status == 200
        except Exception:
            return False

    def labelled():
        """The names of the pods with the label; None when the API server did not answer (the
        endpoints then stay as they are, as the endpoints controller's do)."""
        request = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as r:
                return {p["metadata"]["name"] for p in json.load(r)["items"]}
        except Exception:
            return None

    async def poll():
        loop = asyncio.get_running_loop()
        while True:
            now = backends()
            checks = [loop.run_in_executor(None, ready, h) for _, h, _ in now]
            if label is not None:
                checks.append(loop.run_in_executor(None, labelled))
            results = await asyncio.gather(*checks)
            names = results[len(now)] if label is not None else None
            if label is not None and names is None:
                await asyncio.sleep(POLL)
                continue
            new = [g for (g, _, pod), ok in zip(now, results)
                   if ok and (label is None or pod in names)]
            if new != endpoints:
                pods = [pod for g, _, pod in now if g in new]
                print("%.3f endpoints: %s" % (time.time(), " ".join(pods) or "none"), flush=True)
            endpoints[:] = new
            await asyncio.sleep(POLL)

    async def pipe(reader, writer):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except Exception:
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def handle(client_reader, client_writer):
        if not endpoints:
            client_writer.close()
            return
        try:
            # Any endpoint, as kube-proxy picks one: a stale label is met as in a cluster.
            r, w = await asyncio.open_connection("127.0.0.1", random.choice(endpoints))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, w), pipe(r, client_writer))

    asyncio.get_running_loop().create_task(poll())
    listener = await asyncio.start_server(handle, "127.0.0.1", 0)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(listener.sockets[0].getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    async with listener:
        await listener.serve_forever()


asyncio.run(main())

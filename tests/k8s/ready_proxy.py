#!/usr/bin/env python3
"""A Service in front of coordinator processes, as kube-proxy makes one: TCP connections go to a
backend whose /readyz answers 200 (polled every POLL seconds, as the endpoints follow readiness);
with none ready a connection is refused at once (closed), as a Service without endpoints does.

usage: ready_proxy.py PORT_FILE BACKENDS_FILE
BACKENDS_FILE holds one GRPC_PORT:HTTP_PORT a line, read again at every poll (a replica added
later joins the Service). Writes the port it listens on (127.0.0.1, chosen by the kernel) to
PORT_FILE.
"""
import asyncio
import os
import sys
import urllib.request

POLL = 0.5


async def main():
    port_file = sys.argv[1]
    backends_file = sys.argv[2]
    ready = []

    def backends():
        try:
            with open(backends_file) as f:
                return [tuple(int(p) for p in line.split(":")) for line in f if ":" in line]
        except OSError:
            return []

    def probe(http_port):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % http_port, timeout=2) as r:
                return r.status == 200
        except Exception:
            return False

    async def poll():
        loop = asyncio.get_running_loop()
        while True:
            now = backends()
            results = await asyncio.gather(
                *(loop.run_in_executor(None, probe, h) for _, h in now))
            ready[:] = [g for (g, _), ok in zip(now, results) if ok]
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
        if not ready:
            client_writer.close()
            return
        try:
            r, w = await asyncio.open_connection("127.0.0.1", ready[0])
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, w), pipe(r, client_writer))

    asyncio.get_running_loop().create_task(poll())
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    async with server:
        await server.serve_forever()


asyncio.run(main())

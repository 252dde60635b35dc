#!/usr/bin/env python3
"""Assembles an OCI image archive (one layer) from files of this machine, for `ctr images import`.

Each executable or shared library is added with the shared libraries it loads (as ldd resolves
them here) and the dynamic loader, so a dynamically linked program runs from scratch. Used by the
one-node cluster of the tests (tests/k8s/node.sh): images in seconds, nothing pulled.

  oci_image.py OUT.tar NAME [--entrypoint ARG]... [--env K=V]... SRC[:DEST]...

SRC is a file or a directory (added recursively); DEST defaults to SRC. NAME is the image's full
reference (e.g. docker.io/library/nccl-triage:test).
"""
import argparse
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile

LDD_LINE = re.compile(r"^\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)")


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def ldd(path):
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=False).stdout
    return [m.group(1) for m in map(LDD_LINE.match, out.splitlines()) if m]


def collect(items):
    """Maps each destination path in the image to the source file on this machine."""
    files = {}

    def add(src, dest):
        if os.path.isdir(src) and not os.path.islink(src):
            for root, _, names in os.walk(src):
                for n in names:
                    s = os.path.join(root, n)
                    add(s, os.path.join(dest, os.path.relpath(s, src)))
            return
        if not os.path.exists(src):
            sys.exit(f"oci_image.py: {src} does not exist")
        files[dest] = src
        if is_elf(src):
            for lib in ldd(src):
                files.setdefault(lib, lib)

    for item in items:
        src, _, dest = item.partition(":")
        add(src, dest or src)
    return files


def layer_tar(files):
    buf = io.BytesIO()
    dirs = set()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for dest in sorted(files):
            rel = dest.lstrip("/")
            parts = rel.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    info = tarfile.TarInfo(d)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
                    tar.addfile(info)
            src = os.path.realpath(files[dest])
            info = tarfile.TarInfo(rel)
            info.size = os.path.getsize(src)
            info.mode = os.stat(src).st_mode & 0o7777 or 0o644
            info.mtime = 0
            with open(src, "rb") as f:
                tar.addfile(info, f)
    return buf.getvalue()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("name")
    p.add_argument("--entrypoint", action="append", default=[])
    p.add_argument("--env", action="append", default=[])
    p.add_argument("items", nargs="+")
    a = p.parse_args()

    blobs = {}

    def blob(data):
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[d] = data
        return d, len(data)

    layer = layer_tar(collect(a.items))
    layer_digest, layer_size = blob(layer)
    config = {
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": a.entrypoint or None,
                   "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
                   + a.env},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }
    config_digest, config_size = blob(json.dumps(config, sort_keys=True).encode())
    manifest = {
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest, "size": layer_size}],
    }
    manifest_digest, manifest_size = blob(json.dumps(manifest, sort_keys=True).encode())
    tag = a.name.rsplit(":", 1)[1] if ":" in a.name.rsplit("/", 1)[-1] else "latest"
    index = {
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": manifest_digest, "size": manifest_size,
                       "platform": {"architecture": "amd64", "os": "linux"},
                       "annotations": {"io.containerd.image.name": a.name,
                                       "org.opencontainers.image.ref.name": tag}}],
    }
    with tarfile.open(a.out, "w") as tar:
        def put(name, data):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
        put("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        put("index.json", json.dumps(index).encode())
        for d, data in blobs.items():
            put("blobs/sha256/" + d.split(":")[1], data)
    print(f"{a.name}: {layer_size // 1024} KiB layer, {manifest_digest}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks the generated *_messages.tsv files the way the classifier loads them: a header naming
level, format, file and path; every row as many columns as the header; known paths and levels;
no source-file base name on two different paths (the classifier maps base names to paths)."""
import glob
import os
import sys

PATHS = {"ib_verbs", "net_ib", "net_ofi", "collnet", "socket", "bootstrap", "cuda", "topology",
         "shm", "p2p", "nvls", "net_plugin", "api_usage", "env", "alloc", "proxy", "transport",
         "ras", "misc"}


def main(folder):
    bad = 0
    base_path = {}
    for f in sorted(glob.glob(os.path.join(folder, "*_messages.tsv"))):
        header = None
        for n, line in enumerate(open(f, encoding="utf-8"), 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if header is None:
                header = cols
                assert {"level", "format", "file", "path"} <= set(cols), f
                continue
            row = dict(zip(header, cols))
            err = None
            if len(cols) != len(header):
                err = "%d columns, header %d" % (len(cols), len(header))
            elif row["path"] not in PATHS:
                err = "unknown path " + row["path"]
            elif row["level"] not in ("WARN", "INFO"):
                err = "level " + row["level"]
            if err:
                bad += 1
                print("%s:%d: %s" % (f, n, err))
                continue
            base = os.path.basename(row["file"])
            base_path.setdefault(base, {}).setdefault(row["path"], os.path.basename(f))
    for base, paths in sorted(base_path.items()):
        if len(paths) > 1:
            print("base name %s on several paths: %s" % (base, paths))
    print("rows with errors:", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "agent/classify/catalogue"))

#!/usr/bin/env python3
"""Checks the generated *_messages.tsv files the way the classifier loads them: a header naming
level, format, file and path; every row as many columns as the header; known paths and levels;
no source-file base name on two different paths (the classifier maps base names to paths).
nccl_diag_messages.tsv (NCCL DIAG report lines) has columns of its own: its exact header, level
DIAG, known checks and severities, no format twice."""
import glob
import os
import sys

PATHS = {"ib_verbs", "net_ib", "net_ofi", "collnet", "socket", "bootstrap", "cuda", "topology",
         "shm", "p2p", "nvls", "net_plugin", "api_usage", "env", "alloc", "proxy", "transport",
         "ras", "misc"}

DIAG_FILE = "nccl_diag_messages.tsv"
DIAG_HEADER = ["level", "check", "severity", "format", "first", "last", "versions"]
DIAG_CHECKS = {"header", "p2p", "net_bw", "transport", "gpu_inventory", "driver_version", "ecc",
               "nvlink", "nccl_env", "net_device", "iommu", "ats", "rdma_topo", "paths", "xid",
               "incomplete"}
DIAG_SEVERITIES = {"ok", "problem", "info"}


def rows(path):
    """(line number, header, columns, row as a dict) of each data row; the header row is yielded
    once with columns None. Comment and empty lines are skipped."""
    header = None
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if header is None:
            header = cols
            yield n, header, None, None
            continue
        yield n, header, cols, dict(zip(header, cols))


def check_diag(path):
    """Errors of nccl_diag_messages.tsv, one text per bad line."""
    errors = []
    header = None
    seen = set()
    for n, header, cols, row in rows(path):
        if cols is None:
            if header != DIAG_HEADER:
                errors.append("%s:%d: header %s, want %s" % (path, n, header, DIAG_HEADER))
                return errors
            continue
        err = None
        if len(cols) != len(header):
            err = "%d columns, header %d" % (len(cols), len(header))
        elif row["level"] != "DIAG":
            err = "level " + row["level"]
        elif row["check"] not in DIAG_CHECKS:
            err = "unknown check " + row["check"]
        elif row["severity"] not in DIAG_SEVERITIES:
            err = "unknown severity " + row["severity"]
        elif row["format"] in seen:
            err = "format twice: " + row["format"]
        seen.add(row.get("format"))
        if err:
            errors.append("%s:%d: %s" % (path, n, err))
    if header is None:
        errors.append("%s: no header" % path)
    return errors


def main(folder):
    bad = 0
    base_path = {}
    for f in sorted(glob.glob(os.path.join(folder, "*_messages.tsv"))):
        if os.path.basename(f) == DIAG_FILE:
            for e in check_diag(f):
                bad += 1
                print(e)
            continue
        for n, header, cols, row in rows(f):
            if cols is None:
                assert {"level", "format", "file", "path"} <= set(header), f
                continue
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

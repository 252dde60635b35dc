#!/usr/bin/env python3
"""Prints the counts README.md quotes (Markdown) from the generated .tsv files."""
import collections
import csv
import os
import sys


def rows(path):
    with open(path, encoding="utf-8") as f:
        lines = [l for l in f if not l.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))


def main(folder):
    msgs = rows(os.path.join(folder, "nccl_messages.tsv"))
    cov = rows(os.path.join(folder, "coverage_base.tsv"))
    versions = [c["version"] for c in cov]
    short = [".".join(v.split(".")[:2]) for v in versions]

    def has(m, s):
        for part in m["versions"].split(","):
            a, _, b = part.partition("-")
            b = b or a
            if tuple(map(int, a.split("."))) <= tuple(map(int, s.split("."))) <= tuple(map(int, b.split("."))):
                return True
        return False
    print("Distinct NCCL format strings: %d (WARN %d, INFO %d)\n" % (
        len(msgs), sum(m["level"] == "WARN" for m in msgs), sum(m["level"] == "INFO" for m in msgs)))
    paths = sorted(collections.Counter(m["path"] for m in msgs).items(), key=lambda x: -x[1])
    print("| path | WARN | INFO |\n|---|---|---|")
    for p, _ in paths:
        print("| %s | %d | %d |" % (p, sum(m["path"] == p and m["level"] == "WARN" for m in msgs),
                                   sum(m["path"] == p and m["level"] == "INFO" for m in msgs)))
    print("\n| version | tag | commit | WARN call sites | INFO call sites | WARN formats | INFO formats |")
    print("|---|---|---|---|---|---|---|")
    for c, s in zip(cov, short):
        print("| %s | %s | %s | %s | %s | %d | %d |" % (
            c["version"], c["tag"], c["commit"][:12], c["warn_call_sites"], c["info_call_sites"],
            sum(m["level"] == "WARN" and has(m, s) for m in msgs),
            sum(m["level"] == "INFO" and has(m, s) for m in msgs)))
    diag_path = os.path.join(folder, "nccl_diag_messages.tsv")
    if os.path.exists(diag_path):
        diag = rows(diag_path)
        sev = ("ok", "problem", "info")
        print("\nnccl_diag_messages.tsv: %d rows (%s)\n" % (len(diag), ", ".join(
            "%s %d" % (s, sum(d["severity"] == s for d in diag)) for s in sev)))
        print("| check | ok | problem | info |\n|---|---|---|---|")
        for c in sorted({d["check"] for d in diag}):
            print("| %s | %s |" % (c, " | ".join(
                str(sum(d["check"] == c and d["severity"] == s for d in diag)) for s in sev)))
    for name in ("ibverbs_messages.tsv", "ofi_messages.tsv", "cuda_errors.tsv", "nccl_params.tsv"):
        print("\n%s: %d rows" % (name, len(rows(os.path.join(folder, name)))))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "agent/classify/catalogue")

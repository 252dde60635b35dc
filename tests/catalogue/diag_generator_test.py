#!/usr/bin/env python3
"""Tests of tools/nccl-catalogue's --nccl-lib (NCCL DIAG report formats from libnccl.so).

Run: diag_generator_test.py [DiagGenerator.testName ...] with NCCL_TRIAGE_SOURCE_DIR set to the
source tree (default: two folders up).
"""
import io
import os
import re
import subprocess
import sys
import tempfile
import unittest
import zipfile

SOURCE = os.environ.get("NCCL_TRIAGE_SOURCE_DIR",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TOOL = os.path.join(SOURCE, "tools", "nccl-catalogue")
sys.path.insert(0, TOOL)
import check  # noqa: E402
import diagstrings  # noqa: E402

# What a library's string table looks like: C strings between binary bytes.
STRINGS = [
    b"%s:%d NCCL DIAG === NCCL Diagnostics ===\n",   # a line format (its newline dropped)
    b"%s:%d NCCL DIAG %s",                            # the carrier: names nothing
    b"%s:%d NCCL DIAG [INFO] net bw: required external tool missing in comm 0x%lx\n",
    b"ECC: uncorrected volatile errors on rank(s) %s (worst=%llu) across %d ranks in comm 0x%lx",
    b"ECC: no uncorrected volatile errors across %d ranks in comm 0x%lx",
    b"ECC: no uncorrected volatile errors across %d ranks in comm 0x%lx",  # twice: one row
    b"RAS diagnostics ECC check received malformed data size %d",          # internal error
    b"GPU inventory",                                 # a check's name alone
    b"NET/IB : Got completion with error %d",         # any other string
    b"abc",                                           # too short
]
EXPECTED_ROWS = [
    "DIAG\tecc\tok\tECC: no uncorrected volatile errors across %d ranks in comm 0x%lx"
    "\t9.1.0\t9.1.0\t9.1",
    "DIAG\tecc\tproblem\tECC: uncorrected volatile errors on rank(s) %s (worst=%llu) across %d "
    "ranks in comm 0x%lx\t9.1.0\t9.1.0\t9.1",
    "DIAG\theader\tinfo\t=== NCCL Diagnostics ===\t9.1.0\t9.1.0\t9.1",
    "DIAG\tnet_bw\tinfo\t[INFO] net bw: required external tool missing in comm 0x%lx"
    "\t9.1.0\t9.1.0\t9.1",
]


def library(strings):
    out = io.BytesIO()
    out.write(b"\x7fELF\x02\x01\x01\x00")
    for i, s in enumerate(strings):
        out.write(bytes([0x90 + i % 7, 0]) + s + b"\0")
    out.write(b"\x01\x02tail without NUL")
    return out.getvalue()


def generate(out, *libs):
    args = [sys.executable, os.path.join(TOOL, "generate.py"), "--out", out]
    for v, p in libs:
        args += ["--nccl-lib", v + "=" + p]
    return subprocess.run(args, capture_output=True, text=True)


def data_rows(path):
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if not l.startswith("#")]
    assert lines[0] == "\t".join(check.DIAG_HEADER), lines[0]
    return lines[1:]


class DiagGenerator(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write_lib(self, strings, name="libnccl.so.2"):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(library(strings))
        return path

    def testKeepsReportFormatsOfALibrary(self):
        r = generate(os.path.join(self.dir, "out"), ("9.1.0", self.write_lib(STRINGS)))
        self.assertEqual(r.returncode, 0, r.stderr)
        tsv = os.path.join(self.dir, "out", "nccl_diag_messages.tsv")
        self.assertEqual(data_rows(tsv), EXPECTED_ROWS)
        self.assertEqual(check.check_diag(tsv), [])
        self.assertEqual(sorted(os.listdir(os.path.join(self.dir, "out"))),
                         ["nccl_diag_messages.tsv"])

    def testReadsTheLibraryInsideAWheel(self):
        lib = self.write_lib(STRINGS)
        wheel = os.path.join(self.dir, "nvidia_nccl_cu13-9.1.0-py3-none-any.whl")
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
            z.write(lib, diagstrings.WHEEL_MEMBER)
            z.writestr("nvidia/nccl/include/nccl.h", b"ECC: not the library\0")
        self.assertEqual(generate(os.path.join(self.dir, "a"), ("9.1.0", lib)).returncode, 0)
        self.assertEqual(generate(os.path.join(self.dir, "b"), ("9.1.0", wheel)).returncode, 0)
        with open(os.path.join(self.dir, "a", "nccl_diag_messages.tsv"), "rb") as a, \
                open(os.path.join(self.dir, "b", "nccl_diag_messages.tsv"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def testFindsStringsAcrossReadChunks(self):
        data = library(STRINGS)
        whole = list(diagstrings.c_strings(io.BytesIO(data), chunk=len(data)))
        for chunk in (1, 3, 7, 64):
            self.assertEqual(list(diagstrings.c_strings(io.BytesIO(data), chunk=chunk)), whole)
        self.assertIn("ECC: no uncorrected volatile errors across %d ranks in comm 0x%lx", whole)
        self.assertNotIn("abc", whole)
        self.assertNotIn("tail without NUL", whole)

    def testStopsOnAFormatNoTableCovers(self):
        new_check = b"Fan speed: mismatch across %d ranks in comm 0x%lx"
        new_severity = b"ECC: counters reset on rank(s) %s in comm 0x%lx"
        out = os.path.join(self.dir, "out")
        r = generate(out, ("9.1.0", self.write_lib(STRINGS + [new_check, new_severity])))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(new_check.decode(), r.stderr)
        self.assertIn(new_severity.decode(), r.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "nccl_diag_messages.tsv")))

    def testCommittedFileAgreesWithTheTables(self):
        tsv = os.path.join(SOURCE, "agent", "classify", "catalogue", "nccl_diag_messages.tsv")
        self.assertEqual(check.check_diag(tsv), [])
        for line in data_rows(tsv):
            _, chk, sev, fmt = line.split("\t")[:4]
            fmt = re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(
                m.group(1), m.group(1)), fmt)
            self.assertEqual(diagstrings.classify(fmt), (chk, sev), fmt)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=1)

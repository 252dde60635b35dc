"""NCCL's diagnostics report formats (2.31+), read from the string table of libnccl.so.

The releases that print them (`NCCL DIAG` lines, NCCL_RUN_DIAGNOSTICS=1 and the RAS
diagnostics) are out as binaries (PyPI wheels) before their sources are tagged, so the formats
are taken from the library: its NUL-terminated printable strings, as `strings` lists them, then
the ones that are report text (tables.DIAG_*).
"""
import contextlib
import os
import re
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tables  # noqa: E402

# Where a wheel (nvidia-nccl-cu12 / -cu13) keeps the library.
WHEEL_MEMBER = "nvidia/nccl/lib/libnccl.so.2"

_RUN = re.compile(rb"[\t\n\x20-\x7e]{4,}")
_PRINTABLE = bytes([9, 10] + list(range(0x20, 0x7f)))
DIAG_MARK = "NCCL DIAG "
CHUNK = 1 << 24


def c_strings(stream, chunk=CHUNK):
    """The NUL-terminated runs of printable ASCII bytes (tab and newline included), at least 4
    bytes long without their trailing newlines, in file order, from a binary stream read `chunk`
    bytes at a time. A trailing newline (the line end of a format string) is dropped, as in the
    other files of the catalogue; `strings -n 4` shows the same texts (it does not need the
    NUL, and cuts at a newline)."""
    carry = b""
    while True:
        block = stream.read(chunk)
        buf = carry + block
        if not block:
            # A run at the very end has no NUL after it: not a C string.
            return
        # Only the part up to the last non-printable byte is complete; the rest may go on in the
        # next block.
        last = len(buf.rstrip(_PRINTABLE)) - 1
        if last < 0:
            carry = buf
            continue
        for m in _RUN.finditer(buf, 0, last + 1):
            text = m.group().rstrip(b"\n")
            if len(text) >= 4 and buf[m.end():m.end() + 1] == b"\0":
                yield text.decode("ascii")
        carry = buf[last + 1:]


@contextlib.contextmanager
def open_library(path):
    """A binary stream of the library: the file itself, or, for a wheel (.whl), its
    nvidia/nccl/lib/libnccl.so.2 read from the zip without unpacking it."""
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as zf, zf.open(WHEEL_MEMBER) as f:
            yield f
    else:
        with open(path, "rb") as f:
            yield f


def report_format(s):
    """The report format a library string carries, or None when it is not report text.

    A string with "NCCL DIAG " is a whole line's format: the text after it (the "%s:%d " host
    and pid before it dropped); the bare carrier "%s" names nothing. A RAS report line is a
    string that starts with a check's name, or that names " in comm 0x%lx" and is not one of
    NCCL's own "RAS ..." messages.
    """
    at = s.find(DIAG_MARK)
    if at >= 0:
        text = s[at + len(DIAG_MARK):]
        return None if text == "%s" else text
    if tables.DIAG_INTERNAL.match(s) and not tables.DIAG_REPORT_STARTS.match(s):
        return None
    if tables.DIAG_REPORT_STARTS.match(s) or " in comm 0x%lx" in s:
        return s
    return None


def library_formats(path, chunk=CHUNK):
    """The distinct report formats of one library (or wheel), sorted."""
    with open_library(path) as f:
        return sorted({fmt for fmt in map(report_format, c_strings(f, chunk)) if fmt})


def classify(fmt):
    """(check, severity) of a report format; raises ValueError naming the format when the
    tables do not cover it."""
    check = tables.diag_check(fmt)
    if check is None:
        raise ValueError("no check in tables.DIAG_CHECKS for diagnostics format: " + fmt)
    severity = tables.diag_severity(check, fmt)
    if severity is None:
        raise ValueError("no severity in tables.DIAG_SEVERITY for diagnostics format "
                         "(check %s): %s" % (check, fmt))
    return check, severity

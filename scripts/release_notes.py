#!/usr/bin/env python3
"""Prints the release notes of one version: the body of its section in CHANGELOG.md.

    scripts/release_notes.py CHANGELOG.md 0.1.0      the text under "## [0.1.0] - DATE", up to
                                                     the next "## " header, without the header
    scripts/release_notes.py CHANGELOG.md v0.1.0     the same (a tag's leading v is dropped)

Fails with one line on stderr (exit 1) when the version has no section, when the section has no
date (an unreleased version) or when it is empty. The release workflow gives its output to the
GitHub release as its notes.
"""
import re
import sys


def notes(text: str, version: str) -> str:
    version = version[1:] if version.startswith("v") else version
    header = re.compile(r"^## \[(?P<version>[^\]]+)\](?P<rest>.*)$")
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        m = header.match(line)
        if m and m.group("version") == version:
            if not re.match(r"^ - \d{4}-\d{2}-\d{2}\s*$", m.group("rest")):
                raise ValueError(f"CHANGELOG section [{version}] has no release date "
                                 f"('## [{version}] - YYYY-MM-DD')")
            start = i + 1
            break
    if start is None:
        raise ValueError(f"CHANGELOG has no section '## [{version}] - YYYY-MM-DD'")
    end = len(lines)
    for j in range(start, len(lines)):
        if lines[j].startswith("## "):
            end = j
            break
    # Link reference definitions at the end of the file ("[0.1.0]: https://...") are not notes.
    body = [ln for ln in lines[start:end] if not re.match(r"^\[[^\]]+\]:\s", ln)]
    out = "\n".join(body).strip("\n")
    if not out.strip():
        raise ValueError(f"CHANGELOG section [{version}] is empty")
    return out + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: release_notes.py CHANGELOG.md VERSION", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            sys.stdout.write(notes(f.read(), argv[2]))
    except (OSError, ValueError) as e:
        print(f"release_notes: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

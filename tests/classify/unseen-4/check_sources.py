#!/usr/bin/env python3
"""Checks the threads of the fourth unseen set against every earlier source.

Run from the repository root:

    python3 tests/classify/unseen-4/check_sources.py            # every case here
    python3 tests/classify/unseen-4/check_sources.py a/b#1 ...  # candidate threads

Excluded: the `source:` of each YAML file in the corpus and the first three
unseen sets, and the names in `kEarlierEvaluation` (tests/classify/eval_cases.cc).
Names are compared case-insensitively. Without arguments the script exits 1 when
a case here is excluded, when two cases share a thread, or when a case has no
source line.
"""
import collections
import pathlib
import re
import sys

HERE = 'tests/classify/unseen-4'
EARLIER_DIRS = ('tests/classify/corpus', 'tests/classify/unseen',
                'tests/classify/unseen-2', 'tests/classify/unseen-3')
EVAL_CASES = pathlib.Path('tests/classify/eval_cases.cc')
SOURCE_LINE = re.compile(r'^source:[ \t]*["\']?([^"\'\s]+)', re.MULTILINE)
THREAD = re.compile(r'^[\w.-]+/[\w.-]+#\d+$')


def source_of(path):
    """The thread named by a case file, lower-cased, or None."""
    found = SOURCE_LINE.search(path.read_text(encoding='utf-8'))
    return found.group(1).lower() if found else None


def earlier_sources():
    """Maps each excluded thread to the places that name it."""
    where = collections.defaultdict(list)
    for folder in EARLIER_DIRS:
        for path in sorted(pathlib.Path(folder).glob('*.yaml')):
            name = source_of(path)
            if name:
                where[name].append(str(path))
    text = EVAL_CASES.read_text(encoding='utf-8')
    start = text.find('kEarlierEvaluation')
    if start < 0:
        sys.exit(f'{EVAL_CASES}: kEarlierEvaluation not found')
    end = text.find('};', start)
    for name in re.findall(r'"([^"\s]+#\d+)"', text[start:end]):
        where[name.lower()].append(f'{EVAL_CASES} kEarlierEvaluation')
    return where


def check_candidates(names, excluded):
    for name in names:
        places = excluded.get(name.lower())
        shape = '' if THREAD.match(name) else ' (not owner/repo#N)'
        print(f'{name}: ' + (f'excluded ({", ".join(places)})' if places else 'free') + shape)
    return 0


def check_cases(excluded):
    problems = 0
    seen = collections.defaultdict(list)
    for path in sorted(pathlib.Path(HERE).glob('*.yaml')):
        name = source_of(path)
        if not name:
            print(f'NO SOURCE {path}')
            problems += 1
            continue
        seen[name].append(str(path))
    for name, paths in sorted(seen.items()):
        if name in excluded:
            print(f'CLASH {name}: {", ".join(paths)} (also in {", ".join(excluded[name])})')
            problems += 1
        if len(paths) > 1:
            print(f'DUPLICATE {name}: {", ".join(paths)}')
            problems += 1
    print(f'{sum(map(len, seen.values()))} cases, {len(seen)} sources checked against '
          f'{len(excluded)} excluded sources: {problems} problem(s)')
    return 1 if problems else 0


def main(argv):
    excluded = earlier_sources()
    if argv:
        return check_candidates(argv, excluded)
    return check_cases(excluded)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Checks the threads of an evaluation set against every other set's sources.

Run from the repository root, naming the set's folder:

    python3 tests/classify/check_sources.py tests/classify/unseen-4            # every case
    python3 tests/classify/check_sources.py tests/classify/unseen-4 a/b#1 ...  # candidates

Excluded: the `source:` of each YAML file in the corpus and in every other unseen
set (tests/classify/unseen*), and the names in `kEarlierEvaluation`
(tests/classify/eval_cases.cc). Names are compared case-insensitively. Without
thread arguments the script exits 1 when a case of the set is excluded, when two
cases share a thread, or when a case has no source line.
"""
import collections
import pathlib
import re
import sys

CORPUS = pathlib.Path('tests/classify/corpus')
EVAL_CASES = pathlib.Path('tests/classify/eval_cases.cc')
SOURCE_LINE = re.compile(r'^source:[ \t]*["\']?([^"\'\s]+)', re.MULTILINE)
THREAD = re.compile(r'^[\w.-]+/[\w.-]+#\d+$')


def source_of(path):
    """The thread named by a case file, lower-cased, or None."""
    found = SOURCE_LINE.search(path.read_text(encoding='utf-8'))
    return found.group(1).lower() if found else None


def other_dirs(here):
    """The corpus and every unseen set but `here`."""
    sets = sorted(p for p in pathlib.Path('tests/classify').glob('unseen*') if p.is_dir())
    return [CORPUS] + [p for p in sets if p.resolve() != here.resolve()]


def earlier_sources(here):
    """Maps each excluded thread to the places that name it."""
    where = collections.defaultdict(list)
    for folder in other_dirs(here):
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


def check_cases(here, excluded):
    problems = 0
    seen = collections.defaultdict(list)
    for path in sorted(here.glob('*.yaml')):
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
    if not argv or not pathlib.Path(argv[0]).is_dir():
        sys.exit('usage: check_sources.py SET_DIR [owner/repo#N ...] (from the repository root)')
    here = pathlib.Path(argv[0])
    excluded = earlier_sources(here)
    if argv[1:]:
        return check_candidates(argv[1:], excluded)
    return check_cases(here, excluded)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

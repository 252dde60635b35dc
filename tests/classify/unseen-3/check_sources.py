#!/usr/bin/env python3
"""Check that no source in this folder is excluded (run from the repository root).

Usage: python3 tests/classify/unseen-3/check_sources.py [owner/repo#N ...]
With arguments, reports for each whether it is excluded; without, checks every
tests/classify/unseen-3/*.yaml source and exits non-zero on a clash or a duplicate.
"""
import glob
import re
import sys

SOURCE = re.compile(r'^source:\s*(\S+)', re.M)


def sources(pattern):
    out = {}
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding='utf-8') as f:
            m = SOURCE.search(f.read())
        if m:
            out.setdefault(m.group(1).strip('"\'').lower(), []).append(path)
    return out


def excluded():
    ex = {}
    for pat in ('tests/classify/corpus/*.yaml', 'tests/classify/unseen/*.yaml',
                'tests/classify/unseen-2/*.yaml'):
        for k, v in sources(pat).items():
            ex.setdefault(k, []).extend(v)
    with open('tests/classify/eval_cases.cc', encoding='utf-8') as f:
        text = f.read()
    block = text[text.index('kEarlierEvaluation'):]
    block = block[:block.index('};')]
    for name in re.findall(r'"([^"]+#\d+)"', block):
        ex.setdefault(name.lower(), []).append('eval_cases.cc kEarlierEvaluation')
    return ex


def main():
    ex = excluded()
    if len(sys.argv) > 1:
        for s in sys.argv[1:]:
            hit = ex.get(s.lower())
            print(f'{s}: ' + ('EXCLUDED by ' + ', '.join(hit) if hit else 'free'))
        return 0
    mine = sources('tests/classify/unseen-3/*.yaml')
    bad = 0
    for s, paths in mine.items():
        if s in ex:
            print(f'EXCLUDED {s}: {paths} (in {ex[s]})')
            bad += 1
        if len(paths) > 1:
            print(f'DUPLICATE {s}: {paths}')
            bad += 1
    print(f'{len(mine)} sources checked against {len(ex)} excluded, {bad} problem(s)')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())

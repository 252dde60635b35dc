"""Small C/C++ source scanner: comments out, #define bodies apart, calls and their arguments.

Only what the catalogue needs: it does not preprocess, it reads text.
"""
import re

_TOKEN = re.compile(r'''
    (?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")
  | (?P<chr>'(?:[^'\\\n]|\\.)*')
  | (?P<id>[A-Za-z_]\w*)
  | (?P<hash>\#\#?)
  | (?P<num>\d[\w.]*)
  | (?P<ws>\s+)
  | (?P<op>.)
''', re.S | re.X)

# Integer-format macros of <inttypes.h> as glibc defines them on x86_64 / aarch64 Linux.
PRI = {}
for _k, _v in (("8", "hh"), ("16", "h"), ("32", ""), ("64", "l"), ("PTR", "l")):
    for _c in "diouxX":
        PRI["PRI" + _c + _k] = _v + _c
        PRI["PRI" + _c + "LEAST" + _k] = _v + _c
        PRI["PRI" + _c + "FAST" + _k] = ("l" if _k != "8" else "hh") + _c
PRI["PRIuMAX"] = "lu"
PRI["PRIdMAX"] = "ld"
PRI["PRIxMAX"] = "lx"


def strip_comments(text):
    """Replaces comments by a space (newlines kept), leaving string and char literals alone."""
    out = []
    i, n = 0, len(text)
    pat = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|//[^\n]*|/\*.*?\*/', re.S)
    for m in pat.finditer(text):
        out.append(text[i:m.start()])
        s = m.group(0)
        if s.startswith("//"):
            out.append(" ")
        elif s.startswith("/*"):
            out.append(" " + "\n" * s.count("\n"))
        else:
            out.append(s)
        i = m.end()
    out.append(text[i:])
    return "".join(out)


_DEFINE = re.compile(r'\s*#\s*define\s+([A-Za-z_]\w*)(\(([^)]*)\))?')


def segments(text):
    """Splits comment-free source into (code, define_name, define_params) pieces.

    Ordinary code is one piece with define_name None; each #define is its own piece (its body,
    continuation lines joined). Other preprocessor lines are dropped.
    """
    lines = strip_comments(text).split("\n")
    code = []
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("#"):
            full = line
            while full.endswith("\\") and i + 1 < len(lines):
                i += 1
                full = full[:-1] + " " + lines[i]
            m = _DEFINE.match(full)
            if m:
                params = None
                if m.group(2) is not None:
                    params = [p.strip() for p in m.group(3).split(",") if p.strip()]
                out.append((full[m.end():], m.group(1), params))
            code.append("")
        else:
            code.append(line)
        i += 1
    out.insert(0, ("\n".join(code), None, None))
    return out


def simple_string_defines(text):
    """NAME -> literal for `#define NAME "literal"` lines."""
    res = {}
    for body, name, params in segments(text):
        if name and params is None:
            toks = [t for t in tokens(body) if t[0] != "ws"]
            if toks and all(t[0] == "str" for t in toks):
                res[name] = "".join(unquote(t[1]) for t in toks)
    return res


def tokens(text):
    for m in _TOKEN.finditer(text):
        yield (m.lastgroup, m.group(0))


def find_calls(code, names):
    """Yields (name, [argument texts]) for each call `name(...)` in code."""
    pat = re.compile(r'(?<![\w.>:#])(' + "|".join(map(re.escape, names)) + r')\s*\(')
    for m in pat.finditer(code):
        args = split_args(code, m.end())
        if args is not None:
            yield m.group(1), args, m.start()


_SKIP = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|[(){}\[\],]')


def split_args(code, start):
    """Top-level comma-separated arguments from just after '(' to its ')'; None if unbalanced."""
    depth = 0
    args = []
    cur = start
    for m in _SKIP.finditer(code, start):
        s = m.group(0)
        if s in "([{":
            depth += 1
        elif s in ")]}":
            if depth == 0:
                if s != ")":
                    return None
                args.append(code[cur:m.start()])
                return [a.strip() for a in args]
            depth -= 1
        elif s == "," and depth == 0:
            args.append(code[cur:m.start()])
            cur = m.end()
        if m.start() - start > 20000:
            return None
    return None


_ESC = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
        "\\": "\\", "'": "'", '"': '"', "?": "?", "e": "\x1b"}


def unquote(lit):
    """The text of a C string literal, escapes resolved."""
    body = lit[lit.index('"') + 1:-1]
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt == "x":
            m = re.match(r'[0-9A-Fa-f]+', body[i + 2:])
            out.append(chr(int(m.group(0), 16)) if m else "x")
            i += 2 + (len(m.group(0)) if m else 0)
        elif nxt in "01234567":
            m = re.match(r'[0-7]{1,3}', body[i + 1:])
            out.append(chr(int(m.group(0), 8)))
            i += 1 + len(m.group(0))
        else:
            out.append(_ESC.get(nxt, nxt))
            i += 2
    return "".join(out)


def string_expr(arg, params=(), defines=None):
    """The text a format argument makes, or None when it is not (mostly) literal.

    Adjacent literals are joined; inttypes macros are expanded; a macro parameter, its
    stringification `#p`, or an unknown identifier between literals becomes %s; a known
    `#define NAME "text"` is substituted.
    """
    defines = defines or {}
    parts = []
    seen_literal = False
    toks = [t for t in tokens(arg) if t[0] != "ws"]
    i = 0
    while i < len(toks):
        kind, s = toks[i]
        if kind == "str":
            parts.append(unquote(s))
            seen_literal = True
        elif kind == "hash" and s == "#" and i + 1 < len(toks) and toks[i + 1][0] == "id":
            parts.append("%s")
            i += 1
        elif kind == "id" and s in PRI:
            parts.append(PRI[s])
        elif kind == "id" and s in defines:
            parts.append(defines[s])
            seen_literal = True
        elif kind == "id" and (s in params or (i + 1 < len(toks) and toks[i + 1][0] == "str")
                               or (i > 0 and toks[i - 1][0] == "str")):
            parts.append("%s")
        else:
            return None
        i += 1
    if not seen_literal:
        return None
    return "".join(parts)


def norm_expr(arg):
    return re.sub(r'\s*\|\s*', '|', re.sub(r'\s+', ' ', arg.strip()))

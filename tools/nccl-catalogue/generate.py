#!/usr/bin/env python3
"""Builds NCCL's message catalogue (agent/classify/catalogue/*.tsv) from sources given to it.

It never downloads anything: point it at git directories (bare or not) with release tags, or
at header folders, and it writes the data files. See README.md for the commands.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cscan  # noqa: E402
import diagstrings  # noqa: E402
import gitsrc  # noqa: E402
import tables  # noqa: E402

SRC_EXT = (".cc", ".cu", ".h", ".hpp", ".cpp", ".c", ".cuh", ".hh")


def vkey(v):
    return tuple(int(x) for x in re.findall(r"\d+", v))


def nccl_tags(repo, minimum, maximum):
    """The last patch tag of each minor release in [minimum, maximum], as (version, tag)."""
    best = {}
    for t in repo.tags():
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)-(\d+)", t)
        if not m:
            continue
        k = tuple(int(x) for x in m.groups())
        minor = k[:2]
        if minor < vkey(minimum) or (maximum and minor > vkey(maximum)):
            continue
        if minor not in best or k > best[minor][0]:
            best[minor] = (k, t)
    return [("%d.%d.%d" % k[:3], t) for _, (k, t) in sorted(best.items())]


def tsv_field(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def write_tsv(path, header, rows, comments=()):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for c in comments:
            f.write("# " + c + "\n")
        f.write("\t".join(header) + "\n")
        for r in rows:
            f.write("\t".join(tsv_field(str(x)) for x in r) + "\n")


def version_ranges(versions, order):
    """'2.12-2.18,2.21' from a set of versions, by minor, over the ordered list of versions."""
    idx = [i for i, v in enumerate(order) if v in versions]
    out = []
    start = prev = None
    for i in idx:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append((start, prev))
            start = prev = i
    if start is not None:
        out.append((start, prev))

    def short(v):
        return ".".join(v.split(".")[:2])
    return ",".join(short(order[a]) if a == b else short(order[a]) + "-" + short(order[b])
                    for a, b in out)


# ---------------------------------------------------------------------------------------------
# NCCL

LOG_MACROS = {"WARN", "INFO", "TRACE", "TRACE_CALL", "VERSION", "WARN_ONCE"}


def nccl_scan_version(repo, tag):
    """Messages, call-site counts and parameters of one NCCL revision."""
    files = [(p, b) for p, b in repo.files(tag, "src")
             if p.endswith(SRC_EXT) and not tables.nccl_skip(p[len("src/"):])]
    texts = {p: repo.read(b) for p, b in files}
    defines = {}
    for p, t in texts.items():
        for k, v in cscan.simple_string_defines(t).items():
            defines.setdefault(k, v)
    messages = []  # (level, flags, format, file, macro)
    counts = {"WARN": 0, "INFO": 0, "WARN_literal": 0, "INFO_literal": 0}
    params = []  # (env, type, default, how, file, description)
    for p, t in sorted(texts.items()):
        rel = p[len("src/"):]
        for code, macro, mparams in cscan.segments(t):
            if macro in LOG_MACROS or (macro or "").startswith("NCCL_PARAM"):
                continue
            mparams = mparams or []
            for name, args, _ in cscan.find_calls(code, ["WARN", "INFO", "ncclDebugLog"]):
                if name == "ncclDebugLog":
                    if len(args) < 5 or args[0] not in ("NCCL_LOG_WARN", "NCCL_LOG_INFO"):
                        continue
                    level = args[0][len("NCCL_LOG_"):]
                    flags, fmt = (args[1] if level == "INFO" else ""), args[4]
                elif name == "WARN":
                    if not args or args[0] in ("...", "__VA_ARGS__"):
                        continue
                    level, flags, fmt = "WARN", "", args[0]
                else:
                    if len(args) < 2 or args[1] in ("...", "__VA_ARGS__"):
                        continue
                    level, flags, fmt = "INFO", cscan.norm_expr(args[0]), args[1]
                counts[level] += 1
                text = cscan.string_expr(fmt, mparams, defines)
                if text is None:
                    continue
                counts[level + "_literal"] += 1
                messages.append((level, flags, text.rstrip("\n"), rel, macro or ""))
            if macro is not None:
                continue
            # A literal that is exactly an NCCL_ name, passed to a helper that reads it
            # (ncclGetLevel(..., "NCCL_P2P_LEVEL"), tables of names, ...).
            for lit in re.finditer(r'(?<![\w"])"(NCCL_[A-Z0-9_]+)"', code):
                if lit.group(1) not in tables.NOT_ENV:
                    params.append((lit.group(1), "string", "", "literal", rel, ""))
            for name, args, _ in cscan.find_calls(code, ["NCCL_PARAM", "DEFINE_NCCL_PARAM",
                                                         "ncclGetEnv", "getenv", "getEnvFunc"]):
                if name == "NCCL_PARAM" and len(args) >= 3:
                    env = cscan.string_expr(args[1], (), defines)
                    if env:
                        params.append(("NCCL_" + env, "int64", cscan.norm_expr(args[2]),
                                       name, rel, ""))
                elif name == "DEFINE_NCCL_PARAM" and len(args) >= 7:
                    desc = cscan.string_expr(",".join(args[6:]), (), defines) or ""
                    opts = [cscan.unquote(o) for o in
                            re.findall(r'makeOption\s*\(\s*("(?:[^"\\]|\\.)*")', args[5])]
                    kind = re.match(r"\(*\s*(\w+)", args[5])
                    if opts:
                        desc = ("%s: %s. %s" % (kind.group(1) if kind else "options",
                                                ", ".join(opts), desc)).strip()
                    params.append((args[2], cscan.norm_expr(args[1]), cscan.norm_expr(args[3]),
                                   name, rel, desc))
                elif name in ("ncclGetEnv", "getenv", "getEnvFunc") and len(args) == 1:
                    env = cscan.string_expr(args[0], (), defines)
                    if env and re.fullmatch(r"[A-Z][A-Z0-9_]*", env):
                        params.append((env, "string", "", name, rel, ""))
    return messages, counts, params


def build_nccl(repo, versions, out):
    order = [v for v, _ in versions]
    msgs = {}
    coverage = []
    params = {}
    for v, tag in versions:
        print("nccl", tag, file=sys.stderr)
        m, c, p = nccl_scan_version(repo, tag)
        coverage.append((v, tag, repo.commit(tag), c["WARN"], c["INFO"], c["WARN_literal"],
                         c["INFO_literal"]))
        for key in set(m):
            msgs.setdefault(key, set()).add(v)
        for env, typ, deft, how, rel, desc in p:
            e = params.setdefault(env, {"versions": set(), "types": {}, "defaults": {},
                                        "how": set(), "files": set(), "desc": ""})
            e["versions"].add(v)
            e["how"].add(how)
            e["files"].add(rel)
            if how in ("NCCL_PARAM", "DEFINE_NCCL_PARAM") or v not in e["types"]:
                e["types"][v] = typ
                e["defaults"][v] = deft
            if desc:
                e["desc"] = desc
    rows = []
    for (level, flags, fmt, rel, macro), vs in msgs.items():
        path = tables.nccl_message_path(rel, macro, fmt)
        first = min(vs, key=vkey)
        last = max(vs, key=vkey)
        rows.append((level, flags, fmt, rel, path, first, last, macro,
                     version_ranges(vs, order)))
    rows.sort(key=lambda r: (r[4], r[3], r[0], r[2]) + tuple(r))
    write_tsv(os.path.join(out, "nccl_messages.tsv"),
              ["level", "flags", "format", "file", "path", "first", "last", "macro", "versions"],
              rows,
              ["NCCL's WARN and INFO format strings, generated by tools/nccl-catalogue "
               "from the release tags " + order[0] + " .. " + order[-1] + ".",
               "Columns: see agent/classify/catalogue/README.md. In `format`, a tab is written "
               "\\t, a newline \\n, a backslash \\\\."])
    write_tsv(os.path.join(out, "coverage_base.tsv"),
              ["version", "tag", "commit", "warn_call_sites", "info_call_sites",
               "warn_literal_sites", "info_literal_sites"], coverage,
              ["Call sites of WARN/INFO per NCCL release (a macro body counts once); "
               "*_literal_sites: those whose format is literal text, i.e. in the catalogue."])
    prow = []
    for env, e in sorted(params.items()):
        vs = e["versions"]
        dv = sorted(e["defaults"], key=vkey)
        latest = dv[-1] if dv else None
        deft = e["defaults"].get(latest, "") if latest else ""
        typ = e["types"].get(latest, "") if latest else ""
        changes = []
        prev = None
        for v in dv:
            if e["defaults"][v] != prev:
                changes.append(v + "=" + e["defaults"][v])
                prev = e["defaults"][v]
        info = tables.PARAM_VALUES.get(env, ("", ""))
        if not info[1] and "NCCL_PARAM" in e["how"]:
            info = (info[0], tables.INT_PARAM_REJECT)
        prow.append((env, typ, deft, ";".join(changes) if len(changes) > 1 else "",
                     min(vs, key=vkey), max(vs, key=vkey), version_ranges(vs, order),
                     ",".join(sorted(e["how"])), ";".join(sorted(e["files"])), info[0], info[1],
                     e["desc"]))
    write_tsv(os.path.join(out, "nccl_params.tsv"),
              ["env", "type", "default", "default_changes", "first", "last", "versions", "read_by",
               "files", "values", "rejected", "description"], prow,
              ["Environment variables NCCL reads, per release, generated by tools/nccl-catalogue."])
    return rows, coverage, prow


# ---------------------------------------------------------------------------------------------
# NCCL diagnostics reports (2.31+), from the libraries

def build_nccl_diag(libs, out):
    """libs: (version, path of libnccl.so.2 or of the wheel). Writes nccl_diag_messages.tsv."""
    libs = sorted(libs, key=lambda x: vkey(x[0]))
    order = [v for v, _ in libs]
    msgs = {}
    for v, path in libs:
        print("nccl diag", v, file=sys.stderr)
        for fmt in diagstrings.library_formats(path):
            msgs.setdefault(fmt, set()).add(v)
    rows = []
    unknown = []
    for fmt, vs in msgs.items():
        try:
            check, severity = diagstrings.classify(fmt)
        except ValueError as e:
            unknown.append(str(e))
            continue
        rows.append(("DIAG", check, severity, fmt, min(vs, key=vkey), max(vs, key=vkey),
                     version_ranges(vs, order)))
    if unknown:
        raise SystemExit("\n".join(sorted(unknown)) + "\ndecide in tools/nccl-catalogue/"
                         "tables.py (DIAG_CHECKS, DIAG_SEVERITY); nothing written")
    rows.sort(key=lambda r: (r[1], r[3]) + tuple(r))
    write_tsv(os.path.join(out, "nccl_diag_messages.tsv"),
              ["level", "check", "severity", "format", "first", "last", "versions"], rows,
              ["NCCL's diagnostics report lines (NCCL DIAG, RAS diagnostics), generated by "
               "tools/nccl-catalogue from the string tables of libnccl.so " + ", ".join(order)
               + ".",
               "Columns: see agent/classify/catalogue/README.md. `format` is the text after "
               "\"%s:%d NCCL DIAG \"; check and severity come from tools/nccl-catalogue/"
               "tables.py."])
    return rows


# ---------------------------------------------------------------------------------------------
# rdma-core and aws-ofi-nccl

def other_tags(repo, pattern, minimum, every, series_len):
    tags = []
    for t in repo.tags():
        m = re.fullmatch(pattern, t)
        if m:
            tags.append((vkey(m.group(1)), m.group(1), t))
    tags.sort()
    tags = [x for x in tags if x[0] >= vkey(minimum)]
    # the last tag of each release series (major.minor), then every n-th of them plus the last
    last = {}
    for k, v, t in tags:
        last[k[:series_len]] = (k, v, t)
    series = [last[s] for s in sorted(last)]
    pick = series[::every]
    if series and series[-1] not in pick:
        pick.append(series[-1])
    return [(v, t) for _, v, t in pick]


def scan_calls(repo, versions, file_ok, specs, path_of, out_name, out, comment):
    """specs: call name -> (level or None, index of format arg, index of flags arg or None)."""
    order = [v for v, _ in versions]
    msgs = {}
    for v, tag in versions:
        print(out_name, tag, file=sys.stderr)
        files = [(p, b) for p, b in repo.files(tag) if p.endswith(SRC_EXT) and file_ok(p)]
        dir_defines = {}
        for p, b in files:
            d = dir_defines.setdefault(os.path.dirname(p), {})
            for k, val in cscan.simple_string_defines(repo.read(b)).items():
                d.setdefault(k, val)
        for p, b in files:
            t = repo.read(b)
            defines = dict(dir_defines.get(os.path.dirname(p), {}))
            defines.update(cscan.simple_string_defines(t))
            for code, macro, mparams in cscan.segments(t):
                if macro in specs:
                    continue
                for name, args, _ in cscan.find_calls(code, list(specs)):
                    level, fi, fl = specs[name]
                    if name == "fprintf" and (not args or args[0] != "stderr"):
                        continue
                    if len(args) <= fi:
                        continue
                    text = cscan.string_expr(args[fi], mparams or [], defines)
                    if text is None:
                        continue
                    text = text.rstrip("\n")
                    flags = cscan.norm_expr(args[fl]) if fl is not None else ""
                    msgs.setdefault((level, flags, text, p, macro or name), set()).add(v)
    rows = []
    for (level, flags, text, p, via), vs in msgs.items():
        rows.append((level, flags, text, p, path_of(p), min(vs, key=vkey), max(vs, key=vkey), via,
                     version_ranges(vs, order)))
    rows.sort(key=lambda r: (r[3], r[0], r[2]) + tuple(r))
    write_tsv(os.path.join(out, out_name),
              ["level", "flags", "format", "file", "path", "first", "last", "macro", "versions"],
              rows, [comment])
    return rows


def build_rdma(repo, versions, out):
    specs = {"fprintf": ("WARN", 1, None), "verbs_err": ("WARN", 1, None),
             "verbs_warn": ("WARN", 1, None), "verbs_info": ("INFO", 1, None),
             "verbs_debug": ("INFO", 1, None), "mlx5_err": ("WARN", 1, None),
             "mlx5_dbg": ("INFO", 2, 1), "vnc_err": ("WARN", 1, None)}

    def ok(p):
        return ((p.startswith("libibverbs/") and p.count("/") == 1)
                or (p.startswith("providers/mlx5/") and p.count("/") == 2))
    return scan_calls(repo, versions, ok, specs, lambda p: "ib_verbs", "ibverbs_messages.tsv", out,
                      "rdma-core libibverbs and mlx5 provider messages, releases "
                      + versions[0][0] + " .. " + versions[-1][0] + ", generated by "
                      "tools/nccl-catalogue. WARN: errors and warnings (fprintf(stderr), "
                      "verbs_err, verbs_warn); INFO: verbs_info, verbs_debug, mlx5_dbg.")


def build_ofi(repo, versions, out):
    specs = {"NCCL_OFI_WARN": ("WARN", 0, None), "NCCL_OFI_INFO": ("INFO", 1, 0),
             "NCCL_OFI_WARN_ONCE": ("WARN", 0, None)}

    def ok(p):
        return (p.startswith("src/") or p.startswith("include/")) and "/tests/" not in p
    return scan_calls(repo, versions, ok, specs, lambda p: "net_ofi", "ofi_messages.tsv", out,
                      "aws-ofi-nccl (the OFI/EFA net plugin) messages, releases "
                      + versions[0][0] + " .. " + versions[-1][0] + ", generated by "
                      "tools/nccl-catalogue.")


# ---------------------------------------------------------------------------------------------
# CUDA error codes

def cuda_enum(text, enum_name, api, header):
    m = re.search(r"enum\s+(?:__device_builtin__\s+)?" + enum_name + r"\s*\{(.*?)\}", text, re.S)
    if not m:
        return []
    body = m.group(1)
    rows = []
    for em in re.finditer(r"(/\*\*(.*?)\*/\s*)?(\w+)\s*=\s*(\d+)\s*,?", body, re.S):
        doc = em.group(2) or ""
        doc = re.sub(r"^\s*\*\s?", "", doc, flags=re.M)
        doc = re.sub(r"\\(ref|p|c|b|e|note)\s+", "", doc)
        doc = re.sub(r"::", "", doc)
        doc = " ".join(doc.split())
        deprecated = "deprecated" in doc.lower()
        rows.append((api, int(em.group(4)), em.group(3), doc, header,
                     "deprecated" if deprecated else ""))
    return rows


def cudart_strings(lib, names):
    """name -> cudaGetErrorString text, from the string table of libcudart.so.

    The library keeps each code's name next to its short text; a name followed by exactly one
    text (and then by another code name) is taken as paired; anything else is left out (long
    texts are stored apart and cannot be paired safely).
    """
    with open(lib, "rb") as f:
        runs = [r.decode("ascii") for r in re.findall(rb"[\x20-\x7e\t]{4,}", f.read())]
    res = {}
    for i in range(len(runs) - 2):
        if runs[i] in names and runs[i + 1] not in names and runs[i + 2] in names \
                and not re.fullmatch(r"cuda[A-Z]\w*", runs[i + 1]):
            if _plausible(runs[i], runs[i + 1]):
                res.setdefault(runs[i], runs[i + 1])
    return res


def _plausible(name, text):
    """Whether at least half of the words of a code's name start a word of the text: the table
    is not strictly name/text alternating, so a pairing must also read right."""
    words = [w.lower() for w in re.findall(r"[A-Z][a-z]+|[A-Z]+(?![a-z])", name[len("cudaError"):])
             if len(w) >= 3]
    text_words = re.findall(r"[a-z]+", text.lower())
    if not words:
        return name == "cudaSuccess" and text == "no error"
    hits = sum(any(t.startswith(w[:4]) or w.startswith(t[:4]) and len(t) >= 4
                   for t in text_words) for w in words)
    return 2 * hits >= len(words)


def build_cuda(include, out, cudart=None):
    rows = []
    with open(os.path.join(include, "driver_types.h"), encoding="utf-8") as f:
        rows += cuda_enum(f.read(), "cudaError", "runtime", "driver_types.h")
    texts = cudart_strings(cudart, {r[2] for r in rows}) if cudart else {}
    rows = [r + (texts.get(r[2], ""),) for r in rows]
    with open(os.path.join(include, "cuda.h"), encoding="utf-8") as f:
        t = f.read()
    rows += [r + ("",) for r in cuda_enum(t, "cudaError_enum", "driver", "cuda.h")]
    ver = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", t)
    rows.sort(key=lambda r: (r[0], r[1]))
    write_tsv(os.path.join(out, "cuda_errors.tsv"),
              ["api", "code", "name", "message", "header", "note", "error_string"], rows,
              ["CUDA runtime (cudaError_t) and driver (CUresult) codes from the CUDA headers, "
               "CUDA_VERSION " + (ver.group(1) if ver else "?") + "; message: the header's doc "
               "comment of the code; error_string: cudaGetErrorString's text where it could be "
               "paired from libcudart.so (" + str(len(texts)) + " codes)."])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True, help="folder for the .tsv files")
    ap.add_argument("--nccl-git", help="git directory of NCCL with its release tags")
    ap.add_argument("--nccl-src", help="an extracted NCCL source tree (instead of --nccl-git); "
                    "its version is given by --nccl-version")
    ap.add_argument("--nccl-version", default="0.0.0")
    ap.add_argument("--min", default="2.12", help="first NCCL minor release (default 2.12)")
    ap.add_argument("--max", default="", help="last NCCL minor release (default: newest tag)")
    ap.add_argument("--nccl-extra", action="append", default=[], metavar="REV=VERSION",
                    help="also read revision REV (a branch or commit, e.g. an unreleased dev "
                    "branch) as NCCL VERSION; may repeat")
    ap.add_argument("--rdma-core-git", help="git directory of rdma-core")
    ap.add_argument("--rdma-core-min", default="v30")
    ap.add_argument("--ofi-git", help="git directory of aws-ofi-nccl")
    ap.add_argument("--ofi-min", default="1.7.0")
    ap.add_argument("--cuda-include", help="folder with cuda.h and driver_types.h")
    ap.add_argument("--cudart-lib", help="libcudart.so of the same CUDA release (optional): "
                    "cudaGetErrorString texts")
    ap.add_argument("--nccl-lib", action="append", default=[], metavar="VERSION=PATH",
                    help="NCCL VERSION's libnccl.so.2, or the wheel (.whl) that holds it: its "
                    "diagnostics report formats (nccl_diag_messages.tsv); may repeat")
    a = ap.parse_args()
    libs = []
    for spec in a.nccl_lib:
        ver, sep, path = spec.partition("=")
        if not sep or not re.fullmatch(r"\d+\.\d+\.\d+", ver) or not path:
            ap.error("--nccl-lib wants VERSION=PATH with a full version (2.32.6): " + spec)
        libs.append((ver, path))
    os.makedirs(a.out, exist_ok=True)
    if a.nccl_git:
        repo = gitsrc.GitDir(a.nccl_git)
        versions = nccl_tags(repo, a.min, a.max)
        for extra in a.nccl_extra:
            rev, _, ver = extra.partition("=")
            versions.append((ver, rev))
        versions.sort(key=lambda x: vkey(x[0]))
        build_nccl(repo, versions, a.out)
    elif a.nccl_src:
        build_nccl(gitsrc.PlainDir(a.nccl_src), [(a.nccl_version, "HEAD")], a.out)
    if a.rdma_core_git:
        repo = gitsrc.GitDir(a.rdma_core_git)
        build_rdma(repo, other_tags(repo, r"v(\d+(?:\.\d+)*)", a.rdma_core_min.lstrip("v"), 3, 1),
                   a.out)
    if a.ofi_git:
        repo = gitsrc.GitDir(a.ofi_git)
        build_ofi(repo, other_tags(repo, r"v(\d+\.\d+\.\d+)(?:-aws)?", a.ofi_min, 1, 2), a.out)
    if a.cuda_include:
        build_cuda(a.cuda_include, a.out, a.cudart_lib)
    if libs:
        build_nccl_diag(libs, a.out)


if __name__ == "__main__":
    main()

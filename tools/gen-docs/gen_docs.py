#!/usr/bin/env python3
"""Writes the generated parts of the documentation and the chart from `nccl-triage-server
dump-schema` (the facts the C++ code declares once).

    gen_docs.py --schema schema.json --source <repo> [--out <dir>]

Reads each target file from --source and writes it to --out (default: --source, in place) with
only its generated blocks replaced; everything outside them stays as written by hand:

  docs/configuration.md          the key table             <!-- generated:config-keys ... -->
  docs/checks.md                 the host-check table      <!-- generated:host-checks ... -->
  docs/metrics.md                the metric tables         <!-- generated:agent-metrics ... -->
                                                           <!-- generated:coordinator-metrics -->
  helm/nccl-triage/README.md     the config table          <!-- generated:chart-config ... -->
  helm/nccl-triage/values.yaml   the config keys with their description comments, between
                                 "# >>> generated" and "# <<< generated"; each value is the
                                 chart's own (kept from the file), new keys get the binary's
                                 default (commented out when unset)
  helm/nccl-triage/values.schema.json
                                 properties.config.properties.<section>.properties and the
                                 pools' expect: the keys' types, ranges and descriptions

Python 3 standard library only. Exits 1 with one line on stderr when a marker is missing.
"""

import argparse
import json
import os
import re
import sys
import textwrap

GENERATED_NOTE = "written by `make generate` from `nccl-triage-server dump-schema`; do not edit"


class GenError(Exception):
    pass


# ---------------------------------------------------------------------------------------- text


def md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def scalar_text(value):
    """A default as --dump-config writes it (the documentation's `default` column)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[]" if not value else "[" + ", ".join(value) + "]"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return '""' if value == "" else value
    return str(value)


def replace_block(text, name, body, path):
    """Replaces the lines between the Markdown markers of block `name`."""
    begin = re.compile(r"^<!-- generated:%s( .*)? -->$" % re.escape(name), re.M)
    end = "<!-- /generated:%s -->" % name
    m = begin.search(text)
    e = text.find(end)
    if not m or e < 0 or e < m.end():
        raise GenError("%s: no <!-- generated:%s ... --> ... %s block" % (path, name, end))
    opening = "<!-- generated:%s (%s) -->" % (name, GENERATED_NOTE)
    # Blank lines around the table: a Markdown table ends at a blank line, not at a comment.
    return text[: m.start()] + opening + "\n\n" + body + "\n" + text[e:]


# ------------------------------------------------------------------------------------- tables


def config_table(schema):
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for k in schema["config"]:
        rows.append(
            "| `%s` | %s | `%s` | %s |"
            % (k["name"], md_cell(k["type"]), scalar_text(k["default"]), md_cell(k["description"]))
        )
    return "\n".join(rows) + "\n"


def checks_table(schema):
    rows = [
        "| check | class | title | looks at | verdict | why it matters | fix |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in schema["catalogue"]:
        if c["kind"] != "host_check":
            continue
        cells = [c["class"], c["title"], c["looks_at"], c["verdict"], c["why"], c["remedy"]]
        rows.append("| `%s` | %s |" % (c["id"], " | ".join(md_cell(x) for x in cells)))
    return "\n".join(rows) + "\n"


def metrics_table(schema, component):
    rows = ["| metric | type | labels | meaning |", "|---|---|---|---|"]
    for m in schema["metrics"]:
        if m["component"] != component:
            continue
        labels = ", ".join("`%s`" % l for l in m["labels"])
        rows.append("| `%s` | %s | %s | %s |" % (m["name"], m["type"], labels, md_cell(m["doc"])))
    return "\n".join(rows) + "\n"


# ---------------------------------------------------------------------------------- values.yaml

BEGIN_YAML = "  # >>> generated"
END_YAML = "  # <<< generated"
KEY_LINE = re.compile(r"^    (# )?([A-Za-z_][A-Za-z0-9_]*): ?(.*)$")
SECTION_LINE = re.compile(r"^  ([A-Za-z_][A-Za-z0-9_]*):\s*$")


def strip_inline_comment(value):
    # A trailing "   # ..." after the value; values of this section hold no " #".
    m = re.search(r"\s+#\s", value)
    return value[: m.start()] if m else value.rstrip()


def yaml_value(value):
    if value is None:
        return "~"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join("%s: %s" % (json.dumps(k), json.dumps(v))
                               for k, v in sorted(value.items())) + "}"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        plain = re.fullmatch(r"[A-Za-z0-9_./:-]+", value) and not re.fullmatch(
            r"[0-9.]+|true|false|null|yes|no|on|off|~", value, re.I
        )
        return value if plain else json.dumps(value)
    return str(value)


def values_block_bounds(lines, path):
    try:
        b = next(i for i, l in enumerate(lines) if l.startswith(BEGIN_YAML))
        e = next(i for i, l in enumerate(lines) if l.startswith(END_YAML) and i > b)
    except StopIteration:
        raise GenError("%s: no '%s' ... '%s' block under config:" % (path, BEGIN_YAML, END_YAML))
    return b, e


def chart_values(lines, b, e):
    """key -> (commented out, value text) as the chart's values.yaml holds them."""
    values = {}
    section = None
    for line in lines[b + 1 : e]:
        s = SECTION_LINE.match(line)
        if s:
            section = s.group(1)
            continue
        k = KEY_LINE.match(line)
        if k and section:
            value = strip_inline_comment(k.group(3))
            values[section + "." + k.group(2)] = (bool(k.group(1)), value)
    return values


def values_yaml(text, schema, path):
    lines = text.split("\n")
    b, e = values_block_bounds(lines, path)
    current = chart_values(lines, b, e)
    out = [
        "  # >>> generated: the keys and their descriptions are written by `make generate`;",
        "  # change a description in agent/config/config_keys.cc, a value here (the chart's).",
    ]
    section = None
    for k in schema["config"]:
        sec, key = k["name"].split(".", 1)
        if sec != section:
            out.append("  %s:" % sec)
            section = sec
        width = 100 - len("    # ")
        for w in textwrap.wrap(k["description"], width, break_on_hyphens=False,
                               break_long_words=False):
            out.append("    # " + w)
        # A key the file lacks: the binary's default, commented out when unset.
        unset = k["default"] is None
        commented, value = current.get(k["name"], (unset, yaml_value(k["default"])))
        out.append("    %s%s: %s" % ("# " if commented else "", key, value))
    out.append("  # <<< generated")
    return "\n".join(lines[:b] + out + lines[e + 1 :])


def chart_readme_table(schema, values_text, path):
    lines = values_text.split("\n")
    b, e = values_block_bounds(lines, path)
    current = chart_values(lines, b, e)
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for k in schema["config"]:
        commented, value = current.get(k["name"], (True, ""))
        shown = "unset" if commented or value in ("~", "null") else "`%s`" % value
        rows.append("| `config.%s` | %s | %s |" % (k["name"], shown, md_cell(k["description"])))
    return "\n".join(rows) + "\n"


# ------------------------------------------------------------------------------ values.schema

def key_schema(k):
    """A key's JSON schema: the fragment its kind builds (dump-schema's json_schema, range
    included), with the key's description."""
    s = dict(k["json_schema"])
    s["description"] = k["description"]
    return s


def values_schema(text, schema, path):
    doc = json.loads(text)
    try:
        config = doc["properties"]["config"]
    except KeyError:
        raise GenError("%s: no properties.config" % path)
    config["$comment"] = (
        "the properties of each section (and of pools[].expect) are %s; the rest is the chart's"
        % GENERATED_NOTE
    )
    props = config.setdefault("properties", {})
    sections = {}
    for k in schema["config"]:
        sec, key = k["name"].split(".", 1)
        sections.setdefault(sec, {})[key] = key_schema(k)
    for name in [n for n in props if n != "pools" and n not in sections]:
        del props[name]
    for sec, keys in sections.items():
        section = props.setdefault(sec, {"type": "object", "additionalProperties": False})
        section["properties"] = keys
    pools = props.get("pools", {}).get("items", {}).get("properties", {})
    if "expect" in pools:
        pools["expect"]["properties"] = sections["expect"]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------- main

TARGETS = [
    "docs/configuration.md",
    "docs/checks.md",
    "docs/metrics.md",
    "helm/nccl-triage/values.yaml",
    "helm/nccl-triage/README.md",
    "helm/nccl-triage/values.schema.json",
]


def generate(schema, read):
    """{path: new text} for every target, reading the current text with read(path)."""
    out = {}
    p = "docs/configuration.md"
    out[p] = replace_block(read(p), "config-keys", config_table(schema), p)
    p = "docs/checks.md"
    out[p] = replace_block(read(p), "host-checks", checks_table(schema), p)
    p = "docs/metrics.md"
    text = replace_block(read(p), "agent-metrics", metrics_table(schema, "agent"), p)
    out[p] = replace_block(text, "coordinator-metrics", metrics_table(schema, "coordinator"), p)
    p = "helm/nccl-triage/values.yaml"
    out[p] = values_yaml(read(p), schema, p)
    r = "helm/nccl-triage/README.md"
    out[r] = replace_block(read(r), "chart-config", chart_readme_table(schema, out[p], p), r)
    p = "helm/nccl-triage/values.schema.json"
    out[p] = values_schema(read(p), schema, p)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schema", required=True, help="the output of nccl-triage-server dump-schema")
    ap.add_argument("--source", required=True, help="the repository to read the targets from")
    ap.add_argument("--out", help="where to write them (default: --source)")
    args = ap.parse_args()
    out_dir = args.out or args.source
    try:
        with open(args.schema, encoding="utf-8") as f:
            schema = json.load(f)
        if schema.get("schema") != "nccl-triage/schema/v1":
            raise GenError("%s: not an nccl-triage/schema/v1 document" % args.schema)

        def read(path):
            with open(os.path.join(args.source, path), encoding="utf-8") as f:
                return f.read()

        files = generate(schema, read)
    except (OSError, ValueError, KeyError, GenError) as e:
        print("gen_docs: %s" % e, file=sys.stderr)
        return 1
    for path, text in files.items():
        dest = os.path.join(out_dir, path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The release's SBOM (SPDX 2.3, JSON) from what the binaries load, and a check of its shape.

    scripts/sbom.py generate --version V --out FILE [--nccl-wheel nvidia-nccl-cu12==X.Y.Z]
                    [--compiled-in DEB_PACKAGE]... BINARY...
    scripts/sbom.py check FILE [--expect-package NAME]...

generate: each BINARY is a package (SHA256 of the file); `ldd` names the shared libraries it
loads, `dpkg -S` the Debian package that owns each and `dpkg-query` its version (purl
pkg:deb/debian/NAME@VERSION?arch=ARCH): one DYNAMIC_LINK relationship per library package.
--compiled-in names packages compiled into the binaries that ldd cannot see (header-only
libraries): STATIC_LINK. --nccl-wheel is the NCCL wheel the image's -nccl variant carries (the
Dockerfile's NCCL_WHEEL): a PyPI package contained in that image. Go tools used by the build and
the tests are in no binary and are not listed. The creation time is SOURCE_DATE_EPOCH when set.

check: the document has the SPDX 2.3 fields a consumer needs (version, data licence, namespace,
creation info, packages with unique SPDXIDs, names, versions and download locations), every
relationship names elements of the document, the document DESCRIBES at least one package, and
each --expect-package is present. Prints one line per problem; exit 1 when there is one.
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import urllib.parse

SPDXID = re.compile(r"^SPDXRef-[A-Za-z0-9.-]+$")


def spdx_id(kind: str, name: str) -> str:
    return "SPDXRef-" + kind + "-" + re.sub(r"[^A-Za-z0-9.-]", "-", name)


def ldd(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    paths = []
    for line in out.splitlines():
        m = re.match(r"^\s*(\S+)\s+=>\s+(/\S+)\s+\(", line) or re.match(r"^\s*(/\S+)\s+\(", line)
        if m:
            paths.append(m.group(m.lastindex))
    return paths


def owners(paths: list[str]) -> dict[str, str]:
    """The Debian package that ships each of PATHS (merged /usr: the path as given, its real path
    and each with /usr added or dropped), with one dpkg -S for all."""
    candidates: dict[str, list[str]] = {}
    for path in paths:
        c = [path, os.path.realpath(path)]
        c += [p[4:] if p.startswith("/usr/") else "/usr" + p for p in list(c)]
        candidates[path] = c
    every = sorted({p for c in candidates.values() for p in c})
    r = subprocess.run(["dpkg", "-S"] + every, capture_output=True, text=True)
    shipped: dict[str, str] = {}
    for line in r.stdout.splitlines():
        # "libfoo1:amd64: /usr/lib/x86_64-linux-gnu/libfoo.so.1" (diversions aside)
        if line.startswith("diversion ") or ": " not in line:
            continue
        pkg, where = line.split(": ", 1)
        shipped[where] = pkg.split(", ")[0]
    found = {}
    for path, c in candidates.items():
        for p in c:
            if p in shipped:
                found[path] = shipped[p]
                break
    return found


def deb_info(pkg: str) -> dict:
    fmt = "${Package}\t${Version}\t${Architecture}\t${source:Package}\t${Homepage}"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt, pkg], check=True, capture_output=True,
                         text=True).stdout
    name, version, arch, source, homepage = out.split("\t")
    return {"name": name, "version": version, "arch": arch, "source": source,
            "homepage": homepage}


def deb_package(info: dict) -> dict:
    q = urllib.parse.quote
    purl = (f"pkg:deb/debian/{q(info['name'], safe='')}@{q(info['version'], safe='')}"
            f"?arch={info['arch']}&distro=debian-12")
    pkg = {
        "SPDXID": spdx_id("deb", info["name"] + "-" + info["arch"]),
        "name": info["name"],
        "versionInfo": info["version"],
        "supplier": "Organization: Debian",
        "downloadLocation": "NOASSERTION",
        "filesAnalyzed": False,
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": "NOASSERTION",
        "copyrightText": "NOASSERTION",
        "sourceInfo": f"Debian source package {info['source']}",
        "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                          "referenceLocator": purl}],
    }
    if info["homepage"]:
        pkg["homepage"] = info["homepage"]
    return pkg


def generate(args: argparse.Namespace) -> int:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    now = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
           else datetime.datetime.now(datetime.timezone.utc))
    packages, relationships, digests = [], [], []
    debs: dict[str, dict] = {}
    for binary in args.binaries:
        with open(binary, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        digests.append(digest)
        name = os.path.basename(binary)
        bid = spdx_id("bin", name)
        packages.append({
            "SPDXID": bid, "name": name, "versionInfo": args.version,
            "packageFileName": name, "primaryPackagePurpose": "APPLICATION",
            "supplier": "Organization: nccl-triage", "downloadLocation": "NOASSERTION",
            "filesAnalyzed": False, "licenseConcluded": "NOASSERTION",
            "licenseDeclared": "NOASSERTION", "copyrightText": "NOASSERTION",
            "checksums": [{"algorithm": "SHA256", "checksumValue": digest}],
        })
        relationships.append({"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
                              "relatedSpdxElement": bid})
        libs = ldd(binary)
        found = owners(libs)
        for lib in libs:
            if lib not in found:
                print(f"sbom: no Debian package owns {lib} (loaded by {name})", file=sys.stderr)
                return 1
        linked = set(found.values())
        for pkg, kind in [(p, "DYNAMIC_LINK") for p in sorted(linked)] + \
                         [(p, "STATIC_LINK") for p in args.compiled_in]:
            if pkg not in debs:
                debs[pkg] = deb_package(deb_info(pkg))
            relationships.append({"spdxElementId": bid, "relationshipType": kind,
                                  "relatedSpdxElement": debs[pkg]["SPDXID"]})
    packages += [debs[k] for k in sorted(debs)]
    if args.nccl_wheel:
        m = re.fullmatch(r"(nvidia-nccl-cu1[23])==([0-9][0-9A-Za-z.]*)", args.nccl_wheel)
        if not m:
            print(f"sbom: --nccl-wheel must be nvidia-nccl-cuNN==X.Y.Z, not {args.nccl_wheel}",
                  file=sys.stderr)
            return 1
        wid = spdx_id("pypi", m.group(1))
        image = spdx_id("image", f"nccl-triage-{args.version}-nccl")
        packages.append({
            "SPDXID": image, "name": f"nccl-triage image {args.version}-nccl",
            "versionInfo": f"{args.version}-nccl", "primaryPackagePurpose": "CONTAINER",
            "supplier": "Organization: nccl-triage", "downloadLocation": "NOASSERTION",
            "filesAnalyzed": False, "licenseConcluded": "NOASSERTION",
            "licenseDeclared": "NOASSERTION", "copyrightText": "NOASSERTION",
            "comment": "the image built with the Dockerfile's NCCL_WHEEL; the image without NCCL "
                       "contains the binaries and their Debian packages only",
        })
        packages.append({
            "SPDXID": wid, "name": m.group(1), "versionInfo": m.group(2),
            "supplier": "Organization: NVIDIA", "primaryPackagePurpose": "LIBRARY",
            "downloadLocation": f"https://pypi.org/project/{m.group(1)}/{m.group(2)}/",
            "filesAnalyzed": False, "licenseConcluded": "NOASSERTION",
            "licenseDeclared": "LicenseRef-NVIDIA-NCCL", "copyrightText": "NOASSERTION",
            "comment": "only libnccl.so.2 and the licence are kept, in /opt/nccl-triage/nccl",
            "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                              "referenceLocator": f"pkg:pypi/{m.group(1)}@{m.group(2)}"}],
        })
        relationships.append({"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
                              "relatedSpdxElement": image})
        relationships.append({"spdxElementId": image, "relationshipType": "CONTAINS",
                              "relatedSpdxElement": wid})
        for binary in args.binaries:
            relationships.append({"spdxElementId": image, "relationshipType": "CONTAINS",
                                  "relatedSpdxElement": spdx_id("bin", os.path.basename(binary))})
    doc = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": f"nccl-triage-{args.version}",
        "documentNamespace": "https://spdx.org/spdxdocs/nccl-triage-" + args.version + "-" +
                             hashlib.sha256("".join(digests).encode()).hexdigest()[:32],
        "creationInfo": {"created": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "creators": ["Tool: nccl-triage-scripts/sbom.py"]},
        "packages": packages,
        "relationships": relationships,
    }
    if args.nccl_wheel:
        doc["hasExtractedLicensingInfos"] = [{
            "licenseId": "LicenseRef-NVIDIA-NCCL", "name": "NCCL licence (in the wheel)",
            "extractedText": "See NCCL-LICENSE.txt in /opt/nccl-triage/nccl of the image."}]
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return 0


def problems(doc: object, expect: list[str]) -> list[str]:
    if not isinstance(doc, dict):
        return ["the document is not a JSON object"]
    errs = []
    for key, want in [("spdxVersion", "SPDX-2.3"), ("dataLicense", "CC0-1.0"),
                      ("SPDXID", "SPDXRef-DOCUMENT")]:
        if doc.get(key) != want:
            errs.append(f"{key} is {doc.get(key)!r}, not {want!r}")
    for key in ("name", "documentNamespace"):
        if not isinstance(doc.get(key), str) or not doc.get(key):
            errs.append(f"{key} missing or empty")
    if not re.match(r"^[a-z]+://", str(doc.get("documentNamespace", ""))):
        errs.append("documentNamespace is not a URI")
    ci = doc.get("creationInfo")
    if not isinstance(ci, dict) or not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ",
                                                    str(ci.get("created", ""))) \
            or not isinstance(ci.get("creators"), list) or not ci.get("creators"):
        errs.append("creationInfo needs created (YYYY-MM-DDThh:mm:ssZ) and creators")
    pkgs = doc.get("packages")
    if not isinstance(pkgs, list) or not pkgs:
        return errs + ["packages missing or empty"]
    ids = {"SPDXRef-DOCUMENT"}
    names = set()
    for i, p in enumerate(pkgs):
        if not isinstance(p, dict):
            errs.append(f"packages[{i}] is not an object")
            continue
        sid = p.get("SPDXID", "")
        if not SPDXID.match(str(sid)):
            errs.append(f"packages[{i}] SPDXID {sid!r} is not SPDXRef-[A-Za-z0-9.-]+")
        if sid in ids:
            errs.append(f"packages[{i}] SPDXID {sid!r} is not unique")
        ids.add(sid)
        for key in ("name", "versionInfo", "downloadLocation"):
            if not isinstance(p.get(key), str) or not p.get(key):
                errs.append(f"packages[{i}] ({p.get('name')}) has no {key}")
        if "filesAnalyzed" in p and not isinstance(p["filesAnalyzed"], bool):
            errs.append(f"packages[{i}] filesAnalyzed is not a boolean")
        for ref in p.get("externalRefs", []):
            if ref.get("referenceType") == "purl" and \
                    not str(ref.get("referenceLocator", "")).startswith("pkg:"):
                errs.append(f"packages[{i}] purl {ref.get('referenceLocator')!r} is not pkg:...")
        names.add(p.get("name"))
    rels = doc.get("relationships")
    if not isinstance(rels, list) or not rels:
        return errs + ["relationships missing or empty"]
    describes = 0
    for i, r in enumerate(rels):
        for key in ("spdxElementId", "relatedSpdxElement"):
            if r.get(key) not in ids:
                errs.append(f"relationships[{i}] {key} {r.get(key)!r} names no element")
        if not re.fullmatch(r"[A-Z_]+", str(r.get("relationshipType", ""))):
            errs.append(f"relationships[{i}] relationshipType {r.get('relationshipType')!r}")
        describes += r.get("spdxElementId") == "SPDXRef-DOCUMENT" and \
            r.get("relationshipType") == "DESCRIBES"
    if not describes:
        errs.append("the document DESCRIBES no package")
    errs += [f"no package named {n}" for n in expect if n not in names]
    return errs


def check(args: argparse.Namespace) -> int:
    try:
        with open(args.file, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"sbom: {args.file}: {e}")
        return 1
    errs = problems(doc, args.expect_package)
    for e in errs:
        print(f"sbom: {args.file}: {e}")
    return 1 if errs else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--version", required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--nccl-wheel", default="")
    g.add_argument("--compiled-in", action="append", default=[])
    g.add_argument("binaries", nargs="+")
    c = sub.add_parser("check")
    c.add_argument("file")
    c.add_argument("--expect-package", action="append", default=[])
    args = ap.parse_args()
    return generate(args) if args.cmd == "generate" else check(args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""manifest.tsv (this directory) -> DIR/expected.jsonl, for bench/qr-accuracy --corpus DIR.

Usage: expected.py DIR [--photos-only]

DIR holds the images at the manifest's paths (<project>/<path in that repository at the commit named in the
manifest's source column>). Families: BoofCV's categories (qrcodes_v3, vendored by paulmillr/qr-code-vectors)
and one per other project. The manifest's expectations are quoted from each project's own tests (file:line in
the expectation_from column), never from running a decoder here.
"""
import base64
import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def family(path):
    parts = path.split("/")
    if parts[0] == "qr-code-vectors" and "detection" in parts:
        return "boofcv-" + parts[parts.index("detection") + 1]
    return parts[0]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out, photos_only = sys.argv[1], "--photos-only" in sys.argv[2:]
    rows = list(csv.DictReader(open(os.path.join(HERE, "manifest.tsv"), encoding="utf-8"), delimiter="\t"))
    listed = {}
    for r in rows:
        listed[r["path"]] = listed.get(r["path"], 0) + 1
    lines = []
    for i, r in enumerate(rows):
        if photos_only and r["is_real_photo"] != "yes":
            continue
        if not os.path.exists(os.path.join(out, r["path"])):
            sys.exit(f"expected.py: {r['path']} is not in {out}")
        raw = base64.b64decode(r["expected_b64"])
        entry = {"file": r["path"], "family": family(r["path"]), "index": i, "severity": ""}
        try:
            entry["payload"] = raw.decode("utf-8")
        except UnicodeDecodeError:
            entry["payloadBase64"] = r["expected_b64"]
        codes = int(r["codes_in_image"]) if r["codes_in_image"].isdigit() else 1
        if codes > listed[r["path"]]:
            entry["partial"] = True
        lines.append(json.dumps(entry, ensure_ascii=False))
    with open(os.path.join(out, "expected.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} expectations for {len({json.loads(l)['file'] for l in lines})} images", file=sys.stderr)


if __name__ == "__main__":
    main()

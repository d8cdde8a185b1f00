#!/usr/bin/env python3
"""Scores QR decoders on the corpus of generate.py, per family, in one run (bench/qr-accuracy runs this).

Usage: score.py BIN_DIR [--keep DIR | --corpus DIR] [--sample] [--seed N] [--rotations] [--out DIR] [--no-per-file]

--corpus scores any directory with an expected.jsonl of {"file", "payload"} lines ("family", "index" and
"severity" optional): the generated corpus, or real photographs with known payloads (bench/qr-corpus/real-photos
builds one from other decoder projects' test data; such sets are kept outside the tree). "payloadBase64" stands
for "payload" when the expected bytes are not UTF-8 (Shift_JIS without ECI). An image with several codes has one
line per known code; "partial": true says the image holds codes whose payloads are not known, so another
symbol found there is not counted as a misread. A symbol matches by its bytes or by its decoded text.
--rotations scores every image at 0, 90, 180 and 270 degrees (rotated copies, lossless for PNG/PPM, JPEG at
quality 95), with a table per rotation.

A decoder reads an image when one of the symbols it reports is, byte for byte, the expected payload;
a symbol with other bytes is counted as a misread (ZXing-C++: its ECI-decoded text, or its raw bytes). Decoders: sl-qr decode (one call for all files,
and one process per file - both must agree), zbarimg --raw -q (one process per file), ZXing-C++
(zxingcpp.read_barcodes, defaults), OpenCV QRCodeDetector.detectAndDecode and, when this OpenCV has
the contrib module, WeChatQRCode without its CNN model files (its classic detector).
Writes OUT/qr-accuracy.md (the tables) and OUT/qr-accuracy.json (every image's result).
"""
import argparse
import base64
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import cv2
import zxingcpp

HERE = os.path.dirname(os.path.abspath(__file__))


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Clock:
    """Wall and CPU time of a block, the CPU of this process and of the children it waited for."""
    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time() + children_cpu()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() + children_cpu() - self.cpu


def sl_qr_records(out):
    """sl-qr decode --jsonl output -> {file: [bytes, ...]}, plus timed-out files and attempts used."""
    found, timed_out, attempts = {}, set(), {}
    for line in out.splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        f = rec["file"]
        found.setdefault(f, [])
        if rec.get("timedOut"):
            timed_out.add(f)
        if "bytesBase64" in rec:
            found[f].append(base64.b64decode(rec["bytesBase64"]))
        if rec.get("text") is not None and rec["text"].encode() not in found[f]:
            found[f].append(rec["text"].encode())     # the text after ECI / charset handling
        if "attempt" in rec and ("bytesBase64" in rec or rec.get("text") is not None):
            attempts.setdefault(f, rec["attempt"])
    return found, timed_out, attempts


def run_sl_qr_batch(sl, paths, jobs=None):
    cmd = [sl, "decode", "--jsonl", "--show-secrets"] + (["-j", str(jobs)] if jobs else []) + paths
    with Clock() as c:
        p = subprocess.run(cmd, capture_output=True)
    if p.returncode not in (0, 8, 12):
        sys.exit(f"score.py: {' '.join(cmd[:5])} … exited {p.returncode}: {p.stderr.decode()[-2000:]}")
    found, timed_out, attempts = sl_qr_records(p.stdout.decode())
    return found, timed_out, attempts, c


def run_sl_qr_per_file(sl, paths):
    found, timed_out = {}, set()
    with Clock() as c:
        for path in paths:
            p = subprocess.run([sl, "decode", "--jsonl", "--show-secrets", path], capture_output=True)
            f, t, _ = sl_qr_records(p.stdout.decode())
            found.update(f)
            timed_out |= t
    return found, timed_out, c


def run_zbarimg(paths):
    found = {}
    with Clock() as c:
        for path in paths:
            p = subprocess.run(["zbarimg", "--raw", "-q", path], capture_output=True)
            found[path] = [line for line in p.stdout.split(b"\n") if line]
    return found, c


def run_in_process(decode, paths):
    found = {}
    with Clock() as c:
        for path in paths:
            img = cv2.imread(path, cv2.IMREAD_COLOR)
            try:
                found[path] = decode(img)
            except cv2.error:
                found[path] = []
            except UnicodeDecodeError:            # OpenCV's bindings hand back bytes that are not UTF-8
                found[path] = [b"\0not UTF-8"]
    return found, c


def zxing_decode(img):
    out = []
    for b in zxingcpp.read_barcodes(img, formats=zxingcpp.BarcodeFormat.QRCode):
        out.append(b.text.encode())               # the text after ECI / charset handling
        if b.bytes and b.bytes != out[-1]:
            out.append(b.bytes)                   # and the raw bytes, when they differ
    return out


def opencv_decoder():
    det = cv2.QRCodeDetector()

    def decode(img):
        text, _, _ = det.detectAndDecode(img)
        return [text.encode()] if text else []
    return decode


def wechat_decoder():
    if not hasattr(cv2, "wechat_qrcode_WeChatQRCode"):
        return None
    det = cv2.wechat_qrcode_WeChatQRCode()

    def decode(img):
        texts, _ = det.detectAndDecode(img)
        return [t.encode() for t in texts]
    return decode


def verdict(found, payload, known=None, complete=True):
    """ok: a symbol is the payload; misread: a symbol is none of the image's known payloads, and the list of
    them is complete; none: otherwise."""
    if payload in found:
        return "ok"
    known = known or {payload}
    return "misread" if complete and any(f not in known for f in found) else "none"


def want(e):
    return base64.b64decode(e["payloadBase64"]) if "payloadBase64" in e else e["payload"].encode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bin_dir")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--keep", metavar="DIR", help="generate the corpus into DIR and keep it")
    g.add_argument("--corpus", metavar="DIR", help="score an existing corpus (DIR/expected.jsonl)")
    ap.add_argument("--sample", action="store_true", help="one moderate image per family")
    ap.add_argument("--seed", type=int, help="another corpus than the default seed's (a held-out check)")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "out"))
    ap.add_argument("--no-per-file", action="store_true", help="skip the one-process-per-file sl-qr run")
    ap.add_argument("--rotations", action="store_true", help="score every image at 0, 90, 180 and 270 degrees")
    args = ap.parse_args()
    sl = os.path.join(args.bin_dir, "sl-qr")
    if not os.access(sl, os.X_OK):
        sys.exit(f"score.py: no executable {sl}")
    for tool in ("zbarimg", "qrencode"):
        if not shutil.which(tool):
            sys.exit(f"score.py: {tool} is not installed (scripts/bootstrap installs it)")

    tmp = tempfile.mkdtemp(prefix="qr-corpus.")
    home = os.path.join(tmp, "home")
    os.environ["STARLINE_HOME"] = home                # no user profile or chat base in the way
    os.environ.pop("STARLINE_PROFILE", None)
    os.environ.pop("STARLINE_CHAT_BASE_URL", None)
    try:
        corpus = args.corpus or args.keep or os.path.join(tmp, "corpus")
        if not args.corpus:
            gen = [sys.executable, os.path.join(HERE, "generate.py"), corpus] + (["--sample"] if args.sample else []) \
                + (["--seed", str(args.seed)] if args.seed is not None else [])
            with Clock() as c:
                subprocess.run(gen, check=True)
            print(f"corpus generated in {c.wall:.1f} s", file=sys.stderr)
        if args.rotations:
            corpus = rotated(corpus, os.path.join(tmp, "rotated"))
        score(args, sl, corpus)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def rotated(corpus, out):
    """A corpus of every image of `corpus` at 0, 90, 180 and 270 degrees (clockwise), each entry with its
    "rotation"; the family is kept, so the per-family table counts every rotation of it."""
    import cv2
    os.makedirs(out, exist_ok=True)
    turns = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}
    lines, written = [], set()
    for i, line in enumerate(open(os.path.join(corpus, "expected.jsonl"), encoding="utf-8")):
        e = json.loads(line)
        stem, ext = os.path.splitext(e["file"])
        if e["file"] not in written:               # an image with several listed codes is rotated once
            written.add(e["file"])
            image = cv2.imread(os.path.join(corpus, e["file"]), cv2.IMREAD_UNCHANGED)
            if image is None:
                sys.exit(f"score.py: cannot read {e['file']} to rotate it")
            for degrees in (0, 90, 180, 270):
                name = f"{stem}@{degrees}{ext}"
                os.makedirs(os.path.dirname(os.path.join(out, name)) or out, exist_ok=True)
                copy = image if degrees == 0 else cv2.rotate(image, turns[degrees])
                params = [cv2.IMWRITE_JPEG_QUALITY, 95] if ext.lower() in (".jpg", ".jpeg") else []
                cv2.imwrite(os.path.join(out, name), copy, params)
        for degrees in (0, 90, 180, 270):
            lines.append(json.dumps(dict(e, file=f"{stem}@{degrees}{ext}", rotation=degrees, index=e.get("index", i))))
    with open(os.path.join(out, "expected.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return out


def score(args, sl, corpus):
    expected = [json.loads(line) for line in open(os.path.join(corpus, "expected.jsonl"), encoding="utf-8")]
    # A manifest of someone's photographs may give only file and payload.
    for i, e in enumerate(expected):
        e.setdefault("family", "photos")
        e.setdefault("index", i)
        e.setdefault("severity", "")
    paths = [os.path.join(corpus, e["file"]) for e in expected]
    # Each image once to every decoder, however many of its codes are listed.
    unique = list(dict.fromkeys(paths))
    known, complete = {}, {}
    for e, path in zip(expected, paths):
        known.setdefault(path, set()).add(want(e))
        complete[path] = complete.get(path, True) and not e.get("partial", False)
    version = subprocess.run([sl, "--version"], capture_output=True, text=True).stdout.strip()

    results, times, notes = {}, {}, []
    print(f"sl-qr decode, one call for {len(unique)} files …", file=sys.stderr)
    found, timed_out, attempts, c = run_sl_qr_batch(sl, unique)
    results["sl-qr"], times["sl-qr decode, one call (-j default)"] = found, c
    if timed_out:
        notes.append(f"sl-qr: {len(timed_out)} images hit --image-timeout: "
                     + ", ".join(sorted(os.path.basename(f) for f in timed_out)))
    print("sl-qr decode -j 1, one call …", file=sys.stderr)
    found1, _, _, c = run_sl_qr_batch(sl, unique, jobs=1)
    times["sl-qr decode -j 1, one call"] = c
    compare_runs(expected, paths, found, found1, "-j 1", notes)
    if not args.no_per_file:
        print("sl-qr decode, one process per file …", file=sys.stderr)
        found_pf, _, c = run_sl_qr_per_file(sl, unique)
        times["sl-qr decode, one process per file"] = c
        compare_runs(expected, paths, found, found_pf, "one process per file", notes)
    print("ZXing-C++ …", file=sys.stderr)
    results["ZXing-C++"], times["ZXing-C++ (zxingcpp, in process)"] = run_in_process(zxing_decode, unique)
    print("zbarimg …", file=sys.stderr)
    results["zbarimg"], times["zbarimg --raw -q, one process per file"] = run_zbarimg(unique)
    print("OpenCV …", file=sys.stderr)
    results["OpenCV"], times["OpenCV QRCodeDetector (in process)"] = run_in_process(opencv_decoder(), unique)
    wechat = wechat_decoder()
    if wechat:
        print("OpenCV WeChat …", file=sys.stderr)
        results["WeChat†"], times["OpenCV WeChatQRCode, no CNN models (in process)"] = run_in_process(wechat, unique)

    decoders = list(results)
    per_image = []
    for e, path in zip(expected, paths):
        expected_bytes = want(e)
        row = {"file": e["file"], "family": e["family"], "index": e["index"], "severity": e["severity"],
               "rotation": e.get("rotation", 0)}
        for d in decoders:
            row[d] = verdict(results[d].get(path, []), expected_bytes, known[path], complete[path])
        row["sl-qr attempt"] = attempts.get(path)
        per_image.append(row)

    md = report(per_image, decoders, times, notes, version, len(paths), len(unique))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "qr-accuracy.md"), "w", encoding="utf-8") as f:
        f.write(md)
    with open(os.path.join(args.out, "qr-accuracy.json"), "w", encoding="utf-8") as f:
        json.dump({"slQrVersion": version, "images": per_image,
                   "times": {k: {"wall": round(v.wall, 3), "cpu": round(v.cpu, 3)} for k, v in times.items()}}, f, indent=1)
    print(md)


def compare_runs(expected, paths, a, b, name, notes):
    diff = [e["file"] for e, p in zip(expected, paths)
            if (want(e) in a.get(p, [])) != (want(e) in b.get(p, []))]
    if diff:
        notes.append(f"sl-qr {name} differs from the one-call run on {len(diff)} images: " + ", ".join(diff))


def report(per_image, decoders, times, notes, version, total, images):
    families = list(dict.fromkeys(r["family"] for r in per_image))
    lines = [f"{total} images, {len(families)} families; {version}", "",
             "| family | N | " + " | ".join(decoders) + " |", "|---|---|" + "---|" * len(decoders)]
    for fam in families:
        rows = [r for r in per_image if r["family"] == fam]
        counts = [sum(r[d] == "ok" for r in rows) for d in decoders]
        best = max(counts)
        cells = [f"**{c}**" if c == best else str(c) for c in counts]
        lines.append(f"| {fam} | {len(rows)} | " + " | ".join(cells) + " |")
    totals = [sum(r[d] == "ok" for r in per_image) for d in decoders]
    lines.append(f"| **total** | {total} | " + " | ".join(f"**{t}**" for t in totals) + " |")
    mis = [sum(r[d] == "misread" for r in per_image) for d in decoders]
    lines.append("| misreads (other bytes) | | " + " | ".join(str(m) for m in mis) + " |")
    rotations = sorted({r["rotation"] for r in per_image})
    if len(rotations) > 1:
        lines += ["", "Per rotation (clockwise):", "", "| rotation | N | " + " | ".join(decoders) + " |",
                  "|---|---|" + "---|" * len(decoders)]
        for degrees in rotations:
            rows = [r for r in per_image if r["rotation"] == degrees]
            counts = [sum(r[d] == "ok" for r in rows) for d in decoders]
            misreads = [sum(r[d] == "misread" for r in rows) for d in decoders]
            lines.append(f"| {degrees}° | {len(rows)} | " + " | ".join(
                f"{c}" + (f" ({m} misread)" if m else "") for c, m in zip(counts, misreads)) + " |")

    lines += ["", "Per image, easy to hard (● read, ○ not, ✗ misread):", "", "```"]
    mark = {"ok": "●", "none": "○", "misread": "✗"}
    width = max(len(d) for d in decoders)
    for fam in families:
        rows = sorted((r for r in per_image if r["family"] == fam), key=lambda r: r["index"])
        for d in decoders:
            lines.append(f"{fam:<20} {d:<{width}} " + "".join(mark[r[d]] for r in rows))
    lines.append("```")

    lines += ["", "| decoder run | wall s | CPU s | ms per image (wall) |", "|---|---|---|---|"]
    for k, c in times.items():
        lines.append(f"| {k} | {c.wall:.1f} | {c.cpu:.1f} | {1000 * c.wall / images:.0f} |")

    others = [d for d in decoders if d != "sl-qr"]
    missed = [r for r in per_image if r["sl-qr"] != "ok" and any(r[d] == "ok" for d in others)]
    lines += ["", f"Images sl-qr misses that another decoder reads ({len(missed)}):", ""]
    for r in missed:
        who = ", ".join(d for d in others if r[d] == "ok")
        lines.append(f"- {r['file']} (severity {r['severity']}): {who}")
    only = [r["file"] for r in per_image if r["sl-qr"] == "ok" and all(r[d] != "ok" for d in others)]
    lines += ["", f"Images only sl-qr reads ({len(only)}): " + (", ".join(only) if only else "none")]
    used = {}
    for r in per_image:
        if r["sl-qr attempt"] is not None:
            used[r["sl-qr attempt"]] = used.get(r["sl-qr attempt"], 0) + 1
    lines += ["", "sl-qr attempts that read the image: " + ", ".join(f"{k} {v}" for k, v in sorted(used.items()))]
    if "WeChat†" in decoders:
        lines += ["", "† OpenCV's WeChatQRCode (opencv-contrib-python-headless) constructed without its CNN detector and "
                  "super-resolution model files (a separate download): its classic detector and ZXing-derived decoder."]
    lines += [""] + [f"Note: {n}" for n in notes]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

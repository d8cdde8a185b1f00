#!/usr/bin/env python3
"""Photo-like QR corpus for bench/qr-accuracy: 13 families x 20 images at rising severity.

Usage: generate.py OUT_DIR [--sample] [--seed N] [--families a,b]

The codes are made by encoders Starline did not write (segno, and the qrencode command line);
every image is a scene - a desk or a hand-held phone, clutter, a printed card or a phone screen -
photographed through a simple camera model: 3-D pose (perspective), optics (blur), exposure and
lighting, sensor noise, and the JPEG the phone writes. Each family turns one of those up from
easy (index 00) to beyond what some decoders read (index 19); the rest stays mild and random.

Deterministic: every image has its own random stream seeded from (seed, family, index), so
--sample (index 10 of each family) writes the very same images as the full corpus does. The
bytes depend on the OpenCV/numpy versions (interpolation, JPEG encoder); the payloads do not.

OUT_DIR/expected.jsonl: one line per image {"file","family","severity","index","payload",
"encoder","version","level","modulePx","params"}; payloads are UTF-8 text without newlines.
"""
import argparse
import json
import math
import os
import subprocess
import sys

import cv2
import numpy as np
import segno

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from photo import photo  # noqa: E402  (the camera model, next to this file)

COUNT = 20               # images per family
SAMPLE_INDEX = 10        # the "moderate" image of --sample
CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


# ---------------------------------------------------------------- payloads

def friend_code(rng):
    n = int(rng.choice([8, 10, 12, 16, 22, 32, 43]))
    return "".join(CODE_ALPHABET[i] for i in rng.randint(0, len(CODE_ALPHABET), n))


def payload(rng):
    """A realistic scanned string: mostly friend links (sl-qr friend), some notes with one."""
    r = rng.rand()
    if r < 0.62:
        return "https://chat.thestarline.cn/f/" + friend_code(rng)
    if r < 0.72:
        base = ["https://chat.example.org", "http://127.0.0.1:8080/chat", "https://starline.example.com/chat"]
        return base[rng.randint(len(base))] + "/f/" + friend_code(rng)
    if r < 0.92:
        who = ["Mei", "Ola", "Sam", "Priya", "Jonas", "Ana"][rng.randint(6)]
        note = ["add me on Starline", "scan to chat", "our group for the trip", "meetup table 7"][rng.randint(4)]
        return f"{who}: {note} https://chat.thestarline.cn/f/{friend_code(rng)}"
    unicode_notes = ["周五见 ☕ ", "Café Zürich — ", "Встреча в 18:00 ", "友達になろう "]
    return unicode_notes[rng.randint(len(unicode_notes))] + "https://chat.thestarline.cn/f/" + friend_code(rng)


def qr_matrix(text, level, rng):
    """Module matrix (True = dark) with a 4-module quiet zone; segno or the qrencode CLI."""
    ascii_only = all(ord(c) < 128 for c in text)
    if ascii_only and rng.rand() < 0.5:
        png = subprocess.run(["qrencode", "-l", level.upper(), "-t", "PNG", "-s", "1", "-m", "4", "-o", "-", text],
                             check=True, capture_output=True).stdout
        img = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_GRAYSCALE)
        version = (img.shape[0] - 8 - 17) // 4
        return img < 128, "qrencode", version
    if ascii_only:
        q = segno.make(text, error=level, micro=False, boost_error=False)
    else:   # UTF-8 in byte mode with its ECI designator, as phones write it (segno would pick Shift_JIS)
        q = segno.make(text, error=level, micro=False, boost_error=False, mode="byte", encoding="utf-8", eci=True)
    m = np.array([list(row) for row in q.matrix], dtype=bool)
    return np.pad(m, 4), "segno", q.version


# ---------------------------------------------------------------- families

def base_params(rng):
    """The mild, random part every image has: a hand-held phone a little off square."""
    paper = rng.uniform(0.82, 0.97)
    ink = rng.uniform(0.04, 0.16)
    tint = rng.uniform(-0.03, 0.03, 3)
    return {
        "module": rng.uniform(4.0, 6.0), "roll": rng.uniform(-8, 8), "pitch": rng.uniform(-6, 6),
        "yaw": rng.uniform(-6, 6), "dist": rng.uniform(2.5, 4.0), "paper": tuple(np.clip(paper + tint, 0, 1)),
        "ink": tuple(np.clip(ink + tint, 0, 1)), "blur": rng.uniform(0.35, 0.6), "vignette": rng.uniform(0.05, 0.2),
        "gradient": rng.uniform(0, 0.15), "shot": 0.002, "read": 0.005, "format": "jpg", "quality": 92,
        "shadow_card": True, "level": "m",
    }


def tilt_dir(rng, angle):
    a = rng.uniform(0, 2 * math.pi)
    return angle * math.cos(a), angle * math.sin(a)


def fam_tilt(p, t, rng):       # up to 72 degrees off the normal, phone close to the code
    p["pitch"], p["yaw"] = tilt_dir(rng, 8 + 64 * t)
    p["dist"] = 2.0 - 0.6 * t
    p["module"] = 5.0


def fam_rotation(p, t, rng):   # in-plane turn towards 45 degrees while the modules shrink (aliasing)
    p["roll"] = rng.choice([-1, 1]) * (3 + 42 * t) + 90 * rng.randint(4)
    p["module"] = 4.5 - 2.9 * t
    p["pitch"] = p["yaw"] = 0.0
    p["format"] = "png"
    p["blur"] = 0.35


def fam_gaussian_blur(p, t, rng):  # defocus: sigma from 0.12 to 0.52 of a module
    p["module"] = 5.0
    p["blur"] = p["module"] * (0.12 + 0.4 * t)


def fam_motion_blur(p, t, rng):    # hand shake: a streak of 0.3 to 2.0 modules
    p["module"] = 5.0
    p["motion"] = p["module"] * (0.3 + 1.7 * t)


def fam_noise(p, t, rng):          # dim room, high ISO: more noise, less light
    p["exposure"] = 1.0 - 0.6 * t
    p["gain"] = 1.0 / p["exposure"]
    p["shot"] = 0.002 + 0.045 * t
    p["read"] = 0.005 + 0.1 * t
    p["luma_noise"] = 0.09 * t
    p["module"] = 4.0
    p["quality"] = 95


def fam_light(p, t, rng):          # a hand's hard shadow across the code, a lamp's glare on glossy paper
    p["shadow"] = 0.15 + 0.4 * t
    p["penumbra"] = 4.0 - 2.0 * t
    p["gradient"] = 0.2 + 0.25 * t
    p["glare"] = 0.3 + 0.8 * t
    p["glare_radius"] = 0.08 + 0.11 * t
    p["glare_spots"] = 1 if t < 0.7 else 2
    p["module"] = 4.5


def fam_low_contrast(p, t, rng):   # faded print, grey ink on grey card, a dim screen
    paper = rng.uniform(0.55, 0.8)
    contrast = 0.45 * (1 - t) ** 1.6 + 0.04
    p["paper"] = (paper,) * 3
    p["ink"] = (paper - contrast,) * 3
    p["contrast"] = contrast
    p["module"] = 4.5
    p["read"] = 0.008


def fam_jpeg(p, t, rng):           # messengers re-compress photos: quality 45 down to 1, small modules
    p["quality"] = int(round(44 * (1 - t) ** 1.5 + 1))
    p["module"] = 3.0
    p["blur"] = 0.4


def fam_small(p, t, rng):          # far away or a thumbnail: 3 down to 1.3 pixels a module
    p["module"] = 3.0 - 1.7 * t
    p["blur"] = 0.4
    p["format"] = "png"


def fam_curved(p, t, rng):         # a label round a bottle or a cup: the code spans 20 to 100 degrees
    p["curve"] = 10 + 40 * t
    p["stripe"] = 0.15 + 0.35 * t
    p["module"] = 4.5
    p["pitch"] = rng.uniform(-12, 12)
    p["shadow_card"] = False


def fam_stickers(p, t, rng):       # an H-level code under stickers and price tags, 3 % to 16 % (at least)
    p["level"] = "h"
    p["stickers"] = 0.03 + 0.13 * t
    p["module"] = 4.5


def fam_light_on_dark(p, t, rng):  # dark-mode phone screen: light modules on black, glowing
    p["screen"] = True
    p["paper"] = (0.07, 0.07, 0.08)
    p["ink"] = (0.92, 0.93, 0.95)
    p["bloom"] = 0.1 + 1.5 * t
    p["bloom_sigma"] = 0.3 + 0.6 * t
    p["blur"] = 0.4 + 1.5 * t
    p["read"] = 0.006 + 0.035 * t
    p["module"] = 4.5
    p["shadow_card"] = False


def fam_phone_photo(p, t, rng):    # everything at once, each a little: a real hurried snapshot
    p["screen"] = rng.rand() < 0.5
    if p["screen"]:
        p["paper"], p["ink"], p["shadow_card"] = (0.93, 0.94, 0.95), (0.08, 0.08, 0.09), False
    p["pitch"], p["yaw"] = tilt_dir(rng, 5 + 30 * t)
    p["roll"] = rng.uniform(-180, 180)
    p["module"] = 5.0 - 1.6 * t
    p["blur"] = 0.4 + 0.6 * t
    p["motion"] = 2.2 * t
    p["exposure"] = 1.0 - 0.4 * t
    p["gain"] = 1.0 / p["exposure"]
    p["shot"] = 0.002 + 0.013 * t
    p["read"] = 0.005 + 0.025 * t
    p["gradient"] = 0.1 + 0.35 * t
    p["glare"] = 0.5 * t
    p["glare_radius"] = 0.12
    p["quality"] = int(90 - 50 * t)


FAMILIES = [
    ("tilt", fam_tilt), ("rotation", fam_rotation), ("gaussian-blur", fam_gaussian_blur),
    ("motion-blur", fam_motion_blur), ("sensor-noise", fam_noise), ("uneven-light-glare", fam_light),
    ("low-contrast", fam_low_contrast), ("heavy-jpeg", fam_jpeg), ("small-modules", fam_small),
    ("curved", fam_curved), ("stickers-h", fam_stickers), ("light-on-dark", fam_light_on_dark),
    ("phone-photo", fam_phone_photo),
]


def make_one(out_dir, seed, fi, name, fn, i):
    rng = np.random.RandomState([seed, fi, i])
    t = i / (COUNT - 1)
    p = base_params(rng)
    text = payload(rng)
    fn(p, t, rng)
    matrix, encoder, version = qr_matrix(text, p["level"], rng)
    img = photo(rng, np.random.default_rng([seed, fi, i]), matrix, p)
    fname = f"{name}-{i:02d}.{p['format']}"
    path = os.path.join(out_dir, fname)
    if p["format"] == "jpg":
        ok = cv2.imwrite(path, img, [cv2.IMWRITE_JPEG_QUALITY, int(p["quality"])])
    else:
        ok = cv2.imwrite(path, img, [cv2.IMWRITE_PNG_COMPRESSION, 3])
    if not ok:
        raise SystemExit(f"generate.py: cannot write {path}")
    keep = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in p.items()
            if k not in ("paper", "ink", "format", "level", "module")}
    return {"file": fname, "family": name, "severity": round(t, 3), "index": i, "payload": text,
            "encoder": encoder, "version": int(version), "level": p["level"].upper(),
            "modulePx": round(float(p["module"]), 2), "params": keep}


def plain(v):
    """numpy scalars in the manifest as plain JSON numbers and booleans."""
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(type(v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--sample", action="store_true", help=f"one moderate image per family (index {SAMPLE_INDEX})")
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--families", help="comma-separated subset of: " + ",".join(n for n, _ in FAMILIES))
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    chosen = FAMILIES
    if args.families:
        wanted = args.families.split(",")
        unknown = set(wanted) - {n for n, _ in FAMILIES}
        if unknown:
            ap.error("unknown families: " + ",".join(sorted(unknown)))
        chosen = [f for f in FAMILIES if f[0] in wanted]
    cv2.setNumThreads(1)          # the same pixels whatever the machine's core count
    records = []
    for name, fn in chosen:
        fi = [n for n, _ in FAMILIES].index(name)
        for i in ([SAMPLE_INDEX] if args.sample else range(COUNT)):
            records.append(make_one(args.out_dir, args.seed, fi, name, fn, i))
    with open(os.path.join(args.out_dir, "expected.jsonl"), "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, default=plain) + "\n")
    print(f"generate.py: {len(records)} images in {args.out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()

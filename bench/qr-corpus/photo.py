"""The camera model of generate.py: a QR card (paper or phone screen) placed in a scene and photographed.

photo(rng, noise, matrix, p) renders one W x H BGR image from a parameter dict:
  geometry  module (px per module, untilted), roll/pitch/yaw (degrees), dist (camera distance in card
            widths: smaller is stronger perspective), curve (half-angle of a cylinder the card is wrapped on)
  card      ink, paper (RGB 0..1), screen (a phone: bezel and pixel grid), stickers (fraction covered)
  light     exposure, gradient, vignette, shadow (depth) + penumbra (px), glare + glare_radius +
            glare_spots, stripe (specular band), bloom + bloom_sigma (a bright screen bleeding)
  optics    blur (Gaussian sigma, px), motion (streak length, px)
  sensor    shot, read (noise variances/σ on 0..1), luma_noise, gain
The code is drawn at SS x resolution inside its bounding box only and area-averaged down, so pixels
integrate light as a sensor does; the rest of the scene is drawn at the output resolution.
"""
import math

import cv2
import numpy as np

W, H = 800, 600          # output size: a phone photo as apps scale it before scanning
SS = 2                   # supersampling of the code's region
WORDS = ["Starline", "scan", "me", "add", "friend", "chat", "table", "7", "Mei", "Ola", "invite",
         "coffee", "Fri", "18:00", "room", "B2", "welcome", "hello", "meetup", "ticket"]


def clip(a, lo, hi):
    """np.clip without numpy 1.24's slow dispatch."""
    return np.minimum(np.maximum(a, lo), hi)


def make_card(matrix, cpx, rng, ink, paper, screen=False):
    """RGBA float32 image of the code on paper (with a printed line under it) or on a phone screen
    (bezel, pixel grid) at cpx pixels a module, and the code's box (x0, y0, x1, y1), quiet zone included."""
    n = matrix.shape[0]
    margin = int(rng.randint(1, 4)) * cpx
    below = cpx * 4
    if screen:
        margin += cpx * 3
        below = cpx * 6
    cw, ch = n * cpx + 2 * margin, n * cpx + 2 * margin + below
    card = np.empty((ch, cw, 4), np.float32)
    card[..., :3] = paper
    card[..., 3] = 1.0
    code = np.kron(matrix, np.ones((cpx, cpx), bool))
    x0, y0 = margin, margin
    card[y0:y0 + n * cpx, x0:x0 + n * cpx, :3][code] = ink
    if screen:
        bezel = np.ones((ch, cw), bool)
        bezel[cpx * 3:ch - cpx * 3, cpx * 3:cw - cpx * 3] = False
        card[bezel, :3] = (0.04, 0.04, 0.05)
        sp = max(2, cpx // 3)                     # three panel pixels a module, dark gaps: moire later
        grid = np.ones((ch, cw), np.float32)
        grid[::sp, :] *= 0.72
        grid[:, ::sp] *= 0.72
        card[..., :3] *= grid[..., None]
    else:
        text = " ".join(WORDS[i] for i in rng.randint(0, len(WORDS), 3))
        cv2.putText(card, text, (x0 + cpx * 4, y0 + n * cpx + int(cpx * 1.5)), cv2.FONT_HERSHEY_SIMPLEX,
                    cpx * 1.6 / 22.0, (*map(float, ink), 1.0), max(1, int(cpx / 4)), cv2.LINE_AA)
    return card, (x0, y0, x0 + n * cpx, y0 + n * cpx)


def add_stickers(card, box, cpx, coverage, rng):
    """Opaque stickers (labels, round logos) over the code but not its three finder patterns, until
    `coverage` of the symbol (quiet zone excluded) is hidden; returns the fraction hidden."""
    x0, y0, x1, y1 = box
    q = 4 * cpx
    cx0, cy0, cx1, cy1 = x0 + q, y0 + q, x1 - q, y1 - q
    side = cx1 - cx0
    fz = 8 * cpx                                  # finder pattern and its separator
    finders = [(cx0, cy0), (cx1 - fz, cy0), (cx0, cy1 - fz)]
    covered = np.zeros(card.shape[:2], bool)
    target = coverage * side * side
    for _ in range(300):
        if covered[cy0:cy1, cx0:cx1].sum() >= target:
            break
        w = int(side * rng.uniform(0.12, 0.3))
        h = int(side * rng.uniform(0.08, 0.25))
        x = int(rng.randint(cx0 - w // 3, cx1 - 2 * w // 3))
        y = int(rng.randint(cy0 - h // 3, cy1 - 2 * h // 3))
        if any(x < fx + fz and x + w > fx and y < fy + fz and y + h > fy for fx, fy in finders):
            continue
        mask = np.zeros(card.shape[:2], np.uint8)
        if rng.rand() < 0.5:
            cv2.rectangle(mask, (x, y), (x + w, y + h), 1, -1)
        else:
            cv2.ellipse(mask, (x + w // 2, y + h // 2), (w // 2, h // 2), 0, 0, 360, 1, -1)
        m = mask.astype(bool)
        color = rng.uniform(0.1, 1.0, 3)
        card[m, :3] = color
        if rng.rand() < 0.5:                        # a printed word or price on the sticker
            cv2.putText(card, WORDS[rng.randint(len(WORDS))], (x + 2, y + h * 2 // 3), cv2.FONT_HERSHEY_SIMPLEX,
                        max(0.3, h / 40.0), (*map(float, 1 - color), 1.0), max(1, h // 15), cv2.LINE_AA)
        covered |= m
    return float(covered[cy0:cy1, cx0:cx1].mean())


def pose_homography(src_w, src_h, width_px, center, roll, pitch, yaw, dist):
    """Homography from a src_w x src_h plane into the scene: the plane turned by roll/pitch/yaw (degrees),
    seen by a pinhole camera dist plane-widths away, scaled so that an untilted plane is width_px wide."""
    r, p, y = (math.radians(a) for a in (roll, pitch, yaw))
    rz = np.array([[math.cos(r), -math.sin(r), 0], [math.sin(r), math.cos(r), 0], [0, 0, 1]])
    rx = np.array([[1, 0, 0], [0, math.cos(p), -math.sin(p)], [0, math.sin(p), math.cos(p)]])
    ry = np.array([[math.cos(y), 0, math.sin(y)], [0, 1, 0], [-math.sin(y), 0, math.cos(y)]])
    rot = rz @ rx @ ry
    d = dist * src_w
    f = width_px / src_w * d
    src = np.float32([[0, 0], [src_w, 0], [src_w, src_h], [0, src_h]])
    dst = []
    for sx, sy in src:
        pt = rot @ np.array([sx - src_w / 2, sy - src_h / 2, 0.0])
        dst.append([center[0] + f * pt[0] / (d + pt[2]), center[1] + f * pt[1] / (d + pt[2])])
    dst = np.float32(dst)
    return cv2.getPerspectiveTransform(src, dst), dst


def cylinder_inverse(card_w, card_h, half_angle):
    """A card wrapped round a vertical cylinder so that its width spans +-half_angle degrees, seen from the
    front at 3 radii: the front view's size and the map front view (x, y) -> card (u, v) (NaN off it)."""
    a = math.radians(half_angle)
    radius = card_w / 2 / a
    d = 3 * radius
    phi = np.linspace(-a, a, 2048)
    xs = d * radius * np.sin(phi) / (d + radius * (1 - np.cos(phi)))   # monotonic for half_angle < 75
    fw = float(2 * xs[-1])

    def inverse(x, y):
        ph = np.interp(x - fw / 2, xs, phi, left=np.nan, right=np.nan)
        z = d + radius * (1 - np.cos(ph))
        return (radius * ph + card_w / 2).astype(np.float32), ((y - card_h / 2) * z / d + card_h / 2).astype(np.float32)
    return fw, float(card_h), inverse


def background(rng, w, h):
    """A desk, a sofa or a wall: a smooth colour field, streaks, and clutter (words, lines, boxes)."""
    base = (rng.uniform(0.15, 0.85) + rng.uniform(-0.12, 0.12, 3)).astype(np.float32)   # greyish, tinted
    bg = base + cv2.resize(rng.uniform(-0.15, 0.15, (4, 5, 3)).astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    if rng.rand() < 0.5:
        bg += cv2.resize(rng.uniform(-0.06, 0.06, (1, 60)).astype(np.float32), (w, h))[..., None]
    for _ in range(int(rng.randint(3, 10))):
        color = tuple(float(c) for c in rng.uniform(0, 1, 3))
        kind = rng.randint(3)
        x, y = int(rng.randint(w)), int(rng.randint(h))
        if kind == 0:
            cv2.putText(bg, " ".join(WORDS[i] for i in rng.randint(0, len(WORDS), 3)), (x, y),
                        cv2.FONT_HERSHEY_SIMPLEX, rng.uniform(0.4, 1.5), color, int(rng.randint(1, 4)), cv2.LINE_AA)
        elif kind == 1:
            cv2.line(bg, (x, y), (int(rng.randint(w)), int(rng.randint(h))), color, int(rng.randint(1, 6)), cv2.LINE_AA)
        else:
            cv2.rectangle(bg, (x, y), (x + int(rng.randint(10, 150)), y + int(rng.randint(10, 150))), color, -1)
    return clip(bg, 0, 1)


def motion_kernel(length, angle):
    size = max(3, int(math.ceil(length)) | 1)
    k = np.zeros((size, size), np.float32)
    c = size // 2
    dx, dy = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    for t in np.linspace(-length / 2, length / 2, max(2, int(length * 4))):
        k[int(round(c + t * dy)), int(round(c + t * dx))] += 1
    return k / k.sum()


def place_card(rng, card, box, n, p):
    """Warp the card into the scene at SS x inside its bounding box; returns the RGBA patch at output
    resolution, its top-left corner in the output, and the code's centre and width (output pixels)."""
    s = p["module"]
    ch, cw = card.shape[:2]
    width_px = s * n * SS * cw / (box[2] - box[0])       # the card's width, untilted, in SS pixels
    inverse = None
    plane_w, plane_h = cw, ch
    if p.get("curve"):
        plane_w, plane_h, inverse = cylinder_inverse(cw, ch, p["curve"])
        width_px *= plane_w / cw                         # the centre modules keep size s
    sw, sh = W * SS, H * SS
    half_w, half_h = width_px / 2, width_px * ch / cw / 2
    cx = rng.uniform(min(sw / 2, half_w + 8), max(sw / 2, sw - half_w - 8))
    cy = rng.uniform(min(sh / 2, half_h + 8), max(sh / 2, sh - half_h - 8))
    hom, quad = pose_homography(plane_w, plane_h, width_px, (cx, cy), p["roll"], p["pitch"], p["yaw"], p["dist"])
    # the bounding box of the card in SS pixels, clipped to the frame, on the output pixel grid
    x0 = max(0, int(quad[:, 0].min()) // SS * SS - SS)
    y0 = max(0, int(quad[:, 1].min()) // SS * SS - SS)
    x1 = min(sw, (int(quad[:, 0].max()) // SS + 2) * SS)
    y1 = min(sh, (int(quad[:, 1].max()) // SS + 2) * SS)
    gx, gy = np.meshgrid(np.arange(x0, x1, dtype=np.float32), np.arange(y0, y1, dtype=np.float32))
    inv = np.linalg.inv(hom).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = inv[2, 0] * gx + inv[2, 1] * gy + inv[2, 2]
        mx = (inv[0, 0] * gx + inv[0, 1] * gy + inv[0, 2]) / den
        my = (inv[1, 0] * gx + inv[1, 1] * gy + inv[1, 2]) / den
        if inverse is not None:
            mx, my = inverse(mx, my)
    mx = np.nan_to_num(mx, nan=-1e4, posinf=-1e4, neginf=-1e4)
    my = np.nan_to_num(my, nan=-1e4, posinf=-1e4, neginf=-1e4)
    minify = (box[2] - box[0]) / (s * n * SS)
    if minify > 1.5:                                     # anti-alias what supersampling does not absorb
        card = cv2.GaussianBlur(card, (0, 0), 0.4 * minify)
    patch = cv2.remap(card, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0, 0))
    patch = cv2.resize(patch, ((x1 - x0) // SS, (y1 - y0) // SS), interpolation=cv2.INTER_AREA)
    return patch, (x0 // SS, y0 // SS), (cx / SS, cy / SS), width_px / SS


def photo(rng, noise, matrix, p):
    """Render one image (BGR uint8) from the parameter dict p; rng draws the scene, noise the sensor."""
    n = matrix.shape[0]
    s = p["module"]
    cpx = int(max(4, min(12, round(s * SS * 1.25))))
    if p.get("screen"):
        cpx = max(cpx, 9)
    card, box = make_card(matrix, cpx, rng, p["ink"], p["paper"], screen=p.get("screen", False))
    if p.get("stickers"):
        p["covered"] = round(add_stickers(card, box, cpx, p["stickers"], rng), 3)
    patch, (px, py), (cx, cy), width = place_card(rng, card, box, n, p)

    img = background(rng, W, H)
    ph, pw = patch.shape[:2]
    alpha = patch[..., 3:4]
    on_card = np.pad(alpha[..., 0], ((py, H - py - ph), (px, W - px - pw)))
    if p.get("shadow_card"):                         # soft contact shadow of a card lying on the desk
        img *= 1 - 0.25 * cv2.GaussianBlur(on_card, (0, 0), 6)[..., None]
    region = img[py:py + ph, px:px + pw]
    region[...] = region * (1 - alpha) + patch[..., :3] * alpha

    # Lighting: exposure, a gradient, vignetting, a cast shadow, glare, a specular stripe.
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    light = np.full((H, W), p.get("exposure", 1.0), np.float32)
    if p.get("gradient"):
        a = rng.uniform(0, 2 * math.pi)
        ramp = ((xx - W / 2) * math.cos(a) + (yy - H / 2) * math.sin(a)) / (W / 2)
        light *= 1 - p["gradient"] * (0.5 + 0.5 * clip(ramp, -1, 1))
    light *= 1 - p.get("vignette", 0.15) * (((xx - W / 2) ** 2 + (yy - H / 2) ** 2) / (W / 2) ** 2)
    if p.get("shadow"):
        a = rng.uniform(0, 2 * math.pi)
        line = (xx - cx) * math.cos(a) + (yy - cy) * math.sin(a) - rng.uniform(-0.15, 0.15) * width
        light *= 1 - p["shadow"] / (1 + np.exp(clip(-line / p.get("penumbra", 3.0), -50, 50)))
    img *= light[..., None]
    for _ in range(p.get("glare_spots", 1) if p.get("glare") else 0):
        rad = p["glare_radius"] * width
        centre = (int(cx + rng.uniform(-0.3, 0.3) * width), int(cy + rng.uniform(-0.3, 0.3) * width))
        blob = np.zeros((H, W), np.float32)
        cv2.ellipse(blob, centre, (int(rad), int(rad * rng.uniform(0.4, 0.9))), rng.uniform(0, 180), 0, 360, 1.0, -1)
        img += p["glare"] * cv2.GaussianBlur(blob, (0, 0), rad * 0.35 + 1)[..., None]
    if p.get("stripe"):
        sx = cx + rng.uniform(-0.25, 0.25) * width
        img += p["stripe"] * (on_card * np.exp(-((xx - sx) / (0.06 * width)) ** 2))[..., None]
    img = clip(img, 0, 1.2)
    if p.get("bloom"):
        img += p["bloom"] * cv2.GaussianBlur(np.maximum(img - 0.5, 0), (0, 0), max(0.5, p["bloom_sigma"] * s))

    # Optics: lens softness or defocus, then hand shake.
    if p.get("blur", 0) > 0:
        img = cv2.GaussianBlur(img, (0, 0), p["blur"])
    if p.get("motion"):
        img = cv2.filter2D(img, -1, motion_kernel(p["motion"], rng.uniform(0, 180)), borderType=cv2.BORDER_REFLECT)

    # Sensor: shot noise grows with the signal, read noise does not; luma noise is shared by the channels.
    std = np.sqrt(p.get("shot", 0.004) * np.maximum(img, 0) + p.get("read", 0.006) ** 2)
    img += std * noise.standard_normal(img.shape, dtype=np.float32)
    if p.get("luma_noise"):
        img += p["luma_noise"] * noise.standard_normal((H, W, 1), dtype=np.float32)
    return clip(img * (p.get("gain", 1.0) * 255) + 0.5, 0, 255).astype(np.uint8)

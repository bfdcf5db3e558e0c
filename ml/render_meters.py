"""Renders whole water-meter photos with their counter windows labelled: the training photos of the default weights'
localisers and strip readers, which may learn from nothing whose licence forbids commercial use (issue 49).

Nothing in a render comes from a photo of a meter. The wheels' digits are digits-clean's crops (Apache-2.0 and MIT,
recoloured as synth.py does) or glyphs of fonts under open licences (FONTS); the body, dial, small pointer dials,
printed text, serial numbers, glass glare, dirt, shadows, the scene around the meter, the perspective, blur and
JPEG loss are drawn here from seeded random draws.

    python3 render_meters.py --count 10000 [--seed 1] [--output DIR]

writes DIR/images/NNNNNN.jpg and DIR/labels.csv (`file,reading,quad`, like bdci2020's: the 4 corners of the
counter window clockwise from the top-left of its digits, whatever way up the photo shows them). Readings are in
the two layouts the service knows (src/readers/local/spec.json): 5 whole-unit wheels then 3 fractional ones
(`00037.902`), or 5 wheels (`00141`). DIR defaults to METERLENS_RENDERED (CACHE/rendered), which
common.dataset_root gives the dataset name `rendered`. DIR/drawn-by.txt, written last, names the code, count and
seed that drew it: a folder drawn so already is kept, and one drawn otherwise, or stopped part way, is drawn again.
"""
import argparse
import csv
import hashlib
import math
import os
import random
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from common import RENDERED
from synth import CROP_SIZE, ROLL_TENTHS, ink_map, load_digit_crops, outline, rolled_reading

# Open-licensed fonts: the fonts-* packages of ml/requirements-debian.txt.
FONT_FOLDERS = [Path(p) for p in os.environ.get('METERLENS_FONTS', '/usr/share/fonts/truetype').split(':')]
FONT_NAMES = ('DejaVuSans-Bold', 'DejaVuSansCondensed-Bold', 'DejaVuSansMono-Bold', 'DejaVuSans', 'DejaVuSerif-Bold',
              'LiberationSans-Bold', 'LiberationSansNarrow-Bold', 'LiberationMono-Bold', 'LiberationSerif-Bold',
              'Roboto-Bold', 'RobotoCondensed-Bold', 'Roboto-Medium', 'NotoSans-Bold', 'NotoSansMono-Bold',
              'OpenSans-Bold', 'NotoSerif-Bold')
WINDOWS_SHARE = 0.5  # of the meters: each wheel behind a window of its own in the face (Style.windows)
FACE = 600  # the meter face is drawn on a FACE x FACE canvas, then warped into the photo
LONG_SIDE = 800
WHOLE, FRACTION = 5, 3
# A font wheel's distance between neighbouring digits, in digit heights (font_wheel): from close enough that the
# neighbours' edges show at rest to far enough that they do not.
DIGIT_PITCH = (1.2, 1.9)


def font_files():
    found = {f.stem: f for folder in FONT_FOLDERS if folder.exists() for f in folder.rglob('*.ttf')}
    files = [found[name] for name in FONT_NAMES if name in found]
    if not files:
        raise SystemExit(f'no font of FONT_NAMES under {FONT_FOLDERS} (METERLENS_FONTS): apt-get install fonts-dejavu-core')
    return files


def colour(rng, low, high):
    return tuple(rng.randint(lo, hi) for lo, hi in zip(low, high))


def tinted(rng, low, high, tint):
    """A grey between `low` and `high`, each channel moved by up to `tint`: the near-neutral colours of dials and walls."""
    grey = rng.randint(low, high)
    return tuple(min(255, max(0, grey + rng.randint(-tint, tint))) for _ in range(3))


class Style:
    """How one meter looks: its colours, its counter's make-up and where the digits come from."""

    def __init__(self, rng, fonts):
        self.eight = rng.random() < 0.55
        self.dark_wheels = rng.random() < 0.3
        light = colour(rng, (200, 195, 180), (255, 255, 250))
        dark = colour(rng, (10, 10, 10), (60, 60, 60))
        self.wheel, self.ink = (dark, light) if self.dark_wheels else (light, dark)
        self.fraction_wheel = self.wheel
        self.fraction_ink = colour(rng, (170, 0, 10), (240, 60, 70))
        if rng.random() < 0.35:  # white digits on red wheels
            self.fraction_wheel, self.fraction_ink = colour(rng, (150, 0, 0), (230, 50, 50)), light
        self.face = tinted(rng, 195, 255, 12) if rng.random() < 0.8 else colour(rng, (20, 20, 40), (120, 150, 200))
        bodies = [((150, 110, 30), (220, 180, 90)), ((20, 40, 120), (70, 110, 200)), ((10, 10, 10), (60, 60, 60)),
                  ((150, 150, 150), (220, 220, 220)), ((200, 200, 200), (250, 250, 250))]
        self.body = colour(rng, *rng.choice(bodies))
        self.frame = colour(rng, (0, 0, 0), (90, 90, 90)) if rng.random() < 0.8 else colour(rng, (120, 120, 120), (240, 240, 240))
        self.crops = rng.random() < 0.5
        self.font = ImageFont.truetype(str(rng.choice(fonts)), 64)
        self.text_font = str(rng.choice(fonts))
        self.shading = rng.uniform(0.0, 0.45)
        # Household meters like Toloka's show each wheel behind a window of its own in the face, edged by a thin dark
        # line, with no frame round the counter (as synth.py's wheels_behind_windows draws a strip).
        self.windows = rng.random() < WINDOWS_SHARE
        self.edge = colour(rng, (20, 20, 20), (120, 120, 120))


def font_wheel(style, digit, roll, ink, wheel, size, rng):
    """One wheel drawn from a font: digit `digit` rolled `roll` of the way to the next, on a wheel of `wheel`. Its
    digits are drawn DIGIT_PITCH digit heights apart: where they sit close, as on bdci2020's and Toloka's wheels, the
    edges of the digits before and after show above and below it at rest, and a rolling wheel shows two digits cut by
    the window's edges."""
    width, height = size
    column = Image.new('RGB', (width, height * 4), wheel)
    draw = ImageDraw.Draw(column)
    scale = rng.uniform(0.6, 0.85) * height / 64
    font = style.font.font_variant(size=max(8, round(64 * scale)))
    box = draw.textbbox((0, 0), '0', font=font)
    pitch = (box[3] - box[1]) * rng.uniform(*DIGIT_PITCH)
    centre = 1.5 * height
    for step in (-1, 0, 1, 2):
        shown = str((digit + step) % 10)
        box = draw.textbbox((0, 0), shown, font=font)
        x = (width - (box[2] - box[0])) / 2 - box[0]
        y = centre + step * pitch - (box[3] - box[1]) / 2 - box[1]
        draw.text((x, y), shown, fill=ink, font=font)
    top = round(centre + roll * pitch - height / 2)
    return np.asarray(column.crop((0, top, width, top + height)), np.float32)


def crop_wheel(crops, digit, tenths, ink, wheel, size, rng):
    tile = rng.choice(crops[(digit, tenths)])
    tile = np.asarray(Image.fromarray(tile).resize(size, Image.BILINEAR), np.float32)
    strength = ink_map(tile)
    return np.asarray(wheel, np.float32) * (1 - strength) + np.asarray(ink, np.float32) * strength


def counter(style, crops, rng):
    """(RGB array of the wheels side by side, reading, wheel width, gap)."""
    count = WHOLE + FRACTION if style.eight else WHOLE
    leading = rng.randint(0, WHOLE - 1)
    digits = [0] * leading + [rng.randint(0, 9) for _ in range(count - leading)]
    tenths = 0 if rng.random() < 0.45 else rng.choice(ROLL_TENTHS)
    shown, rolling = rolled_reading(digits, tenths / 10)
    wheel_height = 64
    wheel_width = round(wheel_height * rng.uniform(0.5, 0.7 if style.windows else 0.8))
    gap = round(wheel_width * (rng.uniform(0.2, 0.6) if style.windows else rng.uniform(0.05, 0.35)))
    line = rng.randint(2, 5)
    strip = np.empty((wheel_height, count * wheel_width + (count - 1) * gap, 3), np.float32)
    strip[:] = style.face if style.windows else style.frame
    for i, (digit, roll) in enumerate(zip(digits, rolling)):
        fraction = i >= WHOLE
        ink = style.fraction_ink if fraction else style.ink
        wheel = style.fraction_wheel if fraction else style.wheel
        step = tenths if roll else 0
        if style.crops:
            tile = crop_wheel(crops, digit, step, ink, wheel, (wheel_width, wheel_height), rng)
        else:
            tile = font_wheel(style, digit, step / 10, ink, wheel, (wheel_width, wheel_height), rng)
        # A wheel is a cylinder: darker towards its top and bottom edges.
        bend = 1 - style.shading * np.abs(np.linspace(-1, 1, wheel_height))[:, None, None] ** 2
        x = i * (wheel_width + gap)
        strip[:, x:x + wheel_width] = tile * bend
        if style.windows:
            outline(strip[:, x:x + wheel_width], line, style.edge)
    reading = shown[:WHOLE] + '.' + shown[WHOLE:] if style.eight else shown
    return strip.clip(0, 255).astype(np.uint8), reading


def text(draw, xy, words, size, fill, font_file, anchor='mm'):
    draw.text(xy, words, fill=fill, font=ImageFont.truetype(font_file, max(6, round(size))), anchor=anchor)


def random_word(rng, letters='ABCDEFGHKLMNPRSTVWXZ', length=(3, 9)):
    return ''.join(rng.choice(letters) for _ in range(rng.randint(*length)))


def pointer_dial(draw, centre, radius, rng, ink):
    x, y = centre
    draw.ellipse((x - radius, y - radius, x + radius, y + radius), outline=ink, width=max(1, round(radius / 10)))
    for tick in range(10):
        angle = tick * math.pi / 5
        draw.line((x + 0.75 * radius * math.sin(angle), y - 0.75 * radius * math.cos(angle),
                   x + 0.95 * radius * math.sin(angle), y - 0.95 * radius * math.cos(angle)), fill=ink, width=1)
    angle = rng.uniform(0, 2 * math.pi)
    draw.polygon([(x + 0.9 * radius * math.sin(angle), y - 0.9 * radius * math.cos(angle)),
                  (x + 0.15 * radius * math.cos(angle), y + 0.15 * radius * math.sin(angle)),
                  (x - 0.15 * radius * math.cos(angle), y - 0.15 * radius * math.sin(angle))], fill=(200, 20, 20))


def meter_face(style, crops, rng):
    """(RGBA face, reading, window corners TL, TR, BR, BL in the face's frame)."""
    face = Image.new('RGBA', (FACE, FACE), (0, 0, 0, 0))
    draw = ImageDraw.Draw(face)
    centre = FACE / 2
    draw.ellipse((4, 4, FACE - 4, FACE - 4), fill=style.body + (255,))
    inner = rng.uniform(0.72, 0.88) * centre
    draw.ellipse((centre - inner, centre - inner, centre + inner, centre + inner), fill=style.face + (255,))
    printed = tuple(max(0, c - 150) for c in style.face) if sum(style.face) > 380 else (235, 235, 235)
    strip, reading = counter(style, crops, rng)
    width = rng.uniform(0.85, 1.3) * inner
    height = width * strip.shape[0] / strip.shape[1]
    top = centre - rng.uniform(0.05, 0.45) * inner
    left = centre - width / 2
    border = rng.uniform(0.08, 0.3) * height
    if not style.windows:
        draw.rectangle((left - border, top - border, left + width + border, top + height + border), fill=style.frame + (255,))
    face.paste(Image.fromarray(strip).resize((round(width), round(height)), Image.BILINEAR), (round(left), round(top)))
    window = [(left, top), (left + width, top), (left + width, top + height), (left, top + height)]
    if style.eight and rng.random() < 0.4:  # a printed point or comma, or a frame round the fractional wheels
        split = left + width * WHOLE / (WHOLE + FRACTION)
        draw.rectangle((split - 2, top - border / 2, left + width + border / 2, top + height + border / 2),
                       outline=(200, 30, 30, 255), width=max(1, round(border / 3)))
    text(draw, (centre, top - border - rng.uniform(0.08, 0.2) * inner), random_word(rng), rng.uniform(0.06, 0.13) * inner,
         printed, style.text_font)
    text(draw, (left + width + border + 4, top + height / 2), rng.choice(['m³', 'm3', 'M³', '']), rng.uniform(0.08, 0.15) * inner,
         printed, style.text_font, 'lm')
    below = top + height + border
    red = colour(rng, (170, 0, 10), (240, 60, 70))
    if rng.random() < 0.7:  # small pointer dials below the counter
        dials = rng.randint(1, 4)
        radius = rng.uniform(0.07, 0.13) * inner
        for i in range(dials):
            x = centre + (i - (dials - 1) / 2) * 2.6 * radius
            pointer_dial(draw, (x, below + 1.6 * radius), radius, rng, red if rng.random() < 0.5 else printed)
    for _ in range(rng.randint(1, 4)):  # printed lines, some of them digit strings that are not the reading
        words = rng.choice([f'{rng.randint(0, 10**rng.randint(5, 9)):0{rng.randint(6, 9)}d}', f'DN{rng.choice([15, 20, 25])}',
                            f'Q3 {rng.choice(["2,5", "4", "1,6"])}', random_word(rng, length=(2, 6)), f'20{rng.randint(10, 26)}',
                            f'No {rng.randint(10**6, 10**8)}', 'x0,001', 'x0,01 x0,1'])
        angle = rng.uniform(0, 2 * math.pi)
        radius = rng.uniform(0.55, 0.8) * inner
        text(draw, (centre + radius * math.sin(angle), centre + radius * math.cos(angle)), words,
             rng.uniform(0.05, 0.1) * inner, red if rng.random() < 0.3 else printed, style.text_font)
    if rng.random() < 0.4:  # a barcode or a star-shaped flow indicator: dense dark marks that are no counter
        x, y = centre + rng.uniform(-0.5, 0.2) * inner, centre + rng.uniform(-0.75, 0.5) * inner
        if rng.random() < 0.5:
            for bar in range(rng.randint(15, 40)):
                draw.rectangle((x + bar * 3, y, x + bar * 3 + rng.randint(0, 2), y + 0.15 * inner), fill=printed)
        else:
            points = [(x + (0.1 if k % 2 else 0.04) * inner * math.cos(k * math.pi / 6),
                       y + (0.1 if k % 2 else 0.04) * inner * math.sin(k * math.pi / 6)) for k in range(12)]
            draw.polygon(points, fill=red if rng.random() < 0.5 else printed)
    glass(face, rng, window)
    return face, reading, window


def glass(face, rng, window):
    """Glare and dirt on the glass; glare over the counter is kept faint enough that its digits stay readable."""
    overlay = Image.new('RGBA', face.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    for _ in range(rng.randint(0, 3)):
        x, y = rng.uniform(0, FACE), rng.uniform(0, FACE)
        w, h = rng.uniform(20, 260), rng.uniform(10, 120)
        draw.ellipse((x - w, y - h, x + w, y + h), fill=(255, 255, 255, rng.randint(40, 150)))
    for _ in range(rng.randint(0, 25)):
        x, y, r = rng.uniform(0, FACE), rng.uniform(0, FACE), rng.uniform(1, 12)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=colour(rng, (40, 30, 10), (140, 120, 90)) + (rng.randint(40, 200),))
    overlay = overlay.filter(ImageFilter.GaussianBlur(rng.uniform(2, 12)))
    (left, top), _, (right, bottom), _ = window
    faint = np.asarray(overlay).copy()
    faint[round(top):round(bottom), round(left):round(right), 3] //= 2
    alpha = face.getchannel('A')
    face.alpha_composite(Image.fromarray(faint))
    face.putalpha(alpha)


def background(size, rng, fonts):
    """A scene behind the meter: low-frequency colour, pipes and walls, sometimes printed text."""
    width, height = size
    base = np.asarray(tinted(rng, 30, 230, 35) if rng.random() < 0.85 else colour(rng, (20, 20, 20), (235, 235, 235)), np.float32)
    low = np.asarray(Image.fromarray((rng.uniform(0, 1) * 255 * np.asarray([[rng.random() for _ in range(6)] for _ in range(5)]))
                                     .astype(np.uint8)).resize(size, Image.BICUBIC), np.float32)[..., None]
    scene = Image.fromarray((base * (0.55 + low / 255 * 0.9)).clip(0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(scene)
    for _ in range(rng.randint(0, 5)):  # pipes, lit from one side
        thickness = rng.uniform(0.03, 0.15) * width
        y = rng.uniform(0, height)
        angle = rng.uniform(-0.3, 0.3) if rng.random() < 0.5 else rng.uniform(1.2, 1.9)
        dx, dy = math.cos(angle) * 2 * width, math.sin(angle) * 2 * width
        pipe = np.asarray(tinted(rng, 30, 200, 40), float)
        for band, light in ((1.0, 0.8), (0.6, 1.0), (0.25, 1.3)):  # darker at its edges, a highlight along it
            draw.line((width / 2 - dx, y - dy, width / 2 + dx, y + dy), fill=tuple(np.minimum(pipe * light, 255).astype(int)),
                      width=max(1, round(thickness * band)))
    for _ in range(rng.randint(0, 4)):  # fittings: brass, steel, red and blue taps
        x, y, r = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(0.03, 0.12) * width
        fill = rng.choice([colour(rng, (150, 110, 30), (220, 180, 90)), tinted(rng, 120, 230, 10), colour(rng, (150, 0, 0), (230, 60, 60)),
                           colour(rng, (0, 40, 120), (60, 110, 220))])
        sides = rng.choice([4, 6, 6, 32])
        draw.polygon([(x + r * math.cos(k * 2 * math.pi / sides), y + r * math.sin(k * 2 * math.pi / sides)) for k in range(sides)], fill=fill)
    for _ in range(rng.randint(0, 3)):
        text(draw, (rng.uniform(0, width), rng.uniform(0, height)), random_word(rng, length=(2, 10)),
             rng.uniform(0.02, 0.06) * width, colour(rng, (0, 0, 0), (255, 255, 255)), str(rng.choice(fonts)))
    return scene


def homography(source, target):
    """The 3 x 3 matrix taking the 4 `source` points to the 4 `target` points."""
    rows = []
    for (x, y), (u, v) in zip(source, target):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y, -u])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y, -v])
    _, _, vt = np.linalg.svd(np.asarray(rows))
    return vt[-1].reshape(3, 3) / vt[-1, -1]


def apply(matrix, points):
    points = np.asarray(points, float)
    mapped = np.c_[points, np.ones(len(points))] @ matrix.T
    return mapped[:, :2] / mapped[:, 2:]


def placement(size, rng):
    """Where the face's corners land in the photo: a size, a turn (mostly near upright, some sideways or upside down),
    and a perspective."""
    width, height = size
    side = rng.uniform(0.3, 1.2) * min(width, height)
    turn = rng.choice([0] * 6 + [90, 180, 270]) + rng.uniform(-25, 25)
    angle = math.radians(turn)
    centre = np.array([width / 2 + rng.uniform(-0.3, 0.3) * width, height / 2 + rng.uniform(-0.3, 0.3) * height])
    corners = np.array([(-1, -1), (1, -1), (1, 1), (-1, 1)], float) * side / 2
    tilt = rng.uniform(-0.25, 0.25), rng.uniform(-0.25, 0.25)
    corners *= np.array([[1 + tilt[0] * c[1] / (side / 2), 1 + tilt[1] * c[0] / (side / 2)] for c in corners])
    rotation = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    return corners @ rotation.T + centre


def camera(photo, rng):
    """Light falling unevenly, blur, sensor noise and a JPEG's loss."""
    x = np.asarray(photo, np.float32)
    height, width = x.shape[:2]
    gradient = np.linspace(rng.uniform(0.5, 1.1), rng.uniform(0.8, 1.3), width)[None, :, None]
    if rng.random() < 0.5:
        gradient = np.linspace(rng.uniform(0.5, 1.1), rng.uniform(0.8, 1.3), height)[:, None, None]
    cast = np.asarray([rng.uniform(0.85, 1.15) for _ in range(3)], np.float32)
    x = x * gradient * cast
    photo = Image.fromarray(x.clip(0, 255).astype(np.uint8))
    if rng.random() < 0.6:
        photo = photo.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 2.0)))
    x = np.asarray(photo, np.float32) + np.random.default_rng(rng.randrange(2**32)).normal(0, rng.uniform(0, 8), x.shape)
    return Image.fromarray(x.clip(0, 255).astype(np.uint8))


def render(index, seed, crops, fonts):
    """(photo, reading, window quad in the photo) of render number `index`."""
    rng = random.Random(seed * 1_000_003 + index)
    portrait = rng.random() < 0.5
    short = round(LONG_SIDE * rng.uniform(0.6, 1.0))
    size = (short, LONG_SIDE) if portrait else (LONG_SIDE, short)
    style = Style(rng, fonts)
    face, reading, window = meter_face(style, crops, rng)
    square = [(0, 0), (FACE, 0), (FACE, FACE), (0, FACE)]
    for _ in range(20):  # the meter may leave the photo, its counter may not
        landing = placement(size, rng)
        quad = apply(homography(square, landing), window)
        if (quad.min(0) > 0).all() and (quad.max(0) < size).all():
            break
    photo = background(size, rng, fonts)
    if rng.random() < 0.3:  # a pressure gauge beside it: a round dial with a pointer and no counter
        gauge = Image.new('RGBA', (FACE, FACE), (0, 0, 0, 0))
        draw = ImageDraw.Draw(gauge)
        draw.ellipse((4, 4, FACE - 4, FACE - 4), fill=style.body + (255,))
        draw.ellipse((60, 60, FACE - 60, FACE - 60), fill=tinted(rng, 200, 255, 10) + (255,))
        pointer_dial(draw, (FACE / 2, FACE / 2), FACE / 2 - 80, rng, (20, 20, 20))
        spot = placement(size, rng) * rng.uniform(0.3, 0.7) + np.array([rng.uniform(-0.5, 1), rng.uniform(-0.5, 1)]) * size
        elsewhere = homography(spot, square)
        gauge = gauge.transform(size, Image.PERSPECTIVE, data=tuple(elsewhere.flatten()[:8]), resample=Image.BILINEAR)
        photo.paste(gauge, (0, 0), gauge)
    to_face = homography(landing, square)  # PIL's transform maps photo pixels back to the face
    warped = face.transform(size, Image.PERSPECTIVE, data=tuple(to_face.flatten()[:8]), resample=Image.BILINEAR)
    if rng.random() < 0.5:  # the meter's shadow
        shadow = Image.new('L', size, 0)
        shadow.paste(warped.getchannel('A').filter(ImageFilter.GaussianBlur(15)), (rng.randint(-30, 30), rng.randint(-30, 30)))
        photo = Image.composite(Image.new('RGB', size, (0, 0, 0)), photo, shadow.point(lambda a: a * rng.uniform(0.2, 0.6)))
    photo.paste(warped, (0, 0), warped)
    if rng.random() < 0.25:  # a camera's timestamp burnt into the corner
        text(ImageDraw.Draw(photo), (10, size[1] - 10), f'20{rng.randint(15, 26)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} '
             f'{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}', size[0] * 0.035,
             colour(rng, (200, 200, 0), (255, 255, 255)), str(fonts[0]), 'ls')
    return camera(photo, rng), reading, quad


def render_one(job):
    index, seed, output, quality_seed = job
    photo, reading, quad = render(index, seed, WORKER['crops'], WORKER['fonts'])
    name = f'{index:06d}.jpg'
    photo.save(output / 'images' / name, quality=random.Random(quality_seed).randint(45, 95))
    return f'images/{name}', reading, ' '.join(f'{v:.1f}' for v in quad.flatten())


WORKER = {}


def start_worker():
    WORKER['crops'] = load_digit_crops()
    WORKER['fonts'] = font_files()


STAMP = 'drawn-by.txt'


def stamp(count, seed):
    """What a folder of renders was drawn by: this file's and synth.py's code (which draw every pixel), the count and
    the seed."""
    code = hashlib.sha256()
    for name in ('render_meters.py', 'synth.py'):
        code.update((Path(__file__).parent / name).read_bytes())
    return f'{code.hexdigest()} count {count} seed {seed}\n'


def drawn_already(output, count, seed):
    path = output / STAMP
    return path.exists() and path.read_text() == stamp(count, seed)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--count', type=int, default=10000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--output', type=Path, default=RENDERED)
    parser.add_argument('--workers', type=int, default=os.cpu_count())
    args = parser.parse_args()
    if os.environ.get('METERLENS_DIGITS') != 'clean':
        raise SystemExit('render_meters.py draws the clean weights\' photos: set METERLENS_DIGITS=clean')
    if drawn_already(args.output, args.count, args.seed):
        print(f'{args.output} holds these {args.count} renders already ({STAMP})')
        return
    (args.output / 'images').mkdir(parents=True, exist_ok=True)
    (args.output / STAMP).unlink(missing_ok=True)
    start_worker()  # once here, so the archive is extracted before the workers read it
    jobs = [(i, args.seed, args.output, args.seed * 7919 + i) for i in range(args.count)]
    with Pool(args.workers, initializer=start_worker) as pool, open(args.output / 'labels.csv', 'w', newline='') as handle:
        writer = csv.writer(handle)
        writer.writerow(['file', 'reading', 'quad'])
        for done, row in enumerate(pool.imap(render_one, jobs, chunksize=16), 1):
            writer.writerow(row)
            if done % 1000 == 0:
                print(f'{done} of {args.count} rendered', flush=True)
    (args.output / STAMP).write_text(stamp(args.count, args.seed))
    print(f'{args.count} photos and labels in {args.output}')


if __name__ == '__main__':
    main()

"""Synthetic counter strips composed from single-wheel crops: digits/meterdigits.tar, or with METERLENS_DIGITS=clean
the commercially clean crops of digits-clean/ (Apache-2.0 and MIT: its PROVENANCE.md)."""
import os
import random
import re
import tarfile
from collections import defaultdict
from pathlib import Path

import numpy as np
from PIL import Image

from common import CACHE, DATASETS, TOLOKA_WHEELS, TOLOKA_WHOLE_WHEELS


# How far a wheel may roll, in tenths of the way to its next digit, in what is drawn: any of them, half way too.
ROLL_TENTHS = (1, 2, 3, 4, 5, 6, 7, 8, 9)
# A rolling wheel reads its upper digit from this share of the way on. bdci2020 labels a wheel between two by the digit
# mostly in view, the other as an alternative where both are (the lower in 90 of its labels with a neighbouring
# alternative, the upper in 93); the readers are trained at 0.7 (ml/EXPERIMENTS.md, "bdci2020's rolling wheels"):
# trained at 0.5 they read one bdci2020 photo fewer right and three Toloka whole units wrong at 80 or more
# (ml/EXPERIMENTS.md, "the rolling rule at half way").
UPPER_DIGIT_FROM = 0.7


def rolled_reading(digits, fraction):
    """What a meter reader writes for wheels `digits` when the last wheel is `fraction` of the way to the next digit.

    The last wheel drags every wheel to its left that sits on a 9 chain (carry): they all roll together.
    A rolling wheel reads its lower digit until seven tenths of the upper one are in view (UPPER_DIGIT_FROM).
    Returns (reading, rolling) where rolling[i] says wheel i is mid-roll.
    """
    rolling = [False] * len(digits)
    for i in range(len(digits) - 1, -1, -1):
        rolling[i] = fraction > 0
        if digits[i] != 9:
            break
    shown = [(d + 1) % 10 if roll and fraction >= UPPER_DIGIT_FROM else d for d, roll in zip(digits, rolling)]
    return ''.join(str(d) for d in shown), rolling


# Which crops the strips and the wheel reader's extra crops come from: `meterdigits` (about 46% of it from sources
# without a licence: research only) or `clean` (digits-clean/, for weights that may ship by default).
DIGITS = os.environ.get('METERLENS_DIGITS', 'meterdigits')
# The size of a meterdigits crop (width, height); digits-clean's crops, at their own sizes, are brought to it.
CROP_SIZE = (20, 32)
# digits-clean's file names start with the value and its tenths of roll (`3.7_…`, `3_…` for a still wheel); jomjol's
# sorted crops sit in a folder named by the digit instead. LCD digits are not wheels, and `NaN` ones are between digits.
CLEAN_NAME = re.compile(r'^(\d)(?:\.(\d))?_')
CLEAN_ARCHIVES = ('collected.tar', 'jomjol-mit-2021.tar')
NOT_WHEELS = re.compile(r'/(lcd\d*|NaN|not-trained[^/]*)/')
# digits-clean's archives: under METERLENS_DATASETS, or (METERLENS_DIGITS_CLEAN) a folder of their own, for a run whose
# METERLENS_DATASETS holds only an operator's photos (`meterlens train`).
DIGITS_CLEAN = Path(os.environ.get('METERLENS_DIGITS_CLEAN', DATASETS / 'digits-clean'))
CLEAN_EXTRACTED = CACHE / 'digits-clean'


def load_digit_crops():
    """{(digit, tenths): [HxWx3 uint8 arrays]}: the crops METERLENS_DIGITS names."""
    return load_clean_digit_crops() if DIGITS == 'clean' else load_meterdigits_crops()


def clean_crop_label(member):
    """(digit, tenths) of a digits-clean archive member, or None for one that is no labelled wheel."""
    if NOT_WHEELS.search(member) or not member.lower().endswith(('.jpg', '.jpeg', '.png', '.bmp')):
        return None
    folder, name = member.rsplit('/', 1)
    named = CLEAN_NAME.match(name)
    if named:
        return int(named.group(1)), int(named.group(2) or 0)
    sorted_into = folder.rsplit('/', 1)[-1]
    return (int(sorted_into), 0) if sorted_into.isdigit() and len(sorted_into) == 1 else None


def clean_digit_crops_at_hand():
    """Whether load_clean_digit_crops finds its crops: packed already, or the archives to pack."""
    return packed_crops(CLEAN_EXTRACTED).exists() or all((DIGITS_CLEAN / name).exists() for name in CLEAN_ARCHIVES)


def packed_crops(extracted):
    return extracted.with_name(f'digits-clean-{CROP_SIZE[0]}x{CROP_SIZE[1]}.npz')


def load_clean_digit_crops(root=DIGITS_CLEAN, extracted=CLEAN_EXTRACTED):
    """{(digit, tenths): [HxWx3 uint8 arrays]} of digits-clean's wheel crops at CROP_SIZE, extracted once to `extracted`
    and kept there as one array file (the crops of every label, ready to load, and to carry to another machine)."""
    packed = packed_crops(extracted)
    if not packed.exists():
        pack_clean_digit_crops(root, extracted, packed)
    with np.load(packed) as data:
        labels, images = data['labels'], data['images']
    crops = defaultdict(list)
    for (digit, tenths), image in zip(labels.tolist(), images):
        crops[(digit, tenths)].append(image)
    return crops


def pack_clean_digit_crops(root, extracted, packed):
    if not extracted.exists():
        for archive_name in CLEAN_ARCHIVES:
            with tarfile.open(root / archive_name) as archive:
                archive.extractall(extracted)
    labels, images = [], []
    for file in sorted(extracted.rglob('*')):
        label = file.is_file() and clean_crop_label(file.relative_to(extracted).as_posix())
        if label:
            labels.append(label)
            images.append(np.asarray(Image.open(file).convert('RGB').resize(CROP_SIZE, Image.BILINEAR)))
    np.savez_compressed(packed, labels=np.array(labels), images=np.stack(images))


def load_meterdigits_crops():
    """{(digit, tenths): [HxWx3 uint8 arrays]} from the tar, extracted once under the cache folder."""
    root = CACHE / 'digits' / 'datasets' / 'meterdigits'
    if not root.exists():
        with tarfile.open(DATASETS / 'digits' / 'meterdigits.tar') as archive:
            archive.extractall(CACHE / 'digits')
    crops = defaultdict(list)
    for folder in root.iterdir():
        digit, tenths = (int(part) for part in folder.name.split('.'))
        for file in folder.iterdir():
            crops[(digit, tenths)].append(np.asarray(Image.open(file).convert('RGB')))
    return crops


def wheel_tiles(crops, digits, rolling, tenths, rng):
    """A crop for each wheel: its digit, rolled by `tenths` where the wheel is mid-roll."""
    return [random.Random(rng.random()).choice(crops[(d, tenths if roll else 0)]) for d, roll in zip(digits, rolling)]


def lay_out(tiles, background, gap, pad_x, pad_y):
    """The tiles (all of one size) side by side, `gap` apart, on a canvas of `background` with the given padding."""
    count = len(tiles)
    height, width = tiles[0].shape[:2]
    strip = np.empty((height + 2 * pad_y, count * width + (count - 1) * gap + 2 * pad_x, 3), tiles[0].dtype)
    strip[:] = background
    for i, tile in enumerate(tiles):
        x = pad_x + i * (width + gap)
        strip[pad_y:pad_y + height, x:x + width] = tile
    return strip


def ink_map(tile):
    """0..1 ink strength of a wheel crop whatever its colours: how far each pixel is from the wheel's background,
    on the side (darker or lighter) where the digit's strokes lie."""
    grey = tile.astype(np.float32).mean(2)
    low, background, high = np.percentile(grey, (3, 50, 97))
    if background - low >= high - background:
        ink = (background - grey) / max(background - low, 1.0)
    else:
        ink = (grey - background) / max(high - background, 1.0)
    return np.clip(ink, 0, 1)[..., None]


def toloka_colours(rng):
    """(wheel, frame, black ink, red ink) RGB colours of a Toloka-like counter."""
    wheel = np.array([rng.randint(200, 255), rng.randint(190, 250), rng.randint(170, 240)], np.float32)
    frame = np.array([rng.randint(60, 250) for _ in range(3)], np.float32)
    black = np.array([rng.randint(0, 70)] * 3, np.float32)
    red = np.array([rng.randint(170, 235), rng.randint(0, 60), rng.randint(20, 70)], np.float32)
    return wheel, frame, black, red


def recolour(tile, wheel, ink):
    """The tile's digit strokes in `ink` on a wheel of colour `wheel` (float RGB)."""
    strength = ink_map(tile)
    return wheel * (1 - strength) + ink * strength


def outline(region, line, colour):
    """A `line`-pixel edge of `colour` drawn round the inside of `region`, a view into an image array."""
    region[:line], region[-line:], region[:, :line], region[:, -line:] = (colour,) * 4


def wheels_behind_windows(tiles, rng):
    """The tiles laid out as a Toloka face shows its wheels: each behind a window of its own in a light face, edged by a
    thin dark line, the fractional wheels red and, on half the faces, behind a red glass; a decimal point below the
    units wheel on half of them. (The strip as an RGB array, the gap between windows, the padding left and right.)"""
    face = np.clip(np.array([rng.randint(175, 250)] * 3, np.float32) + [rng.randint(-12, 12) for _ in range(3)], 0, 255)
    wheel = np.clip(face + rng.randint(-25, 15), 0, 255)
    edge = np.array([rng.randint(20, 120)] * 3, np.float32)
    black = np.array([rng.randint(0, 80)] * 3, np.float32)
    red = np.array([rng.randint(150, 235), rng.randint(0, 70), rng.randint(20, 80)], np.float32)
    fraction_wheel = wheel * 0.55 + np.array([250, 110, 110], np.float32) * 0.45 if rng.random() < 0.5 else wheel
    recoloured = [recolour(tile, fraction_wheel, red) if i >= TOLOKA_WHOLE_WHEELS else recolour(tile, wheel, black)
                  for i, tile in enumerate(tiles)]
    gap, pad_x, pad_y, line = rng.randint(4, 12), rng.randint(3, 12), rng.randint(3, 10), rng.randint(1, 2)
    strip = lay_out(recoloured, face, gap, pad_x, pad_y)
    height, width = tiles[0].shape[:2]
    for i in range(len(tiles)):
        x = pad_x + i * (width + gap)
        outline(strip[pad_y - line:pad_y + height + line, x - line:x + width + line], line, edge)
    if rng.random() < 0.5:
        x = pad_x + TOLOKA_WHOLE_WHEELS * (width + gap) - gap // 2 - 1
        strip[pad_y + height + line:pad_y + height + line + 3, x:x + 2] = black
    return strip, gap, pad_x


def eight_wheel_strip(crops, rng, behind_windows=False):
    """(PIL image, reading) of an eight_wheel_counter."""
    strip, reading, _, _ = eight_wheel_counter(crops, rng, behind_windows)
    return strip, reading


def eight_wheel_counter(crops, rng, behind_windows=False):
    """A counter drawn like a Toloka one, dark whole-unit wheels then red fractional wheels: (PIL image, reading, the
    window around its wheels as the service cuts a window (from half a gap before the first wheel to half a gap after
    the last; TL, TR, BR, BL), each wheel's (digit, tenths of its roll towards the next digit)).

    The crops' strokes are recoloured onto light wheels, so the model sees red fractional digits of every
    shape the digits/ crops have, not just the few hundred red wheels of the Toloka photos. The wheels sit side by
    side in a frame of any colour, or `behind_windows` (wheels_behind_windows).
    """
    leading_zeros = rng.randint(0, TOLOKA_WHOLE_WHEELS - 1)  # the units wheel left free
    digits = [0] * leading_zeros + [rng.randint(0, 9) for _ in range(TOLOKA_WHEELS - leading_zeros)]
    tenths = 0 if rng.random() < 0.4 else rng.choice(ROLL_TENTHS)
    shown, rolling = rolled_reading(digits, tenths / 10)
    if behind_windows:
        strip, gap, pad_x = wheels_behind_windows(wheel_tiles(crops, digits, rolling, tenths, rng), rng)
    else:
        wheel, frame, black, red = toloka_colours(rng)
        gap, pad_x, pad_y = rng.randint(2, 9), rng.randint(2, 12), rng.randint(3, 10)
        tiles = wheel_tiles(crops, digits, rolling, tenths, rng)
        recoloured = [recolour(tile, wheel, red if i >= TOLOKA_WHOLE_WHEELS else black) for i, tile in enumerate(tiles)]
        strip = lay_out(recoloured, frame, gap, pad_x, pad_y)
    left, right = pad_x - gap / 2, strip.shape[1] - pad_x + gap / 2
    window = [(left, 0), (right, 0), (right, strip.shape[0]), (left, strip.shape[0])]
    wheels = [(d, tenths if roll else 0) for d, roll in zip(digits, rolling)]
    reading = shown[:TOLOKA_WHOLE_WHEELS] + '.' + shown[TOLOKA_WHOLE_WHEELS:]
    return Image.fromarray(strip.astype(np.uint8)), reading, window, wheels


def synthetic_strip(crops, rng):
    """(PIL image, reading) for a random 4-8 wheel strip with a possibly rolling last wheel."""
    count = 5 if rng.random() < 0.6 else rng.randint(4, 8)
    digits = [rng.randint(0, 9) for _ in range(count)]
    tenths = 0 if rng.random() < 0.5 else rng.choice(ROLL_TENTHS)
    reading, rolling = rolled_reading(digits, tenths / 10)
    gap = rng.randint(0, 4)
    tiles = wheel_tiles(crops, digits, rolling, tenths, rng)
    background = np.median(np.concatenate([t.reshape(-1, 3) for t in tiles]), axis=0).astype(np.uint8)
    pad_x, pad_y = rng.randint(0, 10), rng.randint(0, 8)
    return Image.fromarray(lay_out(tiles, background, gap, pad_x, pad_y)), reading

"""Trains the wheel reader: one wheel of a Toloka counter (5 black + 3 red wheels side by side) classified as a
digit, and exports it as ONNX (a set's wheels.onnx; models/noncommercial/ ships one).

The strip readers read the whole counter at once and learn their few hundred training counters by heart; the
wheel reader sees one wheel at a time, eight times as many examples that each say less about the counter
they came from. The service cuts the window it found into eight equal wheels (src/readers/local/model.ts)
and lets this reader vote on each wheel beside the strip readers.

It learns the Toloka wheels, and beside them (or, in the clean recipe, instead of them) wheel crops: each framed
alone (`--digits-share`) or laid out with seven others as a synthetic Toloka-like counter and cut from it as the
service cuts a found window (`--counters-share`), which reads real counters far better (ml/EXPERIMENTS.md, "a clean
wheel reader").

The network learns from nothing, or (`--ppocr`) is PP-OCRv4's text recogniser, pretrained on real text, fine-tuned
after `--train-after` (ppocr_reader.PPOCRWheels; ml/EXPERIMENTS.md, "PP-OCRv4's recogniser as a clean wheel reader").

Input: wheel `i` of the counter window, the window's i-th eighth grown by MARGIN, rectified to HEIGHT x WIDTH
RGB in [-0.5, 0.5]. Output: probabilities of the digits 0-9.
"""
import csv
import random
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

from common import CACHE, DEVICE, MODELS, SPEC, TOLOKA_WHEELS, Export, split_rows, start_training, train_and_export
from ppocr_reader import NECK_STARTS, PPOCRWheels, add_train_after, export_wheels
from synth import eight_wheel_counter, load_digit_crops, recolour, toloka_colours
from train_reader import REGULARISATIONS, conv_bn_relu, jittered_quad, photometric, rectify, sideways, to_tensor, usable_windows

HEIGHT, WIDTH = SPEC['wheels']['height'], SPEC['wheels']['width']
# Grown on each side, as a fraction of the wheel's width (an eighth of the window's) and of the window's height.
MARGIN = SPEC['wheels']['margin']
# Where each shipped localiser finds each Toloka window: ml/find_windows.ts writes it (ml/train.sh runs it first).
FOUND_WINDOWS = CACHE / 'toloka-windows.csv'
# The augmentation of the strip readers' strong recipe: tilt, corner noise, blur, colour, resolution loss, grey.
AUGMENTATION = REGULARISATIONS['strong']
# How far each end of a window is moved along it in training, in wheels either way (--end-jitter's default).
END_JITTER = 0.5
# As it ships: probabilities of 0-9 for a batch of wheels.
EXPORT = Export((1, 3, HEIGHT, WIDTH), 'wheels', ['probabilities'], lambda model: nn.Sequential(model, nn.Softmax(1)))


class WheelReader(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            conv_bn_relu(3, 32), conv_bn_relu(32, 32), nn.MaxPool2d(2),  # 16 x 10
            conv_bn_relu(32, 64), conv_bn_relu(64, 64), nn.MaxPool2d(2),  # 8 x 5
            conv_bn_relu(64, 128), nn.MaxPool2d(2),  # 4 x 2
            conv_bn_relu(128, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Dropout(0.3), nn.Linear(128, 10),
        )

    def forward(self, x):
        return self.layers(x)


def span_of_quad(quad, left, right):
    """The part of the window quad (TL, TR, BR, BL) from `left` to `right`, fractions of its length from its left end
    (below 0 or above 1: beyond it)."""
    tl, tr, br, bl = (np.asarray(p, float) for p in quad)
    return [tl + (tr - tl) * left, tl + (tr - tl) * right, bl + (br - bl) * right, bl + (br - bl) * left]


def wheel_quad(quad, wheel):
    """The wheel-th of TOLOKA_WHEELS equal slices of the window quad (TL, TR, BR, BL), left to right."""
    return span_of_quad(quad, wheel / TOLOKA_WHEELS, (wheel + 1) / TOLOKA_WHEELS)


def moved_ends(quad, rng, wheels):
    """The window quad with each end moved along the window, apart, by up to `wheels` wheels either way. The service
    cuts the window where reader 3 places the wheels; on training photos, which reader 3 learned, the cut fits the
    counter, while on new photos an end often falls inside the first or last wheel."""
    left, right = rng.uniform(-wheels, wheels, 2) / TOLOKA_WHEELS
    return span_of_quad(quad, left, 1 + right)


def cut_wheel(image, quad, wheel):
    return rectify(image, wheel_quad(quad, wheel), MARGIN, MARGIN, (WIDTH, HEIGHT))


def wheel_tensor(image, quad, wheel):
    """A wheel as the readers take it (cut_wheel, unaugmented)."""
    return to_tensor(np.asarray(cut_wheel(image, quad, wheel), np.float32) / 255)


def windows_as_found(rows, found):
    """The rows' windows where the localisers find them (`found`, as found_windows gives it; cutting the labelled boxes
    instead reads worse), loaded as usable_windows loads them."""
    return usable_windows([dict(row, quad=quad) for row in rows if not sideways(row) for quad in found.get(row['file'], [])])


def found_windows(localisers, path=FOUND_WINDOWS):
    """{file: [quad]} of the windows the given localisers (numbers, as in LOCALISER_FILES) find in the Toloka photos,
    as the service cuts wheels from them."""
    if not path.exists():
        raise SystemExit(f'{path} is missing: run node ml/find_windows.ts > {path} first')
    with open(path, newline='') as file:
        found = {}
        for row in csv.DictReader(file):
            if int(row['localiser']) in localisers:
                values = [float(v) for v in row['corners'].split()]
                found.setdefault(row['file'], []).append(list(zip(values[0::2], values[1::2])))
    return found


def digits_of(reading):
    return [int(c) for c in reading.replace('.', '')]


def rolled_wheel_target(digit, tenths):
    """The share of a wheel's window each digit fills when the wheel has rolled `tenths` tenths from `digit` towards
    the next: (1 - t) of the one and t of the other. It teaches the reader how far a rolling wheel has rolled (the share
    of each digit in view), not which digit a person writes for it (synth.rolled_reading)."""
    target = torch.zeros(10)
    target[digit] += 1 - tenths / 10
    target[(digit + 1) % 10] += tenths / 10
    return target


# The wheel crops (synth.load_digit_crops): {(digit, tenths): [crop]}, and every crop with its rolled_wheel_target.
DigitCrops = namedtuple('DigitCrops', 'by_digit labelled')
# What share of a batch each source draws: wheel crops framed alone, synthetic counters' wheels; the rest are Toloka's.
Shares = namedtuple('Shares', 'digits counters')


def add_share_options(parser):
    parser.add_argument('--digits-share', type=float, default=0.0,
                        help='share of each batch drawn from the wheel crops (METERLENS_DIGITS) beside the Toloka wheels')
    parser.add_argument('--counters-share', type=float, default=0.0,
                        help='share of each batch drawn as wheels of synthetic Toloka-like counters of those crops; '
                             'with --digits-share adding up to 1, no Toloka photo is learned from (the clean recipe)')


def shares_of(args):
    return Shares(args.digits_share, args.counters_share)


def without_toloka(shares):
    """Whether batches drawn by these shares hold no Toloka wheel."""
    return sum(shares) >= 1


def digit_crops(by_digit):
    return DigitCrops(by_digit, [(crop, rolled_wheel_target(*key)) for key, tile in by_digit.items() for crop in tile])


def framed_digit(crop, rng, digit_rng):
    """A wheel crop framed as the service frames a wheel (MARGIN around it, its neighbours' edges continued) and
    jittered like the Toloka wheels; half of them recoloured as a Toloka wheel, black or red."""
    if digit_rng.random() < 0.5:
        wheel, _, black, red = toloka_colours(digit_rng)
        crop = recolour(crop, wheel, red if digit_rng.random() < 0.5 else black).astype(np.uint8)
    pad = np.asarray(crop.shape[:2]) // 2
    canvas = Image.fromarray(np.pad(crop, ((pad[0], pad[0]), (pad[1], pad[1]), (0, 0)), mode='edge'))
    height, width = crop.shape[:2]
    quad = np.array([(0, 0), (width, 0), (width, height), (0, height)], float) + pad[::-1]
    return rectify(canvas, jittered_quad(quad, rng, AUGMENTATION.max_tilt), MARGIN, MARGIN, (WIDTH, HEIGHT))


def counter_wheel(by_digit, end_jitter, rng, digit_rng):
    """A wheel of a synthetic Toloka-like counter (eight_wheel_counter of the crops `by_digit`), cut from its window as
    the service cuts a wheel from a found one (ends moved by up to `end_jitter` wheels, tilted), and its target. A
    found window reaches past the wheels into the frame above and below them, and past the strip is more frame, not
    black: its edges are continued, and the window grown by up to a fifth of its height each way."""
    strip, _, window, wheels = eight_wheel_counter(by_digit, digit_rng)
    pad = strip.height
    canvas = Image.fromarray(np.pad(np.asarray(strip), ((pad, pad), (pad, pad), (0, 0)), mode='edge'))
    grow = rng.uniform(0, 0.2) * strip.height
    window = np.asarray(window, float) + pad + [[0, -grow], [0, -grow], [0, grow], [0, grow]]
    wheel = int(rng.integers(TOLOKA_WHEELS))
    quad = jittered_quad(moved_ends(window, rng, end_jitter), rng, AUGMENTATION.max_tilt)
    return cut_wheel(canvas, quad, wheel), rolled_wheel_target(*wheels[wheel])


def make_batch(windows, crops, shares, end_jitter, size, rng, digit_rng):
    """`size` wheels and their targets: shares.digits of them wheel crops (framed_digit), shares.counters wheels of
    synthetic counters (counter_wheel), the rest Toloka's wheels."""
    images, labels = [], []
    for _ in range(size):
        source = rng.random() if shares.digits or shares.counters else 1
        if source < shares.digits:
            crop, label = crops.labelled[rng.integers(len(crops.labelled))]
            crop = framed_digit(crop, rng, digit_rng)
        elif source < shares.digits + shares.counters:
            crop, label = counter_wheel(crops.by_digit, end_jitter, rng, digit_rng)
        else:
            image, quad, reading, _ = windows[rng.integers(len(windows))]
            wheel = int(rng.integers(TOLOKA_WHEELS))
            if end_jitter:
                quad = moved_ends(quad, rng, end_jitter)
            crop = cut_wheel(image, jittered_quad(quad, rng, AUGMENTATION.max_tilt), wheel)
            label = rolled_wheel_target(digits_of(reading)[wheel], 0)
        images.append(to_tensor(photometric(crop, rng, AUGMENTATION)))
        labels.append(label)
    return torch.stack(images), torch.stack(labels)


def evaluate(model, windows):
    """Per wheel position, the share of validation wheels read right; and of windows with every wheel right."""
    model.eval()
    right = np.zeros((len(windows), TOLOKA_WHEELS), bool)
    with torch.no_grad():
        for index, (image, quad, reading, _) in enumerate(windows):
            wheels = torch.stack([wheel_tensor(image, quad, w) for w in range(TOLOKA_WHEELS)])
            right[index] = model(wheels.to(DEVICE)).argmax(1).cpu().numpy() == digits_of(reading)
    model.train()
    return ' '.join(f'{share:.3f}' for share in right.mean(0)), f'all {right.all(1).mean():.3f}'


def main():
    def add_options(parser):
        add_share_options(parser)
        parser.add_argument('--end-jitter', type=float, default=END_JITTER,
                            help='move each end of a training window along it by up to this many wheels either way (0: cut where found)')
        parser.add_argument('--ppocr', action='store_true',
                            help="start from PP-OCRv4's text recogniser (ppocr_reader.PPOCRWheels) instead of from nothing")
        add_train_after(parser)
        parser.add_argument('--localisers', default='1',
                            help='whose found windows to cut training wheels from: 1, 2 or 1,2 (each a window of each photo)')

    args = start_training(minutes=20, batch=128, output=MODELS / SPEC['files']['wheelReader'], add_options=add_options)
    rng = np.random.default_rng(args.seed)
    digit_rng = random.Random(args.seed)
    shares = shares_of(args)
    train_rows, validation_rows = split_rows('toloka', args.leave_out)
    # Validation windows are always the first localiser's, so runs with other training windows score alike.
    validation = windows_as_found(validation_rows, found_windows({1}))
    windows = [] if without_toloka(shares) else windows_as_found(train_rows, found_windows({int(n) for n in args.localisers.split(',')}))
    crops = digit_crops(load_digit_crops() if sum(shares) else {})
    print(f'{len(windows)} training windows, {len(windows) * TOLOKA_WHEELS} wheels; {len(crops.labelled)} wheel crops', flush=True)

    def batch_loss(model):
        images, labels = make_batch(windows, crops, shares, args.end_jitter, args.batch, rng, digit_rng)
        return F.cross_entropy(model(images.to(DEVICE)), labels.to(DEVICE), label_smoothing=0.05)

    if args.ppocr:
        model, export, learning_rate = PPOCRWheels(), export_wheels, 5e-4
        print(f'{model.learn_only_after(args.train_after)} trained parameters', flush=True)
    elif args.train_after != NECK_STARTS:
        raise SystemExit('--train-after names a node of PP-OCRv4\'s recogniser: it goes with --ppocr')
    else:
        model, export, learning_rate = WheelReader(), EXPORT, 2e-3
    train_and_export(args, model, batch_loss, lambda model: 'per wheel {} {}'.format(*evaluate(model, validation)),
                     export, learning_rate=learning_rate, weight_decay=1e-3, warmup_steps=200, validate_every=1000,
                     unit='wheels')


if __name__ == '__main__':
    main()

"""Trains one counter-strip reader (CRNN + CTC, with an upside-down head) and exports it as ONNX: one of the
models/reader-N.onnx that vote in the service (ml/train.sh trains them all).

Input: the counter window rectified to HEIGHT x WIDTH RGB in [-0.5, 0.5] (src/readers/local/geometry.ts
crops it with MARGIN_X / MARGIN_Y around the localised window). Outputs: per-step class probabilities over
blank + ALPHABET, and the probability that the strip is upside down.
"""
import math
import random
from multiprocessing import Pool
from typing import NamedTuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image, ImageFilter

from common import (ALPHABET, DEVICE, MODELS, SPEC, TRAIN_DATASETS, Export, batch_stream, dataset_root, split_rows, start_training,
                    train_and_export)
from synth import eight_wheel_strip, load_digit_crops, synthetic_strip

HEIGHT, WIDTH = SPEC['strip']['height'], SPEC['strip']['width']
# Margins the service adds around the localised window, as fractions of its width and height per side.
MARGIN_X, MARGIN_Y = SPEC['strip']['marginX'], SPEC['strip']['marginY']
# Share of each batch drawn from strips of any 4-8 wheels composed of digits/ crops (Toloka-like ones: Regularisation).
SYNTHETIC_SHARE = 0.1
UPSIDE_DOWN_SHARE = 0.2
# Toloka's 8-wheel counters are the harder read: they are drawn this many times as often as a bdci2020 window.
TOLOKA_WEIGHT = 2.0
CTC = nn.CTCLoss(zero_infinity=True)


class Regularisation(NamedTuple):
    """How hard a reader is kept from learning its training windows by heart."""
    dropout: float  # before and after the sequence layer
    eight_wheel_share: float  # of each batch: Toloka-like 5 black + 3 red strips composed of digits/ crops
    max_tilt: float  # degrees
    resolution_loss: float  # share of strips shrunk and blown up again
    grey: float  # share of strips without colour


REGULARISATIONS = {
    'light': Regularisation(dropout=0.0, eight_wheel_share=0.25, max_tilt=4, resolution_loss=0.0, grey=0.1),
    'strong': Regularisation(dropout=0.2, eight_wheel_share=0.35, max_tilt=6, resolution_loss=0.3, grey=0.15),
}


def conv_bn_relu(cin, cout, kernel=3, padding=1):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, 1, padding, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


def conv1d_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv1d(cin, cout, 3, 1, 1, bias=False), nn.BatchNorm1d(cout), nn.ReLU(inplace=True))


class StripReader(nn.Module):
    """`sequence` is what relates the columns to each other: a BiGRU over the whole strip, or two 1-D convolutions
    that see about three wheels around each column (no memory of the whole strip to overfit with)."""

    def __init__(self, sequence='gru', dropout=0.0):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn_relu(3, 32), nn.MaxPool2d(2),  # 16 x 80
            conv_bn_relu(32, 64), nn.MaxPool2d(2),  # 8 x 40
            conv_bn_relu(64, 128), conv_bn_relu(128, 128), nn.MaxPool2d((2, 1)),  # 4 x 40
            conv_bn_relu(128, 160), conv_bn_relu(160, 160), nn.MaxPool2d((2, 1)),  # 2 x 40
            conv_bn_relu(160, 192, (2, 1), 0),  # 1 x 40
        )
        self.dropout = nn.Dropout(dropout) if dropout else nn.Identity()
        self.recurrent = sequence == 'gru'
        self.sequence = (nn.GRU(192, 96, bidirectional=True, batch_first=True) if self.recurrent
                         else nn.Sequential(conv1d_bn_relu(192, 192), conv1d_bn_relu(192, 192)))
        self.classes = nn.Linear(192, len(ALPHABET) + 1)
        self.upside_down = nn.Linear(192, 1)

    def forward(self, x):
        columns = self.features(x).squeeze(2).permute(0, 2, 1)  # N x T x C
        if self.recurrent:
            sequence, _ = self.sequence(self.dropout(columns))
        else:
            sequence = self.sequence(self.dropout(columns).permute(0, 2, 1)).permute(0, 2, 1)
        return self.classes(self.dropout(sequence)), self.upside_down(columns.mean(1)).squeeze(1)


class Exported(nn.Module):
    """What ships: probabilities instead of logits, so the service needs no softmax of its own."""

    def __init__(self, reader):
        super().__init__()
        self.reader = reader

    def forward(self, x):
        logits, upside_down = self.reader(x)
        return logits.softmax(2), torch.sigmoid(upside_down)


def load_window(row):
    """A generous crop around the labelled window (so jitter has context) and the quad in that crop's frame."""
    image = Image.open(dataset_root(row['dataset']) / row['file']).convert('RGB')
    quad = np.array(row['quad'])
    width = np.linalg.norm(quad[1] - quad[0])
    height = np.linalg.norm(quad[3] - quad[0])
    pad = 0.5 * max(width, height)
    left, top = np.maximum(quad.min(0) - pad, 0).astype(int)
    right, bottom = np.minimum(quad.max(0) + pad, image.size).astype(int)
    crop = image.crop((left, top, right, bottom))
    quad = quad - [left, top]
    scale = min(1.0, 480 / crop.width)
    if scale < 1:
        crop = crop.resize((round(crop.width * scale), round(crop.height * scale)), Image.BILINEAR)
        quad = quad * scale
    return crop, quad


def rectify(image, quad, margin_x, margin_y, size=(WIDTH, HEIGHT)):
    """Warps the quad (TL, TR, BR, BL) grown by the margins to an image of `size` (a strip unless told)."""
    tl, tr, br, bl = (np.asarray(p, float) for p in quad)
    across = ((tr - tl) + (br - bl)) / 2
    down = ((bl - tl) + (br - tr)) / 2
    grow = lambda point, sx, sy: point + sx * margin_x * across + sy * margin_y * down
    corners = [grow(tl, -1, -1), grow(bl, -1, 1), grow(br, 1, 1), grow(tr, 1, -1)]  # PIL order: TL, BL, BR, TR
    return image.transform(size, Image.QUAD, data=tuple(np.concatenate(corners)), resample=Image.BILINEAR)


def jittered_quad(quad, rng, max_tilt):
    quad = np.asarray(quad, float)
    width = np.linalg.norm(quad[1] - quad[0])
    height = np.linalg.norm(quad[3] - quad[0])
    noise = np.stack([rng.uniform(-0.03, 0.03, 4) * width, rng.uniform(-0.12, 0.12, 4) * height], 1)
    shift = np.array([rng.uniform(-0.03, 0.03) * width, rng.uniform(-0.08, 0.08) * height])
    angle = math.radians(rng.uniform(-max_tilt, max_tilt))
    rotation = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    centre = quad.mean(0)
    return (quad - centre) @ rotation.T + centre + noise + shift


def photometric(strip, rng, regularisation):
    if regularisation.resolution_loss and rng.random() < regularisation.resolution_loss:
        scale = rng.uniform(0.4, 0.8)
        strip = strip.resize((round(strip.width * scale), round(strip.height * scale)), Image.BILINEAR).resize(strip.size, Image.BILINEAR)
    if rng.random() < 0.3:
        strip = strip.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.2)))
    x = np.asarray(strip, np.float32) / 255
    x = x * rng.uniform(0.6, 1.4) * rng.uniform(0.85, 1.15, 3) + rng.uniform(-0.15, 0.15)
    if rng.random() < regularisation.grey:
        x = x.mean(2, keepdims=True).repeat(3, 2)
    x = x + rng.normal(0, rng.uniform(0, 0.04), x.shape)
    return np.clip(x, 0, 1)


def to_tensor(array):
    return torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1), np.float32) - 0.5)


def encode(reading):
    return [ALPHABET.index(c) + 1 for c in reading]


def greedy_decode(probabilities):
    return collapse(probabilities.argmax(1).tolist())


def collapse(path):
    """The text of a CTC path of classes (blank 0): repeated classes run together, blanks separate them."""
    out, previous = [], 0
    for index in path:
        if index != previous and index != 0:
            out.append(ALPHABET[index - 1])
        previous = index
    return ''.join(out)


def make_batch(windows, window_weights, crops, size, rng, regularisation, behind_windows=False,
               strip_size=(WIDTH, HEIGHT), upside_down_share=UPSIDE_DOWN_SHARE):
    images, targets, lengths, upside_down = [], [], [], []
    for _ in range(size):
        source = rng.random()
        if source < SYNTHETIC_SHARE + regularisation.eight_wheel_share:
            if source < SYNTHETIC_SHARE:
                strip, reading = synthetic_strip(crops, rng)
            else:
                strip, reading = eight_wheel_strip(crops, rng, behind_windows)
            strip = strip.rotate(rng.uniform(-3, 3), resample=Image.BILINEAR).resize(strip_size, Image.BILINEAR)
        else:
            image, quad, reading, _ = windows[rng.pick(window_weights)]
            strip = rectify(image, jittered_quad(quad, rng, regularisation.max_tilt),
                            MARGIN_X + rng.uniform(-0.05, 0.06), MARGIN_Y + rng.uniform(-0.12, 0.2), strip_size)
        flipped = rng.random() < upside_down_share
        if flipped:
            strip = strip.rotate(180)
        images.append(to_tensor(photometric(strip, rng, regularisation)))
        upside_down.append(float(flipped))
        label = [] if flipped else encode(reading)
        targets += label
        lengths.append(len(label))
    return torch.stack(images), torch.tensor(targets, dtype=torch.long), torch.tensor(lengths), torch.tensor(upside_down)


def strip_loss(model, batch):
    """A reader's loss on a batch of make_batch: CTC on the upright strips (an upside-down one has no label) plus half
    the upside-down head's cross-entropy on all of them."""
    images, targets, lengths, upside_down = (t.to(DEVICE) for t in batch)
    logits, up_logit = model(images)
    log_probs = logits.log_softmax(2).permute(1, 0, 2)  # T x N x C
    keep = lengths > 0
    steps = torch.full((int(keep.sum()),), log_probs.shape[0], dtype=torch.long, device=DEVICE)
    loss = CTC(log_probs[:, keep], targets, steps, lengths[keep])
    return loss + 0.5 * F.binary_cross_entropy_with_logits(up_logit, upside_down)


def labelled_strips(windows, strip_size=(WIDTH, HEIGHT)):
    """(windows, their strips upright as one batch) for each 64 windows, each cut at its labelled quad with the
    service's margins."""
    for start in range(0, len(windows), 64):
        chunk = windows[start:start + 64]
        strips = [rectify(image, quad, MARGIN_X, MARGIN_Y, strip_size) for image, quad, *_ in chunk]
        yield chunk, torch.stack([to_tensor(np.asarray(strip, np.float32) / 255) for strip in strips])


def evaluate(model, windows, strip_size=(WIDTH, HEIGHT)):
    """Exact-read rate and upside-down accuracy on validation windows cut at the labelled quad."""
    model.eval()
    exact = orientation = 0
    with torch.no_grad():
        for chunk, upright in labelled_strips(windows, strip_size):
            logits, up_score = model(upright.to(DEVICE))
            exact += sum(greedy_decode(logits[i].softmax(1)) == reading for i, (_, _, reading, _) in enumerate(chunk))
            orientation += told_upright(model, upright.to(DEVICE), up_score)
    model.train()
    return exact / len(windows), orientation / len(windows)


def told_upright(model, upright, up_score):
    """How many of the upright strips (scored `up_score` by the upside-down head) the head finds less upside down
    than themselves turned round."""
    _, turned_score = model(torch.flip(upright, (2, 3)))
    return int((up_score < turned_score).sum())


def sideways(row):
    """Toloka boxes are axis-aligned: a box taller than wide is a sideways counter whose direction is unknown."""
    (x1, y1), (x2, _), (_, y3) = row['quad'][0], row['quad'][1], row['quad'][2]
    return row['dataset'] == 'toloka' and (x2 - x1) < (y3 - y1)


def usable_window(row):
    image, quad = load_window(row)
    return image, quad, row['reading'], row['dataset']


def usable_windows(rows):
    """The windows of the rows whose reading direction the quad gives, loaded with their reading and dataset."""
    with Pool() as pool:  # thousands of rendered photos: decoding them is most of a GPU run's start
        return pool.map(usable_window, [row for row in rows if not sideways(row)], chunksize=32)


def windows_to_learn(leave_out):
    """The training datasets' windows to learn from, and by dataset their validation windows to judge by."""
    train_rows, validation = [], {}
    for dataset in TRAIN_DATASETS:
        train, validation_rows = split_rows(dataset, leave_out)
        train_rows += train
        validation[dataset] = usable_windows(validation_rows)
    return usable_windows(train_rows), validation


def judged_on(validation, strip_size=(WIDTH, HEIGHT)):
    """train_and_export's `validate` for a strip reader: each dataset's exact and orientation shares."""
    return lambda model: ', '.join(f'{dataset} exact/orientation {evaluate(model, windows, strip_size)}'
                                   for dataset, windows in validation.items())


class BatchRandom:
    """numpy's Generator for numbers and weighted picks, plus the stdlib's randrange/randint/choice the helpers use."""

    def __init__(self, seed):
        rng, py_rng = np.random.default_rng(seed), random.Random(seed)
        self.random, self.randrange, self.randint, self.choice = py_rng.random, py_rng.randrange, py_rng.randint, py_rng.choice
        self.pick = lambda weights: int(rng.choice(len(weights), p=weights))
        self.uniform, self.normal = rng.uniform, rng.normal


def main():
    def add_options(parser):
        parser.add_argument('--sequence', choices=('gru', 'conv'), default='gru',
                            help='how the columns of the strip are related (StripReader)')
        parser.add_argument('--regularisation', choices=REGULARISATIONS, default='strong',
                            help='light: no dropout, fewer synthetic strips; strong: dropout, more synthetic strips, harsher augmentation')
        parser.add_argument('--behind-windows', action='store_true',
                            help="draw the synthetic Toloka-like counters' wheels behind windows of their own in a light "
                                 'face (synth.wheels_behind_windows), not side by side in a frame')

    args = start_training(minutes=40, batch=32, output=MODELS / SPEC['files']['readers'][0], add_options=add_options)
    regularisation = REGULARISATIONS[args.regularisation]
    windows, validation = windows_to_learn(args.leave_out)
    window_weights = np.array([TOLOKA_WEIGHT if dataset == 'toloka' else 1.0 for *_, dataset in windows])
    window_weights /= window_weights.sum()
    crops = load_digit_crops()
    print(f'{len(windows)} training windows, {sum(len(v) for v in crops.values())} digit crops', flush=True)

    batches = batch_stream(lambda source: make_batch(windows, window_weights, crops, args.batch, source, regularisation,
                                                     args.behind_windows),
                           BatchRandom, args.seed, args.workers)

    def batch_loss(model):
        return strip_loss(model, next(batches))

    train_and_export(args, StripReader(args.sequence, regularisation.dropout), batch_loss, judged_on(validation),
                     Export((1, 3, HEIGHT, WIDTH), 'strip', ['probabilities', 'upside_down'], Exported),
                     learning_rate=1.5e-3, weight_decay=1e-4, warmup_steps=200, max_grad_norm=5.0, validate_every=1000)


if __name__ == '__main__':
    main()

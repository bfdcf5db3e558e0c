"""Trains a counter-window segmentation network and exports it as ONNX: one of the models/localiser-N.onnx whose
candidate windows the service reads (ml/train.sh trains both).

Input: the whole photo resized so its long side is INPUT px, placed top-left on a black INPUT x INPUT canvas,
RGB scaled to [-0.5, 0.5]. Output: logits of "inside the counter window" at 1/4 resolution.
The service turns the mask into a rotated rectangle (src/readers/local/geometry.ts).
"""
import csv
import hashlib
import math
from multiprocessing import Pool

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import helper
from PIL import Image, ImageDraw

from common import (CACHE, DEVICE, MODELS, SPEC, TRAIN_DATASETS, Export, dataset_root, split_rows, start_training,
                    train_and_export)
from paddle_graph import ASSETS, PaddleGraph, constant

INPUT = SPEC['localiser']['input']
STORE = 320
STRIDE = SPEC['localiser']['stride']
# A labelled Toloka box less elongated than this is taken to be loose (a tilted counter): a localiser trains on
# the tilted window fit_tilted_boxes.ts found inside it (--tilted-windows), or not on the photo at all.
LOOSE_BOX_ASPECT = SPEC['localiser']['looseBoxAspect']
FITTED_QUADS = CACHE / 'toloka-quads.csv'
# As the service reads a localiser (src/readers/local/model.ts, localise).
EXPORT = Export((1, 3, INPUT, INPUT), 'image', ['mask_logits'])
DETECTOR = ASSETS / 'ch_PP-OCRv4_det_infer.onnx'
# The detector's text map where it is still at a quarter of the input's resolution (its head's first layer), as a
# localiser's logits are; and its backbone's last output, after which it learns unless told otherwise.
DETECTOR_FEATURES, DETECTOR_BACKBONE = 'batch_norm_0.tmp_4', 'p2o.Add.215'
# PaddleOCR's normalisation of the detector's input, channel by channel of the BGR image it reads.
DETECTOR_MEAN, DETECTOR_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# The head's constants in a detector localiser's export.
HEAD_WEIGHT, HEAD_BIAS = 'meterlens.head_weight', 'meterlens.head_bias'


def conv_bn_relu(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Localiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = conv_bn_relu(3, 16, 2)  # 1/2
        self.enc2 = nn.Sequential(conv_bn_relu(16, 32, 2), conv_bn_relu(32, 32))  # 1/4
        self.enc3 = nn.Sequential(conv_bn_relu(32, 64, 2), conv_bn_relu(64, 64))  # 1/8
        self.enc4 = nn.Sequential(conv_bn_relu(64, 96, 2), conv_bn_relu(96, 96))  # 1/16
        self.enc5 = nn.Sequential(conv_bn_relu(96, 128, 2), conv_bn_relu(128, 128))  # 1/32: whole-meter context
        self.dec4 = conv_bn_relu(128 + 96, 64)
        self.dec3 = conv_bn_relu(64 + 64, 32)
        self.dec2 = conv_bn_relu(32 + 32, 16)
        self.head = nn.Conv2d(16, 1, 1)

    def forward(self, x):
        e2 = self.enc2(self.enc1(x))
        e3 = self.enc3(e2)
        e4 = self.enc4(e3)
        e5 = self.enc5(e4)
        d = self.dec4(torch.cat([F.interpolate(e5, scale_factor=2.0), e4], 1))
        d = self.dec3(torch.cat([F.interpolate(d, scale_factor=2.0), e3], 1))
        d = self.dec2(torch.cat([F.interpolate(d, scale_factor=2.0), e2], 1))
        return self.head(d)


class DetectorLocaliser(nn.Module):
    """PP-OCRv4's text detector (a network pretrained on real photos of text, which may ship: ml/EXPERIMENTS.md,
    "PP-OCRv4's text detector as a pretrained localiser") as a localiser: its text map's features at a quarter of the
    input's resolution, a 1 x 1 convolution to the counter's logits. Only the nodes after the one that computes
    `train_after` learn."""

    def __init__(self, train_after):
        super().__init__()
        self.graph = PaddleGraph(DETECTOR)
        trained = self.graph.params_after(train_after)
        for key, param in self.graph.params.items():
            param.requires_grad = key in trained
        self.head = nn.Conv2d(self.graph.weight('conv2d_159.w_0').shape[0], 1, 1)
        self.register_buffer('mean', torch.tensor(DETECTOR_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer('std', torch.tensor(DETECTOR_STD).view(1, 3, 1, 1), persistent=False)

    def read_export(self, exported):
        """The weights of a localiser export_detector wrote (a set's localiser-N.onnx): what a fine-tune may start
        from."""
        weight, bias = self.graph.read_constants(exported, [HEAD_WEIGHT, HEAD_BIAS])
        with torch.no_grad():
            self.head.weight.copy_(torch.from_numpy(weight.copy()))
            self.head.bias.copy_(torch.from_numpy(bias.copy()))

    def forward(self, x):
        bgr = torch.flip(x + 0.5, (1,))
        [features] = self.graph.run({'x': (bgr - self.mean) / self.std}, [DETECTOR_FEATURES])
        return self.head(features)


def export_detector(model, output):
    """A detector localiser as the service loads a localiser (EXPORT's names and meaning): the detector's own ONNX
    graph as far as its text map's features, its constants replaced by the model's, after nodes that bring `image`
    to the detector's normalisation and before its head's convolution, which gives `mask_logits`."""
    def value(name, shape):
        return helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape)

    before = [constant('meterlens.half', np.float32(0.5)), constant('meterlens.bgr', np.array([2, 1, 0], np.int64)),
              constant('meterlens.mean', np.array(DETECTOR_MEAN, np.float32).reshape(1, 3, 1, 1)),
              constant('meterlens.std', np.array(DETECTOR_STD, np.float32).reshape(1, 3, 1, 1)),
              helper.make_node('Add', ['image', 'meterlens.half'], ['meterlens.unit']),
              helper.make_node('Gather', ['meterlens.unit', 'meterlens.bgr'], ['meterlens.unit_bgr'], axis=1),
              helper.make_node('Sub', ['meterlens.unit_bgr', 'meterlens.mean'], ['meterlens.centred']),
              helper.make_node('Div', ['meterlens.centred', 'meterlens.std'], ['x'])]
    after = [constant(HEAD_WEIGHT, model.head.weight.detach().cpu().numpy()),
             constant(HEAD_BIAS, model.head.bias.detach().cpu().numpy()),
             helper.make_node('Conv', [DETECTOR_FEATURES, HEAD_WEIGHT, HEAD_BIAS], ['mask_logits'])]
    model.graph.write(DETECTOR, output, [value('image', ['batch', 3, INPUT, INPUT])],
                      [value('mask_logits', ['batch', 1, INPUT // STRIDE, INPUT // STRIDE])], before, after,
                      until=DETECTOR_FEATURES)


def loose_box(row):
    """Toloka boxes are axis-aligned: around a tilted counter they are nearly square and mostly not counter."""
    (x1, y1), (x2, y2) = row['quad'][0], row['quad'][2]
    sides = sorted((abs(x2 - x1), abs(y2 - y1)))
    return row['dataset'] == 'toloka' and sides[1] < LOOSE_BOX_ASPECT * sides[0]


def training_rows(rows, tilted_windows):
    """The rows to train on: loose Toloka boxes left out, or replaced by the tilted windows fitted inside them."""
    fitted = {}
    if tilted_windows:
        if not FITTED_QUADS.exists():
            raise SystemExit(f'{FITTED_QUADS} not found: run node ml/fit_tilted_boxes.ts > {FITTED_QUADS} first (ml/train.sh does)')
        with open(FITTED_QUADS, newline='') as handle:
            fitted = {row['file']: row['corners'] for row in csv.DictReader(handle)}
    kept = []
    for row in rows:
        if not loose_box(row):
            kept.append(row)
        elif row['file'] in fitted:
            values = [float(v) for v in fitted[row['file']].split()]
            kept.append({**row, 'quad': list(zip(values[0::2], values[1::2]))})
    return kept


def load_canvas(row):
    """Photo on a STORE x STORE black canvas (long side STORE) and its filled counter-window mask."""
    image = Image.open(dataset_root(row['dataset']) / row['file']).convert('RGB')
    scale = STORE / max(image.size)
    size = (round(image.width * scale), round(image.height * scale))
    canvas = Image.new('RGB', (STORE, STORE))
    canvas.paste(image.resize(size, Image.BILINEAR), (0, 0))
    mask = Image.new('L', (STORE, STORE))
    ImageDraw.Draw(mask).polygon([(x * scale, y * scale) for x, y in row['quad']], fill=255)
    return np.asarray(canvas), np.asarray(mask)


def load_all(rows, tag):
    # Keyed by the photos and their quads, so refitted quads are not served from an old cache.
    digest = hashlib.sha1(repr([(row['file'], row['quad']) for row in rows]).encode()).hexdigest()[:12]
    cache_file = CACHE / f'localiser-{tag}-{digest}-{STORE}.npz'
    if cache_file.exists():
        data = np.load(cache_file)
        return data['images'], data['masks']
    with Pool() as pool:  # thousands of rendered photos: decoding them is most of a GPU run's start
        pairs = pool.map(load_canvas, rows, chunksize=32)
    images = np.stack([p[0] for p in pairs])
    masks = np.stack([p[1] for p in pairs])
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(cache_file, images=images, masks=masks)
    return images, masks


def augment(images, masks, generator):
    """Random quarter turns, small tilts, zoom and shifts (one affine warp for image and mask), colour jitter."""
    n = images.shape[0]
    quarter = torch.randint(0, 4, (n,), generator=generator).float() * (math.pi / 2)
    quarter = torch.where(torch.rand(n, generator=generator) < 0.5, torch.zeros(n), quarter)
    angle = quarter + (torch.rand(n, generator=generator) - 0.5) * math.radians(40)
    zoom = torch.exp((torch.rand(n, generator=generator) - 0.3) * 0.9)  # >1 zooms in
    shift = (torch.rand(n, 2, generator=generator) - 0.5) * 0.5
    cos, sin = torch.cos(angle) / zoom, torch.sin(angle) / zoom
    theta = torch.stack([torch.stack([cos, -sin, shift[:, 0]], 1), torch.stack([sin, cos, shift[:, 1]], 1)], 1)
    grid = F.affine_grid(theta, (n, 3, INPUT, INPUT), align_corners=False)
    warped = F.grid_sample(images, grid, align_corners=False)
    warped_masks = F.grid_sample(masks, grid, align_corners=False)
    gains = 1 + (torch.rand(n, 3, 1, 1, generator=generator) - 0.5) * 0.4
    brightness = torch.exp((torch.rand(n, 1, 1, 1, generator=generator) - 0.5) * 1.2)
    warped = (warped * gains * brightness).clamp(0, 1)
    grey = torch.rand(n, 1, 1, 1, generator=generator) < 0.15
    warped = torch.where(grey, warped.mean(1, keepdim=True).expand_as(warped), warped)
    target = F.avg_pool2d(warped_masks, STRIDE)
    return warped - 0.5, target


def loss_fn(logits, target):
    bce = F.binary_cross_entropy_with_logits(logits, (target > 0.5).float(), pos_weight=torch.tensor(4.0, device=logits.device))
    probs = torch.sigmoid(logits)
    inter = (probs * target).sum((1, 2, 3))
    dice = 1 - (2 * inter + 1) / (probs.sum((1, 2, 3)) + target.sum((1, 2, 3)) + 1)
    return bce + dice.mean()


def to_tensors(images, masks):
    """The photos and masks as N x C x H x W tensors, still in bytes: 10 000 rendered photos in floats would take
    16 GB; each batch is brought to floats (in_floats) as it is drawn."""
    return torch.from_numpy(images).permute(0, 3, 1, 2), torch.from_numpy(masks).unsqueeze(1)


def in_floats(pixels):
    return pixels.float() / 255


def validation_iou(model, images, masks):
    """Mean IoU of thresholded masks on the validation photos at their plain (unaugmented) framing."""
    model.eval()
    ious = []
    with torch.no_grad():
        for start in range(0, images.shape[0], 32):
            x = F.interpolate(in_floats(images[start:start + 32]), size=(INPUT, INPUT), mode='bilinear', align_corners=False)
            target = F.interpolate(in_floats(masks[start:start + 32]), size=(INPUT // STRIDE, INPUT // STRIDE), mode='area') > 0.5
            predicted = model((x - 0.5).to(DEVICE)).cpu() > 0
            inter = (predicted & target).sum((1, 2, 3)).float()
            union = (predicted | target).sum((1, 2, 3)).float().clamp(min=1)
            ious.append(inter / union)
    model.train()
    return torch.cat(ious).mean().item()


def main():
    def add_options(parser):
        parser.add_argument('--tilted-windows', action='store_true',
                            help='train on the tilted windows fitted inside loose Toloka boxes instead of leaving those photos out')
        parser.add_argument('--detector', action='store_true', help="start from PP-OCRv4's text detector")
        parser.add_argument('--train-after', default=DETECTOR_BACKBONE,
                            help="with --detector, the output of the last node kept as pretrained (default the backbone's)")

    args = start_training(minutes=30, batch=24, output=MODELS / SPEC['files']['localisers'][0], add_options=add_options)

    train_rows, validation_rows = [], []
    for dataset in TRAIN_DATASETS:
        train, validation = split_rows(dataset, args.leave_out)
        train_rows += training_rows(train, args.tilted_windows)
        validation_rows += validation
    images, masks = to_tensors(*load_all(train_rows, 'train'))
    val_images, val_masks = to_tensors(*load_all(validation_rows, 'val'))
    print(f'{len(train_rows)} training photos, {len(validation_rows)} validation photos', flush=True)

    model = DetectorLocaliser(args.train_after) if args.detector else Localiser()
    generator = torch.Generator().manual_seed(args.seed)

    def batch_loss(model):
        index = torch.randint(0, images.shape[0], (args.batch,), generator=generator)
        x, target = augment(in_floats(images[index]), in_floats(masks[index]), generator)
        return loss_fn(model(x.to(DEVICE)), target.to(DEVICE))

    train_and_export(args, model, batch_loss, lambda model: f'IoU {validation_iou(model, val_images, val_masks):.3f}',
                     export_detector if args.detector else EXPORT, learning_rate=2e-3, weight_decay=1e-4, validate_every=500)


if __name__ == '__main__':
    main()

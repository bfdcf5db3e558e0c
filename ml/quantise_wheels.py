"""Quantises the wheel reader that ensemble_wheels.py joined to 8-bit integers: on CPU it reads a photo's wheels about
2.5 times faster, and on the Toloka calibration and validation photos every reading stays the same (ml/EXPERIMENTS.md,
"The wheel reader in 8 bits"):

    /usr/bin/python3 quantise_wheels.py --output ../models/noncommercial/wheels.onnx JOINED.onnx [--leave-out LIST ...]
        [--digits-share S --counters-share S: train_wheels.py's, for a reader that learned no Toloka wheel]

Each convolution reads and writes 8-bit activations, as the QuantizeLinear / DequantizeLinear pairs (QDQ) around it
that onnxruntime fuses into one integer convolution:
- its weights per output channel, symmetric, in 7 bits (-63 to 63): CPUs without VNNI add the products of 8-bit
  activations and weights in 16 bits, which full 8-bit weights can saturate (onnxruntime's `reduce_range`);
- its output from 0 to the largest value its ReLU gives on the training wheels, at zero point 0, so that the
  quantisation itself is the ReLU; the input, pixels in [-0.5, 0.5], in steps of 1/255 around zero point 128;
- a MaxPool between convolutions keeps its input's quantisation. The average pooling, linear layer and softmax at
  the end stay float.
The largest values come from the wheels of the windows the model learned from (train_wheels.py's, as it cuts them),
or from wheels drawn as it drew them where it learned no Toloka wheel.
"""
import argparse
import random

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper

from common import TOLOKA_WHEELS, split_rows
from synth import load_digit_crops
from train_wheels import (END_JITTER, add_share_options, digit_crops, found_windows, make_batch, shares_of, wheel_tensor, windows_as_found,
                          without_toloka)

WEIGHT_LEVELS = 63
ACTIVATION_LEVELS = 255
INPUT_ZERO_POINT = 128
# About as many as the Toloka training windows have wheels.
DRAWN_WHEELS = 6400


def _attributes(node):
    return {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}


def _per_channel(values, axis, like):
    """A per-channel parameter shaped to broadcast along `axis` of `like`."""
    shape = [1] * like.dim()
    shape[axis] = -1
    return values.reshape(shape)


def evaluate(model, inputs):
    """Every tensor of the model for the one input `inputs` ({name: value}, float), by torch: only the operators the
    wheel reader and its quantised form use. onnxruntime's Python package is not in Debian."""
    values = {initializer.name: torch.from_numpy(numpy_helper.to_array(initializer).copy()) for initializer in model.graph.initializer}
    values.update({name: torch.as_tensor(value, dtype=torch.float32) for name, value in inputs.items()})
    for node in model.graph.node:
        args = [values[name] if name else None for name in node.input]
        attributes = _attributes(node)
        op = node.op_type
        if op == 'Conv':
            weight, bias = args[1].float(), args[2].float() if len(args) > 2 else None
            out = F.conv2d(args[0], weight, bias, attributes.get('strides', [1, 1]), attributes['pads'][:2], attributes.get('dilations', [1, 1]))
        elif op == 'Relu':
            out = torch.relu(args[0])
        elif op == 'Identity':
            out = args[0]
        elif op == 'MaxPool':
            out = F.max_pool2d(args[0], attributes['kernel_shape'], attributes.get('strides'))
        elif op == 'GlobalAveragePool':
            out = args[0].mean(dim=(2, 3), keepdim=True)
        elif op == 'Flatten':
            out = args[0].flatten(attributes.get('axis', 1))
        elif op == 'Gemm':
            weight = args[1].t() if attributes.get('transB') else args[1]
            out = args[0] @ weight + args[2]
        elif op == 'Softmax':
            out = torch.softmax(args[0], attributes.get('axis', -1))
        elif op == 'Sum':
            out = sum(args[1:], args[0])
        elif op == 'Mul':
            out = args[0] * args[1]
        elif op == 'QuantizeLinear':
            low, high = (0, 255) if args[2].dtype == torch.uint8 else (-128, 127)
            scale, zero = (_per_channel(p.float(), attributes.get('axis', 1), args[0]) for p in args[1:3])
            out = torch.clamp(torch.round(args[0] / scale) + zero, low, high).to(args[2].dtype)
        elif op == 'DequantizeLinear':
            scale, zero = (_per_channel(p.float(), attributes.get('axis', 1), args[0]) for p in args[1:3])
            out = (args[0].float() - zero) * scale
        else:
            raise ValueError(f'{op} is not an operator of the wheel reader')
        values[node.output[0]] = out
    return values


def largest_activations(model, wheels):
    """{ReLU output: the largest value it takes on `wheels`}."""
    relu_outputs = [node.output[0] for node in model.graph.node if node.op_type == 'Relu']
    largest = dict.fromkeys(relu_outputs, 0.0)
    with torch.no_grad():
        for batch in torch.split(wheels, 256):
            values = evaluate(model, {model.graph.input[0].name: batch})
            for name in relu_outputs:
                largest[name] = max(largest[name], float(values[name].max()))
    return largest


def quantise(model, largest):
    """The model with each convolution in QDQ form (module docstring); `largest` as largest_activations gives it."""
    graph = model.graph
    weights = {initializer.name: numpy_helper.to_array(initializer) for initializer in graph.initializer}
    # The exporter shares equal weights (an untrained model's zero biases, say) through Identity nodes.
    shared = {node.output[0]: weights[node.input[0]] for node in graph.node if node.op_type == 'Identity' and node.input[0] in weights}
    weights.update(shared)
    relu_after = {node.input[0]: node for node in graph.node if node.op_type == 'Relu'}
    nodes, initializers = [], []
    scale_of = {}  # a quantised tensor's name (its DequantizeLinear output) -> its scale
    renamed = {}  # a float tensor -> the DequantizeLinear output that replaces it

    def constant(name, value, dtype):
        initializers.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def quantise_activation(name, scale, zero_point):
        """`name` through QuantizeLinear and DequantizeLinear; returns the dequantised tensor's name."""
        scale_name = constant(f'{name}_scale', scale, np.float32)
        zero_name = constant(f'{name}_zero_point', zero_point, np.uint8)
        nodes.append(helper.make_node('QuantizeLinear', [name, scale_name, zero_name], [f'{name}_quantised']))
        nodes.append(helper.make_node('DequantizeLinear', [f'{name}_quantised', scale_name, zero_name], [f'{name}_dequantised']))
        scale_of[f'{name}_dequantised'] = scale
        renamed[name] = f'{name}_dequantised'
        return f'{name}_dequantised'

    def copy(node, inputs):
        nodes.append(helper.make_node(node.op_type, inputs, list(node.output), name=node.name, **_attributes(node)))

    input_name = graph.input[0].name
    quantise_activation(input_name, 1 / ACTIVATION_LEVELS, INPUT_ZERO_POINT)
    for node in graph.node:
        inputs = [renamed.get(name, name) for name in node.input]
        if node.op_type == 'Conv':
            x, x_scale = inputs[0], scale_of[inputs[0]]
            weight, bias = weights[node.input[1]], weights[node.input[2]]
            weight_scale = np.maximum(np.abs(weight).reshape(len(weight), -1).max(1), 1e-12) / WEIGHT_LEVELS
            bias_scale = x_scale * weight_scale
            prefix = node.input[1]
            quantised_weight = np.clip(np.round(weight / weight_scale[:, None, None, None]), -WEIGHT_LEVELS, WEIGHT_LEVELS)
            nodes.append(helper.make_node('DequantizeLinear', [
                constant(f'{prefix}_quantised', quantised_weight, np.int8), constant(f'{prefix}_scale', weight_scale, np.float32),
                constant(f'{prefix}_zero_point', np.zeros(len(weight)), np.int8)], [f'{prefix}_dequantised'], axis=0))
            nodes.append(helper.make_node('DequantizeLinear', [
                constant(f'{prefix}_bias_quantised', np.round(bias / bias_scale), np.int32), constant(f'{prefix}_bias_scale', bias_scale, np.float32),
                constant(f'{prefix}_bias_zero_point', np.zeros(len(weight)), np.int32)], [f'{prefix}_bias_dequantised'], axis=0))
            copy(node, [x, f'{prefix}_dequantised', f'{prefix}_bias_dequantised'])
            relu = relu_after[node.output[0]]
            renamed[relu.output[0]] = quantise_activation(node.output[0], largest[relu.output[0]] / ACTIVATION_LEVELS, 0)
        elif node.op_type == 'Relu':
            continue  # its convolution's output quantisation clips at zero
        elif node.output[0] in shared:
            continue  # the convolutions took their weights
        elif node.op_type == 'MaxPool':
            copy(node, inputs)
            quantise_activation(node.output[0], scale_of[inputs[0]], 0)
        else:
            copy(node, inputs)
    used = {name for node in nodes for name in node.input}
    kept = [initializer for initializer in graph.initializer if initializer.name in used]
    quantised = helper.make_graph(nodes, graph.name, list(graph.input), list(graph.output), kept + initializers)
    result = helper.make_model(quantised, opset_imports=model.opset_import)
    result.ir_version = model.ir_version
    onnx.checker.check_model(result)
    return result


def training_wheels(leave_out, shares):
    """Every wheel of the Toloka training windows localiser 1 finds, cut as train_wheels.py cuts them; or, for a
    reader that learned no Toloka wheel, as many wheels drawn as it drew its own (augmented, as it saw them)."""
    if without_toloka(shares):
        crops = digit_crops(load_digit_crops())
        return make_batch([], crops, shares, END_JITTER, DRAWN_WHEELS, np.random.default_rng(1), random.Random(1))[0]
    train_rows, _ = split_rows('toloka', leave_out)
    windows = windows_as_found(train_rows, found_windows({1}))
    return torch.stack([wheel_tensor(image, quad, wheel) for image, quad, _, _ in windows for wheel in range(TOLOKA_WHEELS)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--output', required=True)
    parser.add_argument('--leave-out', nargs='*', default=[], metavar='LIST',
                        help='photo lists whose wheels the joined model did not learn from, left out of the largest values too')
    add_share_options(parser)
    parser.add_argument('joined', help='the float wheel reader, as ensemble_wheels.py writes it')
    args = parser.parse_args()
    model = onnx.load(args.joined)
    wheels = training_wheels(args.leave_out, shares_of(args))
    onnx.save(quantise(model, largest_activations(model, wheels)), args.output)
    print(f'quantised {args.output} on {len(wheels)} training wheels')


if __name__ == '__main__':
    main()

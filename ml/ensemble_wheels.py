"""Joins wheel readers trained apart (train_wheels.py with other seeds) into one ONNX model that averages their
probabilities, so the service runs them as the one wheel reader it knows (models/noncommercial/wheels.onnx, once
quantise_wheels.py has quantised it):

    /usr/bin/python3 ensemble_wheels.py --output JOINED.onnx MEMBER.onnx MEMBER.onnx ...

Each member keeps its own nodes and weights under a prefix (`m0_`, `m1_`, ...); all read the one input and the
output is the mean of their outputs, with the members' input and output names.
"""
import argparse

import onnx
from onnx import compose, helper


def ensemble(members):
    first = members[0]
    input_name = first.graph.input[0].name
    output_name = first.graph.output[0].name
    prefixed = [compose.add_prefix(member, f'm{index}_') for index, member in enumerate(members)]
    nodes, initializers = [], []
    for model in prefixed:
        graph = model.graph
        # The member's own input is the ensemble's input.
        own_input = graph.input[0].name
        for node in graph.node:
            node.input[:] = [input_name if name == own_input else name for name in node.input]
            nodes.append(node)
        initializers.extend(graph.initializer)
    outputs = [model.graph.output[0].name for model in prefixed]
    nodes.append(helper.make_node('Sum', outputs, ['member_sum']))
    scale = helper.make_tensor('member_share', onnx.TensorProto.FLOAT, [], [1 / len(members)])
    initializers.append(scale)
    nodes.append(helper.make_node('Mul', ['member_sum', 'member_share'], [output_name]))
    graph = helper.make_graph(nodes, 'wheels_ensemble', [first.graph.input[0]], [first.graph.output[0]], initializers)
    model = helper.make_model(graph, opset_imports=first.opset_import)
    model.ir_version = first.ir_version
    onnx.checker.check_model(model)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--output', required=True)
    parser.add_argument('members', nargs='+', help='wheel reader ONNX files with the same input and output')
    args = parser.parse_args()
    onnx.save(ensemble([onnx.load(path) for path in args.members]), args.output)


if __name__ == '__main__':
    main()

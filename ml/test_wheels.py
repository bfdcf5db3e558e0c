"""cd ml && /usr/bin/python3 -m unittest test_wheels: the wheel reader's slices of the counter window, the found
windows it learns from, wheel readers joined into one model, and that model quantised."""
import random
import tempfile
import unittest
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

from ensemble_wheels import ensemble
from quantise_wheels import evaluate, largest_activations, quantise

from common import TOLOKA_WHEELS, export_onnx
from train_wheels import (EXPORT, HEIGHT, WIDTH, Shares, digit_crops, WheelReader, digits_of, found_windows, make_batch, moved_ends,
                          rolled_wheel_target, wheel_quad)


class WheelQuad(unittest.TestCase):
    def test_slices_tile_the_window_left_to_right(self):
        quad = [(10, 20), (90, 20), (90, 40), (10, 40)]
        slices = [np.array(wheel_quad(quad, wheel)) for wheel in range(TOLOKA_WHEELS)]
        self.assertTrue(np.allclose(slices[0], [(10, 20), (20, 20), (20, 40), (10, 40)]))
        self.assertTrue(np.allclose(slices[-1], [(80, 20), (90, 20), (90, 40), (80, 40)]))
        for left, right in zip(slices, slices[1:]):
            self.assertTrue(np.allclose(left[[1, 2]], right[[0, 3]]))

    def test_a_tilted_window_is_sliced_along_its_top_and_bottom(self):
        quad = [(0, 0), (80, 8), (78, 28), (-2, 20)]
        first = np.array(wheel_quad(quad, 0))
        self.assertTrue(np.allclose(first, [(0, 0), (10, 1), (8, 21), (-2, 20)]))


class MovedEnds(unittest.TestCase):
    def test_each_end_moves_along_the_window_by_at_most_the_wheels_asked_for(self):
        quad = [(10, 20), (90, 20), (90, 40), (10, 40)]  # eight wheels of 10 px
        rng = np.random.default_rng(0)
        moved = np.array([moved_ends(quad, rng, 0.5) for _ in range(200)])
        self.assertTrue(np.allclose(moved[:, :, 1], [20, 20, 40, 40]))
        self.assertTrue(np.allclose(moved[:, 0, 0], moved[:, 3, 0]) and np.allclose(moved[:, 1, 0], moved[:, 2, 0]))
        left, right = moved[:, 0, 0] - 10, moved[:, 1, 0] - 90
        self.assertTrue(np.abs(left).max() <= 5 and np.abs(right).max() <= 5)
        self.assertTrue(np.abs(left).max() > 4 and np.abs(right).max() > 4)
        self.assertLess(abs(np.corrcoef(left, right)[0, 1]), 0.3)


class FoundWindows(unittest.TestCase):
    def test_each_localisers_window_of_a_photo_is_kept_when_asked_for(self):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / 'windows.csv'
            path.write_text('file,localiser,corners\n'
                            'a.jpg,1,0 0 80 0 80 20 0 20\n'
                            'a.jpg,2,1 0 81 0 81 20 1 20\n'
                            'b.jpg,2,0 5 40 5 40 15 0 15\n')
            self.assertEqual(found_windows({1}, path), {'a.jpg': [[(0, 0), (80, 0), (80, 20), (0, 20)]]})
            both = found_windows({1, 2}, path)
            self.assertEqual([len(both['a.jpg']), len(both['b.jpg'])], [2, 1])
            self.assertEqual(both['a.jpg'][1][0], (1, 0))


class Digits(unittest.TestCase):
    def test_one_digit_a_wheel_without_the_point(self):
        self.assertEqual(digits_of('00758.407'), [0, 0, 7, 5, 8, 4, 0, 7])


class RolledWheelTarget(unittest.TestCase):
    def test_a_wheel_at_rest_is_its_digit(self):
        self.assertEqual(rolled_wheel_target(4, 0).tolist(), [0, 0, 0, 0, 1, 0, 0, 0, 0, 0])

    def test_a_rolling_wheel_is_shared_with_the_next_digit_and_nine_rolls_to_zero(self):
        self.assertTrue(np.allclose(rolled_wheel_target(3, 7).numpy(), [0, 0, 0, 0.3, 0.7, 0, 0, 0, 0, 0]))
        self.assertTrue(np.allclose(rolled_wheel_target(9, 5).numpy(), [0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0.5]))


class Batch(unittest.TestCase):
    def test_crops_and_synthetic_counters_alone_need_no_toloka_window(self):
        crop = np.full((32, 20, 3), 230, np.uint8)
        crop[4:28, 8:12] = 20
        by_digit = {(digit, tenths): [crop] for digit in range(10) for tenths in range(10)}
        crops = digit_crops(by_digit)
        for shares in (Shares(0, 1), Shares(0.5, 0.5)):
            images, labels = make_batch([], crops, shares, 0.5, 16, np.random.default_rng(1), random.Random(1))
            self.assertEqual(tuple(images.shape), (16, 3, HEIGHT, WIDTH))
            self.assertTrue(torch.allclose(labels.sum(1), torch.ones(16)))


def scaled_input(factor):
    """A one-node model: probabilities = wheels * factor, named as the wheel reader's input and output."""
    graph = helper.make_graph(
        [helper.make_node('Mul', ['wheels', 'factor'], ['probabilities'])], 'member',
        [helper.make_tensor_value_info('wheels', TensorProto.FLOAT, ['batch', 10])],
        [helper.make_tensor_value_info('probabilities', TensorProto.FLOAT, ['batch', 10])],
        [helper.make_tensor('factor', TensorProto.FLOAT, [], [factor])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])


class Ensemble(unittest.TestCase):
    def test_members_read_the_one_input_and_their_outputs_are_averaged(self):
        model = ensemble([scaled_input(1.0), scaled_input(3.0)])
        self.assertEqual([i.name for i in model.graph.input], ['wheels'])
        self.assertEqual([o.name for o in model.graph.output], ['probabilities'])
        member_nodes = [node for node in model.graph.node if node.op_type == 'Mul' and node.input[0] == 'wheels']
        self.assertEqual([node.input[1] for node in member_nodes], ['m0_factor', 'm1_factor'])
        total, mean = model.graph.node[-2:]
        self.assertEqual((total.op_type, list(total.input)), ('Sum', [node.output[0] for node in member_nodes]))
        self.assertEqual((mean.op_type, list(mean.input), list(mean.output)), ('Mul', ['member_sum', 'member_share'], ['probabilities']))
        share = next(t for t in model.graph.initializer if t.name == 'member_share')
        self.assertAlmostEqual(share.float_data[0], 0.5)


def exported_wheel_reader(seed):
    """An untrained wheel reader (torch, in eval mode) and its ONNX model as train_wheels.py exports it."""
    torch.manual_seed(seed)
    reader = WheelReader().eval()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / 'wheels.onnx'
        export_onnx(reader, EXPORT, path)
        return reader, onnx.load(path)


class Quantise(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.joined = ensemble([exported_wheel_reader(seed)[1] for seed in range(2)])
        generator = torch.Generator().manual_seed(0)
        cls.wheels = torch.rand(64, 3, HEIGHT, WIDTH, generator=generator) - 0.5
        cls.quantised = quantise(cls.joined, largest_activations(cls.joined, cls.wheels))

    def probabilities(self, model):
        return evaluate(model, {'wheels': self.wheels})['probabilities']

    def test_every_convolution_reads_and_writes_integers_and_the_relus_are_the_quantisation(self):
        ops = Counter(node.op_type for node in self.quantised.graph.node)
        self.assertEqual(ops['Relu'], 0)
        self.assertEqual(ops['Conv'], 12)
        # Per convolution: its weights and bias, and its output; per MaxPool its output; and the input.
        self.assertEqual(ops['DequantizeLinear'], 3 * 12 + 6 + 1)
        self.assertEqual(ops['QuantizeLinear'], 12 + 6 + 1)
        weights = [t for t in self.quantised.graph.initializer if t.data_type == TensorProto.INT8 and len(t.dims) == 4]
        self.assertEqual(len(weights), 12)
        self.assertLessEqual(max(np.abs(onnx.numpy_helper.to_array(t)).max() for t in weights), 63)
        self.assertEqual([i.name for i in self.quantised.graph.input], ['wheels'])
        self.assertEqual([o.name for o in self.quantised.graph.output], ['probabilities'])

    def test_it_reads_as_the_float_model_does(self):
        float_reading, quantised_reading = self.probabilities(self.joined), self.probabilities(self.quantised)
        self.assertLess(float((float_reading - quantised_reading).abs().max()), 0.02)
        self.assertTrue(torch.allclose(quantised_reading.sum(1), torch.ones(len(self.wheels)), atol=1e-5))

    def test_the_evaluator_reads_the_float_model_as_torch_does(self):
        reader, model = exported_wheel_reader(0)
        with torch.no_grad():
            expected = EXPORT.wrap(reader)(self.wheels)
        self.assertTrue(torch.allclose(evaluate(model, {'wheels': self.wheels})['probabilities'], expected, atol=1e-5))


if __name__ == '__main__':
    unittest.main()

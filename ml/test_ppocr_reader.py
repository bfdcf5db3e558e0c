"""Unit tests of ppocr_reader.py: python3 -m unittest test_ppocr_reader (from ml/; needs `npm ci` for the network)."""
import tempfile
import unittest
from pathlib import Path

import numpy as np
import onnx
import torch

from common import ALPHABET, Export, export_onnx, start_from
from onnxruntime_node import NODE, run_in_onnxruntime
from ppocr_reader import KEYS, NECK_STARTS, ONNX_FILE, PPOCR, STRIP_SIZE, PPOCRWheels, export, export_wheels, our_classes
from train_wheels import HEIGHT as WHEEL_HEIGHT, WIDTH as WHEEL_WIDTH

WIDTH, HEIGHT = STRIP_SIZE
# onnxruntime-node's log(p(class) / p(blank)) for blank, 0-9 and '.' at output steps 0, 15 and 29 of the ONNX file
# fed x[i] = 0.8 sin(0.013 i) (1 x 3 x 48 x 240, BGR in [-1, 1]).
ONNXRUNTIME = {
    0: [0, -8.0906, -5.2572, -5.5865, -6.5956, -6.6989, -7.4803, -6.9464, -6.9608, -7.6382, -7.7088, -8.7521],
    15: [0, -6.5936, -7.0659, -7.2207, -7.5386, -7.3883, -7.9425, -7.1868, -7.1622, -6.93, -7.5774, -7.733],
    29: [0, -7.1295, -8.6887, -7.2782, -7.0973, -7.3035, -8.2767, -7.0034, -7.8287, -7.3067, -8.56, -7.4794],
}


def trained(model, names=('conv2d_10__w_0', 'linear_85__w_0', 'linear_85__b_0')):
    """`model` with weights changed as training leaves them: the backbone's first ones and the classifier's."""
    torch.manual_seed(0)
    with torch.no_grad():
        for name in names:
            model.params[name].mul_(1 + 0.1 * torch.randn_like(model.params[name]))
    return model


@unittest.skipUnless(ONNX_FILE.exists(), f'{ONNX_FILE} is installed by npm ci')
class PPOCRTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = PPOCR().eval()

    def test_each_class_is_the_keys_line_of_its_character(self):
        keys = KEYS.read_text(encoding='utf8').split('\n')
        classes = our_classes()
        self.assertEqual(classes[0], 0)
        self.assertEqual([keys[c - 1] for c in classes[1:]], list(ALPHABET))

    def test_it_reads_as_onnxruntime_reads_the_onnx_file(self):
        x = torch.from_numpy((0.8 * np.sin(0.013 * np.arange(3 * HEIGHT * WIDTH))).astype(np.float32))
        strips = torch.flip(x.reshape(1, 3, HEIGHT, WIDTH), (1,)) / 2  # our RGB in [-0.5, 0.5]
        with torch.no_grad():
            logits, _ = self.model(strips)
        logits = logits[0]
        self.assertEqual(tuple(logits.shape), (WIDTH // 8, len(ALPHABET) + 1))
        for step, expected in ONNXRUNTIME.items():
            np.testing.assert_allclose((logits[step] - logits[step, 0]).numpy(), expected, atol=1e-3)

    def test_the_backbone_stays_pretrained_unless_told(self):
        neck = self.model.params_after(NECK_STARTS)
        self.assertIn('linear_85__w_0', neck)
        self.assertNotIn('conv2d_10__w_0', neck)  # the first convolution
        self.assertLess(len(neck), len(self.model.params))

    def test_only_the_nodes_after_the_one_named_and_the_heads_added_learn(self):
        model = PPOCR()
        count = model.learn_only_after(NECK_STARTS)
        learning = {name for name, param in model.named_parameters() if param.requires_grad}
        self.assertIn('upside_down.weight', learning)
        self.assertIn('params.linear_85__w_0', learning)
        self.assertNotIn('params.conv2d_10__w_0', learning)
        self.assertEqual(count, sum(param.numel() for param in model.parameters() if param.requires_grad))

    @unittest.skipUnless(NODE.exists(), 'onnxruntime-node reads the export: npm ci installs both')
    def test_its_export_reads_in_onnxruntime_as_it_reads_here(self):
        model = trained(PPOCR())
        i = torch.arange(3 * HEIGHT * WIDTH)
        strips = torch.stack([0.4 * torch.sin(0.013 * i + strip) for strip in (0, 1)]).reshape(2, 3, HEIGHT, WIDTH)
        with torch.no_grad():
            logits, upside_down = model.eval()(strips.float())
        with tempfile.TemporaryDirectory() as folder:
            file = Path(folder) / 'reader.onnx'
            export(model, file)
            read = run_in_onnxruntime(file, {'strip': strips.float().numpy()})
        self.assertEqual(read['probabilities'].shape, (2, WIDTH // 8, len(ALPHABET) + 1))
        np.testing.assert_allclose(read['probabilities'], logits.softmax(2).numpy(), atol=1e-4)
        np.testing.assert_allclose(read['upside_down'], torch.sigmoid(upside_down).numpy(), atol=1e-4)

    @unittest.skipUnless(NODE.exists(), 'onnxruntime-node reads the export: npm ci installs both')
    def test_a_wheel_readers_export_reads_in_onnxruntime_as_it_reads_here_and_a_fine_tune_starts_from_it(self):
        model = trained(PPOCRWheels())
        i = torch.arange(3 * WHEEL_HEIGHT * WHEEL_WIDTH)
        wheels = torch.stack([0.4 * torch.sin(0.05 * i + wheel) for wheel in (0, 1, 2)])
        wheels = wheels.reshape(3, 3, WHEEL_HEIGHT, WHEEL_WIDTH).float()
        with torch.no_grad():
            logits = model.eval()(wheels)
        with tempfile.TemporaryDirectory() as folder:
            file = Path(folder) / 'wheels.onnx'
            export_wheels(model, file)
            read = run_in_onnxruntime(file, {'wheels': wheels.numpy()})
            started = PPOCRWheels()
            start_from(started, file)
        self.assertEqual(read['probabilities'].shape, (3, 10))
        np.testing.assert_allclose(read['probabilities'], logits.softmax(1).numpy(), atol=1e-4)
        for name, param in model.state_dict().items():
            self.assertTrue(torch.equal(started.state_dict()[name], param), f'a fine-tune starts from it: {name}')

    def test_a_wheel_is_four_steps_of_the_recogniser(self):
        logits, = self.model.run_on(torch.zeros(2, 3, WHEEL_HEIGHT, WHEEL_WIDTH), [self.model.logits_input])
        self.assertEqual(tuple(logits.shape), (2, 4, len(ALPHABET) + 1))

    def test_a_fine_tune_starts_from_its_export_as_it_was(self):
        model = trained(PPOCR(), ('conv2d_10__w_0', 'linear_85__w_0'))
        with torch.no_grad():
            model.upside_down.bias.fill_(0.3)
        with tempfile.TemporaryDirectory() as folder:
            file = Path(folder) / 'reader.onnx'
            export(model, file)
            started = PPOCR()
            start_from(started, file)
        for name, param in model.state_dict().items():
            self.assertTrue(torch.equal(started.state_dict()[name], param), name)

    def test_another_networks_onnx_file_stops_with_a_message(self):
        with tempfile.TemporaryDirectory() as folder:
            file = Path(folder) / 'linear.onnx'
            export_onnx(torch.nn.Linear(3, 2), Export((1, 3), 'x', ['y']), file)
            with self.assertRaises(SystemExit) as stopped:
                start_from(PPOCR(), file)
        self.assertIn('not an export of this network', str(stopped.exception.code))

    def test_an_export_lacking_weights_its_nodes_use_stops_with_a_message(self):
        with tempfile.TemporaryDirectory() as folder:
            file = Path(folder) / 'reader.onnx'
            export(PPOCR(), file)
            proto = onnx.load(str(file))
            kept = [node for node in proto.graph.node if node.output[0] != 'linear_85.w_0']
            del proto.graph.node[:]
            proto.graph.node.extend(kept)
            onnx.save(proto, str(file))
            with self.assertRaises(SystemExit) as stopped:
                start_from(PPOCR(), file)
        self.assertIn('not an export of this network (linear_85__w_0 not there)', str(stopped.exception.code))

    def test_a_file_that_is_no_onnx_model_stops_with_a_message(self):
        with tempfile.TemporaryDirectory() as folder:
            file = Path(folder) / 'reader.onnx'
            file.write_text('not a model')
            with self.assertRaises(SystemExit) as stopped:
                start_from(PPOCR(), file)
        self.assertIn('no ONNX file this script can read', str(stopped.exception.code))


if __name__ == '__main__':
    unittest.main()

"""Unit tests of train_localiser.py's localiser from PP-OCRv4's text detector: python3 -m unittest test_train_localiser
(from ml/; needs `npm ci` for the network and onnxruntime-node)."""
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch

from common import start_from
from onnxruntime_node import NODE, run_in_onnxruntime
from paddle_graph import PaddleGraph
from train_localiser import DETECTOR, DETECTOR_BACKBONE, INPUT, STRIDE, DetectorLocaliser, export_detector

DETECTOR_MAP = 'sigmoid_0.tmp_0'  # the detector's own output: how likely each pixel is text


def waves(*shape):
    """A smooth, photo-like input in [-0.5, 0.5] of `shape`."""
    i = np.arange(np.prod(shape), dtype=np.float32)
    return (0.4 * np.sin(0.013 * i) * np.cos(0.0007 * i)).reshape(shape).astype(np.float32)


@unittest.skipUnless(DETECTOR.exists() and NODE.exists(), 'npm ci installs the detector and onnxruntime-node')
class DetectorLocaliserTest(unittest.TestCase):
    def test_the_detector_reads_here_as_onnxruntime_reads_it(self):
        x = 4 * waves(1, 3, 64, 96)  # about the detector's own normalised range
        with torch.no_grad():
            [here] = PaddleGraph(DETECTOR).run({'x': torch.from_numpy(x)}, [DETECTOR_MAP])
        there = run_in_onnxruntime(DETECTOR, {'x': x})[DETECTOR_MAP]
        np.testing.assert_allclose(here.numpy(), there, atol=1e-4)

    def test_only_the_nodes_after_the_backbone_learn(self):
        model = DetectorLocaliser(DETECTOR_BACKBONE)
        learning = {name for name, param in model.named_parameters() if param.requires_grad}
        self.assertIn('head.weight', learning)
        self.assertIn('graph.params.conv2d_159__w_0', learning)  # the text map's first layer
        self.assertNotIn('graph.params.conv2d_0__w_0', learning)  # the backbone's first convolution

    def trained(self):
        """A detector localiser as training leaves one: the text map's first layer and the head changed."""
        torch.manual_seed(0)
        model = DetectorLocaliser(DETECTOR_BACKBONE).eval()
        with torch.no_grad():
            model.graph.params['conv2d_159__w_0'].mul_(1 + 0.1 * torch.randn_like(model.graph.params['conv2d_159__w_0']))
            model.head.bias.fill_(0.3)
        return model

    def test_its_export_reads_in_onnxruntime_as_it_reads_here(self):
        model = self.trained()
        image = torch.from_numpy(waves(2, 3, INPUT, INPUT))
        with torch.no_grad():
            logits = model(image)
        with tempfile.TemporaryDirectory() as folder:
            file = Path(folder) / 'localiser.onnx'
            export_detector(model, file)
            read = run_in_onnxruntime(file, {'image': image.numpy()})
        self.assertEqual(read['mask_logits'].shape, (2, 1, INPUT // STRIDE, INPUT // STRIDE))
        np.testing.assert_allclose(read['mask_logits'], logits.numpy(), atol=1e-4)

    def test_a_fine_tune_starts_from_its_export_as_it_was(self):
        model = self.trained()
        with tempfile.TemporaryDirectory() as folder:
            file = Path(folder) / 'localiser.onnx'
            export_detector(model, file)
            started = DetectorLocaliser(DETECTOR_BACKBONE)
            start_from(started, file)
        for name, param in model.state_dict().items():
            self.assertTrue(torch.equal(started.state_dict()[name], param), name)


if __name__ == '__main__':
    unittest.main()

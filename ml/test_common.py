"""Unit tests of common.py's split, fine-tune start and memory: python3 -m unittest test_common.py (from ml/)."""
import ctypes
import resource
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import numpy as np
import torch
import torch.nn as nn

import common


class SplitRowsTest(unittest.TestCase):
    def setUp(self):
        folder = Path(tempfile.mkdtemp())
        (folder / 'meters').mkdir()
        quad = '0 0 10 0 10 5 0 5'
        (folder / 'meters' / 'labels.csv').write_text(
            'file,reading,quad\n' + ''.join(f'{name}.jpg,0012{index},{quad}\n' for index, name in enumerate('abcde')))
        (folder / 'meters-val.txt').write_text('a.jpg\n')
        (folder / 'meters-calibration.txt').write_text('b.jpg\nd.jpg\n')
        self.folder = folder
        patches = [mock.patch.object(common, 'DATASETS', folder), mock.patch.object(common, 'SPLITS', folder)]
        for patch in patches:
            patch.start()
            self.addCleanup(patch.stop)

    def files(self, rows):
        return [row['file'] for row in rows]

    def test_the_validation_photos_are_kept_from_training(self):
        train, validation = common.split_rows('meters')
        self.assertEqual(self.files(train), ['b.jpg', 'c.jpg', 'd.jpg', 'e.jpg'])
        self.assertEqual(self.files(validation), ['a.jpg'])

    def test_the_photos_of_each_leave_out_list_are_not_trained_on(self):
        listed = self.folder / 'meters-calibration.txt'
        other = self.folder / 'other.txt'
        other.write_text('e.jpg\n')
        train, validation = common.split_rows('meters', [listed, other])
        self.assertEqual(self.files(train), ['c.jpg'])
        self.assertEqual(self.files(validation), ['a.jpg'])


class StartFromTest(unittest.TestCase):
    def checkpoint_of(self, model):
        path = Path(tempfile.mkdtemp()) / 'model.pt'
        torch.save(model.state_dict(), path)
        return path

    def test_a_checkpoint_of_the_same_network_gives_its_weights(self):
        trained = nn.Linear(3, 2)
        fresh = nn.Linear(3, 2)
        common.start_from(fresh, self.checkpoint_of(trained))
        self.assertTrue(torch.equal(fresh.weight, trained.weight))

    def test_another_networks_checkpoint_stops_with_a_message(self):
        with self.assertRaises(SystemExit) as stopped:
            common.start_from(nn.Linear(3, 2), self.checkpoint_of(nn.Linear(4, 2)))
        self.assertIn('the weights of another network', str(stopped.exception.code))

    def test_an_onnx_file_stops_with_a_message_where_the_network_cannot_start_from_one(self):
        with self.assertRaises(SystemExit) as stopped:
            common.start_from(nn.Linear(3, 2), Path(tempfile.mkdtemp()) / 'model.onnx')
        self.assertIn('cannot start from its ONNX file', str(stopped.exception.code))

    def test_a_file_that_is_no_checkpoint_stops_with_a_message(self):
        path = Path(tempfile.mkdtemp()) / 'model.pt'
        path.write_text('not a checkpoint')
        with self.assertRaises(SystemExit) as stopped:
            common.start_from(nn.Linear(3, 2), path)
        self.assertIn('not a checkpoint', str(stopped.exception.code))


@unittest.skipUnless(hasattr(ctypes.CDLL(None), 'mallopt'), "glibc's malloc only")
class KeepFreedMemoryTest(unittest.TestCase):
    def test_a_large_block_freed_is_reused_without_touching_fresh_pages(self):
        common.configure_cpu()
        np.ones(64 << 20, np.uint8)  # freed at once
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        np.ones(64 << 20, np.uint8)
        # kept, none; 64 MB of fresh pages: 544 faults here, 16 384 where pages are 4 kB
        self.assertLess(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults, 8)


if __name__ == '__main__':
    unittest.main()

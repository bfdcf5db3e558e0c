"""cd ml && /usr/bin/python3 -m unittest test_reader: the strip readers' batches."""
import unittest

import numpy as np

from train_reader import ALPHABET, HEIGHT, WIDTH, BatchRandom, Regularisation, make_batch


def wheel_crop():
    crop = np.full((32, 20, 3), 230, np.uint8)
    crop[4:28, 8:12] = 20
    return crop


class MakeBatch(unittest.TestCase):
    def test_eight_wheel_counters_cut_as_windows_or_alone_need_no_training_window(self):
        crops = {(digit, tenths): [wheel_crop()] for digit in range(10) for tenths in range(10)}
        only_counters = Regularisation(dropout=0, eight_wheel_share=1, max_tilt=6, resolution_loss=0, grey=0)
        for counters in (True, False):
            with self.subTest(counters=counters):
                self.check_batch(make_batch([], np.array([]), crops, 40, BatchRandom(1), only_counters, counters))

    def check_batch(self, batch):
        images, targets, lengths, _ = batch
        self.assertEqual(tuple(images.shape), (40, 3, HEIGHT, WIDTH))
        drawn = lengths[lengths > 0].tolist()  # upside-down strips have no target
        counters = drawn.count(len('00000.000'))
        self.assertGreater(counters, len(drawn) / 2)
        self.assertTrue(all(4 <= length <= 8 for length in drawn if length != 9), 'the rest: synthetic strips')
        self.assertEqual(int((targets == ALPHABET.index('.') + 1).sum()), counters)


if __name__ == '__main__':
    unittest.main()

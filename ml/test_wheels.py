"""cd ml && /usr/bin/python3 -m unittest test_wheels: the wheel reader's slices of the counter window."""
import unittest

import numpy as np

from common import TOLOKA_WHEELS
from train_wheels import digits_of, wheel_quad


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


class Digits(unittest.TestCase):
    def test_one_digit_a_wheel_without_the_point(self):
        self.assertEqual(digits_of('00758.407'), [0, 0, 7, 5, 8, 4, 0, 7])


if __name__ == '__main__':
    unittest.main()

"""cd ml && python3 -m unittest test_synth: the rolling-wheel reading rule and the synthetic strips it labels."""
import random
import re
import unittest

import numpy as np

from synth import eight_wheel_strip, ink_map, rolled_reading


class RolledReading(unittest.TestCase):
    def test_still_wheels_read_as_shown(self):
        self.assertEqual(rolled_reading([0, 1, 2, 3, 4], 0)[0], '01234')

    def test_last_wheel_reads_lower_digit_until_upper_is_mostly_in_view(self):
        self.assertEqual(rolled_reading([0, 0, 1, 2, 7], 0.3)[0], '00127')
        self.assertEqual(rolled_reading([0, 0, 1, 2, 7], 0.5)[0], '00127')
        self.assertEqual(rolled_reading([0, 0, 1, 2, 7], 0.7)[0], '00128')

    def test_carry_rolls_every_wheel_on_a_nine_chain(self):
        self.assertEqual(rolled_reading([0, 1, 9, 9], 0.4), ('0199', [False, True, True, True]))
        self.assertEqual(rolled_reading([0, 1, 9, 9], 0.8), ('0200', [False, True, True, True]))
        self.assertEqual(rolled_reading([9, 9, 9], 0.9)[0], '000')


def wheel_crop(ink_value, background_value):
    """A 32 x 20 crop: a vertical stroke of one grey level on a background of another."""
    crop = np.full((32, 20, 3), background_value, np.uint8)
    crop[4:28, 8:12] = ink_value
    return crop


class EightWheelStrip(unittest.TestCase):
    def test_ink_is_the_stroke_whether_darker_or_lighter_than_the_wheel(self):
        for crop in (wheel_crop(20, 230), wheel_crop(230, 20)):
            ink = ink_map(crop)[..., 0]
            self.assertGreater(ink[16, 10], 0.9)
            self.assertLess(ink[16, 2], 0.1)

    def test_strips_are_labelled_as_five_whole_and_three_fractional_wheels(self):
        crops = {(digit, tenths): [wheel_crop(20, 230)] for digit in range(10) for tenths in range(10)}
        rng = random.Random(7)
        for _ in range(50):
            strip, reading = eight_wheel_strip(crops, rng)
            self.assertRegex(reading, re.compile(r'^\d{5}\.\d{3}$'))
            self.assertEqual(strip.mode, 'RGB')
            self.assertGreaterEqual(strip.height, 32)
            self.assertGreater(strip.width, 8 * 20)


if __name__ == '__main__':
    unittest.main()

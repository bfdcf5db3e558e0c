"""python3 -m unittest ml/test_synth.py: the rolling-wheel reading rule used to label synthetic strips."""
import unittest

from synth import rolled_reading


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


if __name__ == '__main__':
    unittest.main()

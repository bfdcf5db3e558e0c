"""Unit tests of measure_readers.py's decoding in the layouts: python3 -m unittest test_measure_readers (from ml/)."""
import re
import unittest

import numpy as np

from measure_readers import CLASSES, decode_in_layout, read_in_layouts
from train_reader import encode, greedy_decode


def strip(*steps):
    """Per-step class probabilities from {character or '' (blank): probability}, the rest spread evenly."""
    rows = []
    for given in steps:
        row = np.full(CLASSES, (1 - sum(given.values())) / (CLASSES - len(given)))
        for character, probability in given.items():
            row[encode(character)[0] if character else 0] = probability
        rows.append(row)
    return np.array(rows, np.float32)


def spelled(text):
    """A strip read surely as `text`: each character, then a blank."""
    return strip(*[step for character in text for step in ({character: 0.9}, {'': 0.9})])


class DecodeInLayoutTest(unittest.TestCase):
    def test_a_reading_that_fits_the_layout_is_the_greedy_one(self):
        read = spelled('0023.45')
        self.assertEqual(greedy_decode(read), '0023.45')
        self.assertEqual(decode_in_layout(read, 'dddd.dd')[0], '0023.45')

    def test_a_digit_the_greedy_reading_drops_is_read_where_it_is_likeliest(self):
        read = strip({'1': 0.9}, {'': 0.9}, {'2': 0.9}, {'': 0.55, '7': 0.4}, {'3': 0.9}, {'4': 0.9})
        self.assertEqual(greedy_decode(read), '1234')
        self.assertEqual(decode_in_layout(read, 'ddddd')[0], '12734')

    def test_equal_neighbours_are_kept_apart_by_a_blank(self):
        read = strip({'1': 0.9}, {'1': 0.5, '': 0.4, '7': 0.05}, {'5': 0.9})
        self.assertEqual(greedy_decode(read), '15')
        self.assertEqual(decode_in_layout(read, 'ddd')[0], '175')

    def test_every_reading_fits_its_layout(self):
        rng = np.random.default_rng(1)
        for _ in range(50):
            read = rng.dirichlet(np.full(CLASSES, 0.3), size=40)
            for layout in ('ddddd', 'ddddd.ddd'):
                self.assertRegex(decode_in_layout(read, layout)[0], '^' + re.escape(layout).replace('d', '[0-9]') + '$')

    def test_the_reading_is_in_the_likelier_layout(self):
        self.assertEqual(read_in_layouts(spelled('00123.456')), '00123.456')
        self.assertEqual(read_in_layouts(spelled('00123')), '00123')


if __name__ == '__main__':
    unittest.main()

"""cd ml && python3 -m unittest test_synth: the rolling-wheel reading rule and the synthetic strips it labels."""
import io
import random
import re
import tarfile
import tempfile
import unittest
from pathlib import Path

import numpy as np
from PIL import Image

from synth import UPPER_DIGIT_FROM, clean_crop_label, eight_wheel_counter, eight_wheel_strip, ink_map, load_clean_digit_crops, rolled_reading


class RolledReading(unittest.TestCase):
    def test_still_wheels_read_as_shown(self):
        self.assertEqual(rolled_reading([0, 1, 2, 3, 4], 0)[0], '01234')

    def test_last_wheel_reads_lower_digit_until_seven_tenths_of_the_upper_are_in_view(self):
        self.assertEqual(rolled_reading([0, 0, 1, 2, 7], 0.3)[0], '00127')
        self.assertEqual(rolled_reading([0, 0, 1, 2, 7], 0.5)[0], '00127')
        self.assertEqual(rolled_reading([0, 0, 1, 2, 7], 0.6)[0], '00127')
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

    def test_a_counters_window_holds_its_eight_wheels_one_an_eighth_and_each_wheel_reads_the_reading(self):
        crops = {(digit, tenths): [wheel_crop(20, 230)] for digit in range(10) for tenths in range(10)}
        for behind_windows, (least_gap, most_gap) in ((False, (2, 9)), (True, (4, 12))):
            rng = random.Random(7)
            for _ in range(50):
                strip, reading, window, wheels = eight_wheel_counter(crops, rng, behind_windows)
                (left, top), (right, _), _, (_, bottom) = window
                self.assertEqual((top, bottom), (0, strip.height))
                self.assertAlmostEqual(left, strip.width - right)
                self.assertTrue(20 + least_gap <= (right - left) / 8 <= 20 + most_gap, 'a wheel and a gap an eighth')
                shown = ''.join(str((digit + (tenths / 10 >= UPPER_DIGIT_FROM)) % 10) for digit, tenths in wheels)
                self.assertEqual(shown, reading.replace('.', ''))

    def test_behind_windows_each_wheel_sits_in_a_dark_edged_window_of_a_light_face(self):
        crops = {(digit, tenths): [wheel_crop(20, 230)] for digit in range(10) for tenths in range(10)}
        rng = random.Random(7)
        for _ in range(50):
            strip, _, window, _ = eight_wheel_counter(crops, rng, behind_windows=True)
            (left, _), (right, _), _, _ = window
            eighth = (right - left) / 8
            grey = np.asarray(strip, np.float32).mean(2)
            middle = strip.height // 2
            between = round(left + eighth)  # half way between the first two windows
            first_edge = round(left + (eighth - 20) / 2) - 1  # the line left of the first wheel
            if eighth - 20 >= 6:  # else two 2-pixel edges may fill most of the gap
                self.assertGreater(grey[middle, between], 150, 'the face between windows is light')
            self.assertLess(grey[middle, first_edge], 140, 'a window is edged dark')


class CleanDigitCrops(unittest.TestCase):
    def test_labels_come_from_the_file_name_or_the_sorted_folder(self):
        self.assertEqual(clean_crop_label('collected/watermeter/Techem/3.7_ab12.jpg'), (3, 7))
        self.assertEqual(clean_crop_label('jomjol-mit-2021/6_dig1.jpg'), (6, 0))
        self.assertEqual(clean_crop_label('jomjol-mit-2021/0.0_01.bmp'), (0, 0))
        self.assertEqual(clean_crop_label('jomjol-mit-2021/4/x.jpg'), (4, 0))

    def test_lcd_digits_crops_between_digits_and_other_files_are_left_out(self):
        for member in ('collected/lcd/lcd_pb/1.0_a.jpg', 'collected/lcd2/x/2.0_b.jpg', 'jomjol-mit-2021/NaN/y.jpg',
                       'jomjol-mit-2021/not-trained-non-unique/5.0_c.jpg', 'collected/LICENSE', 'jomjol-mit-2021/x/y.jpg'):
            self.assertIsNone(clean_crop_label(member), member)

    def test_crops_are_extracted_once_and_brought_to_the_strip_size(self):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            members = {'collected.tar': ['collected/watermeter/pp/3.7_a.jpg', 'collected/lcd/x/1.0_b.jpg'],
                       'jomjol-mit-2021.tar': ['jomjol-mit-2021/4/c.jpg', 'jomjol-mit-2021/NaN/d.jpg']}
            for archive_name, names in members.items():
                with tarfile.open(root / archive_name, 'w') as archive:
                    for name in names:
                        data = io.BytesIO()
                        Image.new('RGB', (27, 41), (200, 30, 30)).save(data, 'JPEG')
                        info = tarfile.TarInfo(name)
                        info.size = data.tell()
                        data.seek(0)
                        archive.addfile(info, data)
            crops = load_clean_digit_crops(root, root / 'extracted')
            self.assertEqual(sorted(crops), [(3, 7), (4, 0)])
            self.assertEqual(crops[(3, 7)][0].shape, (32, 20, 3))
            (root / 'collected.tar').unlink()  # a second load reads what was extracted
            self.assertEqual(sorted(load_clean_digit_crops(root, root / 'extracted')), [(3, 7), (4, 0)])


if __name__ == '__main__':
    unittest.main()

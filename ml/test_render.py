"""cd ml && python3 -m unittest test_render: the rendered meter photos and their labels, and the batch stream that
feeds a GPU from several processes without changing the CPU recipe's draws."""
import os
import random
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import numpy as np
import torch

from common import batch_stream
import render_meters
from render_meters import STAMP, Style, counter, font_files, font_wheel, render
from synth import clean_digit_crops_at_hand


def crops():
    """One plain crop for every digit and tenths: enough for the renderer, without digits-clean."""
    tile = np.full((32, 20, 3), 230, np.uint8)
    tile[6:26, 8:12] = 20
    return {(digit, tenths): [tile] for digit in range(10) for tenths in range(10)}


class RenderedPhotos(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.renders = [render(index, 1, crops(), font_files()) for index in range(12)]

    def test_readings_are_in_the_layouts_the_service_knows(self):
        for _, reading, _ in self.renders:
            self.assertRegex(reading, r'^\d{5}(\.\d{3})?$')
        self.assertEqual({bool(re.search(r'\.', reading)) for _, reading, _ in self.renders}, {True, False})

    def test_the_counter_window_lies_inside_the_photo_with_its_corners_clockwise(self):
        for photo, _, quad in self.renders:
            self.assertTrue((quad > 0).all() and (quad < photo.size).all())
            edges = np.roll(quad, -1, 0) - quad
            turning = edges[:, 0] * np.roll(edges, -1, 0)[:, 1] - edges[:, 1] * np.roll(edges, -1, 0)[:, 0]
            self.assertTrue((turning > 0).all(), 'clockwise in image coordinates (y down)')

    def test_the_same_index_and_seed_draw_the_same_photo(self):
        again, reading, quad = render(3, 1, crops(), font_files())
        photo, first_reading, first_quad = self.renders[3]
        self.assertEqual(reading, first_reading)
        np.testing.assert_allclose(quad, first_quad)
        self.assertEqual(again.tobytes(), photo.tobytes())


class CounterLooks(unittest.TestCase):
    def counter_of(self, windows):
        rng = random.Random(5)
        style = Style(rng, font_files())
        style.windows, style.crops = windows, True
        style.face, style.frame, style.edge = (240, 240, 240), (30, 30, 30), (60, 60, 60)
        style.wheel = style.fraction_wheel = (200, 200, 200)
        strip, _ = counter(style, crops(), rng)
        return strip, style

    def test_wheels_behind_windows_show_the_face_between_them_and_an_edge_round_each(self):
        strip, style = self.counter_of(windows=True)
        row = strip[strip.shape[0] // 2].astype(int)
        face = (np.abs(row - style.face).sum(1) <= 3)
        edge = (np.abs(row - style.edge).sum(1) <= 3)
        self.assertTrue(face.any(), 'the face shows between the windows')
        self.assertTrue(edge[0] and edge[-1], 'the first and last windows are edged where the counter begins and ends')
        self.assertTrue((np.abs(strip[0].astype(int) - style.edge).sum(1) <= 3).any(), 'a window is edged along its top')
        self.assertFalse((np.abs(row - style.frame).sum(1) <= 3).any(), 'no frame colour')

    def test_wheels_in_a_frame_show_the_frame_between_them(self):
        strip, style = self.counter_of(windows=False)
        row = strip[strip.shape[0] // 2].astype(int)
        self.assertFalse((np.abs(row - style.face).sum(1) <= 3).any(), 'no face colour')
        self.assertFalse((np.abs(row - style.edge).sum(1) <= 3).any(), 'no window edges')

    def font_wheel(self, pitch, roll=0, seed=5):
        rng = random.Random(seed)
        style = Style(rng, font_files())
        with mock.patch.object(render_meters, 'DIGIT_PITCH', (pitch, pitch)):
            return font_wheel(style, 8, roll, (0, 0, 0), (255, 255, 255), (40, 64), rng)

    def test_a_font_wheel_shows_the_edges_of_its_neighbours_where_they_sit_close(self):
        low, high = render_meters.DIGIT_PITCH
        close, apart = self.font_wheel(low), self.font_wheel(high)
        inked = lambda rows: (rows < 128).any()
        self.assertTrue(inked(close[:4]) and inked(close[-4:]), 'the digits before and after peek in')
        self.assertFalse(inked(apart[:4]) or inked(apart[-4:]), 'nothing but the digit itself')
        self.assertTrue(inked(apart[28:36]), 'the digit sits in the middle')
        nearly_rolled_on = [self.font_wheel(low, 0.9, seed) for seed in range(10)]
        self.assertTrue(any(inked(wheel[-4:]) for wheel in nearly_rolled_on), 'the digit after next peeks in below')


@unittest.skipUnless(clean_digit_crops_at_hand(), 'no digits-clean crops (../shared/datasets/digits-clean)')
class RenderCache(unittest.TestCase):
    def draw(self, output, count=2):
        script = Path(__file__).with_name('render_meters.py')
        return subprocess.run([sys.executable, script, '--count', str(count), '--workers', '1', '--output', output],
                              env={**os.environ, 'METERLENS_DIGITS': 'clean'}, check=True, capture_output=True,
                              text=True).stdout

    def test_a_folder_is_drawn_again_only_when_not_drawn_to_the_end_with_this_count(self):
        with tempfile.TemporaryDirectory() as folder:
            output = Path(folder)
            self.assertIn('2 photos and labels', self.draw(output))
            drawn = (output / 'images' / '000000.jpg').stat().st_mtime_ns
            self.assertIn('holds these 2 renders already', self.draw(output))
            self.assertEqual((output / 'images' / '000000.jpg').stat().st_mtime_ns, drawn)
            (output / STAMP).unlink()  # as a run stopped part way leaves it
            self.assertIn('2 photos and labels', self.draw(output))
            self.assertIn('3 photos and labels', self.draw(output, count=3))


class BatchStream(unittest.TestCase):
    def test_in_this_process_it_draws_what_the_recipe_draws(self):
        make = lambda source: torch.tensor([source.random() for _ in range(4)], dtype=torch.float64)
        stream = batch_stream(make, random.Random, 7, workers=0)
        direct = random.Random(7)
        for _ in range(3):
            self.assertEqual(next(stream).tolist(), [direct.random() for _ in range(4)])

    def test_each_worker_draws_with_a_seed_of_its_own(self):
        make = lambda source: torch.tensor([source.random()])
        stream = batch_stream(make, random.Random, 7, workers=2)
        drawn = {next(stream).item() for _ in range(6)}
        self.assertEqual(len(drawn), 6)


if __name__ == '__main__':
    unittest.main()

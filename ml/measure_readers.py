"""Strip readers judged alone on real windows: each checkpoint (`--sequence` as trained) reads the labelled windows of
the photos a split list names, upright, cut as train_reader.py validates; the share read exactly and with the whole
units right.

    python3 measure_readers.py splits/toloka-calibration.txt splits/bdci2020-calibration.txt -- gru:a.pt conv:b.pt
"""
import sys

import numpy as np
import torch

from common import configure_threads, read_labels
from train_reader import MARGIN_X, MARGIN_Y, StripReader, greedy_decode, rectify, to_tensor, usable_windows


def listed_windows(split):
    dataset = split.rsplit('/', 1)[-1].split('-')[0]
    files = set(open(split).read().split())
    return usable_windows([row for row in read_labels(dataset) if row['file'] in files])


def readings(model, windows):
    out = []
    with torch.no_grad():
        for start in range(0, len(windows), 64):
            chunk = windows[start:start + 64]
            strips = torch.stack([to_tensor(np.asarray(rectify(image, quad, MARGIN_X, MARGIN_Y), np.float32) / 255)
                                  for image, quad, *_ in chunk])
            logits, _ = model(strips)
            out += [greedy_decode(row.softmax(1)) for row in logits]
    return out


def main():
    configure_threads()
    at = sys.argv.index('--')
    splits, checkpoints = sys.argv[1:at], sys.argv[at + 1:]
    sets = {split: listed_windows(split) for split in splits}
    for checkpoint in checkpoints:
        sequence, path = checkpoint.split(':', 1)
        model = StripReader(sequence)
        model.load_state_dict(torch.load(path, map_location='cpu'))
        model.eval()
        for split, windows in sets.items():
            read = readings(model, windows)
            truth = [reading for _, _, reading, _ in windows]
            exact = np.mean([r == t for r, t in zip(read, truth)])
            whole = np.mean([r.split('.')[0] == t.split('.')[0] for r, t in zip(read, truth)])
            print(f'{path} {split} ({len(windows)} windows): exact {exact:.1%}, whole units {whole:.1%}', flush=True)


if __name__ == '__main__':
    main()

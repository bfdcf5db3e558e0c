"""Strip readers judged alone on real counters: each checkpoint (`train_reader.py --checkpoint`, with the
`--sequence` it trained with) reads the labelled windows of the photos a split list names, upright and cut as
train_reader.py validates, greedily decoded. Per list: the share read exactly, with the whole units right and as
many digits as the label, then how often each wheel is right where the reading has as many digits, and the
commonest wrong digits (label → read). A reader's own gap, apart from the localisers' windows and the chain's
choices (ml/EXPERIMENTS.md, "which half of the clean chain loses the counters").

    METERLENS_DIGITS=clean python3 measure_readers.py splits/toloka-calibration.txt splits/bdci2020-calibration.txt \
        -- gru:/tmp/ml-cache/reader-2.pt conv:/tmp/ml-cache/reader-3.pt
"""
import os
import pickle
import sys
from collections import Counter

import numpy as np
import torch

from common import configure_threads, read_labels
from train_reader import StripReader, greedy_decode, labelled_strips, usable_windows

COMMONEST_MISREADS = 6
USAGE = 'usage: python3 measure_readers.py SPLIT_LIST... -- gru|conv:CHECKPOINT...'


def listed_windows(split):
    """The usable labelled windows of the photos a list names (its dataset the file name's first word)."""
    dataset = split.rsplit('/', 1)[-1].split('-')[0]
    if not os.path.isfile(split):
        sys.exit(f'{split}: no such list of photos (ml/splits holds them)')
    with open(split) as listed:
        files = set(listed.read().split())
    return usable_windows([row for row in read_labels(dataset) if row['file'] in files])


def readings(model, windows):
    out = []
    with torch.no_grad():
        for _, strips in labelled_strips(windows):
            logits, _ = model(strips)
            out += [greedy_decode(row.softmax(1)) for row in logits]
    return out


def digits(reading):
    return reading.replace('.', '')


def judged(read, truth):
    """One line of figures for these readings of these labels."""
    exact = np.mean([r == t for r, t in zip(read, truth)])
    whole = np.mean([r.split('.')[0] == t.split('.')[0] for r, t in zip(read, truth)])
    same_length = [(digits(r), digits(t)) for r, t in zip(read, truth) if len(digits(r)) == len(digits(t))]
    wheels = len(digits(truth[0]))  # a dataset's counters have one count of wheels (Toloka 8, bdci2020 5)
    counted = [(r, t) for r, t in same_length if len(t) == wheels]
    by_wheel = [np.mean([r[i] == t[i] for r, t in counted]) for i in range(wheels)] if counted else []
    misreads = Counter((t[i], r[i]) for r, t in same_length for i in range(len(t)) if r[i] != t[i])
    return (f'exact {exact:.1%}, whole units {whole:.1%}, all digits {len(same_length) / len(truth):.1%}; '
            f'wheels right {" ".join(f"{share:.2f}" for share in by_wheel) or "-"}; '
            f'misread {", ".join(f"{t}→{r} {n}" for (t, r), n in misreads.most_common(COMMONEST_MISREADS)) or "-"}')


def main():
    if '--' not in sys.argv or sys.argv.index('--') in (1, len(sys.argv) - 1):
        sys.exit(USAGE)
    at = sys.argv.index('--')
    lists, checkpoints = sys.argv[1:at], [given.partition(':')[::2] for given in sys.argv[at + 1:]]
    if any(sequence not in ('gru', 'conv') for sequence, _ in checkpoints):
        sys.exit(USAGE)
    for _, path in checkpoints:
        if not os.path.isfile(path):
            sys.exit(f'{path}: no such checkpoint (train_reader.py --checkpoint writes one)')
    configure_threads()
    windows = {split: listed_windows(split) for split in lists}
    for sequence, path in checkpoints:
        model = StripReader(sequence)
        try:
            model.load_state_dict(torch.load(path, map_location='cpu'))
        except (RuntimeError, pickle.UnpicklingError) as error:
            sys.exit(f'{path}: not the checkpoint of a {sequence} strip reader ({str(error).splitlines()[0]})')
        model.eval()
        for split, listed in windows.items():
            truth = [reading for _, _, reading, _ in listed]
            print(f'{path} {split} ({len(listed)} windows): {judged(readings(model, listed), truth)}', flush=True)


if __name__ == '__main__':
    main()

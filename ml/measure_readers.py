"""Strip readers judged alone on real counters: each checkpoint (`train_reader.py --checkpoint`, with the
`--sequence` it trained with) reads the labelled windows of the photos a split list names, upright and cut as
train_reader.py validates, decoded two ways: greedily (the reader's own count of digits) and in the layouts, as the
service reads a strip (the most probable path whose text fits one of spec.json's layouts). Per list and way: the
share read exactly, with the whole units right and with as many digits as the label, then how often each wheel is
right where the reading has as many digits, and the commonest wrong digits (label → read). A reader's own gap,
apart from the localisers' windows and the chain's choices (ml/EXPERIMENTS.md, "which half of the clean chain loses
the counters").

    METERLENS_DIGITS=clean python3 measure_readers.py splits/toloka-calibration.txt splits/bdci2020-calibration.txt \
        -- gru:/tmp/ml-cache/reader-2.pt conv:/tmp/ml-cache/reader-3.pt
"""
import os
import pickle
import sys
from collections import Counter

import numpy as np
import torch

from common import ALPHABET, SPEC, configure_cpu, read_labels
from train_reader import (HEIGHT, WIDTH, StripReader, collapse, encode, greedy_decode, labelled_strips, told_upright,
                          usable_windows)

COMMONEST_MISREADS = 6
LAYOUTS = list(SPEC['layouts'].values())
BLANK = 0
CLASSES = len(ALPHABET) + 1
NEVER = -np.inf
USAGE = 'usage: python3 measure_readers.py SPLIT_LIST... -- gru|conv:CHECKPOINT...'


def listed_windows(split):
    """The usable labelled windows of the photos a list names (its dataset the file name's first word)."""
    dataset = split.rsplit('/', 1)[-1].split('-')[0]
    if not os.path.isfile(split):
        sys.exit(f'{split}: no such list of photos (ml/splits holds them)')
    with open(split) as listed:
        files = set(listed.read().split())
    return usable_windows([row for row in read_labels(dataset) if row['file'] in files])


def decode_in_layout(probabilities, layout):
    """(text, log probability) of the most probable CTC path whose text fits `layout` (`ddddd.ddd`): a Viterbi
    over the layout's slots, as src/readers/local/decode.ts's decodeInLayout. At each step a path is either in the
    blank after `slot` slots, or on slot `slot` showing one class; equal neighbours need a blank between them."""
    log = np.log(np.maximum(np.asarray(probabilities, np.float64), 1e-30))
    slots = len(layout)
    allowed = np.full((slots, CLASSES), NEVER)
    for slot, kind in enumerate(layout):
        allowed[slot, encode('.' if kind == '.' else '0123456789')] = 0
    blank = np.full(slots + 1, NEVER)
    blank[0] = log[0, BLANK]
    shown = np.full((slots, CLASSES), NEVER)
    shown[0] = log[0] + allowed[0]
    # Where each state came from: a blank from its own blank (-1) or the class shown on the slot before; a shown
    # class from itself (-2), the blank before its slot (-1) or the class shown on the slot before.
    blank_from, shown_from = [], []
    for step in range(1, len(log)):
        last_shown = shown.argmax(1)
        from_shown = np.concatenate([[NEVER], shown[np.arange(slots), last_shown]])
        blank_from.append(np.where(from_shown > blank, np.concatenate([[-1], last_shown]), -1))
        next_blank = np.maximum(blank, from_shown) + log[step, BLANK]
        came = np.where(blank[:-1, None] > shown, -1, -2)
        best = np.maximum(blank[:-1, None], shown)
        # From the slot before: the best class other than the one shown here.
        order = np.argsort(-shown[:-1], axis=1)
        first, second = order[:, :1], order[:, 1:2]
        other = np.where(np.arange(CLASSES) == first, second, first)
        from_before = np.take_along_axis(shown[:-1], other, 1)
        better = from_before > best[1:]
        best[1:] = np.where(better, from_before, best[1:])
        came[1:] = np.where(better, other, came[1:])
        shown_from.append(came)
        blank, shown = next_blank, best + log[step] + allowed
    last = int(shown[-1].argmax())
    state = ('shown', slots - 1, last) if shown[-1, last] > blank[-1] else ('blank', slots, BLANK)
    log_probability = max(shown[-1, last], blank[-1])
    path = []
    for step in range(len(log) - 1, -1, -1):
        kind, slot, symbol = state
        path.append(symbol)
        if step == 0:
            break
        if kind == 'blank':
            came = blank_from[step - 1][slot]
            state = state if came == -1 else ('shown', slot - 1, int(came))
        else:
            came = shown_from[step - 1][slot, symbol]
            state = state if came == -2 else ('blank', slot, BLANK) if came == -1 else ('shown', slot - 1, int(came))
    return collapse(path[::-1]), log_probability


def read_in_layouts(probabilities):
    """The service's reading of a strip: its text in whichever of spec.json's layouts the reader finds most probable."""
    return max((decode_in_layout(probabilities, layout) for layout in LAYOUTS), key=lambda read: read[1])[0]


def readings(model, windows, strip_size=(WIDTH, HEIGHT)):
    """(greedy readings, readings in the layouts, the share of windows the upside-down head tells upright) of the
    windows, cut at the model's strip size."""
    greedy, laid_out, upright = [], [], 0
    with torch.no_grad():
        for _, strips in labelled_strips(windows, strip_size):
            logits, up_score = model(strips)
            upright += told_upright(model, strips, up_score)
            for row in logits.softmax(2):
                greedy.append(greedy_decode(row))
                laid_out.append(read_in_layouts(row.numpy()))
    return greedy, laid_out, upright / len(windows)


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


def lists_and_models(args, usage):
    """(the split lists, what follows them) of a command line `SPLIT_LIST... -- MODEL...`; exits with `usage` if not."""
    if '--' not in args or args.index('--') in (0, len(args) - 1):
        sys.exit(usage)
    at = args.index('--')
    return args[:at], args[at + 1:]


def print_judged(name, model, windows, strip_size=(WIDTH, HEIGHT)):
    """Prints how `model` reads each list's windows ({list: windows}), both ways."""
    model.eval()
    for split, listed in windows.items():
        truth = [reading for _, _, reading, _ in listed]
        *ways, upright = readings(model, listed, strip_size)
        for way, read in zip(('greedy', 'in the layouts'), ways):
            print(f'{name} {split} ({len(listed)} windows), {way}: {judged(read, truth)}', flush=True)
        print(f'{name} {split}: told upright from upside down {100 * upright:.1f}%', flush=True)


def main():
    lists, given = lists_and_models(sys.argv[1:], USAGE)
    checkpoints = [model.partition(':')[::2] for model in given]
    if any(sequence not in ('gru', 'conv') for sequence, _ in checkpoints):
        sys.exit(USAGE)
    for _, path in checkpoints:
        if not os.path.isfile(path):
            sys.exit(f'{path}: no such checkpoint (train_reader.py --checkpoint writes one)')
    configure_cpu()
    windows = {split: listed_windows(split) for split in lists}
    for sequence, path in checkpoints:
        model = StripReader(sequence)
        try:
            model.load_state_dict(torch.load(path, map_location='cpu'))
        except (RuntimeError, pickle.UnpicklingError) as error:
            sys.exit(f'{path}: not the checkpoint of a {sequence} strip reader ({str(error).splitlines()[0]})')
        print_judged(path, model, windows)


if __name__ == '__main__':
    main()

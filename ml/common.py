"""Shared pieces of the Meterlens training code: the models' spec, dataset discovery, the fixed validation split,
seeds, the options every training run has and the training loop they share."""
import argparse
import csv
import ctypes
import hashlib
import json
import math
import os
import pickle
import random
import time
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
import torch
import torch.nn as nn

REPO_ROOT = Path(__file__).resolve().parent.parent
DATASETS = Path(os.environ.get('METERLENS_DATASETS', REPO_ROOT.parent / 'shared' / 'datasets'))
# The validation lists: the committed ones of the shipped datasets, or (METERLENS_SPLITS) a folder of one's own, where
# `meterlens train` keeps an operator's list apart from the installed ml/splits.
SPLITS = Path(os.environ.get('METERLENS_SPLITS', REPO_ROOT / 'ml' / 'splits'))
CACHE = Path(os.environ.get('METERLENS_CACHE', '/tmp/ml-cache'))
# The photos render_meters.py draws: the dataset `rendered`, the only meter photos the default weights learn from.
RENDERED = Path(os.environ.get('METERLENS_RENDERED', CACHE / 'rendered'))
# Where the networks train: `cpu` (the recipe as shipped) or a GPU where one is at hand (`cuda`).
DEVICE = torch.device(os.environ.get('METERLENS_TRAIN_DEVICE', 'cpu'))
MODELS = REPO_ROOT / 'models'
# The shapes, margins and alphabet the service feeds the shipped models (src/readers/local/spec.ts reads it too).
SPEC = json.loads((REPO_ROOT / 'src' / 'readers' / 'local' / 'spec.json').read_text())

# CTC alphabet of the reading model; index 0 is the CTC blank.
ALPHABET = SPEC['alphabet']
# Toloka's meters show black whole-unit wheels, then red fractional ones (`d` a wheel, `.` the point).
TOLOKA_WHOLE_WHEELS, TOLOKA_FRACTIONAL_WHEELS = (len(wheels) for wheels in SPEC['layouts']['toloka'].split('.'))
TOLOKA_WHEELS = TOLOKA_WHOLE_WHEELS + TOLOKA_FRACTIONAL_WHEELS
VALIDATION_PERCENT = 15
# A fine-tune (--init) starts from weights that already read: its peak learning rate is this share of the recipe's.
FINE_TUNE_RATE_SHARE = 0.25
FINE_TUNE_WARMUP = 0.1
# A progress line every 100 steps, or after this long without one (a slow machine, a fine-tune of few steps).
PROGRESS_SECONDS = 30


# The folders of labelled photos under DATASETS that the localisers and strip readers learn from: Toloka and
# BDCI 2020 as shipped, or an operator's own (the folder `meterlens dataset export` writes: `meters`, say).
TRAIN_DATASETS = os.environ.get('METERLENS_TRAIN_DATASETS', 'toloka,bdci2020').split(',')


def dataset_root(dataset):
    return RENDERED if dataset == 'rendered' else DATASETS / dataset


def require_datasets():
    missing = [dataset for dataset in TRAIN_DATASETS if not (dataset_root(dataset) / 'labels.csv').exists()]
    if missing:
        raise SystemExit(f'No labels.csv for {", ".join(missing)} under {DATASETS} (METERLENS_DATASETS, METERLENS_TRAIN_DATASETS)')


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def configure_cpu():
    """Threads and memory for training and judging on the CPU."""
    # Debian's torch with OpenBLAS: one BLAS thread and two torch threads is ~5x faster here than the default.
    os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
    torch.set_num_threads(int(os.environ.get('TORCH_THREADS', '2')))
    keep_freed_memory()


M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # mallopt's parameters (glibc's malloc.h)


def keep_freed_memory():
    """glibc's malloc hands a freed block of 32 MB or more (a batch of 64 strips at 240 x 48 holds many) back to the
    system at once; on virtual machines like these, touching fresh pages again costs more than the arithmetic:
    judging Toloka's calibration windows 64 strips a batch took three times as long as with the memory kept. Keep it:
    every block from the heap, and the heap never trimmed. Elsewhere than glibc, nothing."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, TypeError):
        return
    mallopt(M_MMAP_MAX, 0)
    mallopt(M_TRIM_THRESHOLD, 2 ** 31 - 1)


def start_training(minutes, batch, output, add_options=lambda parser: None, argv=None, prog=None):
    """Parses the options every training script takes (and a script's own) from `argv` (the command line's by
    default), then checks the data, threads and seeds."""
    parser = argparse.ArgumentParser(prog=prog)
    add_options(parser)
    parser.add_argument('--minutes', type=float, default=minutes)
    parser.add_argument('--batch', type=int, default=batch)
    parser.add_argument('--steps', type=int, help='train for this many batches instead of --minutes (reproducible)')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--leave-out', nargs='+', default=[], metavar='LIST',
                        help='files listing photos (as in labels.csv) not to train on, to score on them (ml/splits/*-calibration.txt)')
    parser.add_argument('--output', default=str(output))
    parser.add_argument('--workers', type=int, default=0,
                        help='processes that draw the batches (0: this one, in the order of the shipped runs)')
    parser.add_argument('--init', metavar='FILE',
                        help='start from these weights (the .pt state dict a run saves, or the ONNX file it exported where '
                             'the network is run by paddle_graph.py) instead of random ones: a fine-tune')
    parser.add_argument('--learning-rate', type=float,
                        help=f"the peak learning rate (default: the script's own; {FINE_TUNE_RATE_SHARE} of it with --init)")
    parser.add_argument('--checkpoint', help="where the trained weights go as a PyTorch state dict (default: CACHE/<output's stem>.pt)")
    args = parser.parse_args(argv)
    require_datasets()
    configure_cpu()
    seed_everything(args.seed)
    return args


class Export(NamedTuple):
    """How a trained model ships through PyTorch's exporter: `wrap` turns it into the exported module (probabilities
    instead of logits, say); the example input's shape (dynamic batch axis first) and the ONNX input and output names.
    Called with the model and a file, it writes it (train_and_export's `export`, which a network run by paddle_graph.py
    gives as a function of its own)."""
    input_shape: tuple
    input_name: str
    output_names: list
    wrap: Callable[[nn.Module], nn.Module] = lambda model: model

    def __call__(self, model, output):
        export_onnx(model, self, output)


def train_and_export(args, model, batch_loss, validate, export, *, learning_rate, weight_decay, validate_every,
                     warmup_steps=0, max_grad_norm=None, unit='img'):
    """The loop every training script runs, then its checkpoint and export. Each step: the learning rate (linear
    warm-up over `warmup_steps`, then a cosine decay to zero over the run), `batch_loss(model)` of a batch the
    script draws itself (so the random draws stay the script's own, in its order), AdamW with gradients clipped to
    `max_grad_norm` if given. Progress every 100 steps (or PROGRESS_SECONDS); `validate(model)`, a line of text,
    every `validate_every` steps and at the end. With --init the model starts from that checkpoint (validated
    first), at a lower learning rate unless --learning-rate names one, warmed up over the first FINE_TUNE_WARMUP of
    the run instead (a fine-tune bounded in minutes may take fewer steps than `warmup_steps`). The weights go to
    --checkpoint (CACHE/<output's stem>.pt) and the model, written by `export(model, file)`, to --output."""
    if args.init:
        start_from(model, args.init)
        learning_rate *= FINE_TUNE_RATE_SHARE
    if args.learning_rate is not None:
        learning_rate = args.learning_rate
    print(f'{sum(p.numel() for p in model.parameters())} parameters, on {DEVICE}', flush=True)
    model.to(DEVICE)
    if args.init:
        print(f'validation before: {validate(model)}', flush=True)
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    started = time.time()
    step = 0
    shown = started
    for progress in training_progress(args, started):
        if args.init:
            warmup = min(1.0, progress / FINE_TUNE_WARMUP)
        else:
            warmup = min(1.0, step / warmup_steps) if warmup_steps else 1.0
        for group in optimiser.param_groups:
            group['lr'] = cosine_rate(learning_rate, warmup, progress)
        loss = batch_loss(model)
        optimiser.zero_grad()
        loss.backward()
        if max_grad_norm:
            nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimiser.step()
        step += 1
        if step % 100 == 0 or time.time() - shown > PROGRESS_SECONDS:
            shown = time.time()
            rate = step * args.batch / (shown - started)
            print(f'step {step} loss {loss.item():.3f} {rate:.1f} {unit}/s lr {optimiser.param_groups[0]["lr"]:.5f}', flush=True)
        if step % validate_every == 0:
            print(f'  validation after {step} steps: {validate(model)}', flush=True)
    print(f'final validation after {step} steps: {validate(model)}', flush=True)

    model.cpu().eval()
    checkpoint = Path(args.checkpoint) if args.checkpoint else CACHE / f'{Path(args.output).stem}.pt'
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), checkpoint)
    export(model, args.output)
    print('exported', args.output)


def cosine_rate(peak, warmup, progress):
    """The learning rate `progress` (0..1) into a run: `peak` times the warm-up's share (0..1), decayed by a cosine
    to zero at the run's end."""
    return peak * warmup * 0.5 * (1 + math.cos(math.pi * progress))


def start_from(model, checkpoint):
    """The weights of `checkpoint` (a state dict train_and_export saved, or an ONNX file that a network run by
    paddle_graph.py exported) in `model`, or a clear stop when they are another network's: a strip reader's
    --sequence, say, must be the one it was trained with."""
    if str(checkpoint).endswith('.onnx'):
        if not hasattr(model, 'read_export'):
            raise SystemExit(f'--init {checkpoint}: this network cannot start from its ONNX file; give its .pt checkpoint')
        model.read_export(checkpoint)
        print(f'started from {checkpoint}', flush=True)
        return
    try:
        state = torch.load(checkpoint, map_location='cpu')
    except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as error:
        raise SystemExit(f'--init {checkpoint}: not a checkpoint this script can read ({error})')
    try:
        model.load_state_dict(state)
    except RuntimeError as error:
        reason = ' '.join(str(error).split('\n', 2)[1:2]).strip()
        raise SystemExit(f'--init {checkpoint} is the weights of another network ({reason}): '
                         'the options that shape it (a reader\'s --sequence) must be those it was trained with')
    print(f'started from {checkpoint}', flush=True)


def export_onnx(model, export, output):
    """The model as it ships, written to `output` as ONNX. The exporter puts a module back in the mode it found it
    in, so it is handed one in eval mode: the model stays so."""
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    names = [export.input_name, *export.output_names]
    # torch 2's default exporter is another one; the shipped models come from the TorchScript exporter.
    legacy = {'dynamo': False} if int(torch.__version__.split('.')[0]) >= 2 else {}
    torch.onnx.export(export.wrap(model).eval(), torch.zeros(*export.input_shape), output, input_names=[export.input_name],
                      output_names=export.output_names, dynamic_axes={name: {0: 'batch'} for name in names}, opset_version=13, **legacy)


class _Batches(torch.utils.data.IterableDataset):
    def __init__(self, make, random_source, seed):
        self.make, self.random_source, self.seed = make, random_source, seed

    def __iter__(self):
        worker = torch.utils.data.get_worker_info()
        source = self.random_source(self.seed if worker is None else self.seed + 1000 * (worker.id + 1))
        while True:
            yield self.make(source)


def batch_stream(make, random_source, seed, workers):
    """Endless batches `make(source)` draws from `random_source(seed)`: in this process (workers 0, the draws of
    the shipped runs in their order), or from `workers` processes, each with a seed of its own (for a GPU, which
    trains faster than one core draws)."""
    return iter(torch.utils.data.DataLoader(_Batches(make, random_source, seed), batch_size=None, num_workers=workers,
                                            **({'prefetch_factor': 4} if workers else {})))


def training_progress(args, started):
    """Before each step, how far along the run is (0..1); stops after --steps batches, or --minutes from `started`."""
    deadline = started + args.minutes * 60
    step = 0
    while (step < args.steps) if args.steps else (time.time() < deadline):
        yield step / args.steps if args.steps else min((time.time() - started) / (deadline - started), 1.0)
        step += 1


def in_validation(file_name):
    """Fixed split by a hash of the file name, so it never depends on ordering or on a random state."""
    digest = hashlib.sha1(file_name.encode()).hexdigest()
    return int(digest, 16) % 100 < VALIDATION_PERCENT


def read_labels(dataset):
    """Rows of a dataset's labels.csv as dicts with `file`, `reading`, `quad` (4 corners, clockwise from top-left)."""
    rows = []
    with open(dataset_root(dataset) / 'labels.csv', newline='') as handle:
        for row in csv.DictReader(handle):
            if dataset == 'toloka':
                x1, y1, x2, y2 = (float(row[k]) for k in ('x1', 'y1', 'x2', 'y2'))
                quad = [(x1, y1), (x2, y1), (x2, y2), (x1, y2)]
                reading = toloka_dial_reading(row['reading'])
            else:
                if not row['quad'].strip():
                    continue  # `meterlens dataset export` leaves it empty where the reader found no counter
                values = [float(v) for v in row['quad'].split()]
                quad = list(zip(values[0::2], values[1::2]))
                reading = row['reading']
            rows.append({'dataset': dataset, 'file': row['file'], 'reading': reading, 'quad': quad})
    return rows


def toloka_dial_reading(label):
    """Toloka labels drop leading and trailing zeros (`454.0`); the reading is every wheel of its layout."""
    whole, _, fraction = label.partition('.')
    return whole.zfill(TOLOKA_WHOLE_WHEELS) + '.' + fraction.ljust(TOLOKA_FRACTIONAL_WHEELS, '0')


def split_rows(dataset, leave_out=()):
    """(train, validation) rows; the validation file list is the one committed in ml/splits. Training also leaves
    out the photos the lists in `leave_out` name (--leave-out)."""
    listed = SPLITS / f'{dataset}-val.txt'
    rows = read_labels(dataset)
    # Rendered photos are drawn again from their seed, so their split is the hash's, never a list to keep.
    validation_files = ({r['file'] for r in rows if in_validation(r['file'])} if dataset == 'rendered'
                        else set(listed.read_text().split()))
    not_trained_on = validation_files.union(*(Path(leave_out_list).read_text().split() for leave_out_list in leave_out))
    train = [r for r in rows if r['file'] not in not_trained_on]
    validation = [r for r in rows if r['file'] in validation_files]
    return train, validation

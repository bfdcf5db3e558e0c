"""Shared pieces of the Meterlens training code: dataset discovery, the fixed validation split, seeds."""
import csv
import hashlib
import os
import random
from pathlib import Path

import numpy as np
import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
DATASETS = Path(os.environ.get('METERLENS_DATASETS', REPO_ROOT.parent / 'shared' / 'datasets'))
SPLITS = REPO_ROOT / 'ml' / 'splits'
CACHE = Path(os.environ.get('METERLENS_CACHE', '/tmp/ml-cache'))
MODELS = REPO_ROOT / 'models'

# CTC alphabet of the reading model; index 0 is the CTC blank. Must match src/readers/local/decode.ts.
ALPHABET = '0123456789.'
VALIDATION_PERCENT = 15


def require_datasets():
    if not (DATASETS / 'toloka' / 'labels.csv').exists():
        raise SystemExit(f'Meter datasets not found at {DATASETS}: training needs ../shared/datasets')


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def configure_threads():
    # Debian's torch with OpenBLAS: one BLAS thread and two torch threads is ~5x faster here than the default.
    os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
    torch.set_num_threads(int(os.environ.get('TORCH_THREADS', '2')))


def in_validation(file_name):
    """Fixed split by a hash of the file name, so it never depends on ordering or on a random state."""
    digest = hashlib.sha1(file_name.encode()).hexdigest()
    return int(digest, 16) % 100 < VALIDATION_PERCENT


def read_labels(dataset):
    """Rows of a dataset's labels.csv as dicts with `file`, `reading`, `quad` (4 corners, clockwise from top-left)."""
    rows = []
    with open(DATASETS / dataset / 'labels.csv', newline='') as handle:
        for row in csv.DictReader(handle):
            if dataset == 'toloka':
                x1, y1, x2, y2 = (float(row[k]) for k in ('x1', 'y1', 'x2', 'y2'))
                quad = [(x1, y1), (x2, y1), (x2, y2), (x1, y2)]
                reading = toloka_dial_reading(row['reading'])
            else:
                values = [float(v) for v in row['quad'].split()]
                quad = list(zip(values[0::2], values[1::2]))
                reading = row['reading']
            rows.append({'dataset': dataset, 'file': row['file'], 'reading': reading, 'quad': quad})
    return rows


def toloka_dial_reading(label):
    """Toloka labels drop leading and trailing zeros (`454.0`); its meters show 5 black and 3 red wheels."""
    whole, _, fraction = label.partition('.')
    return whole.zfill(5) + '.' + fraction.ljust(3, '0')


def split_rows(dataset):
    """(train, validation) rows; the validation file list is the one committed in ml/splits."""
    listed = SPLITS / f'{dataset}-val.txt'
    validation_files = set(listed.read_text().split())
    rows = read_labels(dataset)
    train = [r for r in rows if r['file'] not in validation_files]
    validation = [r for r in rows if r['file'] in validation_files]
    return train, validation

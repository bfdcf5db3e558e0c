"""Writes ml/splits/<dataset>-val.txt for each training dataset that has none: the validation photos no training
run may see. The lists of the shipped datasets are committed and never rewritten."""
from common import SPLITS, TRAIN_DATASETS, in_validation, read_labels, require_datasets

require_datasets()
SPLITS.mkdir(parents=True, exist_ok=True)
for dataset in TRAIN_DATASETS:
    listed = SPLITS / f'{dataset}-val.txt'
    if listed.exists() or dataset == 'rendered':  # common.split_rows: a rendered photo's split is its hash
        continue
    files = sorted(r['file'] for r in read_labels(dataset) if in_validation(r['file']))
    listed.write_text('\n'.join(files) + '\n')
    print(dataset, len(files), 'validation photos')

"""Writes ml/splits/<dataset>-val.txt: the validation photos no training run may see. Run once; the lists are committed."""
from common import DATASETS, SPLITS, in_validation, read_labels, require_datasets

require_datasets()
SPLITS.mkdir(parents=True, exist_ok=True)
for dataset in ('toloka', 'bdci2020'):
    files = sorted(r['file'] for r in read_labels(dataset) if in_validation(r['file']))
    (SPLITS / f'{dataset}-val.txt').write_text('\n'.join(files) + '\n')
    print(dataset, len(files), 'validation photos')

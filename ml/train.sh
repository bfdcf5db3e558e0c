#!/bin/sh
# Reproduces models/localiser-{1,2}.onnx, models/reader-{1,2,3}.onnx and models/wheels.onnx from ../shared/datasets (see ml/README.md),
# then scores them on the validation split beside the shipped ones (git's HEAD copy of models/).
# Needs Debian's torch at the versions ml/requirements-debian.txt pins: apt-get install -y $(cat ml/requirements-debian.txt)
set -eu
cd "$(dirname "$0")"
# The datasets as ml/datasets.sha256 has them and the pinned packages, or a clear stop (another version: a warning).
sh pins.sh check
SHIPPED=$(mktemp -d)
trap 'rm -rf "$SHIPPED"' EXIT
git -C .. archive HEAD models | tar -x -C "$SHIPPED"
export OPENBLAS_NUM_THREADS=1
PYTHON=/usr/bin/python3
LOGS="${TMPDIR:-/tmp}"
$PYTHON -m unittest test_synth.py test_wheels.py

# The readers that vote (src/readers/local/spec.ts READER_FILES) differ by regularisation and sequence layer.
train_reader() { # output threads steps, then train_reader.py's own options
  output=$1 threads=$2 steps=$3
  shift 3
  TORCH_THREADS=$threads $PYTHON train_reader.py --output "../models/$output" --steps "$steps" --seed 1 "$@" \
    > "$LOGS/meterlens-$output.log" 2>&1
}

# The localisers (src/readers/local/spec.ts LOCALISER_FILES) and readers, as shipped: localiser 1, then reader 1,
# each on both cores (about 15 and 65 minutes here) ...
train_localiser() { # output, then train_localiser.py's own options
  output=$1
  shift
  TORCH_THREADS=2 $PYTHON train_localiser.py --output "../models/$output" --steps "${LOCALISER_STEPS:-2500}" --seed 1 "$@" \
    2>&1 | tee "$LOGS/meterlens-$output.log"
}
train_localiser localiser-1.onnx
train_reader reader-1.onnx 2 12000 --regularisation light --sequence gru
# ... then readers 2 and 3 side by side, one core each (about 70 minutes).
train_reader reader-2.onnx 1 8000 --regularisation strong --sequence gru & second=$!
train_reader reader-3.onnx 1 8000 --regularisation strong --sequence conv & third=$!
wait $second
wait $third
# Localiser 2 also learns tilted Toloka counters, from the windows the new readers read right inside their loose
# boxes (about a minute, then 15 on both cores).
CACHE="${METERLENS_CACHE:-/tmp/ml-cache}"
mkdir -p "$CACHE"
node fit_tilted_boxes.ts > "$CACHE/toloka-quads.csv"
train_localiser localiser-2.onnx --tilted-windows
# The wheel reader (src/readers/local/spec.ts WHEEL_READER_FILE) learns from the windows localiser 1 finds in
# the photos, cut to their wheels by the readers as the service cuts them (about a minute); both cores, as shipped
# (about 18 minutes).
node find_windows.ts > "$CACHE/toloka-windows.csv"
TORCH_THREADS=2 $PYTHON train_wheels.py --output ../models/wheels.onnx --steps 5000 --seed 1 > "$LOGS/meterlens-wheels.onnx.log" 2>&1
tail -n 2 "$LOGS"/meterlens-reader-*.onnx.log "$LOGS/meterlens-wheels.onnx.log"
# The new weights scored beside the shipped ones (a few minutes each).
LOCAL_MODEL_DIR="$SHIPPED/models" node ../src/cli/eval.ts --validation --json > "$LOGS/meterlens-eval-shipped.json"
LOCAL_MODEL_DIR="$PWD/../models" node ../src/cli/eval.ts --validation --baseline "$LOGS/meterlens-eval-shipped.json"

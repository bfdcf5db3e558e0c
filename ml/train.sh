#!/bin/sh
# Reproduces models/localiser.onnx, models/reader-{1,2,3}.onnx and models/wheels.onnx from ../shared/datasets (see ml/README.md).
# Needs Debian's torch: apt-get install -y python3-torch python3-torchvision python3-onnx libopenblas0-pthread
set -eu
cd "$(dirname "$0")"
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

# As shipped: the localiser, then reader 1, each on both cores (about 25 and 65 minutes here) ...
TORCH_THREADS=2 $PYTHON train_localiser.py --steps "${LOCALISER_STEPS:-2500}" --seed 1 2>&1 | tee "$LOGS/meterlens-localiser.log"
train_reader reader-1.onnx 2 12000 --regularisation light --sequence gru
# ... then readers 2 and 3 side by side, one core each (about 70 minutes).
train_reader reader-2.onnx 1 8000 --regularisation strong --sequence gru & second=$!
train_reader reader-3.onnx 1 8000 --regularisation strong --sequence conv & third=$!
wait $second
wait $third
# The wheel reader (src/readers/local/spec.ts WHEEL_READER_FILE) learns from the windows the new localiser
# finds in the photos; one core, as shipped (about 20 minutes).
CACHE="${METERLENS_CACHE:-/tmp/ml-cache}"
mkdir -p "$CACHE"
node find_windows.ts > "$CACHE/toloka-windows.csv"
TORCH_THREADS=1 $PYTHON train_wheels.py --output ../models/wheels.onnx --steps 5000 --seed 1 > "$LOGS/meterlens-wheels.onnx.log" 2>&1
tail -n 2 "$LOGS"/meterlens-reader-*.onnx.log "$LOGS/meterlens-wheels.onnx.log"

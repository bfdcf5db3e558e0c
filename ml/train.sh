#!/bin/sh
# Reproduces models/localiser.onnx and models/reader.onnx from ../shared/datasets (see ml/README.md).
# Needs Debian's torch: apt-get install -y python3-torch python3-torchvision python3-onnx libopenblas0-pthread
set -eu
cd "$(dirname "$0")"
# The shipped networks were trained one after the other, each on both cores (about 30 and 70 minutes here).
export OPENBLAS_NUM_THREADS=1 TORCH_THREADS=2
PYTHON=/usr/bin/python3
LOGS="${TMPDIR:-/tmp}"
$PYTHON -m unittest test_synth.py
$PYTHON train_localiser.py --steps "${LOCALISER_STEPS:-2500}" --seed 1 2>&1 | tee "$LOGS/meterlens-localiser.log"
$PYTHON train_reader.py --steps "${READER_STEPS:-12000}" --seed 1 2>&1 | tee "$LOGS/meterlens-reader.log"

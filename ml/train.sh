#!/bin/sh
# Reproduces models/localiser.onnx and models/reader.onnx from ../shared/datasets (see ml/README.md).
# Needs Debian's torch: apt-get install -y python3-torch python3-torchvision python3-onnx libopenblas0-pthread
set -eu
cd "$(dirname "$0")"
export OPENBLAS_NUM_THREADS=1 TORCH_THREADS=1
PYTHON=/usr/bin/python3
$PYTHON -m unittest test_synth.py
# The two stages are independent: train them side by side, one core each.
$PYTHON train_localiser.py --steps "${LOCALISER_STEPS:-1564}" --seed 1 > "${TMPDIR:-/tmp}/meterlens-localiser.log" 2>&1 &
localiser=$!
$PYTHON train_reader.py --steps "${READER_STEPS:-12000}" --seed 1 2>&1 | tee "${TMPDIR:-/tmp}/meterlens-reader.log"
wait $localiser
tail -n 3 "${TMPDIR:-/tmp}/meterlens-localiser.log"

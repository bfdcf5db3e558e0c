#!/bin/sh
# Reproduces the non-commercial set, models/noncommercial/: localiser-{1,2}.onnx, reader-{1,2,3}.onnx, wheels.onnx and
# calibration.json from ../shared/datasets (see ml/README.md), then scores them on the validation split beside git's
# HEAD copy of that folder. (The default set in models/ is built on PP-OCRv4: ml/README.md, "The clean recipe".)
# Needs Debian's torch at the versions ml/requirements-debian.txt pins: apt-get install -y $(cat ml/requirements-debian.txt)
#
# METERLENS_TRAIN_DATASETS (default toloka,bdci2020): the folders under METERLENS_DATASETS whose photos the
# localisers and strip readers learn from, e.g. `meters` for the folder `meterlens dataset export` writes. Without
# Toloka there are no tilted Toloka windows for localiser 2, and no wheel reader (the service reads without one) but
# the clean recipe's, which learns digits-clean's crops.
# METERLENS_STEPS_PERCENT (default 100): a share of every run's steps, for a quick trial of the whole recipe.
# METERLENS_TRAIN_DATASETS=rendered: the clean recipe, on the photos render_meters.py draws (with digits-clean's
# crops, METERLENS_DIGITS=clean) and nothing else; scored on Toloka's and BDCI 2020's validation photos.
# METERLENS_MODELS: the folder, from the repository's root, the weights are written to, and scored beside git's HEAD
# copy of (or of models/ where git holds none). By default models/noncommercial where they learn Toloka; a run that
# learns no Toloka must name it (METERLENS_MODELS=models replaces the default set).
# METERLENS_TRAIN_DEVICE=cuda and METERLENS_TRAIN_WORKERS=N: on a GPU, the strip readers' batches drawn by N processes.
#
#   sh ml/train.sh              everything, about nine hours here
#   sh ml/train.sh calibration  only the calibration.json: trains the networks of ml/calibrating/ that are not there
#                               yet (a run stopped part way keeps those it finished), then fits
# Like models/noncommercial/, ml/calibrating/ is rewritten by a trial (METERLENS_STEPS_PERCENT) or another dataset: git restores both.
set -eu
cd "$(dirname "$0")"
# The project's own Node.js, which runs TypeScript, as `npm run train` has it: the steps after the readers need it.
PATH="$PWD/../node_modules/.bin:$PATH"
MODE="${1:-all}"
case "$MODE" in
all | calibration) ;;
*)
  echo 'usage: sh ml/train.sh [calibration]' >&2
  exit 2
  ;;
esac
# The networks the calibration is fitted with, trained as the shipped ones without the calibration photos: kept in
# git, since they take longer to train than everything else (src/readers/local/confidence.ts;
# models/noncommercial/MODEL_CARD.md, "Calibration").
CALIBRATING=calibrating
kept() { # true for a network of ml/calibrating that a `calibration` run finds already trained
  [ "$MODE" = calibration ] && [ -e "$1" ] && echo "kept ml/$1"
}
TRAIN_DATASETS="${METERLENS_TRAIN_DATASETS:-toloka,bdci2020}"
DATASETS="${METERLENS_DATASETS:-../../shared/datasets}"
with_toloka() { case ",$TRAIN_DATASETS," in *,toloka,*) return 0 ;; *) return 1 ;; esac; }
with_rendered() { case ",$TRAIN_DATASETS," in *,rendered,*) return 0 ;; *) return 1 ;; esac; }
if [ "$MODE" = calibration ] && ! with_toloka; then
  echo 'no calibration without Toloka: the confidence is the product (models/noncommercial/MODEL_CARD.md: "Calibration")' >&2
  exit 2
fi
steps() { # the shipped step count, scaled by METERLENS_STEPS_PERCENT (at least 1)
  scaled=$(($1 * ${METERLENS_STEPS_PERCENT:-100} / 100))
  echo $((scaled > 0 ? scaled : 1))
}
# The datasets as ml/datasets.sha256 has them and the pinned packages, or a clear stop (another version: a warning).
if [ "$TRAIN_DATASETS" = toloka,bdci2020 ]; then sh pins.sh check; else sh pins.sh check-packages; fi
if with_toloka; then
  SET_PATH="${METERLENS_MODELS:-models/noncommercial}"
elif [ -z "${METERLENS_MODELS:-}" ]; then
  echo 'a run without Toloka makes another set than models/noncommercial: name its folder in METERLENS_MODELS' >&2
  exit 2
else
  SET_PATH=$METERLENS_MODELS
fi
SET="../$SET_PATH"
mkdir -p "$SET"
BASELINE_PATH=$SET_PATH
git -C .. cat-file -e "HEAD:$SET_PATH" 2> /dev/null || BASELINE_PATH=models
SHIPPED=$(mktemp -d)
trap 'rm -rf "$SHIPPED"' EXIT
git -C .. archive HEAD "$BASELINE_PATH" | tar -x -C "$SHIPPED"
export OPENBLAS_NUM_THREADS=1
PYTHON=/usr/bin/python3
LOGS="${TMPDIR:-/tmp}"
$PYTHON -m unittest test_common.py test_synth.py test_wheels.py test_render.py
# A dataset of one's own gets its validation list here, once (ml/splits holds the shipped datasets' lists).
export METERLENS_TRAIN_DATASETS="$TRAIN_DATASETS"
# How the GRU strip readers' synthetic Toloka-like counters are drawn: the wheels side by side in a frame, or (the clean
# recipe) behind windows of their own in a light face, which the clean GRU readers read Toloka's windows better by and
# the conv reader read BDCI 2020's worse by (ml/EXPERIMENTS.md, "wheels behind windows").
COUNTER_LOOK=
if with_rendered; then
  # The rendered photos, in METERLENS_RENDERED (CACHE/rendered): 10 000, 8 to 12 minutes here; kept while the code that
  # draws them is unchanged (the same seed draws the same photos).
  export METERLENS_DIGITS=clean
  $PYTHON render_meters.py --count 10000
  COUNTER_LOOK=--behind-windows
fi
$PYTHON make_split.py

# The readers that vote (src/readers/local/spec.ts READER_FILES) differ by regularisation and sequence layer.
train_reader() { # output (under ml/), log name, threads, steps, then train_reader.py's own options
  output=$1 log=$2 threads=$3 steps=$4
  shift 4
  if kept "$output"; then return; fi
  TORCH_THREADS=$threads $PYTHON train_reader.py --output "$output" --steps "$(steps "$steps")" --seed 1 \
    --workers "${METERLENS_TRAIN_WORKERS:-0}" "$@" \
    > "$LOGS/meterlens-$log.log" 2>&1
}
train_readers() { # folder, run name, the GRU readers' counter look (COUNTER_LOOK), then train_reader.py's own options for all three
  folder=$1 run=$2 look=$3
  shift 3
  # Reader 1 on both cores (about 65 minutes here) ...
  train_reader "$folder/reader-1.onnx" "$run-1" 2 12000 --regularisation light --sequence gru $look "$@"
  # ... then readers 2 and 3 side by side, one core each (about 70 minutes); one of them alone, the other kept, on both.
  pair_threads=1
  if kept "$folder/reader-2.onnx" > /dev/null || kept "$folder/reader-3.onnx" > /dev/null; then pair_threads=2; fi
  train_reader "$folder/reader-2.onnx" "$run-2" $pair_threads 8000 --regularisation strong --sequence gru $look "$@" & second=$!
  train_reader "$folder/reader-3.onnx" "$run-3" $pair_threads 8000 --regularisation strong --sequence conv "$@" & third=$!
  wait $second
  wait $third
}
train_localiser() { # output (under ml/), log name, then train_localiser.py's own options
  output=$1 log=$2
  shift 2
  if kept "$output"; then return; fi
  TORCH_THREADS=2 $PYTHON train_localiser.py --output "$output" --steps "$(steps 2500)" --seed 1 "$@" \
    > "$LOGS/meterlens-$log.log" 2>&1
  tail -n 2 "$LOGS/meterlens-$log.log"
}

CACHE="${METERLENS_CACHE:-/tmp/ml-cache}"
mkdir -p "$CACHE"
# The wheel reader (src/readers/local/spec.ts WHEEL_READER_FILE) learns from the windows localiser 1 finds in
# the Toloka photos, cut to their wheels by the readers as the service cuts them (about a minute): three of them,
# one a seed of WHEEL_SEEDS (1, 2 and 3), each on both cores (at 30 x 48, about 30 minutes each; 46 on a slower
# machine), joined into one model that averages them. Without Toloka the shipped one (which learned from Toloka
# alone) is removed, and the clean recipe trains its own on digits-clean's crops.
train_wheels() { # output, log name, seed, then train_wheels.py's own options
  output=$1 log=$2 seed=$3
  shift 3
  if kept "$output"; then return; fi
  TORCH_THREADS=2 $PYTHON train_wheels.py --output "$output" --steps "$(steps 5000)" --seed "$seed" "$@" \
    > "$LOGS/meterlens-$log.log" 2>&1
  tail -n 2 "$LOGS/meterlens-$log.log"
}
WHEEL_SEEDS='1 2 3'
# One run a seed, joined, then quantised to 8 bits on the wheels they learned from, or wheels drawn as they drew
# theirs (about a minute).
train_wheel_readers() { # ensemble file, folder of the seeds' own files, run name, then train_wheels.py's own options
  ensemble=$1 seeds=$2 run=$3
  shift 3
  if kept "$ensemble"; then return; fi
  for wheel_seed in $WHEEL_SEEDS; do
    train_wheels "$seeds/wheels-seed$wheel_seed.onnx" "$run-seed$wheel_seed" "$wheel_seed" "$@"
  done
  (
    set --
    for wheel_seed in $WHEEL_SEEDS; do set -- "$@" "$seeds/wheels-seed$wheel_seed.onnx"; done
    $PYTHON ensemble_wheels.py --output "$CACHE/$run-joined.onnx" "$@"
  )
  $PYTHON quantise_wheels.py --output "$ensemble" "$CACHE/$run-joined.onnx" "$@"
}

if [ "$MODE" = all ]; then
  # The localisers (src/readers/local/spec.ts LOCALISER_FILES) and readers, as shipped: localiser 1 on both cores
  # (about 15 minutes), then the readers.
  train_localiser "$SET/localiser-1.onnx" localiser-1
  train_readers "$SET" reader "$COUNTER_LOOK"
  # Localiser 2 also learns tilted Toloka counters, from the windows the new readers read right inside their loose
  # boxes (about a minute, then 15 on both cores); without Toloka it is trained as localiser 1 with another seed.
  if with_toloka; then
    node fit_tilted_boxes.ts --models "$SET" > "$CACHE/toloka-quads.csv"
    train_localiser "$SET/localiser-2.onnx" localiser-2 --tilted-windows
    node find_windows.ts --models "$SET" > "$CACHE/toloka-windows.csv"
    train_wheel_readers "$SET/wheels.onnx" "$CACHE" wheels
  else
    train_localiser "$SET/localiser-2.onnx" localiser-2 --seed 2
    # provenance.json describes the shipped weights' data; without it the service logs these weights' licence as unknown.
    rm -f "$SET/wheels.onnx" "$SET/calibration.json" "$SET/provenance.json"
    if with_rendered && [ "$TRAIN_DATASETS" = rendered ]; then
      # The clean wheel reader learns digits-clean's crops, half framed alone and half in synthetic counters; it is
      # validated on the Toloka windows the new networks find, which it does not learn.
      node find_windows.ts --models "$SET" > "$CACHE/toloka-windows.csv"
      train_wheel_readers "$SET/wheels.onnx" "$CACHE" wheels --digits-share 0.5 --counters-share 0.5
      # Rendered photos and digits-clean's crops alone: weights anyone may use (the service logs this at start-up).
      cat > "$SET/provenance.json" << 'JSON'
{
  "set": "local-clean",
  "datasets": {
    "rendered": { "name": "meter photos drawn by ml/render_meters.py (this project, open fonts)", "licence": "Apache-2.0", "commercialUse": true },
    "digits-clean": { "name": "digits-clean wheel crops (digits-clean/PROVENANCE.md)", "licence": "Apache-2.0 and MIT", "commercialUse": true }
  },
  "files": {
    "localiser-1.onnx": ["rendered", "digits-clean"],
    "localiser-2.onnx": ["rendered", "digits-clean"],
    "reader-1.onnx": ["rendered", "digits-clean"],
    "reader-2.onnx": ["rendered", "digits-clean"],
    "reader-3.onnx": ["rendered", "digits-clean"],
    "wheels.onnx": ["digits-clean"]
  }
}
JSON
    fi
  fi
  tail -n 2 "$LOGS"/meterlens-reader-?.log
  # Those of the calibration learned from the old networks' windows.
  rm -rf "$CALIBRATING"
else
  # The windows the shipped networks find, as a full run has them when it reaches the calibration (3 minutes).
  node fit_tilted_boxes.ts --models "$SET" > "$CACHE/toloka-quads.csv"
  node find_windows.ts --models "$SET" > "$CACHE/toloka-windows.csv"
fi
# The confidence's calibration (src/readers/local/confidence.ts) is fitted on the calibration photos
# (splits/*-calibration.txt) read by networks that have not learned them: the localisers, readers and wheel
# readers again, trained the same way without them into ml/calibrating (about 30 + 135 + 3 x 30 minutes), then
# fit_calibration.ts (about 2 minutes). Without Toloka there is no calibration, and the confidence stays the
# product (models/noncommercial/MODEL_CARD.md: "Calibration").
if with_toloka; then
  mkdir -p "$CALIBRATING"
  LEAVE_OUT="--leave-out splits/toloka-calibration.txt splits/bdci2020-calibration.txt"
  train_localiser "$CALIBRATING/localiser-1.onnx" calibration-localiser-1 $LEAVE_OUT
  train_localiser "$CALIBRATING/localiser-2.onnx" calibration-localiser-2 --tilted-windows $LEAVE_OUT
  train_readers "$CALIBRATING" calibration-reader "$COUNTER_LOOK" $LEAVE_OUT
  train_wheel_readers "$CALIBRATING/wheels.onnx" "$CALIBRATING" wheels-calibration $LEAVE_OUT
  rm -f "$CALIBRATING"/wheels-seed?.onnx # joined into wheels.onnx
  rm -f "$SET/calibration.json"
  if ! node fit_calibration.ts --set "$SET" --models "$CALIBRATING" > "$LOGS/meterlens-calibration.log" 2>&1; then
    echo "no $SET_PATH/calibration.json: the new weights report the confidence product (see $LOGS/meterlens-calibration.log)"
  fi
  head -n 1 "$LOGS/meterlens-calibration.log"
  grep '^ESCALATE_BELOW:' "$LOGS/meterlens-calibration.log" || true # the default the new calibration supports (src/config.ts)
fi
# The new weights scored beside the shipped ones on each dataset's validation photos (a few minutes each).
score() { # dataset, then eval's own options
  dataset=$1
  shift
  node ../src/cli/eval.ts --dataset "$DATASETS/$dataset" --files "splits/$dataset-val.txt" "$@"
}
for dataset in $(echo "$TRAIN_DATASETS" | sed 's/rendered/toloka,bdci2020/' | tr , ' '); do
  LOCAL_MODEL_DIR="$SHIPPED/$BASELINE_PATH" score "$dataset" --json > "$LOGS/meterlens-eval-shipped-$dataset.json"
  LOCAL_MODEL_DIR="$PWD/$SET" score "$dataset" --baseline "$LOGS/meterlens-eval-shipped-$dataset.json"
done

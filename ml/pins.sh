#!/bin/sh
# What ml/train.sh trains with, pinned: the Debian packages in ml/requirements-debian.txt (apt-get's
# package=version, so `apt-get install -y $(cat ml/requirements-debian.txt)` installs them) and
# ../shared/datasets in ml/datasets.sha256 (a line per dataset folder: the SHA-256 of its files' sorted names
# and contents as sha256sum lists them, the number of files, the folder).
#
#   sh ml/pins.sh check    stops when a dataset folder differs or a package is missing; warns when a package has
#                          another version (training runs, but the weights will not be the shipped ones)
#   sh ml/pins.sh check-packages
#                          the packages only (training on other photos: METERLENS_TRAIN_DATASETS)
#   sh ml/pins.sh record   rewrites both files from this machine
set -eu
cd "$(dirname "$0")"
DATASETS="${METERLENS_DATASETS:-../../shared/datasets}"
PACKAGES='fonts-dejavu-core fonts-liberation2 fonts-noto-core fonts-open-sans fonts-roboto-unhinted libopenblas0-pthread python3-numpy python3-onnx python3-pil python3-torch python3-torchvision'

installed() { # package=version of each installed package named, nothing for one that is not
  dpkg-query -W -f='${db:Status-Status} ${Package}=${Version}\n' "$@" 2>/dev/null | sed -n 's/^installed //p'
}

datasets() {
  for folder in "$DATASETS"/*/; do
    name=$(basename "$folder")
    sums=$(cd "$DATASETS" && find "$name" -type f | LC_ALL=C sort | tr '\n' '\0' | xargs -0 sha256sum)
    echo "$(printf '%s\n' "$sums" | sha256sum | cut -d' ' -f1)  $(printf '%s\n' "$sums" | wc -l) files  $name"
  done
}

check_datasets() {
  if [ ! -d "$DATASETS" ]; then
    echo "ml/pins.sh: no datasets at $DATASETS (METERLENS_DATASETS)" >&2
    exit 1
  fi
  if ! datasets | diff -u datasets.sha256 - >&2; then
    echo "ml/pins.sh: $DATASETS differs from ml/datasets.sha256 (above: - expected, + found); the shipped weights were trained on the expected data" >&2
    exit 1
  fi
}

check_packages() {
  missing=
  while read -r pinned; do
    found=$(installed "${pinned%%=*}")
    if [ -z "$found" ]; then
      missing="$missing $pinned"
    elif [ "$found" != "$pinned" ]; then
      echo "ml/pins.sh: warning: $found installed, ml/requirements-debian.txt pins $pinned" >&2
    fi
  done < requirements-debian.txt
  if [ -n "$missing" ]; then
    echo "ml/pins.sh: not installed:$missing (apt-get install -y$missing)" >&2
    exit 1
  fi
}

case "${1:-}" in
  check)
    check_datasets
    check_packages
    ;;
  check-packages) check_packages ;;
  record)
    installed $PACKAGES > requirements-debian.txt
    datasets > datasets.sha256
    ;;
  *)
    echo 'usage: sh ml/pins.sh check|check-packages|record' >&2
    exit 2
    ;;
esac

"""Exits 0 when this Python can fine-tune the local reader's networks as `meterlens train` runs them; otherwise prints
what is missing, in one line, and exits 1, before any minutes are spent: the packages of requirements-debian.txt the
training scripts import, and digits-clean's crops, which the strip readers compose synthetic strips from."""
import sys

try:
    import numpy  # noqa: F401
    import onnx  # noqa: F401
    import PIL  # noqa: F401
    import torch  # noqa: F401
except ImportError as error:
    sys.exit(f'{sys.executable} cannot import {error.name}: install the packages of ml/requirements-debian.txt '
             '(apt-get install -y $(cat ml/requirements-debian.txt))')

import synth  # noqa: E402 (it imports torch, through common)

if not synth.clean_digit_crops_at_hand():
    sys.exit(f"no digits-clean crops: neither its archives in {synth.DIGITS_CLEAN} (METERLENS_DIGITS_CLEAN) nor packed in "
             f"{synth.packed_crops(synth.CLEAN_EXTRACTED)} (METERLENS_CACHE); the strip readers' fine-tune composes strips from them")

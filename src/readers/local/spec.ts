/**
 * Shapes and constants the shipped ONNX models were trained with. The ones the training code needs too live in
 * spec.json, which ml/common.py reads: changing one there without retraining breaks the reader.
 */
import spec from './spec.json' with { type: 'json' };

/** Long side of the photo the localiser sees, on a black square canvas, top-left aligned. */
export const LOCALISER_INPUT = spec.localiser.input;
/** The localiser's mask has one cell per STRIDE x STRIDE input pixels. */
export const LOCALISER_STRIDE = spec.localiser.stride;
/**
 * A labelled Toloka box less elongated than this is loose, around a tilted counter: localiser 1 was trained without
 * those photos, localiser 2 on the tilted windows ml/fit_tilted_boxes.ts found inside them.
 */
export const LOOSE_BOX_ASPECT = spec.localiser.looseBoxAspect;

/**
 * The strips the recipe's own readers read; a strip reader pretrained elsewhere reads its own size of this shape
 * (PP-OCRv4's recogniser 240 x 48, its height: ml/ppocr_reader.py).
 */
export const STRIP_HEIGHT = spec.strip.height;
export const STRIP_WIDTH = spec.strip.width;
/** Margins added around the localised window before rectifying, as fractions of its width and height per side. */
export const STRIP_MARGIN_X = spec.strip.marginX;
/** The readers were trained with this margin (jittered -0.12 to +0.2); their upside-down heads see it. */
export const STRIP_MARGIN_Y = spec.strip.marginY;
/** The reading averages one crop at each of these. */
export const STRIP_MARGINS_Y = [0.05, STRIP_MARGIN_Y, 0.28];

/**
 * The wheel reader reads Toloka-like counters (WHEEL_COUNT evenly spaced wheels: the wheels of Toloka's layout) one
 * wheel at a time: each slice of the window grown by WHEEL_MARGIN (of the slice's width, and of the window's height)
 * on every side.
 */
export const WHEEL_COUNT = spec.layouts.toloka.replaceAll('.', '').length;
export const WHEEL_HEIGHT = spec.wheels.height;
export const WHEEL_WIDTH = spec.wheels.width;
export const WHEEL_MARGIN = spec.wheels.margin;
/**
 * Each wheel is read at its slice and at the slice moved a tenth of a wheel either way (within the jitter the wheel
 * reader learned from), and the three readings averaged. Chosen on the calibration photos with a wheel reader that
 * had not learned them: ±0.1 read 5 more of 232 exactly than one slice, ±0.05 2 more, ±0.15 3 more, ±0.2 2 more
 * (ml/EXPERIMENTS.md, "Wheels read three times").
 */
export const WHEEL_SHIFTS = [-0.1, 0, 0.1];

/** Photos are read at the scale the training photos had (long side ≤ 1024 px). */
export const WORKING_LONG_SIDE = 1024;

/** CTC classes after the blank (index 0). */
export const ALPHABET = spec.alphabet;
/**
 * Wheel layouts the readers were trained on (bdci2020's, then Toloka's): `d` a wheel, `.` the point between
 * whole-unit and fractional wheels.
 */
export const LAYOUTS = Object.values(spec.layouts);
/** Five whole-unit wheels (bdci2020's counters), and five with a point and three fractional wheels (Toloka's). */
export const WHOLE_UNITS_LAYOUT = spec.layouts.bdci2020;
export const FRACTIONAL_LAYOUT = spec.layouts.toloka;

/**
 * Localisers trained apart (the second also on tilted Toloka counters); each proposes candidate windows and the
 * readers decide between all of them. They seldom cut the same counter quite alike, and one may find a window
 * the other misses.
 */
export const LOCALISER_FILES = spec.files.localisers;
/** Readers trained apart on the same data (different seeds or recipes); the service combines their readings. */
export const READER_FILES = spec.files.readers;
/**
 * The reader whose outputs stay where it sees each wheel (its sequence layer is convolutional; the BiGRU readers
 * emit some digits late): where it reads the wheels is where they are.
 */
export const ALIGNED_READER_FILE = 'reader-3.onnx';
export const WHEEL_READER_FILE = spec.files.wheelReader;
/**
 * How many strip readers the wheel reader counts as on a wheel's digit. On the red fractional wheels, twice the
 * three together: in the window cut to the wheels it reads them one by one better than the strip readers do
 * (often mid-roll or half hidden by the frame; on Toloka's validation photos the wheel reader alone gets 80% of
 * readings exact, the strip readers together 68.5%). On the whole-unit wheels, the three together: with the window
 * cut along the evenly spaced line through the wheel centres (geometry.ts) its slices sit on their wheels there too.
 * Fractional: chosen on the validation split, 6 to 10 read alike (ml/EXPERIMENTS.md, "What v6 changes, step by
 * step"). Whole units: chosen on draw 2's Toloka calibration photos (ml/calibrating, 232; exact / ±1 / whole units):
 * 1 reads 194 / 199 / 207, 2 196 / 201 / 209, 3 196 / 202 / 210, 4 195 / 201 / 209, 6 195 / 201 / 210
 * (ml/EXPERIMENTS.md, "The wheel reader on whole units (v19)").
 */
export const WHEEL_READER_WEIGHT = { wholeUnits: 3, fractional: 6 };
/**
 * The set a reading names as its `model` when its weights' provenance.json names none (provenance.ts, setName): weights
 * without one are of this set's line.
 */
export const MODEL_NAME = 'local-crnn-v20';
/**
 * Below this confidence product (before calibration) the local model's answer is not a reading but a guess at a
 * counter that is not there: a blank photo reads as 00000.000 at 0. With the non-commercial set, on the validation
 * split only misreads fell below it (products 0–2; no bdci2020 photo), and the least confident right reading was at 6.
 * With `local-clean-ppocr-v2`, on the calibration photos it never learned, Toloka's 5 guesses below it were wrong in
 * their whole units (bdci2020 had none), and 10 of its 31 readings at 3–9 exact (models/MODEL_CARD.md, "Confidence").
 */
export const MIN_LOCAL_CONFIDENCE = 3;

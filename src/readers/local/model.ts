import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { fitsLayout, type MeterLayout } from '../layout.ts';
import { IMPLAUSIBLE_BELOW_WINDOW_FIT } from '../../plausibility-policy.ts';
import { implausible, outsideWindowReason } from '../judge-reading.ts';
import { readSetFile } from './json-file.ts';
import { setName } from './provenance.ts';
import { loadRolling, readLastWheel, unrolled, type Rolling } from './rolling.ts';
import { ReaderError, clampConfidence, parseReading, type MeterReading, type PlausibilityWindow } from '../reader.ts';
import {
  combineReadings,
  formatReading,
  inLayout,
  mostChosenLayout,
  mostProbableDigit,
  readInLayouts,
  readWithinValues,
  type FormattedReading,
  type LayoutReading,
} from './decode.ts';
import {
  CALIBRATION_FILE,
  calibrate,
  layoutOf,
  givenLayouts,
  parseCalibration,
  shareOf,
  type Calibration,
  type ConfidenceEvidence,
} from './confidence.ts';
import {
  isDiagonal,
  rectifyInto,
  scaleWindow,
  sliceWindow,
  spanOfWindow,
  turnWindow,
  windowAroundWheels,
  windowsAroundWheels,
  windowContains,
  windowCorners,
  windowTurnedBack,
  windowsFromMask,
  type Point,
  type RgbImage,
  type Window,
} from './geometry.ts';
import {
  ALIGNED_READER_FILE,
  ALPHABET,
  LAYOUTS,
  LOCALISER_FILES,
  LOCALISER_INPUT,
  LOCALISER_STRIDE,
  MIN_LOCAL_CONFIDENCE,
  MODEL_NAME,
  READER_FILES,
  STRIP_HEIGHT,
  STRIP_MARGIN_X,
  STRIP_MARGIN_Y,
  STRIP_MARGINS_Y,
  STRIP_WIDTH,
  FRACTIONAL_LAYOUT,
  WHOLE_UNITS_LAYOUT,
  WHEEL_COUNT,
  WHEEL_HEIGHT,
  WHEEL_MARGIN,
  WHEEL_SHIFTS,
  WHEEL_READER_FILE,
  WHEEL_WIDTH,
  WORKING_LONG_SIDE,
} from './spec.ts';

/** The files the local reader needs; the wheel reader (WHEEL_READER_FILE) votes when it is there too. */
export const MODEL_FILES = [...LOCALISER_FILES, ...READER_FILES];
/** Where ALIGNED_READER_FILE is among the strip readers, and so among their outputs. */
const ALIGNED_READER = READER_FILES.indexOf(ALIGNED_READER_FILE);
/** The second look at the window covers this many window widths around it. */
const REFINE_CONTEXT = 2.5;

/**
 * The two-stage model: find candidate counter windows, then read the strips cut out of them. Runs on the calling
 * thread.
 */
export interface MeterModel {
  read(image: Buffer, window?: PlausibilityWindow, layout?: MeterLayout): Promise<MeterReading>;
}

export async function loadMeterModel(modelDir: string, threads: number): Promise<MeterModel> {
  const load = async (files: string[], check: (session: ort.InferenceSession, file: string) => void) => {
    const sessions = await loadSessions(modelDir, files, threads);
    sessions.forEach((session, index) => check(session, files[index]!));
    return sessions;
  };
  // Weights trained on an operator's own photos alone come without a wheel reader (ml/train.sh): the strip readers
  // read alone.
  const wheelReaderFiles = existsSync(path.join(modelDir, WHEEL_READER_FILE)) ? [WHEEL_READER_FILE] : [];
  const [localisers, [wheelReader], stripReaders] = await Promise.all([
    load(distinctFiles(modelDir, LOCALISER_FILES), inputOfSize(LOCALISER_INPUT, LOCALISER_INPUT)),
    load(wheelReaderFiles, inputOfSize(WHEEL_HEIGHT, WHEEL_WIDTH)),
    load(READER_FILES, checkStripShape),
  ]);
  const weights = { name: setName(modelDir) ?? MODEL_NAME, calibration: loadCalibration(modelDir) };
  const rolling = loadRolling(modelDir);
  return {
    read: (image, window, layout) =>
      readMeter({ localisers, wheelReader, stripReaders, rolling }, image, { window, layout }, weights),
  };
}

/**
 * `files` without those whose bytes an earlier one has: a set may hold one network in two slots, which would find
 * every window twice and read each twice alike.
 */
export function distinctFiles(modelDir: string, files: string[]): string[] {
  const seen = new Set<string>();
  return files.filter((file) => {
    const digest = createHash('sha256')
      .update(readFileSync(path.join(modelDir, file)))
      .digest('hex');
    if (seen.has(digest)) return false;
    seen.add(digest);
    return true;
  });
}

/** The height and width of the images a session reads, as its input names them (a number each where fixed). */
function inputSize(session: ort.InferenceSession): Array<number | string> {
  const [input] = session.inputMetadata;
  return input?.isTensor ? input.shape.slice(-2) : [];
}

/**
 * Weights trained for other input sizes than spec.json names (an old wheels.onnx beside a newer spec, say) stop the
 * model from loading, naming the file, instead of failing every photo they would read.
 */
function inputOfSize(height: number, width: number) {
  return (session: ort.InferenceSession, file: string) => {
    const size = inputSize(session);
    if (size[0] !== height || size[1] !== width) {
      throw new Error(
        `${file} reads ${size.join(' x ') || 'an unknown size'} inputs; spec.json gives it ${height} x ${width}: retrain it, or use the spec.json it was trained with`,
      );
    }
  };
}

/**
 * A strip reader reads strips of its own size (a pretrained network at the height it was made for, say), but of
 * spec.json's shape: the strip's margins and where the readers put the wheels are in the strip's proportions.
 */
function checkStripShape(session: ort.InferenceSession, file: string): void {
  const [height, width] = inputSize(session);
  if (typeof height !== 'number' || typeof width !== 'number' || height * STRIP_WIDTH !== width * STRIP_HEIGHT) {
    throw new Error(
      `${file} reads ${[height, width].join(' x ')} strips; spec.json's are ${STRIP_HEIGHT} x ${STRIP_WIDTH}, and a strip reader reads that shape at some fixed size: retrain it, or use the spec.json it was trained with`,
    );
  }
}

/**
 * The weights' calibration (confidence.ts), when CALIBRATION_FILE is beside them: weights trained without it report the
 * product.
 */
function loadCalibration(modelDir: string): Calibration | undefined {
  return readSetFile(modelDir, CALIBRATION_FILE, parseCalibration);
}

/**
 * ONNX sessions for `files` in `modelDir`, each running on the caller's thread (see inference-thread.ts) and
 * `threads` - 1 more. The extra threads sleep between runs instead of spinning: a photo is many small runs with
 * image work between them, which spinning threads would starve (on 2 cores, 2 spinning threads read 2.4 times
 * slower).
 */
export function loadSessions(modelDir: string, files: string[], threads: number): Promise<ort.InferenceSession[]> {
  const options: ort.InferenceSession.SessionOptions = {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  };
  return Promise.all(files.map((file) => ort.InferenceSession.create(path.join(modelDir, file), options)));
}

/** A set of weights as loaded: its networks and the rule its last wheel is read by. */
interface LoadedSet {
  localisers: ort.InferenceSession[];
  /** Without it the strip readers alone decide (as training code reads, and weights trained without Toloka). */
  wheelReader?: ort.InferenceSession;
  stripReaders: ort.InferenceSession[];
  /** How the set's readers' last wheel is read between two digits; without it, as they favour. */
  rolling?: Rolling;
}

/** The readers of a window. */
export type WindowReaders = Omit<LoadedSet, 'localisers'>;

async function readMeter(
  { localisers, ...readers }: LoadedSet,
  image: Buffer,
  { window, layout }: { window?: PlausibilityWindow; layout?: MeterLayout },
  { name, calibration }: { name: string; calibration?: Calibration },
): Promise<MeterReading> {
  const { photo, toNormalised } = await decodePhoto(image);
  const candidates: Window[] = [];
  for (const localiser of localisers) candidates.push(...(await localise(localiser, photo)));
  if (candidates.length === 0) throw new ReaderError('unreadable', 'no counter window found in the photo');

  // Every window-like region each localiser sees is read and cut to its wheels; whether any reads surely decides
  // whether to look again, and the counter is then chosen among all of them (chooseCounter).
  const readings = await readCandidates(readers, photo, candidates);
  if ((mostConfident(readings)?.formatted.confidence ?? 0) < LOOK_TURNED_BELOW) {
    readings.push(...(await readCandidates(readers, photo, await lookTurned(localisers, photo))));
  }
  if ((mostConfident(readings)?.formatted.confidence ?? 0) < MIN_LOCAL_CONFIDENCE) {
    readings.push(...(await readCandidates(readers, photo, await lookCloser(localisers, photo))));
  }
  const counter = chooseCounter(readings);
  const fiveWheels = counter && layoutOf(counter.formatted.reading) === WHOLE_UNITS_LAYOUT ? counter : undefined;
  const pastWholeUnits = fiveWheels && (await readPastWholeUnits(readers, photo, fiveWheels));
  const free = fiveWheels ? weighCounterLayouts(fiveWheels, readings, pastWholeUnits) : counter;
  if (pastWholeUnits) readings.push(pastWholeUnits);
  if (!free?.formatted)
    throw new ReaderError('unparseable', `the local model read "${readings[0]!.strip.text}", which is not a number`);
  const layouts = trainedLayoutsOf(layout);
  const best = await readInLayout(readers, photo, readings, free, layouts);
  const reading = (chosen: FormattedWindowReading, raw: object = {}): MeterReading => {
    const evidence = confidenceEvidence(chosen, readings);
    const calibrated = calibrate(evidence, calibration);
    if (isNoReading(evidence)) {
      // Rounded apart, so that the message never gives the guess the floor's number (the calibration may weigh the
      // product little).
      const floor = Math.ceil(calibrate({ ...evidence, product: MIN_LOCAL_CONFIDENCE }, calibration));
      throw noCounterRead(chosen.formatted.reading, clampConfidence(Math.floor(calibrated)), clampConfidence(floor));
    }
    return {
      reading: chosen.formatted.reading,
      value: chosen.formatted.value,
      confidence: clampConfidence(calibrated),
      model: name,
      raw: { ...chosen.raw, candidates: candidates.length, evidence, ...raw },
      digitConfidences: chosen.formatted.digitConfidences,
      wholeUnitsAgreed: wholeUnitsAgreed(chosen),
      counterBox: windowCorners(scaleWindow(chosen.window, toNormalised)).map(([x, y]) => [
        Math.round(x),
        Math.round(y),
      ]),
    };
  };
  const corrected = (judged: MeterReading): MeterReading => ({
    ...judged,
    plausibility: 'corrected',
    unconstrainedReading: free.formatted.reading,
  });
  if (!window) return best === free ? reading(best) : corrected(reading(best));
  const inLayouts = layout ? readings.filter((candidate) => inLayoutsOf(candidate, layouts)) : readings;
  const verdict = judgeWithinWindow(best, window, () =>
    mostConfident(inLayouts.map((candidate) => readWithinWindow(candidate, window))),
  );
  const windowFit = verdict.plausibility === 'ok' ? {} : { windowFit: verdict.windowFit };
  const judged = reading(verdict.chosen, windowFit);
  if (verdict.plausibility === 'implausible') return implausible(judged, verdict.reason);
  const rivals = rivalsInsideWindow(verdict.chosen, window);
  if (rivals.length) return implausible(judged, rivalsReason(verdict.chosen.formatted.reading, rivals));
  if (verdict.plausibility === 'ok' && best === free) return { ...judged, plausibility: 'ok' };
  return corrected(judged);
}

/** The trained layouts (`ddddd.ddd`) the meter's layout allows: all of them when it is not known. */
function trainedLayoutsOf(layout: MeterLayout | undefined): string[] {
  return layout ? LAYOUTS.filter((trained) => fitsLayout(trained.replaceAll('d', '0'), layout)) : LAYOUTS;
}

function inLayoutsOf(candidate: WindowReading, layouts: string[]): boolean {
  return candidate.formatted !== undefined && layouts.includes(layoutOf(candidate.formatted.reading));
}

/**
 * The photo's reading in the meter's layout (`layouts`, the trained ones it allows), as the window is read within
 * (docs/readings.md, "How the readers read within the window"): the free reading when it is in them; else the most
 * confident of the photo's readings that are, among them the free reading's window read again within them (added
 * to `readings`). The free reading
 * when no layout was trained for the meter's, or none of those readings would be a reading at all: the chain then
 * flags it as in another layout.
 */
async function readInLayout(
  readers: WindowReaders,
  photo: RgbImage,
  readings: WindowReading[],
  free: FormattedWindowReading,
  layouts: string[],
): Promise<FormattedWindowReading> {
  if (layouts.length === 0 || inLayoutsOf(free, layouts)) return free;
  readings.push(await readWindow(readers, photo, { ...free.raw, window: free.window }, layouts));
  const inLayouts = readings.filter((candidate) => inLayoutsOf(candidate, layouts)) as FormattedWindowReading[];
  return mostConfident(inLayouts.filter((candidate) => !isNoReading(confidenceEvidence(candidate, readings)))) ?? free;
}

/** A reading whose product is below MIN_LOCAL_CONFIDENCE is a guess at a counter that is not there. */
function isNoReading(evidence: ConfidenceEvidence): boolean {
  return clampConfidence(evidence.product) < MIN_LOCAL_CONFIDENCE;
}

/**
 * A best guess whose product is below MIN_LOCAL_CONFIDENCE: no counter was read. The floor is on the product; the
 * message gives both numbers as calibrated, as a client sees confidences.
 */
function noCounterRead(guess: string, confidence: number, floor: number): ReaderError {
  return new ReaderError(
    'unreadable',
    `no meter counter could be read (the best guess, ${guess}, has confidence ${confidence}; a reading has about ${floor} or more)`,
  );
}

/**
 * Each candidate window turned the way its counter reads, cut to its wheels and read: the cut read more surely where
 * two are (windowsAroundWheels).
 */
async function readCandidates(readers: WindowReaders, photo: RgbImage, candidates: Window[]): Promise<WindowReading[]> {
  const readings: WindowReading[] = [];
  for (const found of candidates) {
    const { wheelCentres, ...oriented } = await orientWindow(readers.stripReaders, photo, found);
    const cuts: WindowReading[] = [];
    for (const window of windowsAroundWheels(oriented.window, wheelCentres))
      cuts.push(await readWindow(readers, photo, { ...oriented, window }));
    readings.push(mostConfident(cuts) ?? cuts[0]!);
  }
  return readings;
}

/**
 * A photo whose windows read at a confidence product below this is looked at turned (lookTurned). Chosen on the
 * calibration photos (ml/EXPERIMENTS.md, "A turned look"): 10 mended as many Toloka readings as 30, 60 or 100, broke
 * none, and looks at fewer photos.
 */
const LOOK_TURNED_BELOW = 10;
/** The turns of the photo the localisers look at again, in degrees clockwise. */
const LOOK_TURNS = [45, -45];

/**
 * The localisers learnt from counters lying about level or on end (Toloka's boxes are upright rectangles): one tilted
 * by about 45° they miss or cut across. When no window reads surely they look again at the photo turned 45° each
 * way, and the windows they find there lying nearer its diagonals than its sides are read in the photo itself
 * (a level window the first look cuts better).
 */
async function lookTurned(localisers: ort.InferenceSession[], photo: RgbImage): Promise<Window[]> {
  const candidates: Window[] = [];
  for (const degrees of LOOK_TURNS) {
    const { data, info } = await sharp(photo.data, { raw: { width: photo.width, height: photo.height, channels: 3 } })
      .rotate(degrees, { background: { r: 0, g: 0, b: 0 } })
      .raw()
      .toBuffer({ resolveWithObject: true });
    const turned = { data, width: info.width, height: info.height };
    for (const localiser of localisers) {
      for (const window of await localise(localiser, turned)) {
        const inPhoto = windowTurnedBack(window, degrees, photo, turned);
        if (isDiagonal(inPhoto)) candidates.push(inPhoto);
      }
    }
  }
  return candidates;
}

/** The share of the photo's width and height each part of the closer look covers. */
const CLOSER_LOOK_SHARE = 0.6;

/**
 * When no candidate window reads, the counter may be too small in the photo for the localisers' 256-pixel view, or
 * outshone by a label: they look again at five overlapping parts of the photo (its centre and its four corners,
 * each CLOSER_LOOK_SHARE of its width and height), where it spans more of their view. Chosen on the training photos
 * no window read: 16 of 38 Toloka photos were then read exactly, none wrong at confidence 50 or more
 * (ml/EXPERIMENTS.md, "A closer look when no window reads").
 */
async function lookCloser(localisers: ort.InferenceSession[], photo: RgbImage): Promise<Window[]> {
  const [width, height] = [Math.round(CLOSER_LOOK_SHARE * photo.width), Math.round(CLOSER_LOOK_SHARE * photo.height)];
  const [right, bottom] = [photo.width - width, photo.height - height];
  // The top-left corner of each part: the centre one, then one in each corner of the photo.
  const origins: Array<[left: number, top: number]> = [
    [Math.round(right / 2), Math.round(bottom / 2)],
    [0, 0],
    [right, 0],
    [0, bottom],
    [right, bottom],
  ];
  const parts = origins.map(([left, top]) => ({ left, top, width, height }));
  const candidates: Window[] = [];
  for (const localiser of localisers)
    for (const part of parts) candidates.push(...(await localise(localiser, photo, part)));
  return candidates;
}

/**
 * The photo's reading of its counter, before any layout is weighed. The counter is the window surest of its
 * whole-unit wheels (choiceWeight). Other windows read the same whole units in the same layout where they cut the
 * same counter a little apart; of those, the one surest of every wheel is kept, since the wheels past the point then
 * decide the exact reading.
 */
export function chooseCounter<T extends Omit<ChoiceCandidate, 'formatted'> & { formatted?: FormattedReading }>(
  readings: T[],
): (T & { formatted: FormattedReading }) | undefined {
  const counter = mostConfident(readings, choiceWeight);
  return (
    counter &&
    mostConfident(readings.filter(({ formatted }) => formatted && sameWholeUnits(formatted, counter.formatted)))
  );
}

/** Two readings in one layout with the same whole units. */
function sameWholeUnits(one: FormattedReading, other: FormattedReading): boolean {
  const wholeUnits = (reading: string) => reading.split('.')[0];
  return layoutOf(one.reading) === layoutOf(other.reading) && wholeUnits(one.reading) === wholeUnits(other.reading);
}

/**
 * What a reading that does not read from 0 (its first wheel not 0) weighs against the photo's other readings, as a
 * share of what it would weigh from 0 (choiceWeight). A household meter's counter reads from 0 for decades (Toloka's
 * labels 99.7%, bdci2020's 99.6%), the serial numbers and print beside it seldom do, and a window cut across a 5 + 3
 * counter reads from a wheel further along. A meter past 9 999 m³ pays for it: its counter cut from its second wheel
 * reads from 0, and wins where it is a tenth as sure (once the meter has a past, its plausibility window reads it).
 * Chosen on the calibration photos (ml/EXPERIMENTS.md, "a counter reads from 0").
 */
const NOT_FROM_ZERO_WEIGHT = 0.1;

/**
 * What a reading weighs when the photo's windows are compared, before any layout is weighed: its confidence with the
 * wheels past the point left out, at NOT_FROM_ZERO_WEIGHT of that where it does not read from 0. Those wheels say
 * little of which window is the counter (the last of them is nearly always turning), and counted in they would let
 * five digits of print outweigh a 5 + 3 counter read surely in whole units (ml/EXPERIMENTS.md, "windows compared in
 * their whole units"). The reading keeps its own confidence.
 */
export function choiceWeight({ formatted, strip }: ChoiceCandidate): number {
  const wholeUnitWheels = formatted.reading.split('.')[0]!.length;
  const pastThePoint = strip.digitProbabilities.slice(wholeUnitWheels);
  const wholeUnitConfidence = pastThePoint.reduce(
    (confidence, p) => confidence / Math.max(p, Number.EPSILON),
    formatted.confidence,
  );
  return wholeUnitConfidence * (formatted.reading.startsWith('0') ? 1 : NOT_FROM_ZERO_WEIGHT);
}

/** What choiceWeight weighs: a reading and its wheels' probabilities. */
interface ChoiceCandidate {
  formatted: FormattedReading;
  strip: Pick<LayoutReading, 'digitProbabilities'>;
}

/**
 * A 5 + 3 counter's window over the window of its five whole-unit wheels: eight wheels and the point's gap over five.
 */
const FRACTIONAL_WINDOW_WIDTH = 1.7;

/**
 * How far past a five-wheel window's ends it is read again (readPastWholeUnits), in its half-widths: as far as a 5 + 3
 * counter's window reaches past its five whole-unit wheels.
 */
const FIVE_WHEELS_REACH = 2 * (FRACTIONAL_WINDOW_WIDTH - 1);

/**
 * A five-wheel reading weighed against the 5 + 3 readings of the counter it may be five wheels of (weighLayouts): its
 * window read again past its ends (`pastWholeUnits`: readPastWholeUnits), and the photo's other windows around it that
 * were read so.
 */
function weighCounterLayouts(
  fiveWheels: FormattedWindowReading,
  readings: WindowReading[],
  pastWholeUnits: FormattedWindowReading | undefined,
): FormattedWindowReading {
  const around = readings.filter(
    (reading): reading is FormattedWindowReading =>
      reading.formatted !== undefined &&
      layoutOf(reading.formatted.reading) === FRACTIONAL_LAYOUT &&
      windowContains(reading.window, fiveWheels.window.centre),
  );
  return weighLayouts(fiveWheels, pastWholeUnits ? [pastWholeUnits, ...around] : around);
}

/**
 * A reading of five wheels may be five of a 5 + 3 counter's eight: its black wheels, where the localisers found the
 * window only around them (on the validation split, 31.559 read `00031` at 88: ml/EXPERIMENTS.md, "Reading past five
 * wheels"), or five in a row from further along it, where a window cut across the counter (the clean set read 108.928
 * as `08928` at 81: "five wheels from inside a 5 + 3 counter"). The window is read again reaching past its right end
 * to where three fractional wheels would be, and, where the aligned reader finds a wheel left of it, reaching as far
 * past both its ends, each cut to the wheels the aligned reader finds there: the more confident of those readings
 * that are of 5 + 3 wheels. Reaching both ways alone would cost the first: the frame left of its black wheels is read
 * as one more wheel.
 */
async function readPastWholeUnits(
  readers: WindowReaders,
  photo: RgbImage,
  chosen: FormattedWindowReading,
): Promise<FormattedWindowReading | undefined> {
  const rightwards = spanOfWindow(chosen.window, -1, 1 + FIVE_WHEELS_REACH);
  const bothWays = spanOfWindow(chosen.window, -1 - FIVE_WHEELS_REACH, 1 + FIVE_WHEELS_REACH);
  const [aligned] = await readStrips([readers.stripReaders[ALIGNED_READER]!], photo, [
    { window: rightwards, marginY: STRIP_MARGIN_Y },
    { window: bothWays, marginY: STRIP_MARGIN_Y },
  ]);
  const { steps, classes, crops } = stripProbabilities(aligned!);
  const cuts = [windowAroundWheels(rightwards, wheelCentres(crops[0]!, steps, classes))];
  // Most five-wheel counters show no wheel left of their window: that reach would cut what the first one cut.
  const centresBothWays = wheelCentres(crops[1]!, steps, classes);
  if ((centresBothWays[0] ?? 0) * (1 + FIVE_WHEELS_REACH) < -1)
    cuts.push(windowAroundWheels(bothWays, centresBothWays));
  const readings: WindowReading[] = [];
  for (const window of cuts) readings.push(await readWindow(readers, photo, { ...chosen.raw, window }));
  return mostConfident(
    readings.filter((reading) => reading.formatted && layoutOf(reading.formatted.reading) === FRACTIONAL_LAYOUT),
  );
}

/**
 * A 5 + 3 reading at this confidence or more whose eight digits hold the five wheels' reading is the counter they are
 * five wheels of. Chosen on the calibration photos (ml/EXPERIMENTS.md, "a 5 + 3 reading around five wheels"): the
 * default set's right 5 + 3 readings of Toloka's counters held the five wheels at 7 to 39; reaching past bdci2020's
 * five-wheel counters read one so at 3.3.
 */
const FRACTIONAL_WHEELS_FOUND = 5;

/**
 * A counter read as five wheels and as 5 + 3 wheels (`fractionals`, each of the counter): the surest 5 + 3 reading
 * that is surer than the five wheels, or holds them (holdsFiveWheels) at FRACTIONAL_WHEELS_FOUND or more; else the
 * five wheels. A 5 + 3 reading that holds the five wheels reads the same wheels and more, so its own confidence
 * stands; otherwise the two are rivals, and the chosen one's confidence is scaled by its share of the two (the other
 * is in `raw.otherLayout`). Chosen on the training photos (ml/EXPERIMENTS.md, "Reading past five wheels"), then
 * "five wheels from inside a 5 + 3 counter" and "a 5 + 3 reading around five wheels".
 */
export function weighLayouts<T extends Pick<FormattedWindowReading, 'formatted' | 'raw'>>(
  wholeUnits: T,
  fractionals: T[],
): T {
  const confidence = (reading: T) => reading.formatted.confidence;
  // A 5 + 3 counter's units wheel turns with its fractions: the set's rolling rule is not for it (rolling.ts).
  const fiveWheels = wholeUnits.raw.rolledOn ? unrolled(wholeUnits.formatted.reading) : wholeUnits.formatted.reading;
  const holds = (fractional: T) => holdsFiveWheels(fractional.formatted.reading, fiveWheels);
  const winner = mostConfident(
    fractionals.filter(
      (fractional) =>
        confidence(fractional) > confidence(wholeUnits) ||
        (holds(fractional) && confidence(fractional) >= FRACTIONAL_WHEELS_FOUND),
    ),
  );
  const rival = winner ?? mostConfident(fractionals);
  if (!rival) return wholeUnits;
  const [chosen, other] = winner ? [winner, wholeUnits] : [wholeUnits, rival];
  const both = confidence(chosen) + confidence(other);
  const share = (winner && holds(winner)) || both === 0 ? 1 : confidence(chosen) / both;
  return {
    ...chosen,
    formatted: { ...chosen.formatted, confidence: confidence(chosen) * share },
    raw: {
      ...chosen.raw,
      otherLayout: { reading: other.formatted.reading, confidence: clampConfidence(confidence(other)) },
    },
  };
}

/**
 * Whether a 5 + 3 reading's eight digits hold the five wheels' reading: as its whole units, or further along (a
 * window cut across the counter) but for one digit, whichever it is: those seen apart so on the calibration photos
 * were fractional wheels, read apart in two windows while they roll.
 */
export function holdsFiveWheels(fractional: string, fiveWheels: string): boolean {
  const digits = fractional.replace('.', '');
  for (let start = 0; start + fiveWheels.length <= digits.length; start++) {
    let differing = 0;
    for (let wheel = 0; wheel < fiveWheels.length; wheel++)
      if (digits[start + wheel] !== fiveWheels[wheel]) differing++;
    if (differing <= (start === 0 ? 0 : 1)) return true;
  }
  return false;
}

/**
 * The chosen window's own readings (each strip reader's, and the wheel reader's where it reads every wheel) that lie
 * inside the plausibility window, and not above the meter's usual consumption where it is known (`usualMax`: a
 * reading there would be `suspicious` itself), but differ from the chosen reading in whole units. The window leaves
 * each of them as possible as the reading, so none of them is probable: on the held-back training photos and on the
 * validation split such a disagreement came with most of the misreads inside the window (ml/EXPERIMENTS.md,
 * "Readers that disagree inside the window", chosen with a window of 60 m³; a month's physical window is some
 * 1 800 m³, the usual one about a household's month).
 */
export function rivalsInsideWindow(
  chosen: Pick<FormattedWindowReading, 'formatted' | 'raw'>,
  window: PlausibilityWindow,
): string[] {
  const { value } = chosen.formatted;
  const rivals = new Set<string>();
  for (const text of windowReadersTexts(chosen)) {
    const rival = parseReading(text);
    const usual = rival && (window.usualMax === undefined || rival.value <= window.usualMax);
    if (rival && usual && !outsideWindowReason(rival, window) && Math.trunc(rival.value) !== Math.trunc(value))
      rivals.add(text);
  }
  return [...rivals];
}

/**
 * Whether the counter has fractional wheels and every reader of the chosen window (windowReadersTexts), the wheel
 * reader among them, read the chosen reading's whole units: then what it is unsure of is litres, and a reading less
 * confident than the review threshold can still be billed in m³ (src/meters/review.ts). On a counter of whole units
 * only its last wheel is a whole unit, and the readers agree on a wrong one there (ml/EXPERIMENTS.md, "whole units
 * agreed"). Strip readers alone do not make it: the default set's three, fine-tunes of one pretrained network, agreed on
 * wrong whole units (ml/EXPERIMENTS.md, "the default set").
 */
export function wholeUnitsAgreed(chosen: Pick<FormattedWindowReading, 'formatted' | 'raw'>): boolean {
  const { reading, value } = chosen.formatted;
  if (!reading.includes('.') || !wheelReaderReadsEveryWheel(chosen)) return false;
  return windowReadersTexts(chosen).every((text) => {
    const read = parseReading(text);
    return read !== undefined && Math.trunc(read.value) === Math.trunc(value);
  });
}

/** The chosen window's own readings: each strip reader's, and the wheel reader's where it reads every wheel. */
function windowReadersTexts(chosen: Pick<FormattedWindowReading, 'formatted' | 'raw'>): string[] {
  const { readerTexts, wheelReaderText } = chosen.raw;
  return wheelReaderReadsEveryWheel(chosen)
    ? [...readerTexts, inLayout(chosen.formatted.reading, wheelReaderText)]
    : readerTexts;
}

function wheelReaderReadsEveryWheel(chosen: Pick<FormattedWindowReading, 'formatted' | 'raw'>): boolean {
  return chosen.raw.wheelReaderText.length === chosen.formatted.reading.replace('.', '').length;
}

function rivalsReason(reading: string, rivals: string[]): string {
  return `the window's readers disagree on the whole units inside the plausibility window: ${reading}, or ${rivals.join(' or ')}`;
}

/**
 * How far the photo's other readings agree with the chosen one (the strip readers' own readings of its window, the
 * other candidate windows' readings and layouts), and its product and weakest digit as the confidence is calibrated
 * from them.
 */
function confidenceEvidence(chosen: FormattedWindowReading, readings: WindowReading[]): ConfidenceEvidence {
  const text = chosen.formatted.reading;
  const layout = layoutOf(text);
  const candidateTexts = readings.map((candidate) => candidate.formatted?.reading ?? candidate.strip.text);
  const layoutsAgreeing = shareOf(
    [...candidateTexts, ...chosen.raw.readerTexts],
    (other) => layoutOf(other) === layout,
  );
  return {
    product: givenLayouts(chosen.formatted.confidence, layoutsAgreeing),
    weakestDigit: givenLayouts(100 * Math.min(...chosen.strip.digitProbabilities), layoutsAgreeing),
    layout,
    readersAgreeing: shareOf(chosen.raw.readerTexts, (readerText) => readerText === text),
    candidatesAgreeing: shareOf(candidateTexts, (candidateText) => candidateText === text),
    layoutsAgreeing,
  };
}

export type WindowVerdict<T> =
  | { plausibility: 'ok'; chosen: T }
  | { plausibility: 'corrected'; chosen: T; windowFit: number }
  | { plausibility: 'implausible'; chosen: T; windowFit: number; reason: string };

/**
 * `ok` when the free reading lies in the window. Otherwise `corrected` to the most probable reading inside it
 * (`readInside`, asked only then), unless nothing inside is probable: there is none, it is less than
 * IMPLAUSIBLE_BELOW_WINDOW_FIT times as probable as the free reading (its `windowFit`), or its confidence product is
 * below MIN_LOCAL_CONFIDENCE, where the reader would call it no reading at all. Then `implausible`, the free reading
 * standing, with the reason.
 */
export function judgeWithinWindow<T extends { formatted: FormattedReading }>(
  free: T,
  window: PlausibilityWindow,
  readInside: () => T | undefined,
): WindowVerdict<T> {
  const outside = outsideWindowReason(free.formatted, window);
  if (!outside) return { plausibility: 'ok', chosen: free };
  const inside = readInside();
  const windowFit = (inside?.formatted.confidence ?? 0) / Math.max(free.formatted.confidence, 1e-12);
  const insideConfidence = clampConfidence(inside?.formatted.confidence ?? 0);
  const fits = windowFit >= IMPLAUSIBLE_BELOW_WINDOW_FIT;
  if (inside && fits && insideConfidence >= MIN_LOCAL_CONFIDENCE)
    return { plausibility: 'corrected', chosen: inside, windowFit };
  const mostProbableInside = `; the most probable reading inside the window, ${inside?.formatted.reading},`;
  const improbable = !inside
    ? ''
    : !fits
      ? `${mostProbableInside} is ${Math.round(1 / windowFit)} times less probable`
      : `${mostProbableInside} has a confidence product of ${insideConfidence}, too low to be a reading`;
  return { plausibility: 'implausible', chosen: free, windowFit, reason: `${outside}${improbable}` };
}

/** The reading with the highest confidence (or what `weigh` makes of it), if any is a reading. */
function mostConfident<T extends { formatted?: FormattedReading }>(
  readings: Array<T | undefined>,
  weigh: (reading: T & { formatted: FormattedReading }) => number = (reading) => reading.formatted.confidence,
): (T & { formatted: FormattedReading }) | undefined {
  let best: (T & { formatted: FormattedReading }) | undefined;
  for (const reading of readings) {
    if (!reading?.formatted) continue;
    const candidate = reading as T & { formatted: FormattedReading };
    if (!best || weigh(candidate) > weigh(best)) best = candidate;
  }
  return best;
}

type FormattedWindowReading = WindowReading & { formatted: FormattedReading };

/**
 * A candidate window's most probable reading, in the layout its readers chose, whose value lies in the plausibility
 * window, if its wheels can show one.
 */
function readWithinWindow(candidate: WindowReading, window: PlausibilityWindow): WindowReading | undefined {
  const strip = readWithinValues(candidate.strip, window);
  return strip && { ...candidate, strip, formatted: formatReading(strip, candidate.raw.orientationProbability) };
}

/** A candidate window turned the way its counter reads. */
export interface OrientedWindow {
  window: Window;
  /** The strip readers' mean probability that the window, as found and turned round, is upside down. */
  upsideDown: number[];
  /** How sure the readers are of the way round. */
  orientationProbability: number;
  /**
   * Where ALIGNED_READER_FILE reads each wheel, in the window's half-widths from its centre (as spanOfWindow).
   * The found window's ends are loose: they may cut a wheel off or take in a logo the readers read as one.
   */
  wheelCentres: number[];
}

/**
 * The localiser cannot tell left from right: the strip readers' upside-down heads say which way round the counter
 * reads, from one crop each way at the margin they were trained with.
 */
export async function orientWindow(
  stripReaders: ort.InferenceSession[],
  photo: RgbImage,
  found: Window,
): Promise<OrientedWindow> {
  const windows = [found, turnWindow(found)];
  const bothWays = await readStrips(
    stripReaders,
    photo,
    windows.map((window) => ({ window, marginY: STRIP_MARGIN_Y })),
  );
  const upsideDown = windows.map(
    (_, w) =>
      bothWays.reduce((sum, output) => sum + (output.upside_down!.data as Float32Array)[w]!, 0) / bothWays.length,
  );
  const uprightBelief = [(1 - upsideDown[0]!) * upsideDown[1]!, (1 - upsideDown[1]!) * upsideDown[0]!];
  const chosen = uprightBelief[0]! >= uprightBelief[1]! ? 0 : 1;
  const { steps, classes, crops } = stripProbabilities(bothWays[ALIGNED_READER]!);
  return {
    window: windows[chosen]!,
    upsideDown,
    orientationProbability: uprightBelief[chosen]! / Math.max(uprightBelief[0]! + uprightBelief[1]!, 1e-9),
    wheelCentres: wheelCentres(crops[chosen]!, steps, classes),
  };
}

/**
 * Where ALIGNED_READER_FILE's output for a strip (cut with STRIP_MARGIN_X) puts each wheel, in the window's half-widths
 * from its centre.
 */
function wheelCentres(probabilities: Float32Array, steps: number, classes: number): number[] {
  const toWindow = (step: number) => (((step + 0.5) / steps) * 2 - 1) * (1 + 2 * STRIP_MARGIN_X);
  return readInLayouts(probabilities, steps, classes).digitSteps!.map(toWindow);
}

export interface WindowReading {
  window: Window;
  strip: LayoutReading;
  formatted?: FormattedReading;
  raw: {
    readerTexts: string[];
    wheelReaderText: string;
    layoutFit: number;
    upsideDown: number[];
    orientationProbability: number;
    /** The counter's reading in the other layout, when it was also read in both (weighLayouts). */
    otherLayout?: { reading: string; confidence: number };
    /** True where the set's rolling rule read the last wheel's next digit (readLastWheel). */
    rolledOn?: boolean;
  };
}

/**
 * Reads an oriented window as given by every strip reader, in a few crops of different height (the mask is coarse
 * across the window) with their outputs averaged, and wheel by wheel by the wheel reader. The readers are trained
 * apart on the same data; their readings are combined wheel by wheel, and the last wheel read by the set's rolling
 * rule. Each strip reader reads in whichever of `layouts` it finds most probable.
 */
export async function readWindow(
  { wheelReader, stripReaders, rolling }: WindowReaders,
  photo: RgbImage,
  { window, upsideDown, orientationProbability }: Omit<OrientedWindow, 'wheelCentres'>,
  layouts: string[] = LAYOUTS,
): Promise<WindowReading> {
  const outputs = await readStrips(
    stripReaders,
    photo,
    STRIP_MARGINS_Y.map((marginY) => ({ window, marginY })),
  );
  const readerStrips = outputs.map((output) => {
    const { steps, classes, crops } = stripProbabilities(output);
    return readInLayouts(mean(crops), steps, classes, layouts);
  });
  // The wheel reader votes only on a layout of its WHEEL_COUNT wheels (combineReadings): not read for another.
  const [layout] = mostChosenLayout(readerStrips);
  const wheelVotes =
    wheelReader && layout.replaceAll('.', '').length === WHEEL_COUNT
      ? await readWheels(wheelReader, photo, window)
      : [];
  const combined = combineReadings(readerStrips, wheelVotes);
  const strip = readLastWheel(combined, rolling);
  return {
    window,
    strip,
    formatted: formatReading(strip, orientationProbability),
    raw: {
      // Each reader's own reading as the set reads the last wheel: a reader is not a rival for a wheel rolled on.
      readerTexts: readerStrips.map((reading) => readLastWheel(reading, rolling).text),
      wheelReaderText: wheelVotes.map(mostProbableDigit).join(''),
      layoutFit: strip.layoutFit,
      upsideDown,
      orientationProbability,
      ...(strip.text !== combined.text && { rolledOn: true }),
    },
  };
}

/**
 * The wheel reader's probabilities of 0–9 for each of the WHEEL_COUNT wheels of a window (read the right way round),
 * averaged over the wheel's slice moved by each of WHEEL_SHIFTS.
 */
async function readWheels(wheelReader: ort.InferenceSession, photo: RgbImage, window: Window): Promise<number[][]> {
  const size = 3 * WHEEL_HEIGHT * WHEEL_WIDTH;
  const slices = WHEEL_SHIFTS.flatMap((shift) =>
    Array.from({ length: WHEEL_COUNT }, (_, wheel) => sliceWindow(window, wheel + shift, WHEEL_COUNT)),
  );
  const crops = new Float32Array(slices.length * size);
  slices.forEach((slice, index) =>
    rectifyInto(photo, slice, WHEEL_MARGIN, WHEEL_MARGIN, WHEEL_WIDTH, WHEEL_HEIGHT, crops, index * size),
  );
  const output = await wheelReader.run({
    wheels: new ort.Tensor('float32', crops, [slices.length, 3, WHEEL_HEIGHT, WHEEL_WIDTH]),
  });
  const probabilities = output.probabilities!.data as Float32Array;
  const perShift = probabilities.length / WHEEL_SHIFTS.length;
  const averaged = mean(
    WHEEL_SHIFTS.map((_, shift) => probabilities.subarray(shift * perShift, (shift + 1) * perShift)),
  );
  const digits = averaged.length / WHEEL_COUNT;
  return Array.from({ length: WHEEL_COUNT }, (_, wheel) =>
    Array.from(averaged.subarray(wheel * digits, (wheel + 1) * digits)),
  );
}

/** The photo as RGB at the training scale, and the factor from its pixels back to the frame the caller sent. */
export async function decodePhoto(image: Buffer): Promise<{ photo: RgbImage; toNormalised: number }> {
  try {
    const upright = sharp(image, { failOn: 'error' }).rotate();
    const { data, info } = await upright
      .resize(WORKING_LONG_SIDE, WORKING_LONG_SIDE, { fit: 'inside', withoutEnlargement: true })
      .removeAlpha()
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    // A quarter-turn EXIF orientation swaps width and height but not the long side.
    const metadata = await sharp(image).metadata();
    const toNormalised = Math.max(metadata.width, metadata.height) / Math.max(info.width, info.height);
    return { photo: { data, width: info.width, height: info.height }, toNormalised };
  } catch (error) {
    throw new ReaderError('unreadable', 'the photo could not be decoded', { cause: error });
  }
}

/**
 * Candidate counter windows in the photo's pixels: found in the whole photo (or the part of it `within`), then each
 * found again in a crop around it, where the window covers several times more mask cells (the second look sharpens
 * the rectangle).
 */
export async function localise(
  localiser: ort.InferenceSession,
  photo: RgbImage,
  within = { left: 0, top: 0, width: photo.width, height: photo.height },
): Promise<Window[]> {
  const candidates = await findWindows(localiser, photo, within);
  const refined: Window[] = [];
  for (const first of candidates) {
    const side = Math.round(2 * REFINE_CONTEXT * first.halfWidth);
    const left = clamp(Math.round(first.centre[0] - side / 2), 0, photo.width - 1);
    const top = clamp(Math.round(first.centre[1] - side / 2), 0, photo.height - 1);
    const region = { left, top, width: Math.min(side, photo.width - left), height: Math.min(side, photo.height - top) };
    const tooSmall = region.width < LOCALISER_STRIDE * 4 || region.height < LOCALISER_STRIDE * 4;
    refined.push((tooSmall ? undefined : (await findWindows(localiser, photo, region))[0]) ?? first);
  }
  return refined;
}

/** Runs the localiser on `region` of the photo (long side scaled to the input) and fits the candidate windows there. */
async function findWindows(
  localiser: ort.InferenceSession,
  photo: RgbImage,
  region: { left: number; top: number; width: number; height: number },
): Promise<Window[]> {
  const { data, info } = await sharp(photo.data, { raw: { width: photo.width, height: photo.height, channels: 3 } })
    .extract(region)
    .resize(LOCALISER_INPUT, LOCALISER_INPUT, { fit: 'inside' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const plane = LOCALISER_INPUT * LOCALISER_INPUT;
  const input = new Float32Array(3 * plane).fill(-0.5);
  for (let y = 0; y < info.height; y++) {
    for (let x = 0; x < info.width; x++) {
      const source = (y * info.width + x) * 3;
      const target = y * LOCALISER_INPUT + x;
      for (let channel = 0; channel < 3; channel++)
        input[channel * plane + target] = data[source + channel]! / 255 - 0.5;
    }
  }
  const output = await localiser.run({
    image: new ort.Tensor('float32', input, [1, 3, LOCALISER_INPUT, LOCALISER_INPUT]),
  });
  const logits = output.mask_logits!.data as Float32Array;
  const cells = LOCALISER_INPUT / LOCALISER_STRIDE;
  const toRegion = (LOCALISER_STRIDE * Math.max(region.width, region.height)) / LOCALISER_INPUT;
  return windowsFromMask(
    logits.map((logit) => 1 / (1 + Math.exp(-logit))),
    cells,
    cells,
  ).map((window) => {
    const inRegion = scaleWindow(window, toRegion);
    return { ...inRegion, centre: [inRegion.centre[0] + region.left, inRegion.centre[1] + region.top] as Point };
  });
}

function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(high, value));
}

/**
 * Each strip reader's outputs for the strips cut from the photo as listed, one batch a reader; the readers of one
 * strip size (checkStripShape) read the same batch.
 */
async function readStrips(
  stripReaders: ort.InferenceSession[],
  photo: RgbImage,
  crops: Array<{ window: Window; marginY: number }>,
): Promise<ort.InferenceSession.ReturnType[]> {
  const batches = new Map<string, ort.Tensor>();
  const outputs: ort.InferenceSession.ReturnType[] = [];
  for (const reader of stripReaders) {
    const [height, width] = inputSize(reader) as [number, number];
    const size = `${height} x ${width}`;
    if (!batches.has(size)) batches.set(size, cutStrips(photo, crops, height, width));
    outputs.push(await reader.run({ strip: batches.get(size)! }));
  }
  return outputs;
}

/** The strips cut from the photo as listed, each rectified to `height` x `width`, as one batch. */
function cutStrips(
  photo: RgbImage,
  crops: Array<{ window: Window; marginY: number }>,
  height: number,
  width: number,
): ort.Tensor {
  const stripSize = 3 * height * width;
  const strips = new Float32Array(crops.length * stripSize);
  crops.forEach(({ window, marginY }, index) =>
    rectifyInto(photo, window, STRIP_MARGIN_X, marginY, width, height, strips, index * stripSize),
  );
  return new ort.Tensor('float32', strips, [crops.length, 3, height, width]);
}

/** A strip reader's per-step class probabilities, one array per strip of the batch. */
function stripProbabilities(output: ort.InferenceSession.ReturnType): {
  steps: number;
  classes: number;
  crops: Float32Array[];
} {
  const [strips, steps, classes] = output.probabilities!.dims as number[];
  if (classes !== ALPHABET.length + 1) throw new ReaderError('unparseable', `reader model has ${classes} classes`);
  const data = output.probabilities!.data as Float32Array;
  const size = steps! * classes;
  return {
    steps: steps!,
    classes,
    crops: Array.from({ length: strips! }, (_, index) => data.subarray(index * size, (index + 1) * size)),
  };
}

/** Element-wise mean of equally long arrays. */
function mean(arrays: Float32Array[]): Float32Array {
  const sum = new Float32Array(arrays[0]!.length);
  for (const values of arrays) for (let i = 0; i < sum.length; i++) sum[i]! += values[i]! / arrays.length;
  return sum;
}

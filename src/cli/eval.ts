import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.ts';
import {
  SHARED_DATASETS,
  VALIDATION_SETS,
  loadFileList,
  loadLabelledPhotos,
  validationSplit,
  type LabelledPhoto,
} from '../eval/dataset.ts';
import {
  grownPast,
  MANUAL_READINGS,
  PAST_DAYS,
  PAST_KINDS,
  PAST_RATE_M3_PER_DAY,
  parseConsumptionRange,
  simulatedWindow,
  SIMULATED_MAX_CONSUMPTION_M3,
  SIMULATED_TOLERANCE_M3,
  type PastKind,
} from '../eval/history.ts';
import { summarise, type EvalSummary, type ScoredCase } from '../eval/metrics.ts';
import { formatComparison, formatSummary, readPhotos } from '../eval/run.ts';
import { meterExpectation, type MeterExpectation } from '../pipeline/expect-reading.ts';
import { ReadFailure } from '../readers/chain.ts';
import { createReaderChain } from '../readers/registry.ts';
import { ReaderError, type MeterReader } from '../readers/reader.ts';

const USAGE = `usage: meterlens eval --dataset DIR [--files LIST] [--chain NAMES] [--previous PAST] [--json | --baseline FILE] [--worst N]
       meterlens eval --validation [--chain NAMES] [--previous PAST] [--json | --baseline FILE]

  --dataset DIR   folder with labels.csv (file,reading[,alternatives]) and the photos it names
  --files LIST    only the photos named in LIST (one path a line, as in labels.csv)
  --validation    the local model's validation split: ../shared/datasets/{${VALIDATION_SETS.join(',')}} with ml/splits/*-val.txt
  --chain NAMES   the readers tried in order, as READER_CHAIN (default local), escalating as the service does
  --previous PAST give each photo a past drawn with a fixed seed, and read it within it:
                  A-B     a previous reading A to B m³ below its label, the window from ${SIMULATED_TOLERANCE_M3} m³ below it
                          to ${SIMULATED_MAX_CONSUMPTION_M3} m³ above it
                  dated   as the service judges a submission with previous_reading and previous_read_at
                          ${PAST_DAYS.min}–${PAST_DAYS.max} days earlier, the meter using ${PAST_RATE_M3_PER_DAY.min}–${PAST_RATE_M3_PER_DAY.max} m³ a day; reports needs_review
                          and the billing errors among the readings that do not need it
                  manual  the same with no reference fields, the meter known from ${MANUAL_READINGS} monthly readings a person
                          entered, the last ${PAST_DAYS.min}–${PAST_DAYS.max} days before the photo
  --json          machine-readable output
  --baseline FILE an earlier run's --json output (other weights, say): its metrics printed beside this run's
  --worst N       misreads to list per dataset (default 10)`;

interface Target {
  name: string;
  dir: string;
  only?: Set<string>;
}
/** What --json prints, and --baseline reads back. */
interface EvalReport {
  reader: string;
  modelLoadMs: number;
  previous?: string;
  datasets: Array<{ name: string; dir: string; summary: EvalSummary }>;
  /** All the datasets' photos as one, when there are several. */
  together?: EvalSummary;
}

/**
 * `meterlens eval`: scores the reader chain (`--chain`, default the local reader alone) on labelled photos. Returns the
 * exit code.
 */
export async function evalCommand(args: string[]): Promise<number> {
  return evalReader(args, 'local', (chain) => createChainReader(chain));
}

/**
 * The chain of `names` as the service builds it (every name must be usable), read as one reader: the photos it
 * cannot read are misses that say why.
 */
async function createChainReader(names: string[]): Promise<MeterReader> {
  const chain = await createReaderChain({ ...loadConfig(), readerChain: names });
  return {
    name: names.join(','),
    read: (image, signal, window, layout) =>
      chain.read(image, signal, window, layout).catch((error: unknown) => {
        throw error instanceof ReadFailure
          ? new ReaderError(error.code === 'readers_unavailable' ? 'unavailable' : 'unreadable', error.message)
          : error;
      }),
  };
}

/**
 * Scores the reader `create` makes (timed: its load time is reported) on the datasets `args` name; `create` is
 * given the reader chain `--chain` names (`readerName`, the default, otherwise).
 */
export async function evalReader(
  args: string[],
  readerName: string,
  create: (chain: string[]) => Promise<MeterReader | undefined>,
): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        dataset: { type: 'string' },
        files: { type: 'string' },
        validation: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        worst: { type: 'string', default: '10' },
        previous: { type: 'string' },
        chain: { type: 'string' },
        baseline: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const worst = Number(values.worst);
  const expectationFor = values.previous === undefined ? undefined : pastOf(values.previous);
  const badPrevious = values.previous !== undefined && expectationFor === undefined;
  if (
    !Number.isInteger(worst) ||
    worst < 0 ||
    values.validation === (values.dataset !== undefined) ||
    badPrevious ||
    (values.json && values.baseline !== undefined)
  ) {
    console.error(USAGE);
    return 2;
  }
  let baseline: EvalReport | undefined;
  try {
    baseline =
      values.baseline === undefined ? undefined : (JSON.parse(await readFile(values.baseline, 'utf8')) as EvalReport);
  } catch (error) {
    console.error(`--baseline ${values.baseline}: ${(error as Error).message}`);
    return 1;
  }

  let targets: Target[];
  if (values.validation) {
    if (!existsSync(SHARED_DATASETS)) {
      console.log(`skipped: no datasets at ${SHARED_DATASETS} (the validation photos are not part of the repository)`);
      return 0;
    }
    targets = await validationSplit();
  } else {
    const dir = path.resolve(values.dataset!);
    targets = [{ name: path.basename(dir), dir, only: values.files ? await loadFileList(values.files) : undefined }];
  }

  const datasets = await Promise.all(
    targets.map(async (target) => ({ ...target, photos: await loadLabelledPhotos(target.dir, target.only) })),
  );
  readerName = values.chain ?? readerName;
  const loadStarted = performance.now();
  let reader: MeterReader | undefined;
  try {
    reader = await create(readerName.split(',').map((name) => name.trim()));
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
  const modelLoadMs = performance.now() - loadStarted;
  if (!reader) {
    console.error(`the ${readerName} reader is not available (no model weights?)`);
    return 1;
  }

  const config = loadConfig();
  const imageOptions = { maxPixels: config.maxImagePixels, longSide: config.normalisedLongSide };
  const results: EvalReport['datasets'] = [];
  const allCases: ScoredCase[] = [];
  for (const target of datasets) {
    const cases = await readPhotos(reader, target.dir, target.photos, imageOptions, expectationFor);
    allCases.push(...cases);
    const summary = summarise(cases, worst, config.escalateBelow);
    results.push({ name: target.name, dir: target.dir, summary });
    if (!values.json) console.log(formatSummary(`${readerName} on ${target.name}`, summary) + '\n');
  }
  // Bars set on a whole split (both validation datasets) are read off this, not added up by hand.
  const together = results.length > 1 ? summarise(allCases, 0, config.escalateBelow) : undefined;
  if (together && !values.json)
    console.log(
      formatSummary(`${readerName} on ${results.map((result) => result.name).join(' and ')} together`, together) + '\n',
    );
  if (values.json) {
    const report: EvalReport = {
      reader: readerName,
      modelLoadMs,
      previous: values.previous,
      datasets: results,
      ...(together ? { together } : {}),
    };
    console.log(JSON.stringify(report, null, 2));
  } else console.log(`${readerName} model load: ${modelLoadMs.toFixed(0)} ms`);
  if (baseline) {
    for (const { name, summary } of results) {
      const before = baseline.datasets.find((dataset) => dataset.name === name);
      console.log(
        '\n' +
          (before
            ? formatComparison(`${readerName} on ${name}, beside ${values.baseline}`, before.summary, summary)
            : `no ${name} in ${values.baseline}`),
      );
    }
  }
  return 0;
}

/** What the service expects of each photo given the past `--previous` names; undefined when it names none. */
function pastOf(spec: string): ((photo: LabelledPhoto) => MeterExpectation) | undefined {
  if ((PAST_KINDS as readonly string[]).includes(spec))
    return (photo) => meterExpectation(grownPast(photo, spec as PastKind));
  const consumption = parseConsumptionRange(spec);
  return consumption && ((photo) => ({ window: simulatedWindow(photo, consumption) }));
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  process.exitCode = await evalCommand(process.argv.slice(2));
}

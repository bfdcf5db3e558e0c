import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { DomainError, requireId } from '../errors.ts';
import type { Config } from '../config.ts';
import { DEFAULT_PYTHON, fineTune, type FineTuneOptions } from '../fleet/fine-tune.ts';
import { exportDataset } from '../meters/dataset-export.ts';
import { PhotoStore } from '../photos/store.ts';
import { dateOption, optionalOption, singlePositional, UsageError, type CommandArgs } from './args.ts';
import type { Command, CommandContext } from './context.ts';

/** A whole day: a budget beyond it is a typo, not a fine-tune. */
const MAX_MINUTES = 24 * 60;
const DEFAULT_MINUTES = 30;

export const modelCommands: Command[] = [
  {
    name: 'train',
    synopsis: '[--account N] [--since DATE] [--photos DIR] [--minutes M] [--base DIR] [--out DIR] [--python PATH]',
    description:
      'fine-tune the local reader\'s weights on your own labelled photos on the CPU, training for --minutes (default 30; loading and exporting come on top), into a candidate set for models promote (ml/README.md, "Your own fleet")',
    options: {
      account: { type: 'string' },
      since: { type: 'string' },
      photos: { type: 'string' },
      minutes: { type: 'string' },
      base: { type: 'string' },
      out: { type: 'string' },
      python: { type: 'string' },
    },
    async run(context, args) {
      const { options, from } = await trainingOptions(context.config, args);
      const log = (line: string) => process.stderr.write(`${line}\n`);
      const result = await fineTune(options, log, from && (() => exportPhotos(context, options, from, log)));
      context.output.print({ ...result, base: options.base, photos: options.photos }, [
        `candidate set in ${result.candidate}: the weights of ${options.base} fine-tuned on ${result.trainedOn} photos in ${result.minutes} minutes, ` +
          `${result.heldBack} held back to judge it by`,
        `meterlens models promote ${result.candidate} reads those with it and with the weights in use, and switches only to better ones`,
      ]);
    },
  },
  {
    name: 'models promote',
    synopsis: 'DIR',
    description:
      'switch the local reader to a candidate set (meterlens train) if it reads its held-back photos better than the weights in LOCAL_MODEL_DIR, keeping those to roll back',
    positionals: true,
    async run({ config, output }, args) {
      const candidate = path.resolve(singlePositional(args, 'candidate folder'));
      // The model runtime loads only here, not for every other command.
      const { compareWithCurrent, installCandidate, previousDir, refuseShippedFolder } = await import(
        '../fleet/promote.ts'
      );
      refuseShippedFolder(config);
      if (candidate === config.localModelDir)
        throw new UsageError(`${candidate} is LOCAL_MODEL_DIR itself: name a candidate set`);
      const { current, candidate: scored, better } = await compareWithCurrent(config, candidate);
      const figures = (label: string, score: typeof current) =>
        `  ${label.padEnd(16)}whole units right ${score.wholeUnitsRight} (${share(score.wholeUnitsRight, score.photos)}), ` +
        `exact ${score.exact} (${share(score.exact, score.photos)})  ${score.dir}`;
      if (better) await installCandidate(config, candidate);
      output.print(
        {
          photos: current.photos,
          current,
          candidate: scored,
          promoted: better,
          ...(better ? { previous: previousDir(config) } : {}),
        },
        [
          `the ${current.photos} photos held back from the candidate's training:`,
          figures('weights in use', current),
          figures('candidate', scored),
          ...(better
            ? [
                `promoted: ${config.localModelDir} now holds the candidate; the weights it replaced are in ${previousDir(config)} (meterlens models rollback)`,
                'the service loads its weights at start: restart it (meterlens serve, or its web and worker processes) to read with these',
              ]
            : []),
        ],
      );
      if (!better) {
        throw new DomainError(
          'refused',
          'candidate',
          'the candidate reads the held-back photos no better than the weights in use (more right in whole units, or as many and more exact): kept the weights in use',
        );
      }
    },
  },
  {
    name: 'models rollback',
    synopsis: '',
    description:
      'put back the weights the last models promote replaced (a second rollback undoes the first); restart the service after',
    async run({ config, output }) {
      const { previousDir, rollBack } = await import('../fleet/promote.ts');
      await rollBack(config);
      output.print({ current: config.localModelDir, previous: previousDir(config) }, [
        `${config.localModelDir} holds the weights the last promote replaced; those it held are in ${previousDir(config)}`,
        'restart the service (meterlens serve, or its web and worker processes) to read with them',
      ]);
    },
  },
];

/** What `meterlens train` was asked for; `from`: the database's photos to export, unless --photos names a folder. */
async function trainingOptions(
  config: Config,
  args: CommandArgs,
): Promise<{ options: FineTuneOptions; from?: { accountId?: string; since?: Date } }> {
  const minutes = minutesOption(args);
  const given = optionalOption(args, 'photos');
  const account = optionalOption(args, 'account');
  const since = optionalOption(args, 'since') === undefined ? undefined : dateOption(args, 'since');
  if (given !== undefined && (account !== undefined || since !== undefined)) {
    throw new UsageError(
      '--photos trains on the photos of that folder, not on the database: no --account or --since with it',
    );
  }
  if (given !== undefined && !existsSync(path.join(given, 'labels.csv'))) {
    throw new UsageError(
      `--photos ${given} has no labels.csv (meterlens dataset export writes one: file,reading,quad)`,
    );
  }
  const accountId = account && requireId(account, '--account');
  const work = path.resolve(
    optionalOption(args, 'out') ??
      path.join(config.dataDir, 'training', new Date().toISOString().replace(/[:.]/g, '-')),
  );
  if (existsSync(work) && (await readdir(work).catch(() => [work])).length > 0)
    throw new UsageError(`--out ${work} is no empty folder: name a new one`);
  const options = {
    base: path.resolve(optionalOption(args, 'base') ?? config.localModelDir),
    photos: given === undefined ? path.join(work, 'photos') : path.resolve(given),
    work,
    minutes,
    python: optionalOption(args, 'python') ?? DEFAULT_PYTHON,
  };
  return { options, ...(given === undefined ? { from: { accountId, since } } : {}) };
}

/**
 * The labelled photos of the database (and the hosted readings accounts allow) into the training's photos folder,
 * those without a counter box given the one the base weights read their label in.
 */
async function exportPhotos(
  { config, database }: CommandContext,
  options: FineTuneOptions,
  from: { accountId?: string; since?: Date },
  log: (line: string) => void,
): Promise<void> {
  const exported = await exportDataset(
    { db: await database(), photos: new PhotoStore(config.photoStore) },
    options.photos,
    { ...from, withHosted: true },
  );
  const count = (label: string) => exported.filter((photo) => photo.label === label).length;
  log(
    `exported ${exported.length} photos to ${options.photos}: ${count('corrected')} corrected, ${count('confirmed')} confirmed, ${count('hosted')} read by a hosted reader`,
  );
  // The model runtime loads only here, not for every other command.
  const { fillCounterBoxes } = await import('../fleet/boxes.ts');
  const boxes = await fillCounterBoxes(config, options.base, options.photos);
  if (boxes.found + boxes.without > 0) {
    log(
      `${boxes.found} photos without a counter box got the one the base weights read their label in; ${boxes.without} stay without and are not learned from`,
    );
  }
}

function minutesOption(args: CommandArgs): number {
  const text = optionalOption(args, 'minutes');
  if (text === undefined) return DEFAULT_MINUTES;
  const minutes = Number(text);
  if (!Number.isFinite(minutes) || minutes <= 0 || minutes > MAX_MINUTES)
    throw new UsageError(`--minutes must be a number above 0 and at most ${MAX_MINUTES}, got "${text}"`);
  return minutes;
}

function share(part: number, whole: number): string {
  return `${((100 * part) / whole).toFixed(1)}%`;
}

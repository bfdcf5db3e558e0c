import { DomainError, requireId } from '../errors.ts';
import { isMaxFlow, MAX_FLOW_LIMIT, setAccountMaxFlow, setMeterSettings } from '../meters/meter-points.ts';
import { isReviewBelow, isUsualM3PerDay, setReviewSettings, USUAL_M3_PER_DAY_LIMIT } from '../meters/review.ts';
import { METER_ID_PATTERN } from '../pipeline/identify-meter.ts';
import { DEFAULT_REVIEW_BELOW, DEFAULT_USUAL_M3_PER_DAY } from '../plausibility-policy.ts';
import { optionalOption, requiredOption, UsageError } from './args.ts';
import type { Command } from './context.ts';

export const meterCommands: Command[] = [
  {
    name: 'meters max-flow',
    synopsis: '--account N [--meter ID] --m3-per-hour X|account',
    description:
      "the highest flow the plausibility window allows: the account's default, or one meter's (account: back to the default)",
    options: { account: { type: 'string' }, meter: { type: 'string' }, 'm3-per-hour': { type: 'string' } },
    async run({ database, output }, args) {
      const accountId = requireId(requiredOption(args, 'account'), '--account');
      const meterId = optionalOption(args, 'meter');
      const flowText = requiredOption(args, 'm3-per-hour');
      const maxFlow = meterId && flowText === 'account' ? null : Number(flowText);
      if (maxFlow !== null && !isMaxFlow(maxFlow)) {
        throw new UsageError(
          `--m3-per-hour must be a number above 0 and at most ${MAX_FLOW_LIMIT}${meterId ? ', or "account"' : ''}, got "${flowText}"`,
        );
      }
      const db = await database();
      if (!meterId) {
        if (!(await setAccountMaxFlow(db, accountId, maxFlow!)))
          throw new DomainError('not_found', '--account', `no account ${accountId}`);
        output.print(
          { account: Number(accountId), maxFlowM3PerHour: maxFlow },
          `account ${accountId}: meters without their own max flow allow ${maxFlow} m³/h`,
        );
        return;
      }
      if (!METER_ID_PATTERN.test(meterId))
        throw new UsageError('--meter must be 1–64 characters of A–Z, a–z, 0–9 and . _ : / -');
      if (!(await db.selectFrom('accounts').select('id').where('id', '=', accountId).executeTakeFirst()))
        throw new DomainError('not_found', '--account', `no account ${accountId}`);
      const settings = await setMeterSettings(db, accountId, meterId, { maxFlow });
      output.print(
        {
          account: Number(accountId),
          meter: meterId,
          maxFlowM3PerHour: settings.maxFlow,
          effectiveMaxFlowM3PerHour: settings.effectiveMaxFlow,
        },
        `meter ${meterId} of account ${accountId}: ${settings.effectiveMaxFlow} m³/h${settings.maxFlow === null ? " (the account's)" : ''}`,
      );
    },
  },
  {
    name: 'meters review',
    synopsis: '--account N [--below CONFIDENCE] [--usual-m3-per-day X] [--train-on-hosted yes|no]',
    description: `when a reading needs a person's look before it is billed (needs_review): below this confidence (default ${DEFAULT_REVIEW_BELOW}) unless its whole units are agreed, or far above the usual consumption, the account's default for meters with too little history (${DEFAULT_USUAL_M3_PER_DAY} m³ a day); and whether meterlens train also learns from hosted readers' readings that need no look (default no)`,
    options: {
      account: { type: 'string' },
      below: { type: 'string' },
      'usual-m3-per-day': { type: 'string' },
      'train-on-hosted': { type: 'string' },
    },
    async run({ database, output }, args) {
      const accountId = requireId(requiredOption(args, 'account'), '--account');
      const belowText = optionalOption(args, 'below');
      const usualText = optionalOption(args, 'usual-m3-per-day');
      const hostedText = optionalOption(args, 'train-on-hosted');
      const reviewBelow = belowText === undefined ? undefined : Number(belowText);
      const usualM3PerDay = usualText === undefined ? undefined : Number(usualText);
      if (reviewBelow === undefined && usualM3PerDay === undefined && hostedText === undefined)
        throw new UsageError('give --below, --usual-m3-per-day, --train-on-hosted or several of them');
      if (reviewBelow !== undefined && !isReviewBelow(reviewBelow))
        throw new UsageError(`--below must be an integer from 0 to 100, got "${belowText}"`);
      if (usualM3PerDay !== undefined && !isUsualM3PerDay(usualM3PerDay)) {
        throw new UsageError(
          `--usual-m3-per-day must be a number above 0 and at most ${USUAL_M3_PER_DAY_LIMIT}, got "${usualText}"`,
        );
      }
      if (hostedText !== undefined && hostedText !== 'yes' && hostedText !== 'no')
        throw new UsageError(`--train-on-hosted must be yes or no, got "${hostedText}"`);
      const trainOnHosted = hostedText === undefined ? undefined : hostedText === 'yes';
      const settings = await setReviewSettings(await database(), accountId, {
        reviewBelow,
        usualM3PerDay,
        trainOnHosted,
      });
      if (!settings) throw new DomainError('not_found', '--account', `no account ${accountId}`);
      output.print(
        {
          account: Number(accountId),
          reviewBelow: settings.reviewBelow,
          usualM3PerDayDefault: settings.usualM3PerDay,
          trainOnHosted: settings.trainOnHosted,
        },
        [
          `account ${accountId}: readings below confidence ${settings.reviewBelow} need review unless their whole units are agreed; a meter with too little history usually uses ${settings.usualM3PerDay} m³ a day`,
          `meterlens train learns from photos people confirmed or corrected${settings.trainOnHosted ? ", and from hosted readers' readings that need no review" : ' only'}`,
        ],
      );
    },
  },
];

import type { Db } from '../db/database.ts';
import { DomainError } from '../errors.ts';
import {
  FRACTIONAL_WHEELS_LIMIT,
  findMeterPoint,
  isLayoutSetting,
  setMeterSettings,
  WHOLE_WHEELS_LIMIT,
} from '../meters/meter-points.ts';
import type { MeterLayoutForm } from '../schemas/dashboard-forms.ts';

export function meterNotFound(): DomainError {
  return new DomainError('not_found', 'meter_id', 'No meter with this id in your account.');
}

/**
 * Sets the layout of one of the account's meters from the meter page's form, by the rules of
 * PATCH /api/meters/{meter_id}'s `layout` (isLayoutSetting; the unit is m³); null unsets it, so that its
 * readings show it again. Unlike the API it names no new meter: the page is that of a meter with photos.
 */
export async function setLayoutAsUser(
  db: Db,
  accountId: string,
  meterId: string,
  form: MeterLayoutForm | null,
): Promise<void> {
  if (!(await findMeterPoint(db, accountId, meterId))) throw meterNotFound();
  await setMeterSettings(db, accountId, meterId, { layout: form && layoutOfForm(form) });
}

function layoutOfForm(form: MeterLayoutForm) {
  const layout = { whole: wheelCount(form.whole_wheels), fraction: wheelCount(form.fractional_wheels) };
  if (!isLayoutSetting(layout)) {
    throw new DomainError(
      'invalid',
      'layout',
      `A counter has 1–${WHOLE_WHEELS_LIMIT} black whole-unit wheels and 0–${FRACTIONAL_WHEELS_LIMIT} red fractional wheels: 00606.494 is 5 and 3, 01348 is 5 and 0.`,
    );
  }
  return layout;
}

/** A count as typed: digits only (`5`, not `5.0` or `five`), else not a count. */
function wheelCount(typed: string): number {
  return /^[0-9]{1,2}$/.test(typed.trim()) ? Number(typed.trim()) : Number.NaN;
}

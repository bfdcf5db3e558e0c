/**
 * The numbers that judge a reading, in one place: its physical window (outside it `implausible`), its usual
 * consumption (far above it `suspicious`), what an implausible reading keeps of its confidence, and when a reading
 * needs a person's look (`needs_review`). The rules that apply them: src/pipeline/expect-reading.ts (the windows),
 * src/readers/judge-reading.ts and the local reader (a reading against them), src/meters/usual-consumption.ts (the
 * usual) and src/meters/review.ts (needs_review). The numbers a model was trained with stay in
 * src/readers/local/spec.ts.
 */

/**
 * A new account's max flow, m³/h, which bounds the physical window: the permanent flow Q3 of the common DN15
 * household meter. Also the default of accounts.max_flow_m3_per_hour (sql/011), which cannot import it:
 * test/plausibility-policy.test.ts holds the two equal.
 */
export const DEFAULT_MAX_FLOW = 2.5;

/** However little time has passed, the window allows this many hours of the maximum flow. */
export const MIN_ELAPSED_HOURS = 1;

/**
 * A `previous_reading` without `previous_read_at` is taken as from one reading cycle ago, a month: clients send the
 * reading they last billed. A year would give a misread thousands of m³ of room.
 */
export const UNDATED_ELAPSED_HOURS = 31 * 24;

/**
 * An implausible reading's confidence is at most this: below any sensible ESCALATE_BELOW, so the chain asks the next
 * reader, and low enough that nobody bills from it unseen.
 */
export const IMPLAUSIBLE_CONFIDENCE_CAP = 20;

/**
 * With a plausibility window and a free reading outside it, the local reader's reading is `implausible` when the most
 * probable reading inside the window is less than this fraction as probable as the free one (confidence against
 * confidence), and `corrected` to it otherwise. Chosen on a quarter of the training photos (every fourth not in
 * ml/splits, 411) with a simulated history 0–30 m³ below the label: corrections kept at lower fits were mostly wrong
 * (ml/EXPERIMENTS.md, "Reading within a plausibility window").
 */
export const IMPLAUSIBLE_BELOW_WINDOW_FIT = 0.3;

/**
 * A new account's usual consumption of a meter with too little history, m³ a day: a household's. Also the default of
 * accounts.usual_m3_per_day (sql/023), which cannot import it: test/plausibility-policy.test.ts holds the two equal.
 */
export const DEFAULT_USUAL_M3_PER_DAY = 1.5;

/** Trusted readings closer together than this many days are merged: a wheel's rounding would swamp the rate. */
export const MIN_INTERVAL_DAYS = 1;

/** The usual consumption uses the newest this many intervals: a meter's behaviour changes (new tenants, a leak). */
export const MAX_INTERVALS = 12;

/** Fewer intervals than this are too little history to estimate a meter's usual: the account's default applies. */
export const MIN_INTERVALS = 3;

/**
 * Up to this many times the usual rate is still usual (or USUAL_SPREADS spreads above it, if more): a meter's use
 * varies, and a reading is suspicious only far beyond it.
 */
export const USUAL_FACTOR = 3;

/**
 * Up to this many spreads above the usual rate is still usual (or USUAL_FACTOR times it, if more): an uneven meter's
 * swings are its usual.
 */
export const USUAL_SPREADS = 3;

/** Room any meter has besides its rate, m³: a vacant flat's first shower is no misread. */
export const USUAL_FLOOR_M3 = 1;

/**
 * A new account's review threshold: a reading less confident than this needs a person's look, unless its whole units are
 * agreed (src/meters/review.ts). The lowest at which,
 * on photos no network had learned, the readings billed unseen stay right in whole units (ml/EXPERIMENTS.md). Also the
 * default of accounts.review_below (sql/030), which cannot import it: test/plausibility-policy.test.ts holds the two
 * equal.
 */
export const DEFAULT_REVIEW_BELOW = 80;

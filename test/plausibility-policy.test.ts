import pg from 'pg';
import t from 'tap';
import { DEFAULT_MAX_FLOW, DEFAULT_REVIEW_BELOW, DEFAULT_USUAL_M3_PER_DAY } from '../src/plausibility-policy.ts';
import { createTestDatabase } from './helpers/database.ts';

/** The policy constants that are column defaults too: a new account's settings, which SQL cannot import. */
const COLUMN_DEFAULTS = {
  'accounts.max_flow_m3_per_hour': DEFAULT_MAX_FLOW,
  'accounts.usual_m3_per_day': DEFAULT_USUAL_M3_PER_DAY,
  'accounts.review_below': DEFAULT_REVIEW_BELOW,
};

t.test(
  'each column default of a migrated database is its policy constant, what `meterlens eval` judges with',
  async (t) => {
    const database = await createTestDatabase();
    t.teardown(database.drop);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const { rows } = await client
      .query<{ column: string; column_default: string | null }>(
        `SELECT table_name || '.' || column_name AS column, column_default
           FROM information_schema.columns
          WHERE table_schema = 'public' AND table_name || '.' || column_name = ANY($1)`,
        [Object.keys(COLUMN_DEFAULTS)],
      )
      .finally(() => client.end());
    t.same(Object.fromEntries(rows.map((row) => [row.column, Number(row.column_default)])), COLUMN_DEFAULTS);
  },
);

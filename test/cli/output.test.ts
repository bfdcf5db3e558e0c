import t from 'tap';
import { UsageError } from '../../src/cli/args.ts';
import { exitCodeOf } from '../../src/cli/output.ts';
import { DomainError, type ErrorKind } from '../../src/errors.ts';

t.test('bad input exits with 2, like bad arguments; every other failure with 1', async (t) => {
  const expected: Record<ErrorKind, number> = { invalid: 2, not_found: 1, conflict: 1, refused: 1, unavailable: 1 };
  for (const [kind, exitCode] of Object.entries(expected) as Array<[ErrorKind, number]>) {
    t.equal(exitCodeOf(new DomainError(kind, 'thing', 'message')), exitCode, kind);
  }
  t.equal(exitCodeOf(new UsageError('--account is required')), 2);
  t.equal(exitCodeOf(new Error('the database went away')), 1);
  t.equal(exitCodeOf('a string thrown'), 1);
});

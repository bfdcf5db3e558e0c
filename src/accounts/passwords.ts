import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { DomainError } from '../errors.ts';

export const MIN_PASSWORD_LENGTH = 10;
const MAX_PASSWORD_LENGTH = 256;

/** scrypt with N = 2^15, r = 8, p = 1: 32 MiB and some 50–100 ms per hash on one core. */
const SCRYPT = { log2N: 15, r: 8, p: 1, keyLength: 32 };

export function requirePassword(password: string): string {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new DomainError('invalid', 'password', `the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new DomainError('invalid', 'password', `the password must have at most ${MAX_PASSWORD_LENGTH} characters`);
  }
  return password;
}

/**
 * A password chosen in a form that asks for it twice (a reset, an invitation): the sign-up rules, and both the same.
 */
export function requireNewPassword(password: string, confirmation: string): string {
  requirePassword(password);
  if (password !== confirmation)
    throw new DomainError('invalid', 'password_confirmation', 'the two passwords are not the same');
  return password;
}

/** For `meterlens users create` without --password: printed once, stored only as a hash. */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, SCRYPT);
  return ['scrypt', SCRYPT.log2N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), hash.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, log2N, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), {
    log2N: Number(log2N),
    r: Number(r),
    p: Number(p),
    keyLength: expected.length,
  });
  return timingSafeEqual(actual, expected);
}

function scryptAsync(password: string, salt: Buffer, params: typeof SCRYPT): Promise<Buffer> {
  const N = 2 ** params.log2N;
  const options: ScryptOptions = { N, r: params.r, p: params.p, maxmem: 256 * N * params.r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, params.keyLength, options, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

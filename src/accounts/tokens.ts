import { createHash, randomBytes } from 'node:crypto';

/**
 * The secrets handed to a browser or put in a link (session cookies, email verification links):
 * 32 random bytes, of which only the SHA-256 is stored, so a copy of the table opens nothing.
 */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

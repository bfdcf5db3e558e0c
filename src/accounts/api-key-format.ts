import { createHash, randomBytes } from 'node:crypto';

/**
 * What an API key looks like: `meterlens_live_` and 32 lowercase hex digits (16 random bytes).
 * Keys are made, recognised, described in /openapi.json and stored (as a SHA-256) from here.
 */
const API_KEY_PREFIX = 'meterlens_live_';
const SECRET_BYTES = 16;

export const API_KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9a-f]{${SECRET_BYTES * 2}}$`);

/** The OpenAPI `bearerFormat`. */
export const API_KEY_FORMAT = `${API_KEY_PREFIX} + ${SECRET_BYTES * 2} lowercase hex characters`;

/** A new key, with the parts of it that may be shown later: the prefix and first 4 hex digits, the last 4. */
export function newApiKey(): { key: string; displayPrefix: string; displaySuffix: string } {
  const secret = randomBytes(SECRET_BYTES).toString('hex');
  return {
    key: API_KEY_PREFIX + secret,
    displayPrefix: API_KEY_PREFIX + secret.slice(0, 4),
    displaySuffix: secret.slice(-4),
  };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

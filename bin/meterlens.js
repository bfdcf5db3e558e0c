#!/usr/bin/env node
// The CLI is TypeScript run as is, which needs Node's built-in type stripping.
if (!process.features.typescript) {
  console.error(
    `meterlens needs Node.js 22.18 or later to run its TypeScript directly (22.12 to 22.17 work with ` +
      `NODE_OPTIONS=--experimental-strip-types); this is Node.js ${process.versions.node}.`,
  );
  process.exit(1);
}
await import('../src/cli.ts');

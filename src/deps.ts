import type { PgBoss } from 'pg-boss';
import type { Config } from './config.ts';
import type { Db } from './db/database.ts';
import type { PhotoStore } from './photos/store.ts';
import type { ReaderChain } from './readers/chain.ts';

/** What the web app and the worker run with (service.ts makes one set per process); steps take the parts they need. */
export interface ServiceDeps {
  config: Config;
  db: Db;
  photos: PhotoStore;
  boss: PgBoss;
  readers: ReaderChain;
}

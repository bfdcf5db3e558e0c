import path from 'node:path';
import view from '@fastify/view';
import { Eta } from 'eta';
import fp from 'fastify-plugin';

const VIEWS_DIR = path.join(import.meta.dirname, '..', '..', 'views');

/** Eta templates from src/views; `<%= %>` escapes, so user input is never rendered raw. */
export default fp(async (app) => {
  await app.register(view, {
    engine: { eta: new Eta({ views: VIEWS_DIR, autoEscape: true }) },
    templates: VIEWS_DIR,
    production: process.env.NODE_ENV !== 'development',
  });
});

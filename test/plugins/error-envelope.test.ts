import Fastify from 'fastify';
import t from 'tap';
import { DomainError, type ErrorKind } from '../../src/errors.ts';
import errorEnvelope from '../../src/plugins/app/error-envelope.ts';

const app = Fastify({ logger: false });
await app.register(errorEnvelope);
app.get<{ Params: { kind: ErrorKind } }>('/fail/:kind', async (request) => {
  throw new DomainError(request.params.kind, 'thing', `a ${request.params.kind} thing`);
});
app.get('/metrics-like', async () => {
  throw new DomainError('refused', 'authorization', 'Send the token', {
    status: 401,
    headers: { 'www-authenticate': 'Bearer' },
  });
});
app.get('/sync-read', async () => {
  throw new DomainError('unavailable', 'reader', 'No reader answered', {
    extra: { reference_id: 'r', status: 'failed' },
    headers: { 'retry-after': '30' },
  });
});
t.teardown(() => app.close());

t.test('each kind of domain error has one API status, in the envelope', async (t) => {
  const expected: Record<ErrorKind, number> = {
    invalid: 422,
    not_found: 404,
    conflict: 409,
    refused: 422,
    unavailable: 503,
  };
  for (const [kind, status] of Object.entries(expected)) {
    const response = await app.inject({ url: `/fail/${kind}` });
    t.equal(response.statusCode, status, kind);
    t.same(response.json(), { errors: { thing: [`a ${kind} thing`] } }, kind);
  }
});

t.test('an error keeps its own status, headers and extra members where the API documents them', async (t) => {
  const unauthorized = await app.inject({ url: '/metrics-like' });
  t.equal(unauthorized.statusCode, 401);
  t.equal(unauthorized.headers['www-authenticate'], 'Bearer');
  t.same(unauthorized.json(), { errors: { authorization: ['Send the token'] } });

  const unavailable = await app.inject({ url: '/sync-read' });
  t.equal(unavailable.statusCode, 503);
  t.equal(unavailable.headers['retry-after'], '30');
  t.same(unavailable.json(), { errors: { reader: ['No reader answered'] }, reference_id: 'r', status: 'failed' });
});

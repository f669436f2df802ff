// Shared setup for the REST tests: a server around a FakeService, driven with inject().
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildServer, type ServerDeps } from '../../src/api/server.js';
import { Metrics } from '../../src/metrics.js';
import { FakeService } from './fake-service.js';

export const LIMITS = { minTtlMs: 1000, maxTtlMs: 3_600_000 };

export function makeApp(over: Partial<ServerDeps> = {}): { app: FastifyInstance; service: FakeService; metrics: Metrics } {
  const service = (over.service as FakeService | undefined) ?? new FakeService();
  // default process metrics off: many registries in one test process, none needed here
  const metrics = over.metrics ?? new Metrics({ defaultMetrics: false });
  const app = buildServer({ nodeId: 'n1', limits: LIMITS, logger: false, ...over, service, metrics });
  return { app, service, metrics };
}

/** Assert the contract's error shape and return the error object. */
export function assertError(res: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number, code: string, messageIncludes?: string): Record<string, unknown> {
  assert.equal(res.statusCode, status, `expected ${status} ${code}, got ${res.statusCode}: ${res.body}`);
  const body = JSON.parse(res.body) as { error?: Record<string, unknown> };
  assert.ok(body.error && typeof body.error === 'object', `no error object in ${res.body}`);
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, 'string');
  assert.ok((body.error.message as string).length > 0);
  if (messageIncludes !== undefined) assert.ok((body.error.message as string).includes(messageIncludes), `message ${JSON.stringify(body.error.message)} lacks ${JSON.stringify(messageIncludes)}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  return body.error;
}

export function json(res: { body: string }): Record<string, unknown> {
  return JSON.parse(res.body) as Record<string, unknown>;
}

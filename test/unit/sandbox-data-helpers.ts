import { afterAll, beforeAll, expect } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';

// Real HTTP against a sandbox on a free port, with the node global fetch (not the project's client).
export const TOKEN = 'sandbox-token';

/** A sandbox where every input has data and the token never runs out of credits. */
export function startDataSandbox(): Promise<Sandbox> {
  return startSandbox({ tokens: { [TOKEN]: 1e9 }, notFoundRate: 0 });
}

/** An answer's status, its text and its body parsed as JSON (undefined when it is not JSON). */
export interface Answer {
  status: number;
  text: string;
  body: any;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: unknown = undefined;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, text, body };
}

/**
 * The requests of the data tests, to the test file's own sandbox (`sandbox()`, read at each call because it is
 * started in beforeAll) unless `on` names another.
 */
export function requestsTo(sandbox: () => Sandbox): {
  similar(payload: unknown, on?: Sandbox): Promise<Answer>;
  get(path: string, params: Record<string, string>, on?: Sandbox): Promise<Answer>;
} {
  return {
    similar(payload, on = sandbox()) {
      return fetch(`${on.url}/v1/api/similar-companies`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(payload),
      }).then(answer);
    },
    get(path, params, on = sandbox()) {
      const qs = new URLSearchParams(params).toString();
      return fetch(`${on.url}/v1/api/${path}${qs ? `?${qs}` : ''}`, { headers: { authorization: `Bearer ${TOKEN}` } }).then(answer);
    },
  };
}

/** A data sandbox for the calling test file, started before its tests and stopped after; the requests address it. */
export function useDataSandbox(): ReturnType<typeof requestsTo> & { sandbox: () => Sandbox } {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startDataSandbox();
  });
  afterAll(async () => {
    await sb.stop();
  });
  const sandbox = () => sb;
  return { sandbox, ...requestsTo(sandbox) };
}

/** The body without the counters, which change with every call. */
export function content(body: Record<string, unknown>): Record<string, unknown> {
  const { total_credits, credits_used, credits_remaining, ...rest } = body;
  expect(typeof total_credits).toBe('number');
  expect(credits_remaining).toBeCloseTo((total_credits as number) - (credits_used as number), 9);
  return rest;
}

/** Whether `v` is a safe integer. */
export const isInt = (v: unknown): boolean => Number.isSafeInteger(v);
/** Whether `v` is an https URL. */
export const isUrl = (v: unknown): boolean => typeof v === 'string' && /^https:\/\/[a-z0-9.-]+(\/\S*)?$/.test(v);
/** Whether `v` is an array of strings. */
export const isStringArray = (v: unknown): boolean => Array.isArray(v) && v.every((s) => typeof s === 'string');

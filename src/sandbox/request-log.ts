import type { IncomingMessage } from 'node:http';
import type { FaultName } from './faults.ts';

/** One request as the sandbox saw it. */
export interface LoggedRequest {
  /** 1, 2, 3… in arrival order. */
  seq: number;
  /** Arrival time, ms since the epoch (performance.timeOrigin + performance.now()). */
  at: number;
  method: string;
  /** Path without the query. */
  path: string;
  /** Decoded query parameters (the first value of a repeated name). */
  query: Record<string, string>;
  rawQuery: string;
  /** Header names in lower case; repeated headers joined with ', '. */
  headers: Record<string, string>;
  /** Parsed JSON body, the raw text when it is not JSON, or null when empty. */
  body: unknown;
  /** Status sent; 0 when the connection was dropped. */
  status: number;
  /** Credits charged for this request (0 unless a 200 or a slow 200). */
  charged: number;
  fault: FaultName | null;
}

/** Builds the log entry of a request whose answer is not decided yet (status 0, nothing charged). */
export function logEntry(
  seq: number,
  at: number,
  req: IncomingMessage,
  path: string,
  rawQuery: string,
  params: URLSearchParams,
  bodyText: string,
): LoggedRequest {
  const query: Record<string, string> = {};
  for (const [name, value] of params) if (!(name in query)) query[name] = value;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  let body: unknown = null;
  if (bodyText !== '') {
    try {
      body = JSON.parse(bodyText);
    } catch {
      body = bodyText;
    }
  }
  return { seq, at, method: req.method ?? '', path, query, rawQuery, headers, body, status: 0, charged: 0, fault: null };
}

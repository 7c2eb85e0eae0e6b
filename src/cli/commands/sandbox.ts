import type { Argv } from 'yargs';
import { defineCommand, type CommandIO } from '../command.ts';
import { UsageError } from '../../errors.ts';
import { OPERATIONS, type Operation } from '../../spec/types.ts';
import { SANDBOX_DEFAULTS, startSandbox, type LoggedRequest, type SandboxOptionsInput } from '../../sandbox/server.ts';
import { LIVE_SHAPES, PAST_LAST_PAGE_MODES, resolveOptions, type LiveShape, type PastLastPage } from '../../sandbox/options.ts';

/** Port of `netingest sandbox` when --port is not given (tests use port 0 through the library). */
export const SANDBOX_CLI_PORT = 8787;

const DEFAULT_TOKEN = Object.keys(SANDBOX_DEFAULTS.tokens)[0] ?? 'sandbox-token';

/** The parsed flags of `netingest sandbox`. */
export interface SandboxArgs {
  port: number;
  seed: number;
  'age-days': number;
  token: string[];
  'suspended-token': string[];
  credits: number;
  cost: string[];
  'latency-ms': string;
  'rate-limit'?: number;
  'rate-limit-per-minute'?: number;
  'retry-after': number;
  'past-last-page': PastLastPage;
  'fail-500': number;
  'fail-503': number;
  drop: number;
  truncate: number;
  slow: number;
  'slow-ms': number;
  html: number;
  'wrong-shape': number;
  huge: number;
  'huge-bytes': number;
  'not-found-rate': number;
  live: boolean;
  'live-shape': LiveShape[];
  'missing-rate': number;
  'null-rate': number;
  brand: string;
  'network-host': string;
  'max-num': number;
  'bare-url-rate': number;
  'country-url-rate': number;
  'balance-route': boolean;
  quiet: boolean;
}

const rate = (describe: string) => ({ type: 'number' as const, default: 0, describe: `${describe} (rate 0..1)` });

function builder(y: Argv) {
  const d = SANDBOX_DEFAULTS;
  return y
    .option('port', { type: 'number', default: SANDBOX_CLI_PORT, describe: 'port on 127.0.0.1 (0 picks a free one)' })
    .option('seed', { type: 'number', default: d.seed, describe: 'seed of the synthetic data and of the fault draws' })
    .option('age-days', { type: 'number', default: d.ageDays, describe: 'the world this many days later: staff grown, reactions gained, lookalikes and jobs gone and new' })
    .option('token', { type: 'string', array: true, default: [DEFAULT_TOKEN], describe: 'accepted bearer token (repeatable)' })
    .option('suspended-token', { type: 'string', array: true, default: [] as string[], describe: 'token answered 403 (repeatable)' })
    .option('credits', { type: 'number', default: d.tokens[DEFAULT_TOKEN] ?? 1_000_000, describe: 'total credits of each token' })
    .option('cost', {
      type: 'string',
      array: true,
      default: [] as string[],
      describe: `credits per 200 answer, as operation=credits (defaults: ${OPERATIONS.map((op) => `${op}=${d.costs[op]}`).join(', ')})`,
    })
    .option('latency-ms', { type: 'string', default: String(d.latencyMs), describe: 'added latency per answer: ms, or min-max' })
    .option('rate-limit', { type: 'number', describe: 'requests per second per token before 429 (default: no limit)' })
    .option('rate-limit-per-minute', {
      type: 'number',
      describe: 'requests per sliding minute per token before 429, as plans are priced (default: no limit)',
    })
    .option('retry-after', {
      type: 'number',
      default: d.retryAfterSeconds,
      describe: 'Retry-After seconds sent with 429 (over the minute limit: at least until the window frees)',
    })
    .option('past-last-page', {
      // A string, or yargs reads `404` as a number that no choice equals.
      type: 'string',
      choices: PAST_LAST_PAGE_MODES,
      default: d.pastLastPage,
      describe: 'a page past the end of a list: 404 (uncharged), or empty (200 with an empty page, charged)',
    })
    .option('fail-500', rate('answer 500'))
    .option('fail-503', rate('answer 503'))
    .option('drop', rate('close the connection without an answer'))
    .option('truncate', rate('answer 200 with the JSON cut in half'))
    .option('slow', rate('answer --slow-ms late'))
    .option('slow-ms', { type: 'number', default: d.slowMs, describe: 'delay of a slow answer' })
    .option('html', rate('answer 200 with an HTML error page'))
    .option('wrong-shape', rate('answer 200 with JSON of the wrong shape'))
    .option('huge', rate('answer 200 with a huge body'))
    .option('huge-bytes', { type: 'number', default: d.hugeBytes, describe: 'size of a huge answer' })
    .option('not-found-rate', { type: 'number', default: d.notFoundRate, describe: 'fraction of inputs with no data (404)' })
    .option('live', {
      type: 'boolean',
      default: false,
      describe: 'answer as the live service may, not to the letter of the spec: members missing or null, '
        + "author.<brand>_url, similar-companies' num capped at --max-num, www./bare/country URLs",
    })
    .option('live-shape', {
      type: 'string',
      array: true,
      choices: LIVE_SHAPES,
      default: [] as LiveShape[],
      describe: 'turn on only these live-service shapes (repeatable; instead of --live)',
    })
    .option('missing-rate', { type: 'number', default: d.memberMissingRate, describe: 'live: chance an optional member is left out' })
    .option('null-rate', { type: 'number', default: d.memberNullRate, describe: 'live: chance an optional member is null' })
    .option('brand', { type: 'string', default: d.brand, describe: "live: brand named in the author's URL member (<brand>_url)" })
    .option('network-host', { type: 'string', default: d.networkHost, describe: 'live: host of the URLs in the records' })
    .option('max-num', { type: 'number', default: d.maxNum, describe: 'live: most companies per similar-companies page' })
    .option('bare-url-rate', { type: 'number', default: d.bareUrlRate, describe: 'live: share of record URLs without www.' })
    .option('country-url-rate', { type: 'number', default: d.countryUrlRate, describe: 'live: share on a country subdomain (de., fr., ...)' })
    .option('balance-route', {
      type: 'boolean',
      default: d.balanceRoute,
      describe: 'serve GET /v1/api/auth, the free balance check, in every mode (--no-balance-route: 404)',
    })
    .option('quiet', { type: 'boolean', default: false, describe: 'do not print a line per request' })
    .example('$0 sandbox --port 8787 --rate-limit 5 --fail-503 0.05', 'a flaky, rate-limited local API')
    .example('$0 sandbox --rate-limit-per-minute 60 --past-last-page empty', 'a free plan that bills empty pages')
    .example('$0 sandbox --live', 'answers shaped as the live service may send them')
    .example('$0 sandbox --live-shape page-cap --max-num 25', 'only the page-size cap of the live service')
    .example('NETINGEST_API_URL=http://127.0.0.1:8787 NETINGEST_API_TOKEN=sandbox-token netingest run ...', 'point a run at it') as unknown as Argv<SandboxArgs>;
}

/** Turns the flags into sandbox options; bad values become a UsageError naming the flag. */
export function sandboxOptionsFromArgs(argv: SandboxArgs): SandboxOptionsInput {
  const costs: Partial<Record<Operation, number>> = {};
  for (const spec of argv.cost) {
    const match = /^([a-z-]+)=(\d+(?:\.\d+)?)$/.exec(spec.trim());
    if (!match || !(OPERATIONS as readonly string[]).includes(match[1] ?? '')) {
      throw new UsageError(`--cost ${spec}: expected operation=credits with operation one of ${OPERATIONS.join(', ')}`);
    }
    costs[match[1] as Operation] = Number(match[2]);
  }
  const latency = /^\s*(\d+(?:\.\d+)?)\s*(?:-\s*(\d+(?:\.\d+)?)\s*)?$/.exec(argv['latency-ms']);
  if (!latency) throw new UsageError(`--latency-ms ${argv['latency-ms']}: expected milliseconds or min-max, e.g. 5 or 2-20`);
  const input: SandboxOptionsInput = {
    host: SANDBOX_DEFAULTS.host,
    port: argv.port,
    seed: argv.seed,
    ageDays: argv['age-days'],
    tokens: Object.fromEntries(argv.token.map((t) => [t, argv.credits])),
    suspendedTokens: argv['suspended-token'],
    costs,
    latencyMs: latency[2] === undefined ? Number(latency[1]) : [Number(latency[1]), Number(latency[2])],
    rateLimitPerSecond: argv['rate-limit'] ?? null,
    rateLimitPerMinute: argv['rate-limit-per-minute'] ?? null,
    retryAfterSeconds: argv['retry-after'],
    pastLastPage: argv['past-last-page'],
    serverErrorRate: argv['fail-500'],
    unavailableRate: argv['fail-503'],
    dropRate: argv.drop,
    truncateRate: argv.truncate,
    slowRate: argv.slow,
    slowMs: argv['slow-ms'],
    htmlRate: argv.html,
    wrongShapeRate: argv['wrong-shape'],
    hugeRate: argv.huge,
    hugeBytes: argv['huge-bytes'],
    notFoundRate: argv['not-found-rate'],
    liveShapes: argv['live-shape'].length > 0 ? argv['live-shape'] : argv.live,
    memberMissingRate: argv['missing-rate'],
    memberNullRate: argv['null-rate'],
    brand: argv.brand,
    networkHost: argv['network-host'],
    maxNum: argv['max-num'],
    bareUrlRate: argv['bare-url-rate'],
    countryUrlRate: argv['country-url-rate'],
    balanceRoute: argv['balance-route'],
    logRequests: false,
  };
  if (!Number.isInteger(argv.port) || argv.port < 0 || argv.port > 65535) throw new UsageError(`--port ${argv.port}: expected 0..65535`);
  try {
    resolveOptions(input);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  return input;
}

/** One line per request; the token is never printed (only the log of the start names it). */
export function formatRequestLine(e: LoggedRequest): string {
  const time = new Date(e.at).toISOString();
  const target = e.rawQuery === '' ? e.path : `${e.path}?${e.rawQuery}`;
  const status = e.status === 0 ? 'dropped' : String(e.status);
  return `${time} ${e.method} ${target} -> ${status}${e.fault ? ` [${e.fault}]` : ''}${e.charged ? ` charged ${e.charged}` : ''}\n`;
}

/**
 * Runs the sandbox until `stop` aborts, printing the URL and token(s) first; resolves to exit code 0 after the
 * server has stopped. The command wires `stop` to SIGINT/SIGTERM; tests pass their own signal.
 */
export async function serveSandbox(argv: SandboxArgs, io: CommandIO, stop: AbortSignal): Promise<number> {
  const input = sandboxOptionsFromArgs(argv);
  if (!argv.quiet) input.onRequest = (entry) => io.stdout.write(formatRequestLine(entry));
  let sandbox;
  try {
    sandbox = await startSandbox(input);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new UsageError(`--port ${argv.port}: the port is already in use`);
    if (code === 'EACCES') throw new UsageError(`--port ${argv.port}: not allowed to listen on it`);
    throw err;
  }
  io.stdout.write(`Sandbox API listening on ${sandbox.url}\n`);
  io.stdout.write(`Token: ${argv.token.join(', ')} (${argv.credits} credits each; a local fake token)\n`);
  const live = input.liveShapes === true ? LIVE_SHAPES : input.liveShapes || [];
  if (live.length > 0) io.stdout.write(`Answers shaped as the live service may send them: ${live.join(', ')}\n`);
  if (!stop.aborted) await new Promise<void>((resolve) => stop.addEventListener('abort', () => resolve(), { once: true }));
  await sandbox.stop();
  io.stdout.write('Sandbox stopped.\n');
  return 0;
}

/** `netingest sandbox`: the local emulator of the API, for trying jobs and for tests, until Ctrl+C. */
export const sandboxCommand = defineCommand<SandboxArgs>({
  builder,
  run: async (argv, io) => {
    const controller = new AbortController();
    const onSignal = (): void => controller.abort();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      return await serveSandbox(argv, io, controller.signal);
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  },
});

import { loggerOf, type Logger } from './logger.ts';
import { displayWidth, fit } from '../text-width.ts';

/** Live counters of the job being worked (run-job.ts counts them): `runnable` is the total it works through. */
export interface JobProgress {
  runnable: number;
  done: number;
  notFound: number;
  failed: number;
  errors: number;
}

/** What the progress display shows, read from the running job each time it redraws. */
export interface ProgressSnapshot extends JobProgress {
  job: string;
  creditsLeft: number | null;
  startedAtMs: number;
}

/** Back to the start of the line and clear it: what takes the live line off the screen. */
export const CLEAR_LINE = '\r\x1b[K';

/** `logIntervalMs`: the interval of the one-line progress log without a terminal (cron). */
export const PROGRESS_DEFAULTS = { redrawMs: 250, logIntervalMs: 5_000 } as const;

/** A live progress line on a terminal, or a concise log line every few seconds under cron. */
export class ProgressReporter {
  private timer: NodeJS.Timeout | null = null;
  private drawn = false;

  constructor(
    /** Where the live line goes on a terminal (stderr, so stdout stays clean for --json). */
    private readonly stream: NodeJS.WritableStream & { isTTY?: boolean; columns?: number },
    private readonly logger: Logger,
    private readonly read: () => ProgressSnapshot,
    /** @default PROGRESS_DEFAULTS.logIntervalMs */
    private readonly logIntervalMs: number = PROGRESS_DEFAULTS.logIntervalMs,
  ) {}

  start(): void {
    const tty = Boolean(this.stream.isTTY);
    const every = tty ? PROGRESS_DEFAULTS.redrawMs : this.logIntervalMs;
    this.timer = setInterval(() => (tty ? this.draw() : this.log()), every);
    this.timer.unref();
  }

  /** Stops and clears the live line so the summary prints on a clean line. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.drawn) this.stream.write(CLEAR_LINE);
    this.drawn = false;
  }

  /** A logger for lines written while the live line may be on screen: each clears it first; the next redraw puts it back below. */
  above(): Logger {
    return loggerOf((level, msg, fields) => {
      if (this.drawn) this.stream.write(CLEAR_LINE);
      this.drawn = false;
      this.logger[level](msg, fields);
    });
  }

  private draw(): void {
    // Read at every redraw: the terminal may have been resized since.
    this.stream.write(CLEAR_LINE + formatProgress(this.read(), this.stream.columns));
    this.drawn = true;
  }

  private log(): void {
    const s = this.read();
    const { finished, rate, etaS } = rates(s);
    this.logger.info('progress', {
      job: s.job, done: finished, total: s.runnable, failed: s.failed, errors: s.errors,
      rate_per_s: Number(rate.toFixed(1)), credits_left: s.creditsLeft, eta_s: etaS,
    });
  }
}

/**
 * One terminal line, narrower than `columns`: a wrapped line takes two rows and the next redraw's `\r\x1b[K` clears
 * only the last. A narrow terminal gets short figures (the job's name shortened, then dropped), at worst the line cut.
 */
export function formatProgress(s: ProgressSnapshot, columns?: number): string {
  const { finished, rate, etaS } = rates(s);
  const pct = s.runnable > 0 ? Math.floor((finished / s.runnable) * 100) : 100;
  const eta = etaS === null ? '--' : formatDuration(etaS);
  const credits = s.creditsLeft === null ? '?' : String(Math.round(s.creditsLeft * 100) / 100);
  const line = `${s.job}: ${finished}/${s.runnable} (${pct}%) ${rate.toFixed(1)}/s  credits left ${credits}  ETA ${eta}  failed ${s.failed}  errors ${s.errors}`;
  // The last column is left free: some terminals wrap as soon as it is written.
  const width = columns && columns > 1 ? columns - 1 : Infinity;
  if (displayWidth(line) <= width) return line;
  const figures = `${finished}/${s.runnable} ${rate.toFixed(1)}/s cr ${credits} ETA ${eta} fail ${s.failed} err ${s.errors}`;
  const jobWidth = width - figures.length - 2;
  return fit(jobWidth >= 4 ? `${fit(s.job, jobWidth)}: ${figures}` : figures, width);
}

function rates(s: ProgressSnapshot): { finished: number; rate: number; etaS: number | null } {
  const finished = s.done + s.notFound + s.failed;
  const elapsedS = Math.max(0.001, (performance.now() - s.startedAtMs) / 1000);
  const rate = finished / elapsedS;
  const left = s.runnable - finished;
  return { finished, rate, etaS: rate > 0 ? Math.round(left / rate) : null };
}

function formatDuration(totalS: number): string {
  const h = Math.floor(totalS / 3600);
  const m = Math.floor((totalS % 3600) / 60);
  const s = totalS % 60;
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(s).padStart(2, '0')}s` : `${s}s`;
}

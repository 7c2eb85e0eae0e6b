import { createOutputRedactor } from '../api/redact.ts';
import { terminalSafe, terminalSafeJson, terminalValue } from '../text-width.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

export interface LoggerOptions {
  stream: NodeJS.WritableStream;
  /** `text`: one human line per event; `json`: one JSON object per line. */
  format?: 'text' | 'json';
  level?: LogLevel;
  /** Strings (the API token) replaced by `[REDACTED]` in every line; one too short to be a real token is left alone. */
  secrets?: string[];
}

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A logger of one line per event with a timestamp and level; never writes a secret. */
export function createLogger(options: LoggerOptions): Logger {
  const format = options.format ?? 'text';
  const min = LEVELS[options.level ?? 'info'];
  const redact = createOutputRedactor(options.secrets ?? []);
  const write = (level: LogLevel, msg: string, fields: LogFields = {}) => {
    if (LEVELS[level] < min) return;
    const time = new Date().toISOString();
    let line: string;
    if (format === 'json') {
      line = terminalSafeJson(JSON.stringify({ time, level, msg, ...fields }));
    } else {
      const parts = Object.entries(fields)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${k}=${formatValue(v)}`);
      // Messages and values carry the API's text (drift member names, error excerpts): a terminal or log must not run it.
      line = [time, level.toUpperCase().padEnd(5), terminalValue(msg), ...parts].join(' ');
    }
    options.stream.write(redact(line) + '\n');
  };
  return loggerOf(write);
}

/** A Logger whose every level goes to `write`. */
export function loggerOf(write: (level: LogLevel, msg: string, fields?: LogFields) => void): Logger {
  const at = (level: LogLevel) => (msg: string, fields?: LogFields) => write(level, msg, fields);
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Quotes values that hold spaces or quotes so a text line stays machine-splittable; a control becomes a space, so quoted. */
function formatValue(v: string | number | boolean | null | undefined): string {
  if (v === null || v === undefined) return '-';
  const s = terminalSafe(String(v));
  return /[\s"=]/.test(s) || s === '' ? JSON.stringify(s) : s;
}

/** A logger that drops everything, for library callers that want silence. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** The API's URL and token, from flags or the environment; refuses any that would send the token in clear text. */
import { closeSync, existsSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { ConfigError } from '../errors.ts';
import { API_PREFIX } from '../spec/types.ts';

export const API_URL_ENV = 'NETINGEST_API_URL';
export const API_TOKEN_ENV = 'NETINGEST_API_TOKEN';

export interface ApiConfigSources {
  /** --api-url; wins over NETINGEST_API_URL. */
  apiUrl?: string;
  /** --token-file: a file holding just the token; wins over NETINGEST_API_TOKEN. */
  tokenFile?: string;
  env?: NodeJS.ProcessEnv;
}

/** Resolves the normalized base URL and the token, or throws a ConfigError that says exactly what to set. */
export function resolveApiConfig({ apiUrl, tokenFile, env = process.env }: ApiConfigSources = {}) {
  const url = apiUrl?.trim() || env[API_URL_ENV]?.trim();
  if (!url) {
    throw new ConfigError(`No API URL: set ${API_URL_ENV} or pass --api-url (e.g. https://api.example.com).`);
  }
  const baseUrl = parseBaseUrl(url, apiUrl?.trim() ? '--api-url' : API_URL_ENV).baseUrl;
  return { baseUrl, token: tokenFile !== undefined ? readTokenFile(tokenFile) : tokenFromEnv(env) };
}

/**
 * Checks and normalizes a base URL into undici's `origin` and `pathPrefix`: plain http only to a loopback host, so the
 * token never crosses a network in clear text; no credentials, query or fragment.
 */
export function parseBaseUrl(value: string, source = 'the API URL') {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // The value is not echoed: a mix-up of the two variables would otherwise print the token.
    throw new ConfigError(`${source} is not a valid URL (expected e.g. https://api.example.com).`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(`${source} must start with https:// (got ${url.protocol}//).`);
  }
  if (url.username || url.password) {
    throw new ConfigError(`${source} must not contain credentials; put the token in ${API_TOKEN_ENV} or a --token-file.`);
  }
  if (url.search || url.hash) {
    throw new ConfigError(`${source} must not have a query string or fragment: ${url.origin}${url.pathname}`);
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new ConfigError(
      `${source} uses plain http:// to ${url.hostname}, which would send the API token unencrypted; use https:// ` +
        '(plain http is allowed only to 127.0.0.1, localhost or [::1]).',
    );
  }
  // The operations' paths begin with /v1/api: a base URL copied with it (`https://host/v1/api/`) means the same
  // service, not a gateway under /v1/api, where every call would go to /v1/api/v1/api/... and answer 404.
  const path = url.pathname.replace(/\/+$/, '');
  const pathPrefix = path.endsWith(API_PREFIX) ? path.slice(0, -API_PREFIX.length) : path;
  return { baseUrl: url.origin + pathPrefix, origin: url.origin, pathPrefix };
}

/** True for localhost, 127.0.0.0/8 and ::1 (hostname as the URL parser normalizes it). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === 'localhost' || host === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function readTokenFile(path: string): string {
  let text: string;
  let mode: number | null;
  try {
    const fd = openSync(path, 'r');
    try {
      const stat = fstatSync(fd);
      // Only a file lying on disk: a pipe (`--token-file <(pass show api)`) is no copy others can read later.
      mode = stat.isFile() ? stat.mode & 0o777 : null;
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'ENOENT' && looksLikeToken(path)) {
      const shape = /[/\\]/.test(path) ? 'no folder of it exists' : 'no folder or extension';
      throw new ConfigError(
        `No file named as the value given to --token-file: it looks like the token itself (${path.length} characters, ${shape}), ` +
          `so it is not printed. --token-file takes a file holding the token; or set ${API_TOKEN_ENV}.`,
      );
    }
    throw new ConfigError(`Cannot read the token file ${path} given to --token-file (${typeof code === 'string' ? code : String(err)}).`, {
      cause: err,
    });
  }
  if (mode !== null) refuseOpenToOthers(path, mode);
  const token = text.trim();
  if (token === '') throw new ConfigError(`The token file ${path} given to --token-file is empty; put the API token in it.`);
  checkToken(token, `The token file ${path}`);
  return token;
}

/**
 * A "path" pasted in place of the token file: long, no blank, no extension (`api.token` is a file name, `ntk.Q7vR2x9LmP4sT8w`
 * a token; a path in a mistyped folder too: `secrets/api-tokn.txt`), and, with a `/` in it (`sk_live/Q7vR...`), a first
 * folder that does not exist: a mistyped path (`/etc/netingst/token`, `secrets/tokn`) starts in a real folder, or with `~`
 * or `.`, and is named so it can be fixed.
 */
function looksLikeToken(path: string): boolean {
  if (path.length < 16 || /\s/.test(path) || /\.[A-Za-z][A-Za-z0-9]{0,4}$/.test(path)) return false;
  const first = /^[/\\]?[^/\\]*(?=[/\\])/.exec(path)?.[0];
  return first === undefined || (!/^[~.]/.test(path) && !existsSync(first));
}

/** Refuses a token file group or world (0o077) may read or write, as ssh does a key: readers spend the credits, writers choose the token sent. */
function refuseOpenToOthers(path: string, mode: number): void {
  // Windows has no such bits: Node reports 0o666 for every writable file there.
  if (process.platform === 'win32' || (mode & 0o077) === 0) return;
  const octal = mode.toString(8).padStart(4, '0');
  const can = [mode & 0o044 ? 'read' : '', mode & 0o022 ? 'write' : ''].filter(Boolean).join(' and ') || 'open';
  throw new ConfigError(
    `The token file ${path} given to --token-file has mode ${octal}: other users can ${can} it. ` +
      `Refused, as ssh refuses such a private key; make it private with: chmod 600 ${shellWord(path)}`,
  );
}

/** A path as one shell word, so that the command in a message can be pasted as it is. */
function shellWord(path: string): string {
  return /^[\w./~@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`;
}

function tokenFromEnv(env: NodeJS.ProcessEnv): string {
  const token = env[API_TOKEN_ENV]?.trim();
  if (!token) {
    throw new ConfigError(`No API token: set ${API_TOKEN_ENV} or pass --token-file <file holding the token>.`);
  }
  checkToken(token, API_TOKEN_ENV);
  return token;
}

/** A token goes into a header: whitespace or control characters inside it mean the wrong thing was supplied. */
export function checkToken(token: string, source: string): void {
  if (!/^[\x21-\x7e]+$/.test(token)) {
    // Never echo the value: it is a secret even when malformed.
    throw new ConfigError(`${source} must hold just the API token: it contains spaces, line breaks or non-ASCII characters.`);
  }
}

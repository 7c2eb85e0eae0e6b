// resolveApiConfig / parseBaseUrl on real temp files, and createApiClient's refusal of unsafe settings.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.ts';
import { createTypedClient } from '../support/typed-client.ts';
import { isLoopbackHost, parseBaseUrl, resolveApiConfig } from '../../src/api/config.ts';
import { ConfigError } from '../../src/errors.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { FAST_RATE, cliEnv, csv, inProcess, makeWorkspace, postUrls, runCli, operationRequests } from '../support/run-helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'netingest-api-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('resolveApiConfig', () => {
  it('reads URL and token from the environment, trimming both and the URL\'s trailing slash', () => {
    const env = { NETINGEST_API_URL: ' https://api.example.com/ ', NETINGEST_API_TOKEN: ' tok-123 \n' };
    expect(resolveApiConfig({ env })).toEqual({ baseUrl: 'https://api.example.com', token: 'tok-123' });
  });

  it('prefers --api-url and --token-file over the environment', () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'file-token-abc\n', { mode: 0o600 });
    const env = { NETINGEST_API_URL: 'https://env.example.com', NETINGEST_API_TOKEN: 'env-token' };
    expect(resolveApiConfig({ apiUrl: 'https://flag.example.com/proxy/', tokenFile: file, env })).toEqual({
      baseUrl: 'https://flag.example.com/proxy',
      token: 'file-token-abc',
    });
  });

  it('says exactly what to set when the URL or the token is missing', () => {
    expect(configError(() => resolveApiConfig({ env: { NETINGEST_API_TOKEN: 't' } })).message).toMatch(
      /set NETINGEST_API_URL or pass --api-url/,
    );
    expect(configError(() => resolveApiConfig({ env: { NETINGEST_API_URL: 'https://a.example', NETINGEST_API_TOKEN: '  ' } })).message).toMatch(
      /set NETINGEST_API_TOKEN or pass --token-file/,
    );
    expect(configError(() => resolveApiConfig({ env: {} })).code).toBe('CONFIG');
  });

  it('names the token file when it cannot be read or is empty, without echoing a token', () => {
    const missing = join(dir, 'nope');
    expect(configError(() => resolveApiConfig({ apiUrl: 'https://a.example', tokenFile: missing, env: {} })).message).toContain(missing);
    const empty = join(dir, 'empty');
    writeFileSync(empty, ' \n\n', { mode: 0o600 });
    expect(configError(() => resolveApiConfig({ apiUrl: 'https://a.example', tokenFile: empty, env: {} })).message).toMatch(/is empty/);
    const twoLines = join(dir, 'two-lines');
    writeFileSync(twoLines, 'secret-part-one\nsecret-part-two\n', { mode: 0o600 });
    const err = configError(() => resolveApiConfig({ apiUrl: 'https://a.example', tokenFile: twoLines, env: {} }));
    expect(err.message).toMatch(/must hold just the API token/);
    expect(err.message).not.toContain('secret-part');
    if (process.getuid?.() !== 0) {
      const locked = join(dir, 'locked');
      writeFileSync(locked, 'x');
      chmodSync(locked, 0o000);
      expect(configError(() => resolveApiConfig({ apiUrl: 'https://a.example', tokenFile: locked, env: {} })).message).toMatch(/EACCES/);
    }
  });

  it('does not print a token with a "/" pasted as --token-file, and still names a mistyped path', () => {
    const message = (tokenFile: string) => configError(() => resolveApiConfig({ apiUrl: 'https://a.example', tokenFile, env: {} })).message;
    // Its first folder does not exist: the token itself (sk_live/..., or a base64 one with / in it).
    for (const token of ['sk_live/Q7vR2x9LmP4sT8wAbCdEf', 'Zm9v/YmFy+YmF6cXV4/cXV1eA==']) {
      expect(message(token)).toContain(`looks like the token itself (${token.length} characters, no folder of it exists), so it is not printed`);
      expect(message(token)).not.toContain(token.slice(0, 4));
    }
    // A mistyped path begins in a real folder (relative ones in the current one), or with ~ or .: named so it can be fixed.
    for (const path of [join(dir, 'no-such-folder', 'token'), '/etc/netingst/api-token', 'src/no-such-token-file', '~/.config/netingest/token']) {
      expect(message(path)).toContain(`Cannot read the token file ${path} given to --token-file (ENOENT)`);
    }
  });

  it('refuses a token file other users can read or write, as ssh refuses a private key, with the chmod that fixes it', () => {
    const file = join(dir, 'token mode');
    writeFileSync(file, 'mode-token-9f2\n', { mode: 0o600 });
    const resolve = () => resolveApiConfig({ apiUrl: 'https://a.example', tokenFile: file, env: {} });
    for (const [mode, can] of [[0o644, 'read'], [0o666, 'read and write'], [0o620, 'write'], [0o640, 'read'], [0o604, 'read']] as const) {
      chmodSync(file, mode);
      const err = configError(resolve);
      const octal = `0${mode.toString(8)}`;
      expect(err.message, octal).toBe(
        `The token file ${file} given to --token-file has mode ${octal}: other users can ${can} it. ` +
          `Refused, as ssh refuses such a private key; make it private with: chmod 600 '${file}'`,
      );
      expect(err.code).toBe('CONFIG');
    }
    for (const mode of [0o600, 0o400]) {
      chmodSync(file, mode);
      expect(resolve().token, mode.toString(8)).toBe('mode-token-9f2');
    }
  });

  it('refuses plain http to a non-loopback host, and accepts it to loopback', () => {
    const env = { NETINGEST_API_TOKEN: 't' };
    for (const url of ['http://api.example.com', 'http://10.0.0.7:8080', 'http://[::2]', 'http://128.0.0.1', 'http://localhost.example.com']) {
      expect(configError(() => resolveApiConfig({ apiUrl: url, env })).message, url).toMatch(/unencrypted; use https/);
    }
    for (const [url, base] of [
      ['http://127.0.0.1:8787', 'http://127.0.0.1:8787'],
      ['http://127.8.9.10/', 'http://127.8.9.10'],
      ['http://LOCALHOST:1/x/', 'http://localhost:1/x'],
      ['http://[::1]:9/', 'http://[::1]:9'],
    ] as const) {
      expect(resolveApiConfig({ apiUrl: url, env }).baseUrl).toBe(base);
    }
  });

  it('refuses other schemes, credentials in the URL, query strings and garbage without echoing them', () => {
    const env = { NETINGEST_API_TOKEN: 't' };
    expect(configError(() => resolveApiConfig({ apiUrl: 'ftp://a.example', env })).message).toMatch(/https:\/\//);
    const creds = configError(() => resolveApiConfig({ apiUrl: 'https://user:hunter2@a.example', env }));
    expect(creds.message).toMatch(/credentials/);
    expect(creds.message).not.toContain('hunter2');
    expect(configError(() => resolveApiConfig({ apiUrl: 'https://a.example/?k=1', env })).message).toMatch(/query string/);
    const junk = configError(() => resolveApiConfig({ apiUrl: 'not a url sk_live_123', env }));
    expect(junk.message).toMatch(/NETINGEST_API_URL|--api-url/);
    expect(junk.message).not.toContain('sk_live_123');
  });
});

describe('parseBaseUrl and isLoopbackHost', () => {
  it('splits origin and path prefix', () => {
    expect(parseBaseUrl('https://Api.Example.com:443/a/b//')).toEqual({
      baseUrl: 'https://api.example.com/a/b',
      origin: 'https://api.example.com',
      pathPrefix: '/a/b',
    });
    expect(parseBaseUrl('https://api.example.com').pathPrefix).toBe('');
  });
  it("drops the API's own /v1/api from the end of the path: the operations' paths begin with it", () => {
    expect(parseBaseUrl('https://api.example.com/v1/api/')).toEqual({
      baseUrl: 'https://api.example.com',
      origin: 'https://api.example.com',
      pathPrefix: '',
    });
    expect(parseBaseUrl('https://gw.example.com/lookup/v1/api').pathPrefix).toBe('/lookup');
    expect(parseBaseUrl('https://gw.example.com/v1/api/v2').pathPrefix).toBe('/v1/api/v2');
  });
  it('knows loopback hosts', () => {
    expect(isLoopbackHost('127.0.0.1')).toBe(true);
    expect(isLoopbackHost('[::1]')).toBe(true);
    expect(isLoopbackHost('localhost')).toBe(true);
    expect(isLoopbackHost('127.0.0.1.nip.io')).toBe(false);
    expect(isLoopbackHost('[::ffff:7f00:1]')).toBe(false);
  });
});

describe('createApiClient refuses unsafe or nonsensical options', () => {
  it('refuses plain http to a non-loopback host before any connection is made', () => {
    // The refusal is thrown by createApiClient itself: no client exists, so no request can have been sent.
    expect(() => createApiClient({ baseUrl: 'http://api.example.com', token: 'secret' })).toThrow(ConfigError);
    expect(() => createApiClient({ baseUrl: 'http://api.example.com', token: 'secret' })).toThrow(/unencrypted/);
  });

  it('refuses an empty or multi-line token and bad numbers', async () => {
    const baseUrl = 'http://127.0.0.1:9';
    expect(() => createApiClient({ baseUrl, token: '' })).toThrow(ConfigError);
    expect(() => createApiClient({ baseUrl, token: 'a\nb' })).toThrow(ConfigError);
    expect(() => createApiClient({ baseUrl, token: 't', timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => createApiClient({ baseUrl, token: 't', maxBodyBytes: 1.5 })).toThrow(/maxBodyBytes/);
    expect(() => createApiClient({ baseUrl, token: 't', connections: -1 })).toThrow(/connections/);
    const ok = createApiClient({ baseUrl, token: 't' });
    await ok.close();
  });

  it('accepts a loopback http URL and really connects to it', async () => {
    const server = createServer((socket) => socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const client = createTypedClient({ baseUrl: `http://localhost:${port}/`, token: 't' });
    try {
      const result = await client.postDetails('https://www.network.com/posts/x');
      expect(result).toMatchObject({ kind: 'not_found', message: null, raw: '{}' });
    } finally {
      await client.close();
      server.close();
    }
  });
});

describe("NETINGEST_API_URL copied with the API's /v1/api (the paths in the API's documentation)", () => {
  it('`run` reaches the same service: calls go to /v1/api/..., not /v1/api/v1/api/... (a 404 and exit 1)', async () => {
    const TOKEN = 'prefix-token-3b7f21';
    const sandbox = await startSandbox({ tokens: { [TOKEN]: 1000 }, notFoundRate: 0 });
    const ws = await makeWorkspace();
    try {
      await ws.write('posts.csv', csv(['post_url'], postUrls(3).map((u) => [u])));
      const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE });
      for (const [i, suffix] of ['/v1/api', '/v1/api/'].entries()) {
        const env = { ...cliEnv(sandbox, TOKEN), NETINGEST_API_URL: `${sandbox.url}${suffix}` };
        // The CLI's code in this process: the URL is read by the command, not at the process's start.
        const result = await inProcess(['run', job, '--db', join(ws.dir, `run-${i}.db`)], env, { cwd: ws.dir });
        expect(result.code, `${suffix}: ${result.stderr}`).toBe(0);
      }
      expect(operationRequests(sandbox).map((r) => r.path)).toEqual(Array(6).fill('/v1/api/post-details'));
    } finally {
      await sandbox.stop();
      await ws.cleanup();
    }
  });
});

describe('netingest run --token-file', () => {
  it('exits 2 before any call on a token file others can read, and runs once it is chmod 600', async () => {
    const TOKEN = 'cli-mode-token-4c1';
    const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 1000 }, notFoundRate: 0 });
    const ws = await makeWorkspace();
    try {
      await ws.write('posts.csv', csv(['post_url'], postUrls(2).map((u) => [u])));
      const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE });
      const tokenFile = await ws.write('token', `${TOKEN}\n`, 0o644);
      const args = ['run', job, '--db', ws.db, '--token-file', tokenFile];
      const env = { NETINGEST_API_URL: sandbox.url };
      const refused = await runCli(args, { cwd: ws.dir, env });
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toContain(`has mode 0644: other users can read it`);
      expect(refused.stderr).toContain(`chmod 600 ${tokenFile}`);
      expect(refused.stderr).not.toContain(TOKEN);
      expect(sandbox.requests).toHaveLength(0);

      chmodSync(tokenFile, 0o600);
      // The refusal above is a real process's exit; the same command once the mode is right, in this process.
      const accepted = await inProcess(args, env, { cwd: ws.dir });
      expect(accepted.code, accepted.stderr).toBe(0);
      expect(operationRequests(sandbox)).toHaveLength(2);
    } finally {
      await sandbox.stop();
      await ws.cleanup();
    }
  });
});

describe('plan, status and report --token-file', () => {
  it('exit 2 on a token file given that cannot be used, as run does, rather than leave the balance out without a word', async () => {
    const TOKEN = 'cli-balance-token-7d2';
    const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 1000 }, notFoundRate: 0 });
    const ws = await makeWorkspace();
    try {
      await ws.write('posts.csv', csv(['post_url'], postUrls(1).map((u) => [u])));
      const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE });
      const ran = await inProcess(['run', job, '--db', ws.db], cliEnv(sandbox, TOKEN), { cwd: ws.dir });
      expect(ran.code, ran.stderr).toBe(0);
      const open = await ws.write('token', `${TOKEN}\n`, 0o644);
      const api = ['--api-url', sandbox.url, '--token-file', open];
      for (const args of [['plan', job, '--db', ws.db], ['status', '--db', ws.db], ['report', '--db', ws.db, '--out', 'r.html']]) {
        const refused = await inProcess([...args, ...api], {}, { cwd: ws.dir });
        expect(refused.code, `${args[0]}: ${refused.stderr}`).toBe(2);
        expect(refused.stderr).toContain('has mode 0644: other users can read it');
        expect(refused.stderr + refused.stdout).not.toContain(TOKEN);
      }
      const missing = await inProcess(['status', '--db', ws.db, '--api-url', sandbox.url, '--token-file', join(ws.dir, 'nowhere')], {}, { cwd: ws.dir });
      expect(missing.code, missing.stderr).toBe(2);
      expect(missing.stderr).toContain('Cannot read the token file');
      // The token pasted where its file's path goes: named as the mistake, never printed.
      for (const command of [['status', '--db', ws.db], ['run', job, '--db', ws.db]]) {
        const pasted = await inProcess([...command, '--api-url', sandbox.url, '--token-file', TOKEN], {}, { cwd: ws.dir });
        expect(pasted.code, pasted.stderr).toBe(2);
        expect(pasted.stderr).toContain(`looks like the token itself (${TOKEN.length} characters, no folder or extension), so it is not printed`);
        expect(pasted.stderr + pasted.stdout).not.toContain(TOKEN);
      }
      const slashed = await inProcess(['status', '--db', ws.db, '--api-url', sandbox.url, '--token-file', `sk_live/${TOKEN}`], {}, { cwd: ws.dir });
      expect(slashed.code, slashed.stderr).toBe(2);
      expect(slashed.stderr + slashed.stdout).not.toContain(TOKEN);
      const named = await inProcess(['status', '--db', ws.db, '--api-url', sandbox.url, '--token-file', 'api-token.txt'], {}, { cwd: ws.dir });
      expect(named.stderr).toContain('Cannot read the token file api-token.txt given to --token-file (ENOENT)');
      // Nothing set at all: the balance is simply not asked.
      const unset = await inProcess(['status', '--db', ws.db], {}, { cwd: ws.dir });
      expect(unset.code, unset.stderr).toBe(0);
    } finally {
      await sandbox.stop();
      await ws.cleanup();
    }
  });
});

describe('a mistyped --token-file path, from the built CLI', () => {
  it('is named as given, while a pasted token with a "/" still is not printed', async () => {
    const TOKEN = 'sk_live/Q7vR2x9LmP4sT8wAbCdEf';
    const ws = await makeWorkspace();
    try {
      await ws.write('posts.csv', csv(['post_url'], postUrls(1).map((u) => [u])));
      const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' } });
      // Relative, 16 characters or more, in a folder that does not exist here: the file name's extension makes it a path.
      for (const path of ['secrets/api-tokn.txt', 'secret/netingest.token']) {
        const cli = await runCli(['run', job, '--db', ws.db, '--api-url', 'http://127.0.0.1:9', '--token-file', path], { cwd: ws.dir });
        expect(cli.code, cli.stderr).toBe(2);
        expect(cli.stderr).toContain(`Cannot read the token file ${path} given to --token-file (ENOENT)`);
      }
      const pasted = await runCli(['run', job, '--db', ws.db, '--api-url', 'http://127.0.0.1:9', '--token-file', TOKEN], { cwd: ws.dir });
      expect(pasted.code, pasted.stderr).toBe(2);
      expect(pasted.stderr).toContain('looks like the token itself');
      expect(pasted.stderr + pasted.stdout).not.toContain(TOKEN.slice('sk_live/'.length, 12));
    } finally {
      await ws.cleanup();
    }
  }, 60_000);
});

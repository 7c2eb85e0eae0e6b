// Answers a well-behaved API would not send but a proxy, CDN or broken server in front of it might: oversized
// headers (from a raw node:net server, since node:http refuses to write them), with the real undici client.
import { maxHeaderSize } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createApiClient } from '../src/api/client.ts';
import { errorAction, NetworkError, outageSymptom } from '../src/api/errors.ts';

const TOKEN = 'sk_test_transport_91c3e0aa';
const JOBS_OK = JSON.stringify({
  success: true,
  message: 'Jobs fetched',
  currentPage: 0,
  numResults: 0,
  results: [],
  total_credits: 100,
  credits_used: 0.25,
  credits_remaining: 99.75,
});

describe('oversized response headers', () => {
  it('are a NetworkError (retry, counted as an outage symptom) naming the cause, not a bug that stops the run', async () => {
    const raw = createNetServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => {
        socket.write(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nset-cookie: ${'a'.repeat(maxHeaderSize + 1024)}\r\n` +
            `content-length: ${Buffer.byteLength(JOBS_OK)}\r\n\r\n${JOBS_OK}`,
        );
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const overflowing = createApiClient({ baseUrl: `http://127.0.0.1:${(raw.address() as AddressInfo).port}`, token: TOKEN });
    try {
      const err = await overflowing.searchJobs({}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NetworkError);
      expect(errorAction(err)).toBe('retry');
      expect((err as NetworkError).message).toMatch(
        new RegExp(`^search-jobs: the response headers are larger than the ${maxHeaderSize} bytes accepted \\(UND_ERR_HEADERS_OVERFLOW\\)`),
      );
      expect(outageSymptom(err)).toMatch(/headers are larger/);
    } finally {
      await overflowing.close();
      await new Promise((resolve) => raw.close(resolve));
    }
  });
});

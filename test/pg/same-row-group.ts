/**
 * One group of outcomes whose answers touch the same stored rows, as a refresh within one group does: a company
 * in two lists (its locations replaced twice), a post asked by two URL forms (its media replaced twice, its day
 * proving the day order of a post stored earlier in the group), a post whose answer is read back by the next
 * answer (the "other post" check), a job in two search pages, and a task settled twice. The later answer is
 * sometimes the earlier in time, so first/last seen must merge rather than follow the order.
 */
import type { OutcomeOp } from '../../src/store/outcome-ops.ts';
import type { ApiCallRow } from '../../src/store/api-calls.ts';
import { requestKeyOf, type AnySubject } from '../../src/operations/index.ts';
import type { Operation } from '../../src/spec/types.ts';
import { successOp } from '../support/store-helpers.ts';
import { company, job, jobsRequest, jobsResponse, postRequest, postResponse, similarRequest, similarResponse } from '../support/db-fixtures.ts';

export const GROUP_TIMES = { planned: '2026-11-01T00:00:00.000Z', early: '2026-11-02T08:00:00.000Z', late: '2026-11-02T09:00:00.000Z' } as const;

const post = (postUrl: string): AnySubject => ({ operation: 'post-details', postUrl });

/** The tasks the group settles, planned before it on both engines. */
export const GROUP_TASKS: Array<{ id: number; job: string; operation: Operation; inputKey: string; page: number; request: AnySubject }> = [
  { id: 1, job: 'lookalikes', operation: 'similar-companies', inputKey: 'reference-one', page: 1, request: { ...similarRequest(1, 2), referenceUrl: 'https://network.com/company/reference-one' } },
  { id: 2, job: 'lookalikes', operation: 'similar-companies', inputKey: 'reference-two', page: 1, request: { ...similarRequest(1, 2), referenceUrl: 'https://network.com/company/reference-two' } },
  { id: 3, job: 'posts', operation: 'post-details', inputKey: 'y', page: 1, request: post('https://www.network.com/posts/yan_day-activity-7000000000000000001-Yy') },
  { id: 4, job: 'posts', operation: 'post-details', inputKey: 'x', page: 1, request: postRequest },
  { id: 5, job: 'posts', operation: 'post-details', inputKey: 'x-feed', page: 1, request: post('https://www.network.com/feed/update/urn:li:activity:7123456789012345678') },
  { id: 6, job: 'posts', operation: 'post-details', inputKey: 'first-article', page: 1, request: post('https://www.network.com/pulse/first-article') },
  { id: 7, job: 'posts', operation: 'post-details', inputKey: 'second-article', page: 1, request: post('https://www.network.com/pulse/second-article') },
  { id: 8, job: 'searches', operation: 'search-jobs', inputKey: 'berlin-ts', page: 1, request: jobsRequest(0) },
  { id: 9, job: 'searches', operation: 'search-jobs', inputKey: 'berlin-ts', page: 2, request: jobsRequest(10) },
  { id: 10, job: 'posts', operation: 'post-details', inputKey: 'gone', page: 1, request: post('https://www.network.com/posts/gone-activity-7000000000000000009-Gg') },
  { id: 11, job: 'posts', operation: 'post-details', inputKey: 'odd', page: 1, request: post('https://www.network.com/posts/odd-activity-7000000000000000010-Oo') },
];

function call(taskId: number, status: number, errorCode: string | null, at: string): ApiCallRow {
  const operation = GROUP_TASKS.find((t) => t.id === taskId)!.operation;
  return { runId: 7, taskId, operation, method: 'GET', path: `/v1/api/${operation}`, status, errorCode, latencyMs: 12.5, totalCredits: 1000, creditsUsed: taskId, creditsRemaining: 1000 - taskId, at };
}

function success(taskId: number, response: unknown, at: string, attempts = 1): OutcomeOp {
  // The answer as the client reads it on receipt; the writer stores that reading.
  return successOp({ taskId, request: GROUP_TASKS.find((t) => t.id === taskId)!.request, response, call: call(taskId, 200, null, at), at, attempts });
}

const dayPost = (id: string, timestamp: string, media: string[]) =>
  postResponse({ PostId: id, post: { timestamp, text_content: `post ${id}`, hashtags: null, post_media_description: '', post_media_url: media } });

/** The group, in the order the writer received it. */
export function oneGroupTouchingSameRows(): OutcomeOp[] {
  const { early, late } = GROUP_TIMES;
  const lyon = { headquarter: { city: 'lyon', country: 'france', geographicArea: null, isPrimary: true, line1: 'quai 1', line2: null, postalCode: '69001' }, other: [] };
  const rejectedRequest = GROUP_TASKS[10]!.request;
  return [
    success(1, similarResponse([company(1, { followers: 100 }), company(2)]), late),
    // Later in the group, earlier in time: its values win, first_seen_at stays the earlier, updated_at the later.
    success(2, similarResponse([company(1, { followers: 200, locations: lyon })]), early),
    success(3, dayPost('activity-7000000000000000001', '03-04-2026', []), early),
    success(4, dayPost('activity-7123456789012345678', '03-04-2026', ['https://img.example/a.jpg', 'https://img.example/b.jpg']), early),
    // Proves the day order: the ambiguous days stored before it (task 3's post) are filled.
    success(5, dayPost('activity-7123456789012345678', '22-11-2026', ['https://img.example/c.jpg']), late),
    success(6, dayPost('activity-7000000000000000002', '2026-10-01', []), early),
    // The same post for another URL naming no activity: read back, found stored for task 6's URL, not stored.
    success(7, dayPost('activity-7000000000000000002', '2026-10-02', []), late),
    success(8, jobsResponse([job(1), job(2)]), early),
    { kind: 'failed', taskId: 9, code: 'HTTP_500', message: 'server error (500)', retryable: true, attempts: 1, at: early },
    // Settles task 8 again, past the last page, as an answer ending a list settles its later pages (PastLast).
    { ...success(9, jobsResponse([job(1, { title: 'Refreshed title' })]), late, 2), pastLast: { taskIds: [8], lastPage: 1 } } as OutcomeOp,
    { kind: 'attempt_failed', call: call(10, 502, 'HTTP_502', early) },
    { kind: 'not_found', taskId: 10, call: call(10, 404, null, late), attempts: 2, note: 'nothing found', at: late },
    {
      kind: 'rejected', taskId: 11, operation: 'post-details', requestKey: requestKeyOf(rejectedRequest), request: rejectedRequest,
      body: '{"success":true,"unexpected":1}', call: call(11, 200, 'SCHEMA_MISMATCH', late), code: 'SCHEMA_MISMATCH', message: 'not a post', attempts: 1, at: late,
    },
  ];
}

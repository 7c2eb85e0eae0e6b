/**
 * post-details: one post URL per input row, one GET per post, the body being the record; rows: posts, post_media. The
 * author's URL is `network_url`, else `author`'s one other `*_url` member (the live service's `<brand>_url`).
 */
import { z } from 'zod';
import { OPERATION_PATHS } from '../spec/types.ts';
import { canonicalPostUrl, canonicalUrl, MAX_URL_LENGTH, postIdOfAnswer, postIdOfUrl } from '../urls/canonical.ts';
import { given, int32, list, nullable, obj, orOtherName, str, bool, CREDIT_MEMBERS, type ReadObject } from './answer-contract.ts';
import { urlColumnReader } from './input-cells.ts';
import { common, urlInput, type JobCommon, type JobInputFile } from '../jobs/job-common.ts';
import type { OperationSpec } from './operation-spec.ts';
import type { RowAnomaly } from './stored-rows.ts';
import { arrayOf, jsonText, objectOf, sqlValue, urlKey } from './stored-values.ts';
import { rawRows, sql, param, literal, codePointOrder, groupConcat } from '../statement.ts';

const body = {
  success: bool(),
  message: str(),
  PostId: str(),
  author: obj({ name: str(), headline: str(), network_url: orOtherName(str(), /_url$/), profile_image: str() }),
  post: obj({
    timestamp: str(),
    text_content: str(),
    hashtags: nullable(list(given())),
    post_media_description: str(),
    post_media_url: list(str()),
  }),
  engagement: obj({ reactions: int32(), comments_count: int32() }),
  ...CREDIT_MEMBERS,
};

export type PostDetailsAnswer = ReadObject<typeof body>;

/** The request of post-details: the post URL, sent as the `url` query parameter. */
const requestSchema = z.looseObject({ url: z.string() });
export type PostDetailsRequest = z.output<typeof requestSchema>;

/** What a post answer is filed under: the (canonical) post URL asked for. */
const subjectSchema = z.looseObject({ operation: z.literal('post-details'), postUrl: z.string() });
export type PostDetailsSubject = z.output<typeof subjectSchema>;

/**
 * The key a post answer is stored under: the post its URL names, never the answer's, so answers naming one post for
 * several URLs are not merged. A URL naming no activity (`/pulse/`) takes the answer's PostId unless another URL's
 * answer holds it. An answer naming another post is reported (other_post); null: not stored.
 */
function postKeyOf(
  url: string,
  answered: unknown,
  storedUrlOf: (postId: string) => unknown,
): { postId: string | null; anomaly: RowAnomaly | null } {
  const askedId = postIdOfUrl(url);
  const answeredId = postIdOfAnswer(answered);
  const anomaly = (askedFor: string, reason: string): RowAnomaly => ({ kind: 'other_post', position: null, path: 'PostId', reason, askedId: askedFor, answeredId });
  if (askedId !== null) {
    const other = answeredId !== null && answeredId !== askedId;
    return { postId: askedId, anomaly: other ? anomaly(askedId, `the answer names post ${answeredId}, not ${askedId} asked for: stored under ${askedId}`) : null };
  }
  if (answeredId === null) {
    const why = typeof answered === 'string' && answered.trim() !== '' ? `a PostId past ${MAX_URL_LENGTH} bytes` : 'no PostId';
    return { postId: null, anomaly: { kind: 'no_identity', position: null, path: 'PostId', reason: `${why}, and the URL asked for names no activity`, askedId: null, answeredId: null } };
  }
  const storedUrl = storedUrlOf(answeredId);
  if (storedUrl !== undefined && storedUrl !== url) {
    return { postId: null, anomaly: anomaly(url, `the answer names post ${answeredId}, already stored for ${String(storedUrl)}: not merged, not stored`) };
  }
  return { postId: answeredId, anomaly: null };
}

/** The result columns `enrich` appends (docs/export.md: public names). */
export const POST_COLUMNS = [
  'post_id',
  'post_author_name',
  'post_author_headline',
  'post_author_url',
  'post_timestamp',
  'post_text',
  'post_reactions',
  'post_comments',
  'post_media_count',
  'post_media_urls',
  'post_media_description',
  'post_hashtags',
  'post_last_seen_at',
] as const;

// One post, found by an indexed lookup: `posts` is keyed by `post_id` (its primary key); `url` (indexed too)
// holds only the last URL form the post was asked for. The post id tie-break in code-point order on both engines.
const postSql = (column: 'p.post_id' | 'p.url') => sql`
  SELECT
    p.post_id, p.author_name, p.author_headline, p.author_url, p.posted_raw, p.text_content, p.reactions,
    p.comments_count,
    (SELECT count(*) FROM post_media WHERE post_id = p.post_id),
    (SELECT ${groupConcat('url', '; ', 'position')} FROM post_media WHERE post_id = p.post_id),
    p.media_description, p.hashtags, p.updated_at
  FROM posts p
  WHERE ${literal(column)} = ${param}
  ORDER BY p.updated_at DESC, ${codePointOrder('p.post_id')}
  LIMIT 1`;
export const POST_BY_ID_SQL = postSql('p.post_id');
export const POST_BY_URL_SQL = postSql('p.url');
const POST_ID_BY_URL_SQL = sql`SELECT post_id FROM posts WHERE url = ${param}`;

/** Its job definition: the common settings and one URL column (job files; docs/jobs.md). */
export const postDetailsJobDefinition = z.strictObject({
  ...common,
  operation: z.literal('post-details'),
  input: urlInput,
  pages: z.literal(1, { error: 'post-details has one result per post: leave "pages" out or set it to 1' }).optional(),
  request: z
    .strictObject({
      url: z.never({ error: 'not allowed here: URLs come from the input CSV column' }).optional(),
    })
    .optional(),
});

export interface PostDetailsJob extends JobCommon {
  operation: 'post-details';
  input: JobInputFile & { column: string };
  request: Record<string, never>;
}

export const postDetails = {
  name: 'post-details',
  starter: {
    name: 'post-engagement',
    definition: {
      operation: 'post-details',
      input: { csv: 'data/posts.csv', column: 'post_url' },
      credits: { reserve: 100 },
    },
    csv:
      'post_url,campaign\n' +
      'https://www.network.com/posts/jane-doe_robotics-automation-activity-7123456789012345678-abcd,launch\n' +
      'https://network.com/posts/omar-haddad_logistics-ai-activity-7123456789012345679-efgh,launch\n',
  },
  refreshAfterDays: 7,
  resolveJob: (def, base, file) => ({ ...base, operation: 'post-details', input: { ...file, column: def.input.column }, request: {} }),
  rowReader: (job, header) => urlColumnReader(job.input.csv, header, job.input.column, canonicalPostUrl, (url) => [{ url }]),
  requestsOfKey: (_job, inputKey) => [{ url: inputKey }],

  request: requestSchema,
  // api.md's examples send Content-Type: application/json on this GET too; we send what they send.
  send: (request) => ({ path: `${OPERATION_PATHS['post-details']}?url=${encodeURIComponent(request.url)}`, body: null, json: true }),

  // A body with none of these is not a post: `{"status":"ok"}` is no answer to store.
  answer: { body, recordsAt: null, identity: null, recordMembers: ['PostId', 'author', 'post', 'engagement'] },
  lastPage: () => true,
  notFound: {
    // Its body is not shown: a JSON object, as the other two are.
    isAnswer: (body) => body !== null,
    shape: 'a JSON object',
    ambiguous: true,
  },

  subjectOf: (inputKey) => ({ operation: 'post-details', postUrl: inputKey }),
  subject: subjectSchema,
  requestKey: (s) => s.postUrl,
  /** `posts.posted_on` is the store's: read from `posted_raw` in the dataset's day order (post-date-order.ts). */
  rows(s, res, ctx) {
    const url = urlKey(s.postUrl, canonicalPostUrl, ctx.networkHost) ?? s.postUrl;
    const { postId, anomaly } = postKeyOf(url, res.PostId, (id) => ctx.stored('posts', { post_id: id }, 'url'));
    const anomalies = anomaly ? [anomaly] : [];
    if (postId === null) return { writes: [], skipped: 1, anomalies };
    const author = objectOf(res.author);
    const post = objectOf(res.post);
    const engagement = objectOf(res.engagement);
    const row = {
      post_id: postId,
      url,
      author_name: sqlValue(author['name']),
      author_headline: sqlValue(author['headline']),
      author_url: urlKey(author['network_url'], canonicalUrl, ctx.networkHost),
      author_profile_image: sqlValue(author['profile_image']),
      posted_raw: sqlValue(post['timestamp']),
      text_content: sqlValue(post['text_content']),
      hashtags: jsonText(post['hashtags']),
      media_description: sqlValue(post['post_media_description']),
      reactions: sqlValue(engagement['reactions']),
      comments_count: sqlValue(engagement['comments_count']),
      first_seen_at: ctx.seenAt,
      updated_at: ctx.seenAt,
    };
    const media = arrayOf(post['post_media_url']).map((mediaUrl, i) => ({ post_id: postId, position: i + 1, url: sqlValue(mediaUrl) }));
    return { writes: [{ table: 'posts', row }, { table: 'post_media', owner: { post_id: postId }, rows: media }], skipped: 0, anomalies };
  },

  enrich: {
    columns: POST_COLUMNS,
    numbered: null,
    lookup(floorsOf) {
      // By activity id first, so every URL form of a post finds it, whichever was asked last; by URL when the URL
      // names no activity or the stored id is not the one it names (the answer's PostId wins in the ingest).
      const updatedAt = POST_COLUMNS.indexOf('post_last_seen_at');
      const hashtags = POST_COLUMNS.indexOf('post_hashtags');
      return function* (inputKey) {
        const postId = postIdOfUrl(inputKey);
        let rows = postId === null ? [] : yield* rawRows(POST_BY_ID_SQL, [postId]);
        if (rows.length === 0) rows = yield* rawRows(POST_BY_URL_SQL, [inputKey]);
        // A 404 for this URL after the post was last stored (deleted since): the latest answer is "nothing".
        const floor = rows.length === 0 ? null : (yield* floorsOf(inputKey))[0];
        if (floor != null && (rows[0]![updatedAt] as string) < floor) rows = [];
        for (const row of rows) row[hashtags] = listText(row[hashtags]);
        return rows;
      };
    },
    sameQuestion: () => () => true,
    doneMeansResult: true,
    changeKeys() {
      // The history keys a post by its id: the one its URL names, or the one stored for a URL naming none.
      return function* (inputKey) {
        const postId = postIdOfUrl(inputKey) ?? (yield* rawRows(POST_ID_BY_URL_SQL, [inputKey]))[0]?.[0];
        return postId == null ? [] : [{ entity: 'post', key: String(postId) }];
      };
    },
  },
} satisfies OperationSpec<PostDetailsRequest, PostDetailsAnswer, PostDetailsSubject, PostDetailsJob, z.output<typeof postDetailsJobDefinition>>;

/** A JSON array of strings (hashtags) as `a; b`; anything else as stored. */
function listText(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    const parsed = JSON.parse(value) as unknown;
    if (Array.isArray(parsed)) return parsed.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join('; ');
  } catch {
    // not JSON: keep the text
  }
  return value;
}

/** post-details responses -> posts and post_media. Prepared once; runs inside the caller's transaction. */
import type BetterSqlite3 from 'better-sqlite3';
import type { PostDetailsAnswer } from '../../operations/post-details.ts';
import { canonicalPostUrl, canonicalUrl } from '../../urls/canonical.ts';
import { networkHost } from '../../urls/network-host.ts';
import { postIdOfAnswer, postIdOfUrl } from '../../urls/post-id.ts';
import type { PostDetailsIngestRequest } from '../ingest-request.ts';
import type { NormalizeResult } from './similar-companies.ts';
import type { AnswerAnomaly } from '../answer-anomalies.ts';
import { preparePostDateOrder } from './post-date-order.ts';
import { arrayOf, jsonText, objectOf, sqlValue, urlKey } from './values.ts';

const POST_COLUMNS = [
  'post_id',
  'url',
  'author_name',
  'author_headline',
  'author_url',
  'author_profile_image',
  'posted_raw',
  'posted_on',
  'text_content',
  'hashtags',
  'media_description',
  'reactions',
  'comments_count',
] as const;

export const UPSERT_POST_SQL = `
  INSERT INTO posts (${POST_COLUMNS.join(', ')}, first_seen_at, updated_at)
  VALUES (${POST_COLUMNS.map(() => '?').join(', ')}, ?, ?)
  ON CONFLICT (post_id) DO UPDATE SET
    ${POST_COLUMNS.slice(1).map((c) => `${c} = excluded.${c}`).join(',\n    ')},
    first_seen_at = min(first_seen_at, excluded.first_seen_at),
    updated_at = max(updated_at, excluded.updated_at)`;

/**
 * The key a post answer is stored under: the post asked for (the activity id its URL names), never the one the
 * answer names, so that answers naming one post for several URLs are not merged into one row. When the URL
 * names no activity (`/pulse/`), the answer's PostId, unless another URL's answer is already stored under it.
 * An answer naming another post is reported (other_post) with both ids; null: not stored.
 */
function postKeyOf(
  url: string,
  answered: unknown,
  storedUrlOf: (postId: string) => string | undefined,
): { postId: string | null; anomaly: AnswerAnomaly | null } {
  const askedId = postIdOfUrl(url);
  const answeredId = postIdOfAnswer(answered);
  const anomaly = (askedFor: string, reason: string): AnswerAnomaly => ({ kind: 'other_post', position: null, path: 'PostId', reason, askedId: askedFor, answeredId });
  if (askedId !== null) {
    const other = answeredId !== null && answeredId !== askedId;
    return { postId: askedId, anomaly: other ? anomaly(askedId, `the answer names post ${answeredId}, not ${askedId} asked for: stored under ${askedId}`) : null };
  }
  if (answeredId === null) {
    return { postId: null, anomaly: { kind: 'no_identity', position: null, path: 'PostId', reason: 'no PostId, and the URL asked for names no activity', askedId: null, answeredId: null } };
  }
  const storedUrl = storedUrlOf(answeredId);
  if (storedUrl !== undefined && storedUrl !== url) {
    return { postId: null, anomaly: anomaly(url, `the answer names post ${answeredId}, already stored for ${storedUrl}: not merged, not stored`) };
  }
  return { postId: answeredId, anomaly: null };
}

/** Prepares the statements and returns the normalizer of one post-details response. */
export function preparePostDetails(
  sqlite: BetterSqlite3.Database,
): (req: PostDetailsIngestRequest, res: PostDetailsAnswer, seenAt: string) => NormalizeResult {
  const upsertPost = sqlite.prepare(UPSERT_POST_SQL);
  const postDates = preparePostDateOrder(sqlite);
  const deleteMedia = sqlite.prepare('DELETE FROM post_media WHERE post_id = ?');
  const insertMedia = sqlite.prepare('INSERT INTO post_media (post_id, position, url) VALUES (?, ?, ?)');
  const urlOfPost = sqlite.prepare('SELECT url FROM posts WHERE post_id = ?').pluck();
  const storedUrlOf = (postId: string) => urlOfPost.get(postId) as string | undefined;
  const host = networkHost();

  return (req, res, seenAt) => {
    const url = urlKey(req.postUrl, canonicalPostUrl, host) ?? req.postUrl;
    const { postId, anomaly } = postKeyOf(url, res.PostId, storedUrlOf);
    const anomalies = anomaly ? { anomalies: [anomaly] } : {};
    if (postId === null) return { rows: 0, skipped: 1, ...anomalies };
    const author = objectOf(res.author);
    const post = objectOf(res.post);
    const engagement = objectOf(res.engagement);
    upsertPost.run(
      postId,
      url,
      sqlValue(author['name']),
      sqlValue(author['headline']),
      urlKey(author['network_url'], canonicalUrl, host) ?? sqlValue(author['network_url']),
      sqlValue(author['profile_image']),
      sqlValue(post['timestamp']),
      postDates.isoOf(post['timestamp']),
      sqlValue(post['text_content']),
      jsonText(post['hashtags']),
      sqlValue(post['post_media_description']),
      sqlValue(engagement['reactions']),
      sqlValue(engagement['comments_count']),
      seenAt,
      seenAt,
    );
    deleteMedia.run(postId);
    let position = 0;
    for (const mediaUrl of arrayOf(post['post_media_url'])) insertMedia.run(postId, ++position, sqlValue(mediaUrl));
    return { rows: 1 + position, skipped: 0, ...anomalies };
  };
}

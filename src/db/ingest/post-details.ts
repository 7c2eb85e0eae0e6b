/** post-details responses -> posts and post_media. Prepared once; runs inside the caller's transaction. */
import type BetterSqlite3 from 'better-sqlite3';
import type { PostDetailsResponse } from '../../spec/types.ts';
import { canonicalPostUrl, canonicalUrl } from '../../urls/canonical.ts';
import { networkHost } from '../../urls/network-host.ts';
import { postIdOfUrl } from '../../urls/post-id.ts';
import type { PostDetailsIngestRequest } from '../ingest-request.ts';
import type { NormalizeResult } from './similar-companies.ts';
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

/** `activity-<digits>` from the response, or derived from the URL when the response leaves it empty. */
function postIdOf(postId: unknown, url: string): string | null {
  if (typeof postId === 'string' && postId.trim() !== '') return postId.trim();
  return postIdOfUrl(url);
}

/** Prepares the statements and returns the normalizer of one post-details response. */
export function preparePostDetails(
  sqlite: BetterSqlite3.Database,
): (req: PostDetailsIngestRequest, res: PostDetailsResponse, seenAt: string) => NormalizeResult {
  const upsertPost = sqlite.prepare(UPSERT_POST_SQL);
  const postDates = preparePostDateOrder(sqlite);
  const deleteMedia = sqlite.prepare('DELETE FROM post_media WHERE post_id = ?');
  const insertMedia = sqlite.prepare('INSERT INTO post_media (post_id, position, url) VALUES (?, ?, ?)');
  const host = networkHost();

  return (req, res, seenAt) => {
    const url = urlKey(req.postUrl, canonicalPostUrl, host) ?? req.postUrl;
    const postId = postIdOf(res.PostId, url);
    if (postId === null) return { rows: 0, skipped: 1 };
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
    return { rows: 1 + position, skipped: 0 };
  };
}

import type { PostDetailsResponse } from '../../spec/types.ts';
import { Prng, hashFraction } from '../prng.ts';
import { BoundedCache, canonicalUrlKey, saysNotFound, slugify } from './canonical.ts';
import { dayMonthYear, daysBefore, SeededData } from './world-age.ts';
import {
  FIRST_NAMES, HASHTAGS, HEADLINES, LAST_NAMES, MEDIA_ORIGIN, NAME_CORES, NAME_PREFIXES, NETWORK_ORIGIN,
  POST_OPENERS, POST_SENTENCES,
} from './words.ts';

/** A post-details 200 body without the credit counters. */
export type PostBody = Omit<PostDetailsResponse, 'total_credits' | 'credits_used' | 'credits_remaining'>;

const MEDIA_DESCRIPTIONS = ['', '', 'Photo of the team on stage', 'Chart: revenue growth 2019–2024', 'Our new office 🏢'];

/** A post URL's activity id (`…-activity-<digits>-…`, `urn:li:activity:<digits>`), else a stable 19-digit hash id. */
export function postIdOf(seed: number, url: string): string {
  const match = /activity[-:](\d{6,})/i.exec(url);
  if (match?.[1]) return `activity-${match[1]}`;
  return `activity-7${Prng.from(seed, `post-id:${canonicalUrlKey(url)}`).digits(18)}`;
}

/** Generates (and caches) post details from a seed. */
export class PostData extends SeededData {
  private readonly posts = new BoundedCache<string, PostBody | null>(20_000);

  /** The post behind a URL, or null when it has no data; keyed by activity id, so an activity's URL forms agree. */
  details(url: string): PostBody | null {
    if (saysNotFound(url)) return null;
    const postId = postIdOf(this.seed, url);
    return this.posts.get(postId, () => {
      const nodata = hashFraction(this.seed, `post-nodata:${postId}`) < this.notFoundRate;
      return nodata ? null : this.generate(postId);
    });
  }

  private generate(postId: string): PostBody {
    const rng = Prng.from(this.seed, `post:${postId}`);
    const name = `${rng.pick(FIRST_NAMES)} ${rng.pick(LAST_NAMES)}`;
    const company = `${rng.pick(NAME_PREFIXES)} ${rng.pick(NAME_CORES)}`;
    const profileSlug = `${slugify(name)}-${rng.alnum(6)}`;
    // null and [] both occur for "no hashtags"; media lists and descriptions may be empty too (see below).
    const hashtags = rng.nullOrList(0.25, 0.1, () => rng.sample(HASHTAGS, rng.int(1, 4)));
    const sentences = rng.sample(POST_SENTENCES, rng.int(2, 4));
    let text = `${rng.pick(POST_OPENERS)}\n\n${sentences.join(' ')}`;
    if (rng.chance(0.5)) text += `\n\n${rng.pick(POST_SENTENCES)}`;
    if (hashtags && hashtags.length > 0) text += `\n\n${hashtags.join(' ')}`;
    const mediaCount = rng.int(0, 4);
    const reactions = rng.chance(0.1) ? 0 : rng.int(1, 25_000);
    return {
      success: true,
      message: 'Post details fetched successfully',
      PostId: postId,
      author: {
        name,
        headline: rng.pick(HEADLINES).replace('{company}', company),
        network_url: `${NETWORK_ORIGIN}/in/${profileSlug}`,
        profile_image: rng.chance(0.8) ? `${MEDIA_ORIGIN}/dms/image/profile-displayphoto-shrink_200_200/${rng.alnum(16)}` : '',
      },
      post: {
        timestamp: dayMonthYear(daysBefore(rng.int(0, 730))),
        text_content: text,
        hashtags,
        post_media_description: mediaCount > 0 ? rng.pick(MEDIA_DESCRIPTIONS) : '',
        post_media_url: Array.from(
          { length: mediaCount },
          () => `${MEDIA_ORIGIN}/dms/image/feedshare-shrink_800/${rng.alnum(20)}.jpg`,
        ),
      },
      engagement: {
        reactions: reactions === 0 ? 0 : this.age.gained(reactions, `reactions:${postId}`),
        comments_count: reactions === 0 ? 0 : this.age.gained(rng.int(0, Math.ceil(reactions / 10)), `comments:${postId}`),
      },
    };
  }
}

import { describe, expect, it } from 'vitest';
import { content, isInt, isStringArray, isUrl, useDataSandbox } from './sandbox-data-helpers.ts';

// post-details: every field, and the post id from either form of URL.
const { get } = useDataSandbox();

describe('sandbox data', () => {
  it('answers post details with every field, ids from both URL forms and stable ids otherwise', async () => {
    const id = '7181234567890123456';
    const a = await get('post-details', { url: `https://www.network.com/posts/jane-doe_we-are-hiring-activity-${id}-Xy3z` });
    const b = await get('post-details', { url: `https://www.network.com/feed/update/urn:li:activity:${id}/` });
    expect(a.status).toBe(200);
    expect(a.body.PostId).toBe(`activity-${id}`);
    expect(content(b.body)).toEqual(content(a.body));
    const odd = await get('post-details', { url: 'https://www.network.com/posts/someone_no-id-here' });
    expect(odd.body.PostId).toMatch(/^activity-\d{19}$/);
    expect((await get('post-details', { url: 'https://www.network.com/posts/someone_no-id-here' })).body.PostId).toBe(odd.body.PostId);

    const posts: any[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await get('post-details', { url: `https://www.network.com/feed/update/urn:li:activity:71800000000000${String(i).padStart(5, '0')}` });
      expect(r.status).toBe(200);
      posts.push(r.body);
    }
    for (const p of posts) {
      expect(p.success).toBe(true);
      expect(typeof p.message).toBe('string');
      expect(typeof p.author.name).toBe('string');
      expect(typeof p.author.headline).toBe('string');
      expect(isUrl(p.author.network_url)).toBe(true);
      expect(p.author.profile_image === '' || isUrl(p.author.profile_image)).toBe(true);
      expect(p.post.timestamp).toMatch(/^\d{2}-\d{2}-\d{4}$/);
      expect(p.post.text_content).toContain('\n');
      expect(p.post.hashtags === null || isStringArray(p.post.hashtags)).toBe(true);
      expect(typeof p.post.post_media_description).toBe('string');
      expect(p.post.post_media_url.length).toBeLessThanOrEqual(4);
      expect(p.post.post_media_url.every(isUrl)).toBe(true);
      expect(isInt(p.engagement.reactions) && isInt(p.engagement.comments_count)).toBe(true);
    }
    expect(posts.some((p) => /[^\x00-\x7f]/.test(p.post.text_content))).toBe(true);
    expect(posts.some((p) => /\p{Extended_Pictographic}/u.test(p.post.text_content))).toBe(true);
    expect(posts.some((p) => p.author.profile_image === '')).toBe(true);
    expect(posts.some((p) => p.post.hashtags === null) && posts.some((p) => p.post.hashtags?.length > 0)).toBe(true);
    expect(posts.some((p) => Array.isArray(p.post.hashtags) && p.post.hashtags.length === 0)).toBe(true);
    expect(posts.some((p) => p.post.post_media_url.length === 0)).toBe(true);
    expect(posts.some((p) => p.post.post_media_url.length > 0 && p.post.post_media_description === '')).toBe(true);
    expect(new Set(posts.map((p) => p.post.post_media_url.length)).size).toBeGreaterThan(2);
  });
});

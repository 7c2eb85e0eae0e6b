/**
 * post-details: the answer contract of its 200 body (api.md, "Post details record"). The body is the record;
 * it names itself by `PostId` or else by the URL asked for, which the store resolves (store/ingest/post-details.ts):
 * a post is stored under the post asked for. The author's profile URL is read from `network_url`, else from
 * the one other `*_url` member of `author` (the live service names it after its brand: `<brand>_url`).
 */
import { given, int, list, nullable, obj, orOtherName, str, bool, type AnswerContract, type ReadBody } from './answer-contract.ts';
import { CREDIT_MEMBERS } from './credit-members.ts';

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
  engagement: obj({ reactions: int(), comments_count: int() }),
  ...CREDIT_MEMBERS,
};

export const postDetailsContract: AnswerContract<typeof body> = {
  operation: 'post-details',
  body,
  recordsAt: null,
  identity: null,
  // A body with none of these is not a post: `{"status":"ok"}` is no answer to store.
  recordMembers: ['PostId', 'author', 'post', 'engagement'],
};

export type PostDetailsAnswer = ReadBody<typeof body>;

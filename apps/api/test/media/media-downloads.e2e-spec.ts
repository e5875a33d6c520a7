import { createHash, randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { registerUser } from '../support/api-client';
import { MediaStack, pngSize, type OperationBody } from './media-stack';

const t = useTestDatabase();
jest.setTimeout(90_000);

interface Media {
  id: string;
  status: string;
  objectKey: string;
  thumbnail: { objectKey: string; width: number; height: number } | null;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Downloads of a media's content and thumbnail, with real api, dispatcher and worker processes. */
describe('media downloads: content and thumbnail (real processes)', () => {
  const stack = new MediaStack(t, { MEDIA_THUMBNAIL_SIZE: '48' });

  beforeAll(() => stack.start());
  afterAll(() => stack.stop());

  /** A GET as raw bytes, with the caller's token (the stack's user unless another is given). */
  async function download(
    path: string,
    headers: Record<string, string> = {},
    token = stack.user.accessToken,
  ) {
    const res = await fetch(stack.apiUrl + stack.ws(path), {
      headers: { authorization: `Bearer ${token}`, ...headers },
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, bytes, json: () => JSON.parse(bytes.toString()) };
  }

  async function uploaded(name: string, contentType: string) {
    const bytes = await stack.simBytes(name);
    const created = await stack.client.post<Media>(
      stack.ws('/media'),
      { filename: name, contentType, size: bytes.length },
      { key: randomUUID() },
    );
    expect(created.status).toBe(201);
    const id = created.body.id;
    const put = (body: Buffer) =>
      fetch(stack.apiUrl + stack.ws(`/media/${id}/content`), {
        method: 'PUT',
        headers: { authorization: `Bearer ${stack.user.accessToken}`, 'content-type': contentType },
        body,
      });
    return { id, bytes, put };
  }

  async function completed(id: string, status: OperationBody['status'] = 'succeeded') {
    const accepted = await stack.client.post<{ operation: OperationBody }>(
      stack.ws(`/media/${id}/complete`),
      undefined,
      { key: randomUUID() },
    );
    expect(accepted.status).toBe(202);
    await stack.waitForOperation(accepted.body.operation.id, status);
    return (await stack.client.get<Media>(stack.ws(`/media/${id}`))).body;
  }

  it('serves the uploaded bytes as their type with the checksum as ETag; 304 on If-None-Match', async () => {
    const { id, bytes, put } = await uploaded('product-300x200.png', 'image/png');

    // Nothing uploaded yet: no content, no thumbnail.
    for (const what of ['content', 'thumbnail']) {
      const none = await download(`/media/${id}/${what}`);
      expect({ what, status: none.status }).toEqual({ what, status: 404 });
      expect(none.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(none.json()).toMatchObject({
        code: 'MEDIA_CONTENT_UNAVAILABLE',
        currentStatus: 'awaiting_content',
      });
    }

    expect((await put(bytes)).status).toBe(200);
    const etag = `"${sha256(bytes)}"`;
    const got = await download(`/media/${id}/content`);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(bytes)).toBe(true);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(got.headers.get('content-length')).toBe(String(bytes.length));
    expect(got.headers.get('etag')).toBe(etag);
    expect(got.headers.get('cache-control')).toBe('private, no-cache');
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');

    // Revalidation: the same tag (strong, weak, in a list, or *) is a 304 without a body.
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const same = await download(`/media/${id}/content`, { 'if-none-match': inm });
      expect({ inm, status: same.status, length: same.bytes.length }).toEqual({
        inm,
        status: 304,
        length: 0,
      });
      expect(same.headers.get('etag')).toBe(etag);
    }
    for (const inm of ['"other"', `"${sha256(Buffer.from('x'))}"`, 'not a tag']) {
      const changed = await download(`/media/${id}/content`, { 'if-none-match': inm });
      expect({ inm, status: changed.status }).toEqual({ inm, status: 200 });
      expect(changed.bytes.equals(bytes)).toBe(true);
    }

    // Content replaced before completion (same size, still a PNG signature): the new bytes, and
    // their own ETag; the old tag no longer matches.
    const other = await stack.simBytes('s-16x16.png');
    const second = await uploaded('s-16x16.png', 'image/png');
    expect((await second.put(other)).status).toBe(200);
    const firstTag = (await download(`/media/${second.id}/content`)).headers.get('etag');
    expect(firstTag).toBe(`"${sha256(other)}"`);
    const edited = Buffer.from(other);
    edited[edited.length - 5] = edited[edited.length - 5]! ^ 0xff;
    expect((await second.put(edited)).status).toBe(200);
    const again = await download(`/media/${second.id}/content`, { 'if-none-match': firstTag! });
    expect(again.status).toBe(200);
    expect(again.bytes.equals(edited)).toBe(true);
    expect(again.headers.get('etag')).toBe(`"${sha256(edited)}"`);

    // No thumbnail until the worker has made one; then it is the stored PNG.
    const uploadedOnly = await download(`/media/${id}/thumbnail`);
    expect(uploadedOnly.status).toBe(404);
    expect(uploadedOnly.json()).toMatchObject({
      code: 'MEDIA_CONTENT_UNAVAILABLE',
      currentStatus: 'uploaded',
    });
    const media = await completed(id);
    expect(media.status).toBe('ready');
    const thumb = await download(`/media/${id}/thumbnail`);
    expect(thumb.status).toBe(200);
    expect(thumb.headers.get('content-type')).toBe('image/png');
    const stored = await stack.readObject(media.thumbnail!.objectKey);
    expect(thumb.bytes.equals(stored!)).toBe(true);
    expect(pngSize(thumb.bytes)).toEqual({ width: 48, height: 32 });
    const thumbTag = `"${sha256(thumb.bytes)}"`;
    expect(thumb.headers.get('etag')).toBe(thumbTag);
    const thumb304 = await download(`/media/${id}/thumbnail`, { 'if-none-match': thumbTag });
    expect(thumb304.status).toBe(304);
    expect(thumb304.bytes.length).toBe(0);
    expect((await download(`/media/${id}/thumbnail`, { 'if-none-match': etag })).status).toBe(200);
    // The content is still served once ready, unchanged.
    const ready = await download(`/media/${id}/content`, { 'if-none-match': etag });
    expect(ready.status).toBe(304);
  });

  it('serves a JPEG as image/jpeg', async () => {
    const { id, bytes, put } = await uploaded('x-32x32.jpg', 'image/jpeg');
    expect((await put(bytes)).status).toBe(200);
    const got = await download(`/media/${id}/content`);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('image/jpeg');
    expect(got.bytes.equals(bytes)).toBe(true);
    expect(got.headers.get('etag')).toBe(`"${sha256(bytes)}"`);
  });

  it('a failed media serves neither content nor thumbnail', async () => {
    // A PNG signature (accepted at upload) over bytes that do not decode: the worker fails it.
    const png = await stack.simBytes('product-300x200.png');
    const broken = Buffer.concat([png.subarray(0, 8), Buffer.alloc(92, 0x41)]);
    const created = await stack.client.post<Media>(
      stack.ws('/media'),
      { filename: 'broken.png', contentType: 'image/png', size: broken.length },
      { key: randomUUID() },
    );
    const put = await fetch(stack.apiUrl + stack.ws(`/media/${created.body.id}/content`), {
      method: 'PUT',
      headers: { authorization: `Bearer ${stack.user.accessToken}`, 'content-type': 'image/png' },
      body: broken,
    });
    expect(put.status).toBe(200);
    // Until processed, the uploaded bytes are there to download.
    expect((await download(`/media/${created.body.id}/content`)).status).toBe(200);
    const media = await completed(created.body.id, 'failed');
    expect(media.status).toBe('failed');
    for (const what of ['content', 'thumbnail']) {
      const res = await download(`/media/${created.body.id}/${what}`);
      expect({ what, status: res.status }).toEqual({ what, status: 404 });
      expect(res.json()).toMatchObject({ code: 'MEDIA_CONTENT_UNAVAILABLE', currentStatus: 'failed' });
    }
  });

  it('is for members only: a non-member gets 404, an unknown media is RESOURCE_NOT_FOUND', async () => {
    const { id, bytes, put } = await uploaded('s-16x16.png', 'image/png');
    expect((await put(bytes)).status).toBe(200);
    const stranger = await registerUser(stack.apiUrl);
    for (const what of ['content', 'thumbnail']) {
      const res = await download(`/media/${id}/${what}`, {}, stranger.accessToken);
      expect({ what, status: res.status }).toEqual({ what, status: 404 });
      expect(res.json()).toMatchObject({ code: 'WORKSPACE_NOT_FOUND' });
      expect(res.bytes.includes(bytes)).toBe(false);
      // Not through the stranger's own workspace either.
      const own = await fetch(`${stack.apiUrl}/v1/workspaces/${stranger.workspaceId}/media/${id}/${what}`, {
        headers: { authorization: `Bearer ${stranger.accessToken}` },
      });
      expect(own.status).toBe(404);
      expect(await own.json()).toMatchObject({ code: 'RESOURCE_NOT_FOUND' });
      const unauthenticated = await fetch(stack.apiUrl + stack.ws(`/media/${id}/${what}`));
      expect(unauthenticated.status).toBe(401);
    }
    for (const path of [`/media/${randomUUID()}/content`, '/media/not-a-uuid/thumbnail']) {
      const res = await download(path);
      expect(res.status).toBe(404);
      expect(res.json()).toMatchObject({ code: 'RESOURCE_NOT_FOUND' });
    }
  });

  it('the OpenAPI document describes both downloads: image bytes, ETag, 304, 404', async () => {
    const doc = (await (await fetch(`${stack.apiUrl}/docs/openapi.json`)).json()) as {
      paths: Record<
        string,
        { get?: { summary?: string; parameters?: unknown[]; responses: Record<string, unknown> } }
      >;
    };
    const of = (what: string) => doc.paths[`/v1/workspaces/{workspaceId}/media/{mediaId}/${what}`]!.get!;
    for (const [what, types] of [
      ['content', ['image/png', 'image/jpeg', 'image/webp', 'image/gif']],
      ['thumbnail', ['image/png']],
    ] as const) {
      const route = of(what);
      expect(route.summary).toEqual(expect.any(String));
      const ok = route.responses['200'] as { content: object; headers: object };
      expect(Object.keys(ok.content)).toEqual(types);
      expect(ok.headers).toEqual({ ETag: { $ref: '#/components/headers/ContentETag' } });
      expect(route.responses['304']).toBeDefined();
      expect(route.parameters).toContainEqual({ $ref: '#/components/parameters/IfNoneMatch' });
      expect(JSON.stringify(route.responses['404'])).toContain('MEDIA_CONTENT_UNAVAILABLE');
      expect(JSON.stringify(route.responses['404'])).toContain('WORKSPACE_NOT_FOUND');
    }
  });
});

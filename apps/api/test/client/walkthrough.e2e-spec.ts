import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { useTestDatabase } from '@listing/testing';
import { MediaStack } from '../media/media-stack';

const t = useTestDatabase();
jest.setTimeout(120_000);

const WALKTHROUGH = path.resolve(__dirname, '../../../../examples/walkthrough.mjs');

/** The README's walkthrough runs as written against the real processes, and ends where it says. */
describe('examples/walkthrough.mjs (real processes)', () => {
  const stack = new MediaStack(t);
  beforeAll(() => stack.start());
  afterAll(() => stack.stop());

  it('takes a new user from register to a published product with an image, then updates it', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [WALKTHROUGH], {
      env: { ...process.env, API_URL: stack.apiUrl, SIM_URL: stack.sim.url },
      timeout: 90_000,
    });
    expect(stdout).toContain('live revision 2');
    const ids = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      storeExternalId: string;
      productId: string;
    };
    const res = await fetch(
      `${stack.sim.url}/platform/v1/stores/${ids.storeExternalId}/products/${ids.productId}`,
      { headers: { authorization: 'Bearer valid-demo' } },
    );
    expect(res.status).toBe(200);
    const product = (await res.json()) as {
      title: string;
      attributes: unknown;
      images: string[];
      version: number;
    };
    expect(product).toMatchObject({ title: 'Teapot, 1.5 l', attributes: { color: 'red' }, version: 2 });
    expect(product.images).toHaveLength(1);
  });
});

import type { RecordFeature } from '../records/record-kernel.service';

/**
 * Features of product drafts.
 * - normalize-text (local): trims and collapses whitespace in title and description → a new revision.
 * - publish-direct (external): would call the marketplace inside the request; it fails closed as
 *   blocked_external. Publishing goes through the outbox instead.
 */
const collapse = (s: string) => s.replace(/\s+/g, ' ').trim();

export const PRODUCT_DRAFT_FEATURES: Record<string, RecordFeature> = {
  'normalize-text': {
    id: 'normalize-text',
    mode: 'local',
    apply(payload) {
      const next: Record<string, unknown> = { ...payload };
      if (typeof next.title === 'string') next.title = collapse(next.title);
      if (typeof next.description === 'string') next.description = collapse(next.description);
      return next;
    },
  },
  'publish-direct': { id: 'publish-direct', mode: 'external' },
};

import { z } from 'zod';
import { named, uuid } from '../../common/api-schemas';

export const tokenPairSchema = named(
  'TokenPair',
  z.object({
    accessToken: z.string().describe('Send as `Authorization: Bearer <accessToken>`'),
    refreshToken: z
      .string()
      .describe('Single use: POST /v1/auth/refresh answers a new pair (a lost answer may be retried)'),
    tokenType: z.literal('Bearer'),
    expiresIn: z.number().int().describe('Seconds the access token stays valid'),
  }),
  'A new access token and the refresh token that replaces it',
);
export type TokenPair = z.output<typeof tokenPairSchema>;

const userSchema = z.object({ id: uuid(), email: z.string() });

export const sessionSchema = named(
  'Session',
  tokenPairSchema.extend({ user: userSchema }),
  'The tokens of a new session, and whose it is',
);

/** The workspace registration creates; the new user owns it. */
export const registeredWorkspaceSchema = z.object({
  id: uuid(),
  name: z.string(),
  role: z.enum(['owner', 'admin', 'member']),
});

export const registrationSchema = named(
  'Registration',
  sessionSchema.extend({ workspace: registeredWorkspaceSchema }),
  'The new user, their first workspace, and the tokens of their first session',
);

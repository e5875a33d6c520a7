import { z } from 'zod';

const email = z.email().max(254);
// Passwords: long enough to matter, bounded so the KDF cannot be used to burn CPU.
const password = z.string().min(10).max(200);

export const registerSchema = z.strictObject({
  email,
  password,
  workspaceName: z.string().trim().min(1).max(100).default('My workspace'),
});

export const loginSchema = z.strictObject({ email, password: z.string().min(1).max(200) });

export const refreshSchema = z.strictObject({ refreshToken: z.string().min(20).max(200) });

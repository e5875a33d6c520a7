-- 020 refresh retry: an access token records its first use, so a refresh replayed within the
-- grace window can tell whether the pair it answered is still unused (the client lost the
-- answer) or in use (a stolen copy of the old refresh token: revoke, as before).
ALTER TABLE auth_access_tokens ADD COLUMN used_at timestamptz;

-- 018: members join by invitation.
--
-- Adding a member by email used to add any registered user at once and answer with their user
-- id: anyone (every user owns a workspace) could learn which emails are registered, and put a
-- workspace of their choosing into a stranger's list. Now an owner or admin invites an email and
-- gets the same answer whether or not anyone has registered it; the invitee sees the invitation
-- under their own account and accepts (becoming a member) or declines it.
--
-- Registration does not prove that the registrant owns the email. So an invitation reaches only
-- an account that already existed when it was last sent (sent_at): nobody can register an
-- invited address afterwards and take the invitation. Someone invited before they registered is
-- sent it again once they have an account (inviting again renews it).
CREATE TABLE workspace_invitations (
  id           uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  email        text NOT NULL CHECK (email = lower(email)),
  role         text NOT NULL CHECK (role IN ('admin', 'member')),
  invited_by   uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  sent_at      timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  accepted_at  timestamptz,
  declined_at  timestamptz,
  CHECK (accepted_at IS NULL OR declined_at IS NULL)
);
-- One open invitation per (workspace, email); an expired open one is renewed in place.
CREATE UNIQUE INDEX workspace_invitations_open
  ON workspace_invitations (workspace_id, email) WHERE accepted_at IS NULL AND declined_at IS NULL;
CREATE INDEX workspace_invitations_by_email
  ON workspace_invitations (email) WHERE accepted_at IS NULL AND declined_at IS NULL;

ALTER TABLE workspace_invitations ENABLE ROW LEVEL SECURITY;
ALTER TABLE workspace_invitations FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON workspace_invitations
  USING (workspace_id = app_current_workspace())
  WITH CHECK (workspace_id = app_current_workspace());
-- Account data, like the memberships it becomes: not the outbox agent's (sql/017).
REVOKE ALL ON workspace_invitations FROM outbox_agent;

-- The open, unexpired invitations addressed to one user's email and sent after the account
-- existed, across workspaces: ids, the workspace's id and name, role and times only.
CREATE FUNCTION app_user_invitations(p_user_id uuid)
  RETURNS TABLE (id uuid, workspace_id uuid, workspace_name text, role text, created_at timestamptz,
                 expires_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
  AS $$
    SELECT i.id, i.workspace_id, w.name, i.role, i.created_at, i.expires_at
      FROM users u
      JOIN workspace_invitations i ON i.email = lower(u.email)
      JOIN workspaces w ON w.id = i.workspace_id
     WHERE u.id = p_user_id AND i.accepted_at IS NULL AND i.declined_at IS NULL
       AND i.expires_at > now() AND i.sent_at > u.created_at
     ORDER BY i.created_at, i.id
  $$;
REVOKE ALL ON FUNCTION app_user_invitations(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_user_invitations(uuid) TO app_user;

-- One invitation addressed to the user (sent after the account existed), in any state: accepting
-- again after a lost answer must find it answered, not unknown.
CREATE FUNCTION app_user_invitation(p_user_id uuid, p_id uuid)
  RETURNS TABLE (id uuid, workspace_id uuid, workspace_name text, role text, created_at timestamptz,
                 expires_at timestamptz, accepted_at timestamptz, declined_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
  AS $$
    SELECT i.id, i.workspace_id, w.name, i.role, i.created_at, i.expires_at, i.accepted_at, i.declined_at
      FROM users u
      JOIN workspace_invitations i ON i.email = lower(u.email)
      JOIN workspaces w ON w.id = i.workspace_id
     WHERE u.id = p_user_id AND i.id = p_id AND i.sent_at > u.created_at
  $$;
REVOKE ALL ON FUNCTION app_user_invitation(uuid, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_user_invitation(uuid, uuid) TO app_user;

import { z } from 'zod';
import { instant, listOf, named, pageOf, uuid } from '../../common/api-schemas';

export const workspaceRoleSchema = z.enum(['owner', 'admin', 'member']);
export const invitedRoleSchema = z.enum(['admin', 'member']);
export type InvitedRole = z.output<typeof invitedRoleSchema>;

/** A workspace as one of its members sees it, with that member's role. */
export const workspaceMembershipSchema = named(
  'WorkspaceMembership',
  z.object({ id: uuid(), name: z.string(), role: workspaceRoleSchema }),
  "A workspace and the caller's role in it",
);
export type WorkspaceMembership = z.output<typeof workspaceMembershipSchema>;

export const workspaceMembershipListSchema = listOf('WorkspaceMembershipList', workspaceMembershipSchema);

export const workspaceViewSchema = named(
  'Workspace',
  workspaceMembershipSchema.extend({ createdAt: instant() }),
  "A workspace (GET /v1/workspaces/{workspaceId}) and the caller's role in it",
);
export type WorkspaceView = z.output<typeof workspaceViewSchema>;

/** A member of a workspace, as the members list shows them. */
export const memberViewSchema = named(
  'Member',
  z.object({ userId: uuid(), email: z.string(), role: workspaceRoleSchema, joinedAt: instant() }),
  'A member of a workspace and their role',
);
export type MemberView = z.output<typeof memberViewSchema>;

export const memberPageSchema = pageOf('MemberPage', memberViewSchema);

/** An open invitation, as the workspace's owners and admins see it. */
export const invitationSchema = named(
  'Invitation',
  z.object({
    id: uuid(),
    email: z.string(),
    role: invitedRoleSchema,
    createdAt: instant(),
    expiresAt: instant().describe('Inviting the same email again renews it'),
  }),
  "An open invitation to the workspace (its owners' and admins' view)",
);
export type Invitation = z.output<typeof invitationSchema>;

export const invitationPageSchema = pageOf('InvitationPage', invitationSchema);

/** An open invitation, as the invited user sees it: which workspace, which role. */
export const receivedInvitationSchema = named(
  'ReceivedInvitation',
  z.object({
    id: uuid(),
    workspace: z.object({ id: uuid(), name: z.string() }),
    role: invitedRoleSchema,
    createdAt: instant(),
    expiresAt: instant(),
  }),
  'An open invitation addressed to the caller',
);
export type ReceivedInvitation = z.output<typeof receivedInvitationSchema>;

export const receivedInvitationListSchema = listOf('ReceivedInvitationList', receivedInvitationSchema);

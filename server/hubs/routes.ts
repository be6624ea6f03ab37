// Every hub endpoint, in one list for the app (server/features.ts).
import { hubCoreEndpoints } from './hubs.ts';
import { hubInvitationEndpoints } from './invitations.ts';
import { hubInviteLinkEndpoints } from './invite-links.ts';
import { hubJoinRequestEndpoints } from './join-requests.ts';
import { hubMemberEndpoints } from './members.ts';
import { myHubEndpoints } from './my-hubs.ts';

export const endpoints = [
  ...hubCoreEndpoints,
  ...hubMemberEndpoints,
  ...hubInvitationEndpoints,
  ...hubInviteLinkEndpoints,
  ...hubJoinRequestEndpoints,
  ...myHubEndpoints,
];

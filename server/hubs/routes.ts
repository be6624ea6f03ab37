// Every hub endpoint, in one list for the app.
import { hubCoreEndpoints } from './hubs.ts';
import { hubInvitationEndpoints } from './invitations.ts';
import { hubInviteLinkEndpoints } from './invite-links.ts';
import { hubJoinRequestEndpoints } from './join-requests.ts';
import { hubMemberEndpoints } from './members.ts';

export const hubEndpoints = [
  ...hubCoreEndpoints,
  ...hubMemberEndpoints,
  ...hubInvitationEndpoints,
  ...hubInviteLinkEndpoints,
  ...hubJoinRequestEndpoints,
];

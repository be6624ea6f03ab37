// The features of the API, the one place each is registered: a feature is a folder of server/ whose
// routes.ts exports its `endpoints`, named here by its folder's name. The app mounts them
// (server/app.ts), the OpenAPI document describes them (server/openapi/router.ts) and
// docs/endpoints.md lists them with their files (tools/endpoints.ts), all from allEndpoints below.
//
// The order is the OpenAPI document's: its tags and operations come in this order. It is not the
// order of the routes: the app mounts a path with a fixed segment before one with a parameter in its
// place (mountOrder in server/app.ts), so a feature's place here never decides which endpoint
// answers a URL. test/http/http/features.test.ts holds that every folder with a routes.ts is here under
// its name and defines only endpoints of its own.
import type { Endpoint } from './http/endpoint.ts';
import { endpoints as auth } from './auth/routes.ts';
import { endpoints as onboarding } from './onboarding/routes.ts';
import { endpoints as push } from './push/routes.ts';
import { endpoints as accounts } from './accounts/routes.ts';
import { endpoints as follows } from './follows/routes.ts';
import { endpoints as users } from './users/routes.ts';
import { endpoints as uploads } from './uploads/routes.ts';
import { endpoints as search } from './search/routes.ts';
import { endpoints as hubs } from './hubs/routes.ts';
import { endpoints as reports } from './reports/routes.ts';
import { endpoints as posts } from './posts/routes.ts';
import { endpoints as votes } from './votes/routes.ts';
import { endpoints as comments } from './comments/routes.ts';
import { endpoints as notifications } from './notifications/routes.ts';
import { endpoints as feeds } from './feeds/routes.ts';
import { endpoints as discussions } from './discussions/routes.ts';

/** Each feature's endpoints, by the name of its folder. */
export const features = {
  auth,
  onboarding,
  push,
  accounts,
  follows,
  users,
  uploads,
  search,
  hubs,
  reports,
  posts,
  votes,
  comments,
  notifications,
  feeds,
  discussions,
} satisfies Record<string, readonly Endpoint[]>;

/** Every endpoint of /api/v1, feature by feature. */
export const allEndpoints: Endpoint[] = Object.values(features).flat();

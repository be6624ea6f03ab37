// Layering (npm run lint): dependencies run one way, main.ts → worker/, server/ → db/ → the base
// files beside main.ts (config.ts, logger.ts, bounded-map.ts: what every layer may use), and no
// module reaches itself again through its imports (type-only imports included).
// Inside server/, the endpoint framework (http/) does not import the services or the app that use it.
// Inside server/, the folders import one way (serverFolders below), so no two of them import each
// other, directly or through a third. Inside worker/, the feature folders of worker/tasks import
// none of each other; what they share sits in worker/ itself (object-store.ts, feature.ts). Tests
// may use every layer; no layer uses the tests.
const layers = [
  { name: 'base', path: '^(config|logger|bounded-map)\\.ts$', below: [] },
  { name: 'db', path: '^db/', below: ['base'] },
  { name: 'server', path: '^server/', below: ['db', 'base'] },
  { name: 'worker', path: '^worker/', below: ['db', 'base'] },
];
const layerPath = Object.fromEntries(layers.map((layer) => [layer.name, layer.path]));

// server/'s folders in the order they may import: each imports only folders listed before it. The
// endpoint framework first, then what endpoints share (object storage, the shapes read by more than
// one resource in shapes/, live delivery in sse/), then the resources. A new folder takes its place
// here; an import against the order means moving a folder later, which is possible only when
// nothing between imports it (else the two folders would import each other: move what they share
// into shapes/). The files directly in server/ (app.ts, services.ts, ...) assemble the folders and
// are held by no-circular alone.
const serverFolders = [
  'http',
  'uploads',
  'auth',
  'openapi',
  'reports',
  'votes',
  'graphql',
  'shapes',
  'sse',
  'notifications',
  'comments',
  'hubs',
  'posts',
  'feeds',
  'search',
  'web',
  'discussions',
  'users',
  'onboarding',
  'follows',
  'push',
  'accounts',
];
const folderPath = (names) => `^server/(${names.join('|')})/`;

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A circle of imports: one of them runs the wrong way.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...layers.map((layer) => ({
      name: `${layer.name}-layer`,
      comment: `${layer.name} may import only ${layer.below.length ? layer.below.join(', ') : 'packages'} among the project's folders.`,
      severity: 'error',
      from: { path: layer.path },
      to: {
        path: '^(config\\.ts|logger\\.ts|bounded-map\\.ts|main\\.ts|db/|server/|worker/|test/)',
        pathNot: [layer.path, ...layer.below.map((name) => layerPath[name])],
      },
    })),
    {
      name: 'http-below-services',
      comment: 'The endpoint framework (server/http) hands the services to handlers without importing them.',
      severity: 'error',
      from: { path: '^server/http/' },
      to: { path: '^server/(services|app)\\.ts$' },
    },
    ...serverFolders.slice(0, -1).map((folder, index) => ({
      name: `server-${folder}-one-way`,
      comment: `server/${folder}/ imports only the folders before it in serverFolders (${serverFolders.slice(0, index).join(', ') || 'none'}).`,
      severity: 'error',
      from: { path: folderPath([folder]) },
      to: { path: folderPath(serverFolders.slice(index + 1)) },
    })),
    {
      name: 'worker-features-apart',
      comment: 'A feature folder of worker/tasks imports no other one: what two share belongs in worker/ itself.',
      severity: 'error',
      from: { path: '^worker/tasks/([^/]+)/' },
      to: { path: '^worker/tasks/', pathNot: '^worker/tasks/$1/' },
    },
    {
      name: 'server-folder-listed',
      comment: 'Every folder of server/ that imports another has its place in serverFolders.',
      severity: 'error',
      from: { path: '^server/[^/]+/', pathNot: folderPath(serverFolders) },
      to: { path: '^server/[^/]+/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: 'node_modules' },
    tsPreCompilationDeps: true,
  },
};

// Layering (npm run lint): dependencies run one way, main.ts → worker/, server/ → db/ → config.ts,
// logger.ts, and no module reaches itself again through its imports (type-only imports included).
// Inside server/, the endpoint framework (http/) does not import the services or the app that use it.
// Tests may use every layer; no layer uses the tests.
const layers = [
  { name: 'config', path: '^(config|logger)\\.ts$', below: [] },
  { name: 'db', path: '^db/', below: ['config'] },
  { name: 'server', path: '^server/', below: ['db', 'config'] },
  { name: 'worker', path: '^worker/', below: ['db', 'config'] },
];
const layerPath = Object.fromEntries(layers.map((layer) => [layer.name, layer.path]));

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
        path: '^(config\\.ts|logger\\.ts|main\\.ts|db/|server/|worker/|test/)',
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
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: 'node_modules' },
    tsPreCompilationDeps: true,
  },
};

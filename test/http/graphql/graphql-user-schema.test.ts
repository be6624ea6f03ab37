// The schema a user token gets from the internal GraphQL API, walked by introspection and checked
// against a reviewed allow-list (contract section 10: GraphQL shows a user token no more than REST
// shows that user). Every object type and field that carries data must be listed in
// graphql-user-schema.allow-list.txt: row types and their columns and relations, root fields,
// function results. Connection, edge and aggregate types are derived from those row types by
// PostGraphile; they are not listed, but every aggregate must be over a listed field. Anything new
// (a table, a column, a grant, a relation, an exposed function) fails here until someone has checked
// that REST shows it to the viewers who may read its rows, and added its lines.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { anonymousUser } from '../../helpers/users.ts';

const allowListFile = new URL('./graphql-user-schema.allow-list.txt', import.meta.url);

let app: TestApp;
let token: string;
beforeAll(async () => {
  app = await startTestApp();
  token = (await anonymousUser(app)).token;
});
afterAll(() => app.close());

interface IntrospectedType {
  kind: string;
  name: string;
  fields: { name: string }[] | null;
  inputFields: { name: string }[] | null;
  enumValues: { name: string }[] | null;
}

// Types PostGraphile derives from a row type: connections, edges, and aggregates (pg-aggregates).
const derivedType = /(Connection|Edge|Aggregates)$/;
// The fields of an aggregates type that are not columns: groupedAggregates keys and the containers.
const aggregateContainers = new Set([
  'keys',
  'sum',
  'distinctCount',
  'min',
  'max',
  'average',
  'stddevSample',
  'stddevPopulation',
  'varianceSample',
  'variancePopulation',
]);

async function introspect(): Promise<IntrospectedType[]> {
  const query = '{ __schema { types { kind name fields { name } inputFields { name } enumValues { name } } } }';
  const response = await fetch(`${app.url}/internal/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  const body = (await response.json()) as { data: { __schema: { types: IntrospectedType[] } } };
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body.data.__schema.types.filter((type) => !type.name.startsWith('__'));
}

/** `Type` and `Type.field` for every object and interface type that is not derived. */
function entriesOf(types: IntrospectedType[]): string[] {
  const entries: string[] = [];
  for (const type of types) {
    if ((type.kind !== 'OBJECT' && type.kind !== 'INTERFACE') || derivedType.test(type.name)) continue;
    entries.push(type.name, ...(type.fields ?? []).map((field) => `${type.name}.${field.name}`));
  }
  return entries.sort();
}

async function allowList(): Promise<Set<string>> {
  const text = await readFile(allowListFile, 'utf8');
  return new Set(
    text
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#')),
  );
}

describe('the user-token GraphQL schema', () => {
  let types: IntrospectedType[];
  let allowed: Set<string>;
  beforeAll(async () => {
    [types, allowed] = await Promise.all([introspect(), allowList()]);
  });

  it('holds only reviewed types and fields', () => {
    const unreviewed = entriesOf(types).filter((entry) => !allowed.has(entry));
    expect(
      unreviewed,
      `not on ${allowListFile.pathname}; check REST shows each to the viewers who may read its rows, then add:\n${unreviewed.join('\n')}\n`,
    ).toEqual([]);
  });

  it('aggregates only listed fields', () => {
    const listedFields = new Set([...allowed].map((entry) => entry.split('.')[1]).filter(Boolean));
    const aggregated = types
      .filter((type) => type.kind === 'OBJECT' && type.name.endsWith('Aggregates'))
      .flatMap((type) =>
        (type.fields ?? [])
          .filter((field) => !aggregateContainers.has(field.name) && !listedFields.has(field.name))
          .map((field) => `${type.name}.${field.name}`),
      );
    expect(aggregated).toEqual([]);
  });

  it('lists nothing the schema no longer has (the allow-list stays a true picture)', () => {
    const present = new Set(entriesOf(types));
    expect([...allowed].filter((entry) => !present.has(entry))).toEqual([]);
  });
});

describe('the exposures of issue 9', () => {
  it("has no invitee (phone to account) and no members' mute setting or join time", async () => {
    for (const [query, field] of [
      ['{ allHubInvitations { nodes { inviteeId userByInviteeId { username } } } }', 'inviteeId'],
      ['{ allHubInvitations { nodes { userByInviteeId { username } } } }', 'userByInviteeId'],
      ['{ allHubMemberships { nodes { contentMuted } } }', 'contentMuted'],
      ['{ allHubMemberships { nodes { joinedAt } } }', 'joinedAt'],
    ]) {
      const response = await fetch(`${app.url}/internal/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query }),
      });
      const body = (await response.json()) as { data?: unknown; errors: { message: string }[] };
      expect(response.status, query).toBe(400);
      expect(body.data, query).toBeUndefined();
      expect(body.errors[0]?.message, query).toMatch(new RegExp(`Cannot query field "${field}"`));
    }
  });
});

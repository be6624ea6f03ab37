// The request rules of the OpenAPI document are the server's: for every operation with a body, a
// body the document's schema accepts passes the server's own validation (the endpoint's zod
// schema), and a body the server accepts fits the document. So a rule the server enforces and the
// document leaves out (a pattern, a length after trimming, a field two others require, at least one
// field), or one the document states and the server does not, fails here. The bodies come from the
// document's schemas (test/helpers/schema-arbitrary.ts: mostly fitting, hostile values mixed in at
// every level) and are checked with Ajv against the document, $refs and all. Query parameters are
// strings on the wire (the server coerces them), so they are held to the document by fuzz.test.ts.
import fc from 'fast-check';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { allEndpoints } from '../../../server/features.ts';
import { openApiDocument } from '../../../server/openapi/document.ts';
import { valueFor } from '../../helpers/schema-arbitrary.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const runsPerOperation = Number(process.env.FUZZ_RUNS ?? 25) * 40;

describe('the request rules of the OpenAPI document', () => {
  it('accept exactly the bodies the server accepts', () => {
    const document = openApiDocument(allEndpoints) as any;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const id = 'https://opinion.example/openapi.json';
    ajv.addSchema({ ...structuredClone(document), $id: id });
    const escape = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');
    const disagreements: string[] = [];
    let accepted = 0;
    let refused = 0;
    for (const definition of allEndpoints) {
      if (!definition.body) continue;
      const pointer = `/paths/${escape(definition.path)}/${definition.method}/requestBody/content/application~1json/schema`;
      const fits = ajv.getSchema(`${id}#${pointer}`);
      if (!fits) throw new Error(`no schema at ${pointer}`);
      const schema = document.paths[definition.path][definition.method].requestBody.content['application/json'].schema;
      for (const body of fc.sample(valueFor(schema), { numRuns: runsPerOperation, seed: 25 })) {
        const byDocument = fits(body) as boolean;
        const byServer = definition.body.safeParse(body);
        if (byDocument === byServer.success) {
          if (byServer.success) accepted += 1;
          else refused += 1;
          continue;
        }
        const why = byDocument
          ? `the server refuses it: ${JSON.stringify(byServer.error?.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`))}`
          : `the document refuses it: ${ajv.errorsText(fits.errors)}`;
        disagreements.push(`${definition.method} ${definition.path} ${JSON.stringify(body).slice(0, 200)}: ${why}`);
      }
    }
    expect(disagreements.slice(0, 10), `${disagreements.length} disagreements`).toEqual([]);
    // Both sides were exercised: bodies that pass and bodies that are refused, for every operation.
    expect(accepted).toBeGreaterThan(1000);
    expect(refused).toBeGreaterThan(1000);
  });
});

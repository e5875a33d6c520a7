#!/usr/bin/env node
/**
 * Counts the success responses (2xx) of an OpenAPI document whose JSON body has no real schema:
 * missing, or a bare `{ "type": "object" }` with no properties and no reference. Exits 1 when
 * there is any, listing them, and when a 201 or 202 documents no Location header.
 *
 *   node scripts/openapi-bare-responses.cjs packages/client/openapi.json
 *   node scripts/openapi-bare-responses.cjs http://127.0.0.1:3000/docs/openapi.json
 */
const { readFileSync } = require('node:fs');

function bareResponses(document) {
  const found = [];
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (!/^2\d\d$/.test(status) || status === '204') continue;
        const where = `${method.toUpperCase()} ${path} ${status}`;
        const content = response.content ?? {};
        const json = content['application/json'];
        const bytes = Object.keys(content).some((type) => !type.endsWith('json'));
        if (!json && !bytes) found.push(`${where}: no body documented`);
        const schema = json?.schema;
        if (json && (!schema || (!schema.$ref && !schema.properties && !schema.items && !schema.oneOf))) {
          found.push(`${where}: bare schema ${JSON.stringify(schema ?? null)}`);
        }
        if ((status === '201' || status === '202') && !response.headers?.Location) {
          found.push(`${where}: no Location header`);
        }
      }
    }
  }
  return found;
}

async function main(source) {
  if (!source) {
    console.error('usage: openapi-bare-responses.cjs <openapi.json | URL>');
    return 2;
  }
  const document = /^https?:/.test(source)
    ? await (await fetch(source)).json()
    : JSON.parse(readFileSync(source, 'utf8'));
  const found = bareResponses(document);
  for (const line of found) console.log(line);
  console.log(`${found.length} success response(s) without a schema or Location`);
  return found.length ? 1 : 0;
}

module.exports = { bareResponses };

if (require.main === module) {
  main(process.argv[2]).then((code) => process.exit(code));
}

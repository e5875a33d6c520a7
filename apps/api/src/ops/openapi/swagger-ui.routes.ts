import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { PROBLEM_JSON, problemOf } from '../../common/problem-details.filter';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Listing API</title>
<link rel="icon" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// A separate file rather than an inline script, so a strict Content-Security-Policy can apply.
const INIT = `window.ui = SwaggerUIBundle({
  url: '/docs/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'StandaloneLayout',
  persistAuthorization: false,
});
`;

/**
 * Swagger UI at /docs and the document at /docs/openapi.json. The UI's files come from
 * swagger-ui-dist, read once from a fixed list (no path from the request reaches the disk), so no
 * static-file plugin is needed. The document is built on first request: the controllers are
 * known only once the Nest application is assembled.
 */
export function registerSwaggerUi(fastify: FastifyInstance, document: () => object): void {
  const dist = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  const files = new Map(Object.keys(ASSETS).map((name) => [name, readFileSync(path.join(dist, name))]));
  let json: string | null = null;
  fastify.get('/docs', (_request, reply) => {
    void reply.type('text/html; charset=utf-8').send(PAGE);
  });
  fastify.get('/docs/init.js', (_request, reply) => {
    void reply.type('application/javascript; charset=utf-8').send(INIT);
  });
  fastify.get('/docs/openapi.json', (_request, reply) => {
    json ??= JSON.stringify(document());
    void reply.type('application/json; charset=utf-8').send(json);
  });
  fastify.get<{ Params: { file: string } }>('/docs/assets/:file', (request, reply) => {
    const body = files.get(request.params.file);
    if (!body) {
      return void reply
        .code(404)
        .type(PROBLEM_JSON)
        .send(JSON.stringify(problemOf('ROUTE_NOT_FOUND', 'no such file')));
    }
    void reply.type(ASSETS[request.params.file]!).header('cache-control', 'public, max-age=86400').send(body);
  });
}

import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { PROBLEM_JSON, PROBLEM_TYPES_PATH, problemOf } from '../../common/problem-details.filter';
import { problemTypesOf, type ProblemTypeEntry } from './openapi.generator';

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
  // No badge from validator.swagger.io: it would hand the document's URL to a third party.
  validatorUrl: null,
});
`;

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

function problemPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)} · Listing API</title>
<link rel="icon" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<main>
${body}
<p><a href="${PROBLEM_TYPES_PATH}">All problem types</a> · <a href="/docs">API reference</a></p>
</main>
</body>
</html>
`;
}

/** The page a problem's `type` points at: its title, code, status, retryable and description. */
function problemTypePage(entry: ProblemTypeEntry & { code: string }): string {
  return problemPage(
    entry.title,
    `<h1>${escapeHtml(entry.title)}</h1>
<dl>
<dt>code</dt><dd><code>${escapeHtml(entry.code)}</code></dd>
<dt>status</dt><dd>${entry.status}</dd>
<dt>retryable</dt><dd>${entry.retryable ? 'yes: retrying later can succeed (see <code>Retry-After</code>)' : 'no'}</dd>
</dl>
<p>${escapeHtml(entry.description)}</p>`,
  );
}

function problemIndexPage(entries: Iterable<ProblemTypeEntry & { code: string }>): string {
  const items = [...entries].map(
    (e) =>
      `<li><a href="${escapeHtml(e.type)}"><code>${escapeHtml(e.code)}</code></a> ${e.status}: ${escapeHtml(e.description)}</li>`,
  );
  return problemPage('Problem types', `<h1>Problem types</h1>\n<ul>\n${items.join('\n')}\n</ul>`);
}

/**
 * Swagger UI at /docs, the document at /docs/openapi.json, and a page per problem type at
 * /docs/problems/{code-in-kebab-case} (what every problem's `type` points at) with their index at
 * /docs/problems. The UI's files come from swagger-ui-dist, read once from a fixed list (no path
 * from the request reaches the disk), so no static-file plugin is needed. The document is built
 * on first request: the controllers are known only once the Nest application is assembled. The
 * problem pages are rendered from the document's `x-problem-types` (the merged error catalogue),
 * so the pages and the document cannot disagree.
 */
export function registerSwaggerUi(fastify: FastifyInstance, document: () => object): void {
  const dist = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  const files = new Map(Object.keys(ASSETS).map((name) => [name, readFileSync(path.join(dist, name))]));
  let json: string | null = null;
  let problemTypes: ReturnType<typeof problemTypesOf> | null = null;
  const problemTypesNow = () => (problemTypes ??= problemTypesOf(document()));
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
  fastify.get(PROBLEM_TYPES_PATH, (_request, reply) => {
    void reply.type('text/html; charset=utf-8').send(problemIndexPage(problemTypesNow().values()));
  });
  fastify.get<{ Params: { code: string } }>(`${PROBLEM_TYPES_PATH}/:code`, (request, reply) => {
    const entry = problemTypesNow().get(`${PROBLEM_TYPES_PATH}/${request.params.code}`);
    if (!entry) {
      return void reply
        .code(404)
        .type(PROBLEM_JSON)
        .send(JSON.stringify(problemOf('ROUTE_NOT_FOUND', 'no such problem type')));
    }
    void reply.type('text/html; charset=utf-8').send(problemTypePage(entry));
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

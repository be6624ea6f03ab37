// A small page that renders /api/v1/openapi.json: operations grouped by tag, with parameters,
// request and response schemas, access levels and error codes.
export const docsPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{padding:24px 32px;background:#fff;border-bottom:1px solid #ddd}
main{max-width:1000px;margin:0 auto;padding:16px 32px}
h2{margin-top:32px;border-bottom:1px solid #ddd}
details{background:#fff;border:1px solid #ddd;border-radius:6px;margin:8px 0;padding:8px 12px}
summary{cursor:pointer;font-family:ui-monospace,monospace}
.m{display:inline-block;min-width:60px;font-weight:bold;text-transform:uppercase}
.get{color:#0a7}.post{color:#06c}.put,.patch{color:#b70}.delete{color:#c33}
pre{background:#f3f3f3;padding:8px;overflow:auto;font-size:13px}
.tag{font-size:12px;background:#eee;border-radius:4px;padding:1px 6px;margin-left:6px}
</style></head><body>
<header><h1 id="title">API reference</h1><p id="intro"></p><p><a href="openapi.json">openapi.json</a></p></header>
<main id="ops"></main>
<script>
fetch('openapi.json').then(r => r.json()).then(doc => {
  document.getElementById('title').textContent = doc.info.title + ' ' + doc.info.version;
  document.getElementById('intro').textContent = doc.info.description;
  const byTag = {};
  for (const [path, ops] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(ops))
    (byTag[op.tags[0]] ??= []).push({ path, method, op });
  const main = document.getElementById('ops');
  const esc = s => String(s).replace(/[&<>]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]);
  for (const [tag, ops] of Object.entries(byTag)) {
    main.insertAdjacentHTML('beforeend', '<h2>' + esc(tag) + '</h2>');
    for (const { path, method, op } of ops) {
      const auth = op.security.length === 0 ? 'public' : op.security.length === 2 ? 'optional token' : 'bearer';
      let html = '<details><summary><span class="m ' + method + '">' + method + '</span>' + esc(path) +
        '<span class="tag">' + auth + '</span>' + (op['x-access-level'] ? '<span class="tag">level ' + op['x-access-level'] + '</span>' : '') +
        ' ' + esc(op.summary) + '</summary>';
      if (op.description) html += '<p>' + esc(op.description) + '</p>';
      if (op.parameters) html += '<h4>Parameters</h4><pre>' + esc(JSON.stringify(op.parameters, null, 2)) + '</pre>';
      if (op.requestBody) html += '<h4>Body</h4><pre>' + esc(JSON.stringify(op.requestBody.content['application/json'].schema, null, 2)) + '</pre>';
      for (const [status, response] of Object.entries(op.responses)) {
        html += '<h4>' + status + '</h4><p>' + esc(response.description) + '</p>';
        const schema = response.content && Object.values(response.content)[0].schema;
        if (schema && !schema.$ref) html += '<pre>' + esc(JSON.stringify(schema, null, 2)) + '</pre>';
      }
      main.insertAdjacentHTML('beforeend', html + '</details>');
    }
  }
});
</script></body></html>`;

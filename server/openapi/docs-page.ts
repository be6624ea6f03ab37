// The docs page at /api/v1/docs (and /docs/): swagger-ui from the swagger-ui-dist package, served by
// this process (no CDN, works offline). Chosen over Redoc and Scalar because it ships as static
// files with no build step and no runtime dependencies, renders OpenAPI 3.1, and its "Try it out"
// calls this same server, which is what a mobile-client author exploring the API wants. The
// document is inlined in the page, so it renders as soon as the script loads (no second fetch).
// Asset URLs are absolute, so the page works with or without the trailing slash.

export const docsAssets = ['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png'];

export function docsPage(assetBase: string, document: unknown): string {
  // JSON inside <script>: `<` escaped so no string in the document can close the element.
  const inline = JSON.stringify(document).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="${assetBase}/favicon-32x32.png">
<link rel="stylesheet" href="${assetBase}/swagger-ui.css">
<style>body{margin:0}</style>
</head><body>
<div id="swagger-ui"></div>
<script src="${assetBase}/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({
  spec: ${inline},
  dom_id: '#swagger-ui',
  deepLinking: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 1,
  tryItOutEnabled: false,
});
</script>
</body></html>`;
}

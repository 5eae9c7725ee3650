//! What the extension's webviews share: escaping, and the page around a view's body, with a
//! content security policy that lets only the view's own script (by nonce) run and its inline
//! styles and pictures show, and colours from the editor's theme.

import { randomBytes } from "node:crypto";

/** Text safe inside an element or a double-quoted attribute. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** A fresh nonce for one page's script. */
export function makeNonce(): string {
  return randomBytes(18).toString("base64");
}

export interface PageParts {
  title: string;
  body: string;
  script: string;
  /** The webview's `cspSource`. */
  cspSource: string;
  nonce: string;
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size);
  color: var(--vscode-foreground); background: var(--vscode-editor-background); padding: 0 16px 24px; }
h1 { font-size: 1.4em; margin: 12px 0 4px; }
h2 { font-size: 1.1em; margin: 20px 0 6px; }
.summary, .hint { color: var(--vscode-descriptionForeground); }
.hint { font-weight: normal; font-size: 0.9em; margin-left: 8px; }
.error { color: var(--vscode-errorForeground); white-space: pre-wrap; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 2px 10px 2px 0; vertical-align: top; }
td { white-space: nowrap; }
td.note { white-space: normal; }
th { color: var(--vscode-descriptionForeground); font-weight: normal; border-bottom: 1px solid var(--vscode-panel-border, #8884); }
td.num { text-align: right; color: var(--vscode-descriptionForeground); }
code, .call { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
a { color: var(--vscode-textLink-foreground); text-decoration: none; cursor: pointer; }
a:hover { text-decoration: underline; }
tr.hl td { background: var(--vscode-editor-selectionBackground); }
tr.chosen td { font-weight: bold; }
.picture { overflow: auto; max-width: 100%; }
.picture svg { background: #fff; border-radius: 4px; }
svg g.value.hl rect { stroke: #000; stroke-width: 2.5; }
.tip { position: fixed; z-index: 10; pointer-events: none; white-space: pre-wrap; max-width: min(640px, calc(100vw - 24px));
  background: var(--vscode-editorHoverWidget-background, #252526); color: var(--vscode-editorHoverWidget-foreground, #ccc);
  border: 1px solid var(--vscode-editorHoverWidget-border, #454545); padding: 4px 8px; border-radius: 3px;
  font-family: var(--vscode-editor-font-family); font-size: 12px; }
.metrics td:first-child { color: var(--vscode-descriptionForeground); padding-right: 16px; }
.metrics td.big { font-size: 1.3em; font-weight: bold; }
.maps { display: flex; flex-wrap: wrap; gap: 32px; }
figure { margin: 0; }
figcaption { margin: 6px 0; color: var(--vscode-descriptionForeground); }
.readout { min-height: 1.4em; font-family: var(--vscode-editor-font-family); }
`;

/** The whole HTML document of a view. */
export function page(parts: PageParts): string {
  const csp = [
    "default-src 'none'",
    `img-src ${parts.cspSource} data:`,
    `style-src ${parts.cspSource} 'unsafe-inline'`,
    `script-src 'nonce-${parts.nonce}'`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(parts.title)}</title>
<style>${STYLE}</style>
</head>
<body>
${parts.body}
<script nonce="${parts.nonce}">${parts.script}</script>
</body>
</html>
`;
}

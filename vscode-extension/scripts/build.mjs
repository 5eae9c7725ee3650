// Bundles the extension (and the end-to-end driver) with esbuild: one CommonJS file each, so
// the .vsix needs no node_modules and VS Code loads a single module.
import * as esbuild from "esbuild";

const common = {
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  sourcemap: true,
  logLevel: "warning",
};

await esbuild.build({
  ...common,
  entryPoints: ["src/extension.ts"],
  outfile: "out/extension.js",
  // Provided by the extension host at run time.
  external: ["vscode"],
  // Small to load; names kept so stack traces in bug reports stay readable.
  minify: true,
  keepNames: true,
});

await esbuild.build({
  ...common,
  entryPoints: ["test/e2e/smoke.ts"],
  outfile: "out/e2e/smoke.js",
  // Loaded from node_modules: it locates its own files relative to its package.
  external: ["playwright-core"],
});

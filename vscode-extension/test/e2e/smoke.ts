// End-to-end smoke test: the packaged extension in a real VS Code (code-server), driven through
// headless Chromium the way a user would click through it.
//
// In a fresh copy of examples/QKV whose spec has one refused instruction, it
//   1. opens QKV.py and waits for the refusal (an unknown buffer) in the Problems panel;
//   2. applies a quick fix from the editor's quick-fix menu (Ctrl+.) and checks the edit on disk,
//      the refusal gone and the instruction's remaining warning republished, then deletes the line;
//   3. runs "ACT: Generate Backend", cancels it, runs it again and waits for backends/QKV;
//   4. opens kernels/attention.hlo and runs "ACT: Compile Kernel";
//   5. runs "ACT: Show Compile Report": checks the assembly listing against report.json, hovers
//      a value of the memory picture, and follows a link from the listing to the HLO;
//   6. runs the spec for its oracle (`python QKV.py`), then "ACT: Simulate Kernel", and checks
//      the simulation view (largest difference in ulps, run time, the two heatmaps);
// and, in windows of their own, checks that Restricted Mode hides the build commands (while
// kernels are still checked) and that a missing interpreter is reported with its fix.
// Each step saves a screenshot into the results folder; a failure saves one more and the logs.
//
// Configuration (environment): ACT_E2E_CODE_SERVER, ACT_E2E_CHROMIUM, ACT_E2E_PYTHON,
// ACT_E2E_VSIX, ACT_E2E_RESULTS, ACT_E2E_UNTIL (diagnostic|quickfix|generate|compile|report|
// simulate),
// ACT_E2E_SIDE_CHECKS (1 runs those two checks), ACT_E2E_KEEP (1 keeps the temp dir),
// ACT_E2E_GENERATE_TIMEOUT_S. scripts/e2e.sh fills them in.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

import { type Browser, chromium, type Frame, type Locator, type Page } from "playwright-core";

const STEPS = ["diagnostic", "quickfix", "generate", "compile", "report", "simulate"] as const;
type Step = (typeof STEPS)[number];

interface Options {
  codeServer: string;
  chromium: string;
  python: string;
  vsix: string;
  repo: string;
  results: string;
  until: Step;
  sideChecks: boolean;
  keep: boolean;
  generateTimeoutMs: number;
}

/** A kernel with an operator no HLO has: checked (and refused) even in Restricted Mode. */
const BROKEN_KERNEL = [
  "HloModule broken",
  "",
  "ENTRY %broken (p: f32[4]) -> f32[4] {",
  "  %p = f32[4]{0} parameter(0)",
  "  ROOT %x = f32[4]{0} frobnicate(f32[4]{0} %p)",
  "}",
  "",
].join("\n");

/** The refused instruction: it reads a buffer the accelerator does not have. */
const REFUSED_LINE = 'qkv.add_instruction("zero", ["n"], ["addr"]).set_inputs([["d9", ["@a.addr"], ["@c.n"]]])';

/**
 * The quick fix applied to it: 'd9' is as like d0 as d1 and d2, so the server offers all three
 * (none preferred) and the test chooses one that is not first in the menu.
 */
const QUICK_FIX = { title: "Change to 'd1'", offered: ["Change to 'd0'", "Change to 'd1'", "Change to 'd2'"], from: '"d9"', to: '"d1"' };

/** What is left of the instruction once its buffer is fixed: a warning, no fix (no outputs). */
const REMAINING_WARNING = "instruction 'zero': no semantics";

function env(name: string, fallback?: string): string {
  const value = process.env[name] ?? fallback;
  if (value === undefined || value === "") {
    throw new Error(`set ${name} (scripts/e2e.sh sets it)`);
  }
  return value;
}

function options(): Options {
  const until = env("ACT_E2E_UNTIL", "simulate") as Step;
  if (!STEPS.includes(until)) {
    throw new Error(`ACT_E2E_UNTIL must be one of ${STEPS.join(", ")}, got ${until}`);
  }
  const extension = path.resolve(__dirname, "../..");
  return {
    codeServer: env("ACT_E2E_CODE_SERVER"),
    chromium: env("ACT_E2E_CHROMIUM", "/usr/bin/chromium"),
    python: env("ACT_E2E_PYTHON", "python3"),
    vsix: env("ACT_E2E_VSIX", path.join(extension, "act-backend.vsix")),
    repo: path.resolve(extension, ".."),
    results: env("ACT_E2E_RESULTS", path.join(extension, "test-results")),
    until,
    sideChecks: process.env.ACT_E2E_SIDE_CHECKS === "1",
    keep: process.env.ACT_E2E_KEEP === "1",
    generateTimeoutMs: Number(env("ACT_E2E_GENERATE_TIMEOUT_S", "1800")) * 1000,
  };
}

function log(message: string): void {
  process.stdout.write(`[e2e] ${message}\n`);
}

// ---------------------------------------------------------------------------------------------
// The workspace and the editor

interface Workspace {
  folder: string;
  /** The spec's 1-based line with REFUSED_LINE. */
  refusedLine: number;
  /** examples/QKV/QKV.py as it is: the spec once the refused line is deleted. */
  original: string;
}

/** A copy of examples/QKV (spec, kernels, data) with the refused line before the generate calls. */
function makeWorkspace(opts: Options, root: string): Workspace {
  const folder = path.join(root, "workspace", "QKV");
  const example = path.join(opts.repo, "examples", "QKV");
  fs.mkdirSync(folder, { recursive: true });
  for (const entry of ["kernels", "data"]) {
    fs.cpSync(path.join(example, entry), path.join(folder, entry), { recursive: true });
  }
  const original = fs.readFileSync(path.join(example, "QKV.py"), "utf8");
  const lines = original.split("\n");
  const at = lines.findIndex((l) => l.startsWith("generate_oracle("));
  if (at < 0) {
    throw new Error("examples/QKV/QKV.py has no generate_oracle(...) line to insert before");
  }
  lines.splice(at, 0, REFUSED_LINE);
  fs.writeFileSync(path.join(folder, "QKV.py"), lines.join("\n"));
  fs.writeFileSync(path.join(folder, "kernels", "broken.hlo"), BROKEN_KERNEL);
  return { folder, refusedLine: at + 1, original };
}

function userSettings(opts: Options, trusted: boolean): Record<string, unknown> {
  return {
    "act.pythonPath": opts.python,
    // Traced, so the run also shows that the setting alone turns the protocol trace on.
    "act.trace.server": "messages",
    "security.workspace.trust.enabled": !trusted,
    "security.workspace.trust.startupPrompt": "never",
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.colorTheme": "Default Dark Modern",
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "update.mode": "none",
    "editor.minimap.enabled": false,
    "editor.stickyScroll.enabled": false,
    "files.autoSave": "off",
    "window.zoomLevel": 0,
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

interface Editor {
  process: ChildProcess;
  url: string;
  userData: string;
  output: string[];
}

async function startCodeServer(
  opts: Options,
  root: string,
  name: string,
  settings: Record<string, unknown>,
  folder: string,
): Promise<Editor> {
  const userData = path.join(root, `${name}-user-data`);
  const extensions = path.join(root, "extensions");
  const config = path.join(root, "code-server.yaml");
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.writeFileSync(path.join(userData, "User", "settings.json"), JSON.stringify(settings, null, 2));
  fs.writeFileSync(config, "");
  const common = ["--user-data-dir", userData, "--extensions-dir", extensions, "--config", config];
  if (!fs.existsSync(path.join(extensions, "extensions.json"))) {
    log(`installing ${opts.vsix}`);
    execFileSync(opts.codeServer, [...common, "--install-extension", opts.vsix], { stdio: "inherit" });
  }
  const port = await freePort();
  const args = [...common, "--auth", "none", "--disable-telemetry", "--disable-update-check", "--bind-addr", `127.0.0.1:${port}`];
  // detached: the server gets its own process group, so stopping it stops its extension hosts.
  const child = spawn(opts.codeServer, args, { detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const output: string[] = [];
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`code-server did not listen within 60 s:\n${output.join("")}`)), 60_000);
    const onData = (data: Buffer) => {
      output.push(data.toString());
      if (output.join("").includes("HTTP server listening")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`code-server exited with ${code}:\n${output.join("")}`)));
  });
  await listening;
  log(`code-server (${name}) on port ${port}`);
  return { process: child, url: `http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`, userData, output };
}

function stopCodeServer(editor: Editor): void {
  if (editor.process.pid !== undefined && editor.process.exitCode === null) {
    try {
      process.kill(-editor.process.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
}

async function openWorkbench(browser: Browser, editor: Editor): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(editor.url);
  await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  // The ACT status item appears once the extension has activated.
  await page.locator(".statusbar").waitFor({ timeout: 30_000 });
  return page;
}

const ACT_STATUS = '[id="act-compiler.act-backend.act.status"]';

async function openFile(page: Page, relative: string): Promise<void> {
  await page.keyboard.press("Control+P");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 15_000 });
  await input.fill(relative);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: path.basename(relative) }).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press("Enter");
  // By the file's name: a webview's tab may mention it too ("Compile Report: attention.hlo").
  await page.locator(`.tabs-container .tab.active[data-resource-name="${path.basename(relative)}"]`).waitFor({ timeout: 15_000 });
}

/** Saves the active editor, which must have unsaved changes, and waits until it is written. */
async function saveEditedFile(page: Page): Promise<void> {
  const dirty = page.locator(".tabs-container .tab.active.dirty");
  await dirty.waitFor({ timeout: 15_000 });
  await page.keyboard.press("Control+S");
  await dirty.waitFor({ state: "detached", timeout: 15_000 });
}

/** Runs a palette command by its full title ("ACT: Generate Backend"). */
async function runCommand(page: Page, title: string): Promise<void> {
  const input = page.locator(".quick-input-widget input");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
  // A webview that takes the focus as it settles closes the palette, or keeps the key from
  // opening it: then give the focus back to the workbench and open it again.
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press("F1");
    try {
      await input.waitFor({ timeout: 15_000 });
      await input.fill(`>${title}`, { timeout: 10_000 });
      await row.waitFor({ timeout: 15_000 });
      break;
    } catch (error) {
      if (attempt === 3 || (await input.isVisible())) {
        throw error;
      }
      log(`the command palette closed or did not open before '${title}' was chosen; opening it again`);
      // Evaluated in the page (a string: this file is compiled without the DOM's types).
      await page.evaluate("document.activeElement && document.activeElement.blur()");
    }
  }
  await page.keyboard.press("Enter");
}

/** Palette entries whose label contains `text`. */
async function paletteEntries(page: Page, text: string): Promise<string[]> {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 15_000 });
  await input.fill(`>${text}`);
  // Fuzzy matching always leaves some rows (e.g. "Accounts: ..."), so there is a row to wait for.
  await page.locator(".quick-input-list .monaco-list-row").first().waitFor({ timeout: 15_000 });
  const labels = await page.locator(".quick-input-list .monaco-list-row").evaluateAll((rows) =>
    rows.map((row) => row.getAttribute("aria-label") ?? row.textContent ?? ""),
  );
  await page.keyboard.press("Escape");
  return labels;
}

function notification(page: Page, text: string | RegExp) {
  return page.locator(".notifications-toasts .notification-list-item", { hasText: text });
}

/** Dismisses every notification, so the next outcome is not confused with an earlier one. */
async function clearNotifications(page: Page): Promise<void> {
  await runCommand(page, "Notifications: Clear All Notifications");
  await page.locator(".notifications-toasts .notification-list-item").first().waitFor({ state: "detached", timeout: 15_000 });
}

/**
 * Waits for the message an ACT command ends with (a progress title starts with a capital
 * verb; results and errors do not) and fails with its text unless it contains `success`.
 */
async function waitForOutcome(page: Page, success: string, timeoutMs: number): Promise<void> {
  const outcome = notification(page, /ACT: (?!Generating|Compiling|Simulating)/);
  await outcome.first().waitFor({ timeout: timeoutMs });
  const text = (await outcome.first().textContent()) ?? "";
  if (!text.includes(success)) {
    await page.keyboard.press("Control+Shift+U");
    throw new Error(`expected a message with '${success}', got: ${text}`);
  }
}

async function screenshot(page: Page, opts: Options, name: string): Promise<void> {
  const file = path.join(opts.results, name);
  // Finished animations: a toast caught mid fade-in is unreadable.
  await page.screenshot({ path: file, animations: "disabled" });
  log(`screenshot ${file}`);
}

/**
 * A picture of the part of the window around `around` (their bounding box, with a margin):
 * a popup and what it points at, small enough for the README.
 */
async function screenshotAround(page: Page, opts: Options, name: string, around: Locator[], margin = 24): Promise<void> {
  const boxes = await Promise.all(around.map((l) => l.boundingBox()));
  const found = boxes.filter((b): b is NonNullable<typeof b> => b !== null);
  if (found.length !== around.length) {
    throw new Error(`${name}: ${around.length - found.length} of the elements to picture are not on screen`);
  }
  const viewport = page.viewportSize() ?? { width: 1440, height: 900 };
  const x = Math.max(0, Math.min(...found.map((b) => b.x)) - margin);
  const y = Math.max(0, Math.min(...found.map((b) => b.y)) - margin);
  const right = Math.min(viewport.width, Math.max(...found.map((b) => b.x + b.width)) + margin);
  const bottom = Math.min(viewport.height, Math.max(...found.map((b) => b.y + b.height)) + margin);
  const file = path.join(opts.results, name);
  await page.screenshot({ path: file, animations: "disabled", clip: { x, y, width: right - x, height: bottom - y } });
  log(`screenshot ${file}`);
}

async function waitForFile(file: string, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fs.existsSync(file)) {
    if (Date.now() > deadline) {
      throw new Error(`${what}: ${file} did not appear within ${timeoutMs / 1000} s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

// ---------------------------------------------------------------------------------------------
// The steps

async function diagnosticStep(page: Page, opts: Options, refusedLine: number): Promise<void> {
  await openFile(page, "QKV/QKV.py");
  await page.keyboard.press("Control+Shift+M");
  const problem = page.locator(".markers-panel .monaco-list-row", { hasText: "d9" });
  await problem.first().waitFor({ timeout: 180_000 });
  log(`diagnostic: ${(await problem.first().textContent())?.trim()}`);
  // Put the cursor on the refused buffer, see its squiggle, and show the hover there (with the
  // keyboard: a mouse hover races the squiggle's redraws).
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+G");
  await page.locator(".quick-input-widget input").waitFor({ timeout: 15_000 });
  await page.keyboard.type(`${refusedLine}:${REFUSED_LINE.indexOf('"d9"') + 2}`);
  await page.keyboard.press("Enter");
  await page.locator(".monaco-editor .squiggly-error").filter({ visible: true }).first().waitFor({ timeout: 30_000 });
  await page.keyboard.press("Control+K");
  await page.keyboard.press("Control+I");
  await page.locator(".monaco-hover", { hasText: "d9" }).first().waitFor({ timeout: 15_000 });
  await screenshot(page, opts, "01-refused-instruction.png");
  await page.keyboard.press("Escape");
  await page.locator(".monaco-hover", { hasText: "d9" }).first().waitFor({ state: "hidden", timeout: 15_000 });
}

/**
 * With the cursor still on the refused buffer, opens the quick-fix menu (Ctrl+.), checks the
 * fixes the server offers, applies one and checks its edit (in the editor and, once saved, on
 * disk), the refusal gone and the instruction's other problem republished; then deletes the line.
 */
async function quickFixStep(page: Page, opts: Options, workspace: Workspace): Promise<void> {
  const spec = path.join(workspace.folder, "QKV.py");
  const refused = fs.readFileSync(spec, "utf8");
  const problem = page.locator(".markers-panel .monaco-list-row", { hasText: "d9" });
  await problem.first().waitFor({ timeout: 15_000 });

  await page.keyboard.press("Control+.");
  const menu = page.locator(".action-widget");
  const actions = menu.locator(".monaco-list-row.action");
  await actions.filter({ hasText: QUICK_FIX.title }).waitFor({ timeout: 30_000 });
  const titles = await actions.evaluateAll((rows) => rows.map((row) => row.getAttribute("aria-label") ?? ""));
  for (const title of QUICK_FIX.offered) {
    if (!titles.includes(title)) {
      throw new Error(`the quick-fix menu lacks '${title}': ${titles.join(" | ")}`);
    }
  }
  // The menu over the line it fixes.
  const line = page.locator(".monaco-editor .view-line", { hasText: '"zero"' });
  await screenshotAround(page, opts, "02-quick-fix-menu.png", [menu, line.locator("> span")]);
  // Choose with the keyboard, as the menu's rows say ("Enter to Apply"); the menu's pointer
  // block takes clicks while it opens.
  for (let i = 0; i < titles.length; i++) {
    const focused = await menu.locator(".monaco-list-row.action.focused").getAttribute("aria-label", { timeout: 5_000 });
    if (focused === QUICK_FIX.title) {
      break;
    }
    await page.keyboard.press("ArrowDown");
    await menu.locator(".monaco-list-row.action.focused").filter({ hasNotText: focused ?? "" }).waitFor({ timeout: 5_000 });
  }
  await menu.locator(".monaco-list-row.action.focused", { hasText: QUICK_FIX.title }).waitFor({ timeout: 5_000 });
  await page.keyboard.press("Enter");
  await menu.waitFor({ state: "hidden", timeout: 15_000 });

  // The editor shows the edit, and saving writes exactly it: the buffer's name, nothing else.
  const fixedLine = REFUSED_LINE.replace(QUICK_FIX.from, QUICK_FIX.to);
  await line.filter({ hasText: QUICK_FIX.to }).waitFor({ timeout: 15_000 });
  await saveEditedFile(page);
  const expected = refused.replace(REFUSED_LINE, fixedLine);
  const saved = fs.readFileSync(spec, "utf8");
  if (saved !== expected) {
    throw new Error(`the quick fix did not write '${fixedLine}' on line ${workspace.refusedLine}; the line reads '${saved.split("\n")[workspace.refusedLine - 1]}'`);
  }
  // The server republishes: the refusal and its squiggle go, the instruction's warning stays.
  await problem.first().waitFor({ state: "detached", timeout: 180_000 });
  await page.locator(".markers-panel .monaco-list-row", { hasText: REMAINING_WARNING }).first().waitFor({ timeout: 60_000 });
  await page.locator(".monaco-editor .squiggly-error").first().waitFor({ state: "detached", timeout: 15_000 });
  log(`quick fix: "${QUICK_FIX.title}" applied (offered: ${titles.join(", ")}); the refusal is gone`);

  // Delete the instruction and save: its warning goes too, and the spec is the example again.
  await page.keyboard.press("Control+Shift+K");
  await saveEditedFile(page);
  await page.locator(".markers-panel .monaco-list-row", { hasText: REMAINING_WARNING }).first().waitFor({ state: "detached", timeout: 180_000 });
  if (fs.readFileSync(spec, "utf8") !== workspace.original) {
    throw new Error(`deleting line ${workspace.refusedLine} did not give back examples/QKV/QKV.py`);
  }
  log("diagnostics cleared after deleting the instruction");
}

async function generateStep(page: Page, opts: Options, folder: string): Promise<void> {
  await openFile(page, "QKV/QKV.py");
  await clearNotifications(page);
  await runCommand(page, "ACT: Generate Backend");
  await notification(page, "Generating backend").first().waitFor({ timeout: 60_000 });
  await page.locator(ACT_STATUS, { hasText: "generating" }).waitFor({ timeout: 30_000 });

  // Cancel stops the build (the server kills it) and the status bar says so.
  await notification(page, "Generating backend").first().getByRole("button", { name: "Cancel" }).click();
  // Move off the button, or its tooltip stays over the next notification in the pictures.
  await page.mouse.move(700, 300);
  await page.locator(ACT_STATUS, { hasText: "cancelled" }).waitFor({ timeout: 60_000 });
  await waitForOutcome(page, "ACT: generating the backend from QKV.py was cancelled", 15_000);
  if (fs.existsSync(path.join(folder, "backends", "QKV"))) {
    throw new Error("a cancelled generation installed backends/QKV");
  }
  log("generation cancelled");

  // Then for real.
  await clearNotifications(page);
  await runCommand(page, "ACT: Generate Backend");
  await notification(page, "Generating backend").first().waitFor({ timeout: 60_000 });
  await page.locator(ACT_STATUS, { hasText: "generating" }).waitFor({ timeout: 30_000 });
  // For the picture: the notification once it shows the build's own output, not just "starting".
  // Builds that finish first are fine too, so running out of time here is not a failure.
  await notification(page, /Generating backend from QKV\.py: (?!starting)/)
    .first()
    .waitFor({ timeout: 120_000 })
    .catch(() => undefined);
  await screenshot(page, opts, "03-generating-backend.png");
  await waitForOutcome(page, "ACT: generated QKV into QKV/backends/QKV", opts.generateTimeoutMs);
  await page.locator(ACT_STATUS, { hasText: /ACT: QKV$/ }).waitFor({ timeout: 15_000 });
  await waitForFile(path.join(folder, "backends", "QKV"), 10_000, "Generate Backend");
  // The explorer shows it too: open backends/ and find the QKV executable beside the QKV folder.
  await notification(page, "Generating backend").first().waitFor({ state: "detached", timeout: 15_000 });
  const backends = page.getByRole("treeitem", { name: "backends", exact: true });
  await backends.waitFor({ timeout: 30_000 });
  await backends.click();
  await page.getByRole("treeitem", { name: "QKV", exact: true }).nth(1).waitFor({ timeout: 15_000 });
  await screenshot(page, opts, "04-backend-generated.png");
}

async function compileStep(page: Page, opts: Options, folder: string): Promise<void> {
  await openFile(page, "QKV/kernels/attention.hlo");
  await clearNotifications(page);
  await runCommand(page, "ACT: Compile Kernel");
  await waitForOutcome(page, "ACT: compiled attention.hlo with QKV", 600_000);
  await waitForFile(path.join(folder, "kernels", "attention.py"), 10_000, "Compile Kernel");
  await notification(page, "ACT: Compiling").first().waitFor({ state: "detached", timeout: 15_000 });
  await screenshot(page, opts, "05-kernel-compiled.png");
}

/**
 * Gives the webview in front the whole window for its picture: the panel hidden, its editor
 * group maximized (toggled back with "View: Toggle Maximize Editor Group").
 */
async function widen(page: Page, view: Frame): Promise<void> {
  if (await page.locator(".part.panel").isVisible()) {
    await runCommand(page, "View: Hide Panel");
    await page.locator(".part.panel").waitFor({ state: "hidden", timeout: 15_000 });
  }
  await runCommand(page, "View: Toggle Maximize Editor Group");
  await view.waitForFunction("window.innerWidth > 1000 && window.innerHeight > 700", undefined, { timeout: 15_000 });
}

/** The page of the webview whose document is titled `title` (webviews nest two frames deep). */
async function webview(page: Page, title: string, timeoutMs: number): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const frame of page.frames()) {
      const named = await frame.title().catch(() => "");
      if (named === title && (await frame.locator("body").count().catch(() => 0)) > 0) {
        return frame;
      }
    }
    if (Date.now() > deadline) {
      throw new Error(`no webview titled '${title}' within ${timeoutMs / 1000} s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function expectCount(what: string, count: Promise<number>, expected: number): Promise<void> {
  const found = await count;
  if (found !== expected) {
    throw new Error(`${what}: expected ${expected}, found ${found}`);
  }
}

interface ReportJson {
  hlo: Array<{ name: string; line: number }>;
  program: {
    assembly: Array<{ call: string; implements: string[] }>;
    values: Array<{ label: string; made: string; on_chip: boolean }>;
  };
}

async function reportStep(page: Page, opts: Options, folder: string): Promise<void> {
  const reportPath = path.join(folder, "kernels", "attention.report", "report.json");
  await waitForFile(reportPath, 10_000, "Compile Kernel's report");
  const report = JSON.parse(fs.readFileSync(reportPath, "utf8")) as ReportJson;
  await openFile(page, "QKV/kernels/attention.hlo");
  await clearNotifications(page);
  await runCommand(page, "ACT: Show Compile Report");
  const view = await webview(page, "Compile Report: attention.hlo", 60_000);
  await view.locator("tr[data-step]").first().waitFor({ timeout: 30_000 });
  await widen(page, view);

  // The listing is report.json's program, each step with the HLO it implements.
  const steps = report.program.assembly;
  await expectCount("assembly rows", view.locator("tr[data-step]").count(), steps.length);
  for (const [i, step] of steps.entries()) {
    const row = (await view.locator(`tr[data-step="${i}"]`).textContent()) ?? "";
    for (const needle of [step.call, ...step.implements]) {
      if (!row.includes(needle)) {
        throw new Error(`assembly row ${i} lacks '${needle}': ${row}`);
      }
    }
  }
  const softmax = steps.findIndex((s) => s.call.startsWith("api.softmax("));
  if (softmax < 0 || !steps[softmax].implements.includes("rowsum")) {
    throw new Error(`the softmax step does not implement the fused row sum: ${JSON.stringify(steps[softmax])}`);
  }
  // The memory picture: one rectangle per value an instruction made on chip.
  const drawn = report.program.values.filter((v) => v.made === "step" && v.on_chip);
  await expectCount("values drawn", view.locator("svg g.value").count(), drawn.length);
  await expectCount("lanes drawn", view.locator("svg g.lane").count(), 2);
  // Hovering a value tells its story and highlights the step that made it.
  const s = view.locator("svg g.value", { hasText: /^S$/ }).first();
  await s.hover();
  await view.locator("#tip", { hasText: "made by step" }).waitFor({ state: "visible", timeout: 10_000 });
  await view.locator("tr.hl", { hasText: "api.gemm(" }).waitFor({ timeout: 10_000 });
  await screenshot(page, opts, "06-compile-report.png");
  await runCommand(page, "View: Toggle Maximize Editor Group");

  // A link from the listing goes to the HLO instruction it names.
  const kt = report.hlo.find((h) => h.name === "Kt");
  if (kt === undefined) {
    throw new Error("report.json lists no HLO instruction Kt");
  }
  await view.locator("a.hlo", { hasText: /^Kt$/ }).first().click();
  await page.locator('.tabs-container .tab.active[data-resource-name="attention.hlo"]').waitFor({ timeout: 15_000 });
  await page.locator(".statusbar-item", { hasText: `Ln ${kt.line},` }).first().waitFor({ timeout: 15_000 });
  log(`report: ${steps.length} steps, ${drawn.length} values drawn; Kt link opened line ${kt.line}`);
}

async function simulateStep(page: Page, opts: Options, folder: string): Promise<void> {
  // The oracle comes from the spec's generate_oracle call: run the spec as its docstring says.
  log("running the spec for its oracle (python QKV.py)");
  execFileSync(opts.python, ["QKV.py"], { cwd: folder, stdio: "inherit" });
  await openFile(page, "QKV/kernels/attention.hlo");
  await clearNotifications(page);
  await runCommand(page, "ACT: Simulate Kernel");
  await waitForOutcome(page, "ACT: simulated attention.py", 600_000);
  await screenshot(page, opts, "07-kernel-simulated.png");

  // The results view: the largest difference in ulps, the run time, and both heatmaps.
  const view = await webview(page, "Simulation: attention.py", 60_000);
  await clearNotifications(page);
  await runCommand(page, "View: Focus Right Editor Group");
  await widen(page, view);
  const largest = (await view.locator("td.big").textContent({ timeout: 30_000 })) ?? "";
  if (!/^\d+ ulps? \(bfloat16\)/.test(largest)) {
    throw new Error(`the largest difference is not in bf16 ulps: ${largest}`);
  }
  const metrics = (await view.locator("table.metrics").textContent()) ?? "";
  if (!/run time\s*[\d.]+ ms/.test(metrics) || !/ulps? of the largest magnitude/.test(metrics)) {
    throw new Error(`no run time or difference in ulps of the largest magnitude among the metrics: ${metrics}`);
  }
  for (const map of ["output", "difference"]) {
    await expectCount(`${map} heatmap cells`, view.locator(`svg.heatmap[data-map="${map}"] rect[data-r]`).count(), 64 * 64);
  }
  await view.locator('svg.heatmap[data-map="difference"] rect[data-r="20"][data-c="30"]').hover();
  await view.locator("#readout", { hasText: "difference at row 20, column 30:" }).waitFor({ timeout: 10_000 });
  await screenshot(page, opts, "08-simulation-results.png");
  log(`simulation: largest difference ${largest}`);
}

/** Runs `check` in a code-server window of its own, with `settings` as the user's settings. */
async function sideCheck(
  browser: Browser,
  opts: Options,
  root: string,
  folder: string,
  name: string,
  settings: Record<string, unknown>,
  check: (page: Page, opts: Options) => Promise<void>,
): Promise<void> {
  const editor = await startCodeServer(opts, root, name, settings, path.dirname(folder));
  let page: Page | undefined;
  try {
    page = await openWorkbench(browser, editor);
    // Opening a spec activates the extension.
    await openFile(page, "QKV/QKV.py");
    await check(page, opts);
    log(`${name} check passed`);
  } catch (error) {
    await page?.screenshot({ path: path.join(opts.results, `failed-${name}.png`) }).catch(() => undefined);
    saveLogs(opts, [editor]);
    throw error;
  } finally {
    await page?.close();
    stopCodeServer(editor);
  }
}

async function restrictedCheck(page: Page, opts: Options): Promise<void> {
  await page.locator(ACT_STATUS, { hasText: "Restricted" }).waitFor({ timeout: 60_000 });
  const entries = await paletteEntries(page, "ACT:");
  for (const hidden of ["Generate Backend", "Compile Kernel", "Simulate Kernel"]) {
    if (entries.some((e) => e.includes(hidden))) {
      throw new Error(`Restricted Mode: '${hidden}' is in the palette: ${entries.join(" | ")}`);
    }
  }
  if (!entries.some((e) => e.includes("Why Are Build Commands Unavailable?"))) {
    throw new Error(`Restricted Mode: no explanation command in the palette: ${entries.join(" | ")}`);
  }
  await page.locator(ACT_STATUS).click();
  await notification(page, "Restricted Mode").first().waitFor({ timeout: 15_000 });
  await screenshot(page, opts, "00-restricted-mode.png");
  // Kernels are still checked: nothing runs to check them.
  await openFile(page, "QKV/kernels/broken.hlo");
  await page.keyboard.press("Control+Shift+M");
  await page.locator(".markers-panel .monaco-list-row", { hasText: "unknown operator 'frobnicate'" }).first().waitFor({ timeout: 60_000 });
}

const MISSING_PYTHON = "/nonexistent/bin/python3";

async function missingInterpreterCheck(page: Page, opts: Options): Promise<void> {
  const message = notification(page, `'${MISSING_PYTHON}' (set in act.pythonPath) was not found`);
  await message.first().waitFor({ timeout: 60_000 });
  for (const button of ["Open Settings", "Show Log"]) {
    await message.first().getByRole("button", { name: button }).waitFor({ timeout: 5_000 });
  }
  await page.locator(ACT_STATUS, { hasText: "server not running" }).waitFor({ timeout: 15_000 });
  await screenshot(page, opts, "00-missing-interpreter.png");
}

/** `act.trace.server: messages` alone must have filled the trace channel (its log file). */
function checkTrace(editor: Editor): void {
  const logs = path.join(editor.userData, "logs");
  const files = fs
    .readdirSync(logs, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith("ACT Language Server Trace.log"))
    .map((f) => path.join(logs, f));
  const text = files.map((f) => fs.readFileSync(f, "utf8")).join("\n");
  if (!text.includes("Sending request 'initialize")) {
    throw new Error(`the protocol trace has no initialize request (files: ${files.join(", ") || "none"})`);
  }
  log(`protocol trace: ${text.split("\n").length} lines`);
}

// ---------------------------------------------------------------------------------------------

function saveLogs(opts: Options, editors: Editor[]): void {
  for (const editor of editors) {
    const name = path.basename(editor.userData);
    fs.writeFileSync(path.join(opts.results, `${name}-code-server.log`), editor.output.join(""));
    const logs = path.join(editor.userData, "logs");
    if (fs.existsSync(logs)) {
      fs.cpSync(logs, path.join(opts.results, `${name}-logs`), { recursive: true });
    }
  }
}

async function main(): Promise<void> {
  const opts = options();
  fs.mkdirSync(opts.results, { recursive: true });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "act-e2e-"));
  log(`temp dir ${root}; steps up to '${opts.until}'${opts.sideChecks ? ", after the side checks" : ""}`);
  const workspace = makeWorkspace(opts, root);
  const { folder, refusedLine } = workspace;
  const browser = await chromium.launch({
    executablePath: opts.chromium,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const editors: Editor[] = [];
  let page: Page | undefined;
  let step = "setup";
  try {
    if (opts.sideChecks) {
      step = "restricted";
      await sideCheck(browser, opts, root, folder, "restricted", userSettings(opts, false), restrictedCheck);
      step = "missing-interpreter";
      await sideCheck(
        browser,
        opts,
        root,
        folder,
        "missing-interpreter",
        { ...userSettings(opts, true), "act.pythonPath": MISSING_PYTHON },
        missingInterpreterCheck,
      );
    }
    const editor = await startCodeServer(opts, root, "trusted", userSettings(opts, true), path.dirname(folder));
    editors.push(editor);
    page = await openWorkbench(browser, editor);
    const upTo = STEPS.indexOf(opts.until);
    for (const current of STEPS.slice(0, upTo + 1)) {
      step = current;
      log(`step ${current}`);
      if (current === "diagnostic") {
        await diagnosticStep(page, opts, refusedLine);
      } else if (current === "quickfix") {
        await quickFixStep(page, opts, workspace);
      } else if (current === "generate") {
        await generateStep(page, opts, folder);
      } else if (current === "compile") {
        await compileStep(page, opts, folder);
      } else if (current === "report") {
        await reportStep(page, opts, folder);
      } else {
        await simulateStep(page, opts, folder);
      }
    }
    step = "trace";
    checkTrace(editor);
    log("all steps passed");
  } catch (error) {
    if (page !== undefined) {
      await page.screenshot({ path: path.join(opts.results, `failed-${step}.png`) }).catch(() => undefined);
    }
    saveLogs(opts, editors);
    throw new Error(`step '${step}' failed: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    await browser.close();
    editors.forEach(stopCodeServer);
    if (!opts.keep) {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }
}

main().catch((error) => {
  process.stderr.write(`[e2e] FAILED: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

// Choosing and checking the interpreter that runs the language server.
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

import {
  checkPython,
  choosePython,
  DEFAULT_PYTHON,
  describeFailure,
  expandPythonPath,
  installCommand,
  type ProcessResult,
  type ProcessRunner,
  PROBE_SCRIPT,
  runProcess,
} from "../../src/python";

const answering =
  (result: ProcessResult): ProcessRunner =>
  async () =>
    result;

describe("act.pythonPath expansion", () => {
  it("expands ${workspaceFolder}, ${userHome} and a leading ~", () => {
    expect(expandPythonPath("${workspaceFolder}/.venv/bin/python", "/ws", "/home/u")).toBe("/ws/.venv/bin/python");
    expect(expandPythonPath("~/envs/act/bin/python", undefined, "/home/u")).toBe(path.join("/home/u", "envs/act/bin/python"));
    expect(expandPythonPath("${userHome}/py", undefined, "/home/u")).toBe("/home/u/py");
  });

  it("leaves ${workspaceFolder} alone when there is no folder, and trims blanks", () => {
    expect(expandPythonPath("  ${workspaceFolder}/py ", undefined, "/h")).toBe("${workspaceFolder}/py");
  });
});

describe("choosing the interpreter", () => {
  it("prefers the act.pythonPath setting", async () => {
    const choice = await choosePython("/opt/py/bin/python3", "/ws", async () => "/from/extension");
    expect(choice).toEqual({ command: "/opt/py/bin/python3", origin: "setting" });
  });

  it("uses the Python extension's interpreter when the setting is empty", async () => {
    const choice = await choosePython("", "/ws", async () => "/ws/.venv/bin/python");
    expect(choice).toEqual({ command: "/ws/.venv/bin/python", origin: "python-extension" });
  });

  it("falls back to python3 when neither answers, even if the extension throws", async () => {
    expect(await choosePython(undefined, undefined, async () => undefined)).toEqual({
      command: DEFAULT_PYTHON,
      origin: "default",
    });
    const throwing = async (): Promise<string> => {
      throw new Error("extension not ready");
    };
    expect((await choosePython("   ", undefined, throwing)).origin).toBe("default");
  });
});

describe("checking the interpreter", () => {
  it("runs the import probe in the given directory", async () => {
    const calls: Array<{ command: string; args: string[]; cwd: string }> = [];
    const run: ProcessRunner = async (command, args, options) => {
      calls.push({ command, args, cwd: options.cwd });
      return { exitCode: 0, stdout: "3.11.7\n", stderr: "" };
    };
    expect(await checkPython("/py", run, "/ext")).toEqual({ ok: true, version: "3.11.7" });
    expect(calls).toEqual([{ command: "/py", args: ["-c", PROBE_SCRIPT], cwd: "/ext" }]);
    expect(PROBE_SCRIPT).toContain("import lsp, act_backend");
  });

  it("reports a missing interpreter", async () => {
    const check = await checkPython("nope", answering({ exitCode: null, stdout: "", stderr: "", spawnError: "ENOENT" }), "/");
    expect(check).toMatchObject({ ok: false, problem: "not-found" });
  });

  it("names the module that cannot be imported", async () => {
    const stderr = 'Traceback (most recent call last):\n  File "<string>", line 1\nModuleNotFoundError: No module named \'act_backend\'\n';
    const check = await checkPython("py", answering({ exitCode: 1, stdout: "", stderr }), "/");
    expect(check).toEqual({ ok: false, problem: "missing-package", detail: "No module named 'act_backend'" });
  });

  it("refuses interpreters older than 3.11", async () => {
    const check = await checkPython("py", answering({ exitCode: 0, stdout: "3.10.12\n", stderr: "" }), "/");
    expect(check).toMatchObject({ ok: false, problem: "too-old" });
  });

  it("passes on other import errors with the last line of the traceback", async () => {
    const stderr = "Traceback...\nImportError: cannot import name 'x' from 'pygls'\n";
    const check = await checkPython("py", answering({ exitCode: 1, stdout: "", stderr }), "/");
    expect(check).toEqual({ ok: false, problem: "failed", detail: "ImportError: cannot import name 'x' from 'pygls'" });
  });

  it("reports an interpreter that hangs", async () => {
    const check = await checkPython("py", answering({ exitCode: null, stdout: "", stderr: "", timedOut: true }), "/", 5000);
    expect(check).toEqual({ ok: false, problem: "timeout", detail: "no answer within 5 s" });
  });
});

describe("the failure message", () => {
  it("names the interpreter, where it came from, and the install command", () => {
    const message = describeFailure(
      { command: "/usr/bin/python3", origin: "default" },
      { ok: false, problem: "missing-package", detail: "No module named 'lsp'" },
    );
    expect(message).toContain("'/usr/bin/python3'");
    expect(message).toContain("act.pythonPath is empty");
    expect(message).toContain("No module named 'lsp'");
    expect(message).toContain("/usr/bin/python3 -m pip install 'act-backend[lsp]'");
  });

  it("tells a user whose setting points nowhere to fix the setting", () => {
    const message = describeFailure(
      { command: "/missing/python", origin: "setting" },
      { ok: false, problem: "not-found", detail: "no such file or command" },
    );
    expect(message).toMatch(/'\/missing\/python' \(set in act.pythonPath\) was not found/);
    expect(message).toContain("act.pythonPath");
  });

  it("quotes interpreter paths with spaces in the install command", () => {
    expect(installCommand("/Program Files/py")).toBe(`"/Program Files/py" -m pip install 'act-backend[lsp]'`);
  });
});

describe("running a process", () => {
  it("returns exit code and output of a real process", async () => {
    const result = await runProcess(process.execPath, ["-e", "process.stdout.write('hi'); process.exit(3)"], {
      cwd: os.tmpdir(),
      timeoutMs: 10_000,
    });
    expect(result).toMatchObject({ exitCode: 3, stdout: "hi" });
  });

  it("reports a command that does not exist as ENOENT instead of throwing", async () => {
    const result = await runProcess("/definitely/not/a/python", [], { cwd: os.tmpdir(), timeoutMs: 10_000 });
    expect(result.spawnError).toBe("ENOENT");
  });

  it("stops a process that runs past its time", async () => {
    const result = await runProcess(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], {
      cwd: os.tmpdir(),
      timeoutMs: 300,
    });
    expect(result.timedOut).toBe(true);
  });
});

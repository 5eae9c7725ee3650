// Syntax highlighting: the HLO grammar on kernels and semantics, and its injection into the
// strings of TAIDL specs. Tokenized with vscode-textmate and oniguruma, as VS Code does.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import * as oniguruma from "vscode-oniguruma";
import * as textmate from "vscode-textmate";

const extension = path.resolve(__dirname, "../..");
const repo = path.resolve(extension, "..");
const manifest = JSON.parse(fs.readFileSync(path.join(extension, "package.json"), "utf8"));

interface Token {
  text: string;
  scopes: string[];
}

/** VS Code's own Python grammar, when code-server (the e2e test's editor) is installed. */
function magicPython(): string | undefined {
  const fromEnv = process.env.ACT_MAGICPYTHON_GRAMMAR;
  if (fromEnv !== undefined && fs.existsSync(fromEnv)) {
    return fromEnv;
  }
  const cache = process.env.ACT_E2E_CACHE ?? path.join(os.homedir(), ".cache", "act-vscode-e2e");
  if (!fs.existsSync(cache)) {
    return undefined;
  }
  for (const dir of fs.readdirSync(cache).sort().reverse()) {
    const candidate = path.join(
      cache,
      dir,
      "node_modules/code-server/lib/vscode/extensions/python/syntaxes/MagicPython.tmLanguage.json",
    );
    if (fs.existsSync(candidate)) {
      return candidate;
    }
  }
  return undefined;
}

let onigLoaded: Promise<void> | undefined;
function loadOniguruma(): Promise<void> {
  const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm"));
  onigLoaded ??= oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) as ArrayBuffer);
  return onigLoaded;
}

async function registry(pythonGrammar: string): Promise<textmate.Registry> {
  await loadOniguruma();
  const files: Record<string, string> = { "source.python": pythonGrammar };
  const injections: string[] = [];
  for (const grammar of manifest.contributes.grammars as Array<{ scopeName: string; path: string; injectTo?: string[] }>) {
    files[grammar.scopeName] = path.join(extension, grammar.path);
    if (grammar.injectTo?.includes("source.python")) {
      injections.push(grammar.scopeName);
    }
  }
  return new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns: string[]) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s: string) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) => {
      const file = files[scopeName];
      if (file === undefined) {
        return null;
      }
      return textmate.parseRawGrammar(fs.readFileSync(file, "utf8"), file);
    },
    getInjections: (scopeName) => (scopeName === "source.python" ? injections : undefined),
  });
}

function tokenize(grammar: textmate.IGrammar, text: string): Token[][] {
  let state = textmate.INITIAL;
  return text.split(/\r?\n/).map((line) => {
    const result = grammar.tokenizeLine(line, state);
    state = result.ruleStack;
    return result.tokens.map((t) => ({ text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes }));
  });
}

/** The scopes of the first token whose text is `text` (trimmed) on a line containing `onLine`. */
function scopesOf(lines: Token[][], source: string, onLine: string, text: string): string[] {
  const sourceLines = source.split(/\r?\n/);
  const index = sourceLines.findIndex((l) => l.includes(onLine));
  if (index < 0) {
    throw new Error(`no line contains ${JSON.stringify(onLine)}`);
  }
  const token = lines[index].find((t) => t.text.trim() === text);
  if (token === undefined) {
    throw new Error(`no token ${JSON.stringify(text)} on line ${index + 1}: ${JSON.stringify(lines[index].map((t) => t.text))}`);
  }
  return token.scopes;
}

describe("the HLO grammar", () => {
  let hlo: textmate.IGrammar;
  const attention = fs.readFileSync(path.join(repo, "examples/QKV/kernels/attention.hlo"), "utf8");
  let lines: Token[][];

  beforeAll(async () => {
    const reg = await registry(path.join(__dirname, "fixtures/python-standin.tmLanguage.json"));
    hlo = (await reg.loadGrammar("source.hlo")) as textmate.IGrammar;
    lines = tokenize(hlo, attention);
  });

  it("is the grammar of the hlo language, for .hlo files", () => {
    expect(manifest.contributes.languages[0]).toMatchObject({ id: "hlo", extensions: [".hlo"] });
    expect(manifest.contributes.grammars[0]).toMatchObject({ language: "hlo", scopeName: "source.hlo" });
  });

  it("marks module, entry and root keywords", () => {
    expect(scopesOf(lines, attention, "HloModule", "HloModule")).toContain("keyword.other.module.hlo");
    expect(scopesOf(lines, attention, "ENTRY %qkv", "ENTRY")).toContain("keyword.other.entry.hlo");
    expect(scopesOf(lines, attention, "ROOT %O", "ROOT")).toContain("keyword.other.root.hlo");
  });

  it("names computations, definitions, opcodes, types and attributes", () => {
    expect(scopesOf(lines, attention, "ENTRY %qkv", "%qkv")).toContain("entity.name.function.computation.hlo");
    expect(scopesOf(lines, attention, "%add_bf16 (x", "%add_bf16")).toContain("entity.name.function.computation.hlo");
    expect(scopesOf(lines, attention, "%Kt =", "%Kt")).toContain("variable.other.definition.hlo");
    expect(scopesOf(lines, attention, "%Kt =", "transpose")).toContain("entity.name.function.opcode.hlo");
    expect(scopesOf(lines, attention, "%rowsum =", "reduce")).toContain("entity.name.function.opcode.hlo");
    expect(scopesOf(lines, attention, "%Kt =", "bf16")).toContain("storage.type.element.hlo");
    expect(scopesOf(lines, attention, "%Kt =", "dimensions")).toContain("entity.other.attribute-name.hlo");
    expect(scopesOf(lines, attention, "%rowsum =", "to_apply")).toContain("entity.other.attribute-name.hlo");
    expect(scopesOf(lines, attention, "%rowsum =", "%add_bf16")).toContain("variable.other.hlo");
    expect(scopesOf(lines, attention, "%zero =", "0")).toContain("constant.numeric.hlo");
  });

  it("reads what JAX prints: names without %, layouts, metadata strings", () => {
    const jax = 'ENTRY main.4 {\n  Arg_0.1 = f32[8]{0} parameter(0), metadata={op_name="x"}\n  ROOT exponential.2 = f32[8]{0} exponential(Arg_0.1)\n}';
    const toks = tokenize(hlo, jax);
    expect(scopesOf(toks, jax, "ENTRY", "main.4")).toContain("entity.name.function.computation.hlo");
    expect(scopesOf(toks, jax, "Arg_0.1 =", "Arg_0.1")).toContain("variable.other.definition.hlo");
    expect(scopesOf(toks, jax, "Arg_0.1 =", "parameter")).toContain("entity.name.function.opcode.hlo");
    expect(scopesOf(toks, jax, "Arg_0.1 =", "{0}")).toContain("meta.layout.hlo");
    expect(scopesOf(toks, jax, "Arg_0.1 =", "metadata")).toContain("entity.other.attribute-name.hlo");
    expect(scopesOf(toks, jax, "ROOT", "exponential")).toContain("entity.name.function.opcode.hlo");
  });

  it("highlights TAIDL's backquoted attribute expressions in shapes", () => {
    const semantics = "%In1 = u8[`@c.n * 128`] parameter(0);";
    const toks = tokenize(hlo, semantics);
    expect(scopesOf(toks, semantics, "%In1", "c.n")).toContain("variable.parameter.computational.hlo");
    expect(scopesOf(toks, semantics, "%In1", "*")).toContain("keyword.operator.arithmetic.hlo");
    expect(scopesOf(toks, semantics, "%In1", "128")).toContain("meta.embedded.expression.hlo");
    expect(scopesOf(toks, semantics, "%In1", ";")).toContain("punctuation.terminator.statement.hlo");
  });

  it("tells addressing attributes from computational ones", () => {
    const text = "%x = u8[`@a.addr + @c.n`] parameter(0)";
    const toks = tokenize(hlo, text);
    expect(scopesOf(toks, text, "%x", "a.addr")).toContain("variable.parameter.addressing.hlo");
    expect(scopesOf(toks, text, "%x", "c.n")).toContain("variable.parameter.computational.hlo");
  });
});

const pythonGrammars: Array<[string, string | undefined]> = [
  ["a stand-in Python grammar", path.join(__dirname, "fixtures/python-standin.tmLanguage.json")],
  ["VS Code's Python grammar (MagicPython, from code-server)", magicPython()],
];

describe.each(pythonGrammars)("semantics strings in specs, under %s", (_name, grammarFile) => {
  let python: textmate.IGrammar;
  const qkv = fs.readFileSync(path.join(repo, "examples/QKV/QKV.py"), "utf8");
  const qkvNew = fs.readFileSync(path.join(repo, "examples/QKV_new/QKV_new.py"), "utf8");

  beforeAll(async () => {
    if (grammarFile === undefined) {
      return;
    }
    const reg = await registry(grammarFile);
    python = (await reg.loadGrammar("source.python")) as textmate.IGrammar;
  });

  it.skipIf(grammarFile === undefined)("highlights the string passed to add_semantics as HLO", () => {
    const lines = tokenize(python, qkv);
    const reshape = scopesOf(lines, qkv, "%a = u8[`@c.n`,64,2] reshape(%In1);", "reshape");
    expect(reshape).toContain("meta.embedded.block.hlo");
    expect(reshape).toContain("entity.name.function.opcode.hlo");
    expect(scopesOf(lines, qkv, "ENTRY load_rm {", "ENTRY")).toContain("keyword.other.entry.hlo");
    expect(scopesOf(lines, qkv, "ROOT %Out0 = bf16[64,64] dot", "lhs_contracting_dims")).toContain(
      "entity.other.attribute-name.hlo",
    );
  });

  it.skipIf(grammarFile === undefined)("leaves the Python around it alone", () => {
    const lines = tokenize(python, qkv);
    const all = lines.flat();
    const call = all.find((t) => t.text === "add_data_model");
    expect(call?.scopes.some((s) => s.endsWith(".hlo"))).toBe(false);
    // The first line after each semantics string is Python again.
    const after = scopesOf(lines, qkv, 'instr = qkv.add_instruction("load_cm"', "add_instruction");
    expect(after.some((s) => s.endsWith(".hlo"))).toBe(false);
  });

  it.skipIf(grammarFile === undefined)("highlights semantics kept in triple-quoted templates", () => {
    const lines = tokenize(python, qkvNew);
    const entry = scopesOf(lines, qkvNew, "ENTRY {name} {{", "ENTRY");
    expect(entry).toContain("meta.embedded.block.hlo");
    const bitcast = scopesOf(lines, qkvNew, "ROOT %Out0 = bf16[`@c.n`,64] bitcast_convert(%a);", "bitcast_convert");
    expect(bitcast).toContain("entity.name.function.opcode.hlo");
    const format = scopesOf(lines, qkvNew, "instr.add_semantics(LOAD.format(name=name))", "format");
    expect(format.some((s) => s.endsWith(".hlo"))).toBe(false);
  });

  it.skipIf(grammarFile === undefined)("does not treat docstrings or other strings as HLO", () => {
    const text = ['"""Notes.', "ENTRY is the keyword of an entry computation.", '"""', 'x = """', "not ENTRY at the start", '"""'].join("\n");
    const all = tokenize(python, text).flat();
    expect(all.some((t) => t.scopes.includes("meta.embedded.block.hlo"))).toBe(false);
  });

  it.skipIf(grammarFile === undefined)("handles a one-line semantics string", () => {
    const text = 'instr.add_semantics("ENTRY mov { ROOT %Out0 = bf16[64] copy(%In1); }")\nqkv = 1';
    const lines = tokenize(python, text);
    expect(scopesOf(lines, text, "add_semantics", "copy")).toContain("entity.name.function.opcode.hlo");
    expect(lines[1].some((t) => t.scopes.includes("meta.embedded.block.hlo"))).toBe(false);
  });
});

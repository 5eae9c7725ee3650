//! What the language server makes of a file (`act.describeDocument`): a TAIDL spec, an HLO
//! kernel or neither, and a kernel's entry parameters as its parser reads them. The extension
//! detects none of this itself; without a running server it can only tell a Python or HLO file
//! from the rest by the editor's language.

import type { KernelParameter } from "./kernelParameters";
import { MalformedResult } from "./serverCommands";

export const DESCRIBE = "act.describeDocument";

export type DocumentKind = "spec" | "kernel" | null;

export interface DocumentDescription {
  kind: DocumentKind;
  /** A kernel's entry parameters in index order; empty otherwise. */
  parameters: KernelParameter[];
}

/** `[documentUri]`. */
export function describeArguments(documentUri: string): unknown[] {
  return [documentUri];
}

/** Checks the server's answer; throws `MalformedResult` naming what is wrong. */
export function parseDescription(raw: unknown): DocumentDescription {
  const where = `The language server's answer to ${DESCRIBE}`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new MalformedResult(`${where} is ${JSON.stringify(raw) ?? "undefined"}, not an object`);
  }
  const obj = raw as Record<string, unknown>;
  if (obj.kind !== "spec" && obj.kind !== "kernel" && obj.kind !== null) {
    throw new MalformedResult(`${where} has a "kind" that is neither "spec", "kernel" nor null`);
  }
  if (!Array.isArray(obj.parameters)) {
    throw new MalformedResult(`${where} has no "parameters" list`);
  }
  const parameters = obj.parameters.map((item, i) => {
    const p = item as Record<string, unknown> | null;
    if (typeof p !== "object" || p === null || typeof p.index !== "number" || typeof p.name !== "string" || typeof p.type !== "string") {
      throw new MalformedResult(`${where}: parameters[${i}] is not {index: number, name: string, type: string}`);
    }
    return { index: p.index, name: p.name, type: p.type };
  });
  return { kind: obj.kind, parameters };
}

/** Sends workspace/executeCommand through `execute` and checks the answer. */
export async function describeDocument(
  execute: (command: string, args: unknown[]) => Promise<unknown>,
  documentUri: string,
): Promise<DocumentDescription> {
  return parseDescription(await execute(DESCRIBE, describeArguments(documentUri)));
}

/** The documents worth asking about: files the server serves (Python or HLO, on disk). */
export function servedByServer(languageId: string, scheme: string): boolean {
  return scheme === "file" && (languageId === "python" || languageId === "hlo");
}

export interface ActiveFileRoles {
  /** Shows the spec-only entries (Generate Backend) in menus. */
  isSpec: boolean;
  /** A spec or a kernel is in front: the status item shows, a start failure is reported. */
  isActFile: boolean;
}

/**
 * What the file in front means for the extension, from the server's description of it.
 * `undefined` means the server could not be asked (not running): nothing is a spec then,
 * since generating needs the server, but a Python or HLO file may be one of ACT's, so the
 * reason the server is not running is shown there.
 */
export function activeFileRoles(languageId: string | undefined, description: DocumentDescription | undefined): ActiveFileRoles {
  if (languageId === undefined) {
    return { isSpec: false, isActFile: false };
  }
  if (description === undefined) {
    return { isSpec: false, isActFile: languageId === "python" || languageId === "hlo" };
  }
  return { isSpec: description.kind === "spec", isActFile: description.kind !== null };
}

//! The `act.*` settings as the extension reads them, and the `act` section the language server
//! receives. Workspace trust is applied here, in one place: an untrusted workspace never gets
//! `executeSpecs: true`, whatever the user configured.

export const SECTION = "act";

export type RevealOutput = "never" | "onFailure" | "always";

/**
 * What the language server is told (initializationOptions, workspace/configuration answers
 * and didChangeConfiguration). Keys are the server's JSON keys; defaults live in package.json.
 */
export interface ServerSettings {
  executeSpecs: boolean;
  specTimeout?: number;
  specMemoryLimitMb?: number;
  diagnosticsDelayMs?: number;
}

/** The subset of `vscode.WorkspaceConfiguration` this module reads, so tests can pass a map. */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

const NUMERIC_KEYS = ["specTimeout", "specMemoryLimitMb", "diagnosticsDelayMs"] as const;

export function serverSettings(config: ConfigReader, workspaceTrusted: boolean): ServerSettings {
  const wanted = config.get<boolean>("executeSpecs") ?? true;
  const settings: ServerSettings = { executeSpecs: workspaceTrusted && wanted === true };
  for (const key of NUMERIC_KEYS) {
    const value = config.get<unknown>(key);
    // The server names and ignores a bad value; only numbers are worth sending at all.
    if (typeof value === "number" && Number.isFinite(value)) {
      settings[key] = value;
    }
  }
  return settings;
}

/** The payload of `workspace/didChangeConfiguration` and the shape of `initializationOptions`. */
export function settingsPayload(settings: ServerSettings): { [SECTION]: ServerSettings } {
  return { [SECTION]: { ...settings } };
}

export function revealOutput(config: ConfigReader): RevealOutput {
  const value = config.get<string>("revealOutput");
  return value === "never" || value === "always" ? value : "onFailure";
}

/**
 * Answers one item of a `workspace/configuration` request: the `act` section (or an `act.x`
 * key) comes from `settings`, already adjusted for trust. Returns `undefined` for any other
 * section, which the caller leaves to VS Code.
 */
export function answerConfigurationItem(
  section: string | undefined,
  settings: ServerSettings,
): { handled: true; value: unknown } | { handled: false } {
  if (section === SECTION) {
    return { handled: true, value: { ...settings } };
  }
  if (section !== undefined && section.startsWith(`${SECTION}.`)) {
    const key = section.slice(SECTION.length + 1);
    if (Object.prototype.hasOwnProperty.call(settings, key)) {
      return { handled: true, value: (settings as unknown as Record<string, unknown>)[key] };
    }
  }
  return { handled: false };
}

// The act settings the language server receives, with workspace trust applied.
import { describe, expect, it } from "vitest";

import { answerConfigurationItem, revealOutput, serverSettings, settingsPayload } from "../../src/settings";

const config = (values: Record<string, unknown>) => ({
  get: <T>(key: string) => values[key] as T | undefined,
});

describe("server settings", () => {
  it("sends executeSpecs only in a trusted workspace", () => {
    expect(serverSettings(config({ executeSpecs: true }), true).executeSpecs).toBe(true);
    expect(serverSettings(config({ executeSpecs: true }), false).executeSpecs).toBe(false);
    expect(serverSettings(config({ executeSpecs: false }), true).executeSpecs).toBe(false);
  });

  it("defaults executeSpecs to on when trusted and unset", () => {
    expect(serverSettings(config({}), true).executeSpecs).toBe(true);
    expect(serverSettings(config({}), false).executeSpecs).toBe(false);
  });

  it("passes the server's numeric knobs through and drops non-numbers", () => {
    const settings = serverSettings(
      config({ specTimeout: 4.5, specMemoryLimitMb: 512, diagnosticsDelayMs: "fast" }),
      true,
    );
    expect(settings).toEqual({ executeSpecs: true, specTimeout: 4.5, specMemoryLimitMb: 512 });
  });

  it("wraps the settings in the act section for initializationOptions and didChangeConfiguration", () => {
    expect(settingsPayload({ executeSpecs: false })).toEqual({ act: { executeSpecs: false } });
  });
});

describe("workspace/configuration answers", () => {
  const settings = { executeSpecs: false, specTimeout: 3 };

  it("answers the act section with the trust-filtered settings", () => {
    expect(answerConfigurationItem("act", settings)).toEqual({ handled: true, value: settings });
  });

  it("answers single act keys it owns", () => {
    expect(answerConfigurationItem("act.executeSpecs", settings)).toEqual({ handled: true, value: false });
  });

  it("leaves other sections and client-only keys to VS Code", () => {
    expect(answerConfigurationItem("python", settings)).toEqual({ handled: false });
    expect(answerConfigurationItem("act.trace.server", settings)).toEqual({ handled: false });
    expect(answerConfigurationItem(undefined, settings)).toEqual({ handled: false });
  });
});

describe("act.revealOutput", () => {
  it("accepts its three values and falls back to onFailure", () => {
    expect(revealOutput(config({ revealOutput: "always" }))).toBe("always");
    expect(revealOutput(config({ revealOutput: "never" }))).toBe("never");
    expect(revealOutput(config({ revealOutput: "sometimes" }))).toBe("onFailure");
    expect(revealOutput(config({}))).toBe("onFailure");
  });
});

//! The status bar item's content: the state of the last backend generation, overridden by
//! Restricted Mode and by a language server that is not running. `render` is pure; the
//! extension owns the item and re-renders whenever one of the inputs changes.

export type GenerationState =
  | { kind: "none" }
  | { kind: "running"; spec: string }
  | { kind: "succeeded"; spec: string; accelerators: string[]; backends: string[]; finishedAt: string }
  | { kind: "failed"; spec: string; message: string; finishedAt: string }
  | { kind: "cancelled"; spec: string; finishedAt: string };

export type ServerState = "starting" | "running" | "stopped" | "failed";

export interface StatusInputs {
  trusted: boolean;
  server: ServerState;
  /** Why the server is not running, when `server` is "failed". */
  serverProblem?: string;
  generation: GenerationState;
}

export interface StatusView {
  text: string;
  tooltip: string;
  /** The command a click runs. */
  command: string;
  /** Background to draw the item with, as a theme colour id, when it needs attention. */
  background?: "statusBarItem.errorBackground" | "statusBarItem.warningBackground";
}

function fileName(p: string): string {
  return p.split(/[\\/]/).pop() ?? p;
}

function firstLine(message: string): string {
  return message.split(/\r?\n/, 1)[0];
}

/** Whether a value read back from workspace state is a generation state this version draws. */
export function isGenerationState(value: unknown): value is GenerationState {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const g = value as Record<string, unknown>;
  switch (g.kind) {
    case "none":
      return true;
    case "running":
      return typeof g.spec === "string";
    case "succeeded":
      return typeof g.spec === "string" && Array.isArray(g.accelerators) && Array.isArray(g.backends);
    case "failed":
      return typeof g.spec === "string" && typeof g.message === "string";
    case "cancelled":
      return typeof g.spec === "string";
    default:
      return false;
  }
}

export function render(inputs: StatusInputs): StatusView {
  if (!inputs.trusted) {
    return {
      text: "$(shield) ACT: Restricted",
      tooltip:
        "This workspace is not trusted: ACT does not run specs here, and Generate Backend, " +
        "Compile Kernel and Simulate Kernel are disabled. Kernels (.hlo) are still checked. " +
        "Click to learn how to trust the workspace.",
      command: "act.explainRestrictedMode",
    };
  }
  if (inputs.server === "failed") {
    return {
      text: "$(error) ACT: server not running",
      tooltip: `${inputs.serverProblem ?? "The ACT language server could not start."}\nClick to show the log.`,
      command: "act.showOutput",
      background: "statusBarItem.errorBackground",
    };
  }
  const g = inputs.generation;
  switch (g.kind) {
    case "none":
      return {
        text: inputs.server === "running" ? "$(circuit-board) ACT" : "$(loading~spin) ACT",
        tooltip:
          inputs.server === "running"
            ? "ACT language server running. No backend generated in this session yet."
            : "ACT language server starting...",
        command: "act.showOutput",
      };
    case "running":
      return {
        text: `$(sync~spin) ACT: generating ${fileName(g.spec)}`,
        tooltip: `Generating the backend for ${g.spec}. Click to show the build log.`,
        command: "act.showOutput",
      };
    case "succeeded":
      return {
        text: `$(check) ACT: ${g.accelerators.join(", ")}`,
        tooltip: `Generated from ${g.spec} at ${g.finishedAt}:\n${
          g.backends.length > 0 ? g.backends.join("\n") : g.accelerators.join(", ")
        }`,
        command: "act.showOutput",
      };
    case "failed":
      return {
        text: `$(error) ACT: ${fileName(g.spec)} failed`,
        tooltip: `Generation from ${g.spec} failed at ${g.finishedAt}:\n${firstLine(g.message)}\nClick to show the build log.`,
        command: "act.showOutput",
        background: "statusBarItem.errorBackground",
      };
    case "cancelled":
      return {
        text: `$(circle-slash) ACT: ${fileName(g.spec)} cancelled`,
        tooltip: `Generation from ${g.spec} was cancelled at ${g.finishedAt}.`,
        command: "act.showOutput",
        background: "statusBarItem.warningBackground",
      };
  }
}

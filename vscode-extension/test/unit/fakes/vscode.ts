// A recording stand-in for the `vscode` module, enough of it for the extension's command and
// status code to run under Node. Tests script the user's answers through `fake` and read back
// what the extension showed. Reset it in beforeEach with `fake.reset()`.

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(fsPath: string): Uri {
    return new Uri("file", fsPath);
  }
  static parse(value: string): Uri {
    const match = /^(\w+):\/\/(.*)$/.exec(value);
    if (match === null) {
      throw new Error(`fake Uri.parse: not a URI: ${value}`);
    }
    return new Uri(match[1], decodeURIComponent(match[2]));
  }
  get path(): string {
    return this.fsPath;
  }
  toString(): string {
    return `${this.scheme}://${encodeURI(this.fsPath)}`;
  }
}

export class Disposable {
  constructor(private readonly onDispose: () => void = () => undefined) {}
  dispose(): void {
    this.onDispose();
  }
}

export class EventEmitter<T> {
  private listeners: Array<(value: T) => void> = [];
  readonly event = (listener: (value: T) => void) => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(value: T): void {
    this.listeners.forEach((l) => l(value));
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  readonly token = {
    isCancellationRequested: false,
    onCancellationRequested: (listener: () => void) => this.emitter.event(listener),
  };
  cancel(): void {
    if (!this.token.isCancellationRequested) {
      this.token.isCancellationRequested = true;
      this.emitter.fire();
    }
  }
}

export class Range {
  readonly start: { line: number; character: number };
  readonly end: { line: number; character: number };
  constructor(startLine: number, startCharacter: number, endLine: number, endCharacter: number) {
    this.start = { line: startLine, character: startCharacter };
    this.end = { line: endLine, character: endCharacter };
  }
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
  Two = 2,
}

/** A webview panel the extension made: its page, and a way to send it the page's messages. */
export interface FakePanel {
  viewType: string;
  title: string;
  showOptions: unknown;
  options: unknown;
  html: string;
  reveals: number;
  disposed: boolean;
  /** Delivers `message` as if the page had posted it. */
  post(message: unknown): void;
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export enum FileType {
  Unknown = 0,
  File = 1,
  Directory = 2,
}

export enum LogLevel {
  Off = 0,
  Trace = 1,
  Debug = 2,
  Info = 3,
  Warning = 4,
  Error = 5,
}

export interface Shown {
  kind: "error" | "warning" | "info";
  message: string;
  items: string[];
}

export interface ProgressRun {
  title: string;
  cancellable: boolean;
  reports: Array<{ message?: string; increment?: number }>;
  cancel: () => void;
}

type Answer = string | undefined;

/** The scripted world and the record of what the extension did. */
export const fake = {
  trusted: true,
  config: new Map<string, unknown>(),
  activeUri: undefined as Uri | undefined,
  files: new Map<string, string>(),
  shown: [] as Shown[],
  /** Answers to the next messages with items, in order: the item to click (or undefined). */
  messageAnswers: [] as Answer[],
  /** Answers to the next quick picks: the label to pick (or undefined to dismiss). */
  quickPickAnswers: [] as Answer[],
  quickPicks: [] as Array<{ labels: string[]; placeHolder?: string }>,
  /** Answers to the next open dialogs: the path to choose (or undefined to dismiss). */
  openDialogAnswers: [] as Answer[],
  progress: [] as ProgressRun[],
  /** Called inside withProgress with the run, so a test can cancel while a task runs. */
  onProgress: undefined as ((run: ProgressRun) => void) | undefined,
  executed: [] as Array<{ command: string; args: unknown[] }>,
  /** Installed extensions by id, as `extensions.getExtension` returns them. */
  extensions: new Map<string, unknown>(),
  statusItems: [] as Array<Record<string, unknown>>,
  outputChannels: [] as Array<{ name: string; lines: string[]; disposed: boolean }>,
  configListeners: [] as Array<(e: { affectsConfiguration(section: string): boolean }) => void>,
  /** Tells configuration listeners that `keys` changed (a key affects its prefixes too). */
  changeConfiguration(...keys: string[]): void {
    const event = { affectsConfiguration: (section: string) => keys.some((k) => k === section || k.startsWith(`${section}.`)) };
    fake.configListeners.forEach((l) => l(event));
  },
  handlers: new Map<string, (...args: unknown[]) => unknown>(),
  opened: [] as string[],
  /** Documents shown with a selection: path and 0-based line. */
  openedAt: [] as Array<{ path: string; line: number }>,
  panels: [] as FakePanel[],
  reset(): void {
    fake.trusted = true;
    fake.config = new Map();
    fake.activeUri = undefined;
    fake.files = new Map();
    fake.shown = [];
    fake.messageAnswers = [];
    fake.quickPickAnswers = [];
    fake.quickPicks = [];
    fake.openDialogAnswers = [];
    fake.progress = [];
    fake.onProgress = undefined;
    fake.executed = [];
    fake.extensions = new Map();
    fake.statusItems = [];
    fake.outputChannels = [];
    fake.configListeners = [];
    fake.handlers = new Map();
    fake.opened = [];
    fake.openedAt = [];
    fake.panels = [];
  },
};

function show(kind: Shown["kind"]) {
  return async (message: string, ...items: string[]): Promise<string | undefined> => {
    fake.shown.push({ kind, message, items });
    return items.length > 0 ? fake.messageAnswers.shift() : undefined;
  };
}

function dirOf(p: string): string {
  return p.replace(/[\\/][^\\/]*$/, "");
}

function globToRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i];
    if (ch === "*" && glob[i + 1] === "*") {
      out += ".*";
      i++;
      if (glob[i + 1] === "/") {
        i++;
        out += "/?";
      }
    } else if (ch === "*") {
      out += "[^/]*";
    } else if (".+?^${}()|[]\\".includes(ch)) {
      out += `\\${ch}`;
    } else {
      out += ch;
    }
  }
  return new RegExp(`(^|/)${out}$`);
}

export const window = {
  showErrorMessage: show("error"),
  showWarningMessage: show("warning"),
  showInformationMessage: show("info"),
  get activeTextEditor() {
    if (fake.activeUri === undefined) {
      return undefined;
    }
    const uri = fake.activeUri;
    return { document: { uri, languageId: uri.fsPath.endsWith(".hlo") ? "hlo" : "python", getText: () => fake.files.get(uri.fsPath) ?? "" } };
  },
  async showQuickPick<T extends { label: string }>(items: T[], options?: { placeHolder?: string }): Promise<T | undefined> {
    fake.quickPicks.push({ labels: items.map((i) => i.label), placeHolder: options?.placeHolder });
    const label = fake.quickPickAnswers.shift();
    return items.find((i) => i.label === label);
  },
  async showOpenDialog(): Promise<Uri[] | undefined> {
    const answer = fake.openDialogAnswers.shift();
    return answer === undefined ? undefined : [Uri.file(answer)];
  },
  async withProgress<R>(
    options: { title?: string; cancellable?: boolean },
    task: (progress: { report(v: { message?: string; increment?: number }): void }, token: CancellationTokenSource["token"]) => Promise<R>,
  ): Promise<R> {
    const source = new CancellationTokenSource();
    const run: ProgressRun = {
      title: options.title ?? "",
      cancellable: options.cancellable === true,
      reports: [],
      cancel: () => source.cancel(),
    };
    fake.progress.push(run);
    const result = task({ report: (v) => run.reports.push(v) }, source.token);
    fake.onProgress?.(run);
    return result;
  },
  async showTextDocument(uri: Uri, options?: { selection?: Range }): Promise<void> {
    fake.opened.push(uri.fsPath);
    if (options?.selection !== undefined) {
      fake.openedAt.push({ path: uri.fsPath, line: options.selection.start.line });
    }
  },
  createWebviewPanel(viewType: string, title: string, showOptions: unknown, options: unknown) {
    const messages = new EventEmitter<unknown>();
    const disposed = new EventEmitter<void>();
    const record: FakePanel = {
      viewType,
      title,
      showOptions,
      options,
      html: "",
      reveals: 0,
      disposed: false,
      post: (message) => messages.fire(message),
    };
    fake.panels.push(record);
    return {
      get title() {
        return record.title;
      },
      set title(value: string) {
        record.title = value;
      },
      webview: {
        cspSource: "vscode-webview:",
        get html() {
          return record.html;
        },
        set html(value: string) {
          record.html = value;
        },
        onDidReceiveMessage: messages.event,
      },
      reveal() {
        record.reveals += 1;
      },
      onDidDispose: disposed.event,
      dispose() {
        record.disposed = true;
        disposed.fire();
      },
    };
  },
  createStatusBarItem(id?: string, alignment?: StatusBarAlignment, priority?: number) {
    const item: Record<string, unknown> = {
      id,
      alignment,
      priority,
      text: "",
      tooltip: "",
      command: "",
      backgroundColor: undefined,
      name: "",
      visible: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        item.disposed = true;
      },
    };
    fake.statusItems.push(item);
    return item;
  },
  createOutputChannel(name: string) {
    const channel = { name, lines: [] as string[], disposed: false };
    fake.outputChannels.push(channel);
    return {
      name,
      append: (v: string) => channel.lines.push(v),
      appendLine: (v: string) => channel.lines.push(v),
      replace: (v: string) => channel.lines.splice(0, channel.lines.length, v),
      clear: () => channel.lines.splice(0),
      show() {},
      hide() {},
      dispose: () => {
        channel.disposed = true;
      },
    };
  },
};

export const workspace = {
  get isTrusted() {
    return fake.trusted;
  },
  onDidChangeConfiguration(listener: (e: { affectsConfiguration(section: string): boolean }) => void): Disposable {
    fake.configListeners.push(listener);
    return new Disposable(() => {
      fake.configListeners = fake.configListeners.filter((l) => l !== listener);
    });
  },
  getConfiguration(section?: string) {
    return {
      get<T>(key: string): T | undefined {
        return fake.config.get(section === undefined ? key : `${section}.${key}`) as T | undefined;
      },
    };
  },
  textDocuments: [] as unknown[],
  asRelativePath(p: string | Uri): string {
    return typeof p === "string" ? p : p.fsPath;
  },
  async findFiles(include: string): Promise<Uri[]> {
    const pattern = globToRegExp(include);
    return [...fake.files.keys()].filter((p) => pattern.test(p)).sort().map((p) => Uri.file(p));
  },
  fs: {
    async stat(uri: Uri) {
      const isFile = fake.files.has(uri.fsPath);
      const isDir = [...fake.files.keys()].some((p) => p.startsWith(`${uri.fsPath}/`));
      if (!isFile && !isDir) {
        throw new Error(`ENOENT: ${uri.fsPath}`);
      }
      return { type: isFile ? FileType.File : FileType.Directory };
    },
    async readFile(uri: Uri): Promise<Uint8Array> {
      const text = fake.files.get(uri.fsPath);
      if (text === undefined) {
        throw new Error(`ENOENT: ${uri.fsPath}`);
      }
      return new TextEncoder().encode(text);
    },
    async readDirectory(uri: Uri): Promise<Array<[string, FileType]>> {
      const entries = [...fake.files.keys()]
        .filter((p) => dirOf(p) === uri.fsPath)
        .map((p): [string, FileType] => [p.slice(uri.fsPath.length + 1), FileType.File]);
      if (entries.length === 0) {
        throw new Error(`ENOENT: ${uri.fsPath}`);
      }
      return entries;
    },
  },
};

export const commands = {
  registerCommand(id: string, handler: (...args: unknown[]) => unknown): Disposable {
    if (fake.handlers.has(id)) {
      throw new Error(`command '${id}' already exists`);
    }
    fake.handlers.set(id, handler);
    return new Disposable(() => fake.handlers.delete(id));
  },
  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    fake.executed.push({ command, args });
    const handler = fake.handlers.get(command);
    return handler?.(...args);
  },
};

export const env = {
  clipboard: { async writeText(): Promise<void> {} },
};

export const extensions = {
  getExtension(id: string): unknown {
    return fake.extensions.get(id);
  },
};

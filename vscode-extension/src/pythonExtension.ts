//! Asks the Python extension (ms-python.python), when it is installed, which interpreter the
//! user selected for a folder. Its API has changed over the years, so both the environments
//! API and the older execution-details API are tried; any failure means "no answer".

import * as vscode from "vscode";

export const PYTHON_EXTENSION_ID = "ms-python.python";

interface EnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
  resolveEnvironment(
    env: { path: string } | string,
  ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
}

interface PythonExtensionApi {
  environments?: EnvironmentsApi;
  settings?: { getExecutionDetails(resource?: vscode.Uri): { execCommand?: string[] } };
}

/** The selected interpreter for `folder`, or undefined when the extension is absent or silent. */
export async function pythonExtensionInterpreter(folder: vscode.Uri | undefined): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (extension === undefined) {
    return undefined;
  }
  const api = extension.isActive ? extension.exports : await extension.activate();
  const environments = api?.environments;
  if (environments !== undefined) {
    const active = environments.getActiveEnvironmentPath(folder);
    if (active !== undefined) {
      const resolved = await environments.resolveEnvironment(active);
      const executable = resolved?.executable.uri?.fsPath;
      if (executable !== undefined) {
        return executable;
      }
    }
  }
  const command = api?.settings?.getExecutionDetails(folder).execCommand;
  // A multi-word command (e.g. `conda run ...`) cannot be used as an executable path.
  if (command !== undefined && command.length === 1) {
    return command[0];
  }
  return undefined;
}

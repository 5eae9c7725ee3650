//! When a failed server start is shown to the user: once, when an ACT file is in front, not
//! while some other file is. Only the server tells a spec from other Python, and a server that
//! failed to start cannot, so then any Python or HLO file counts (see activeFileRoles).

export class FailureNotice {
  private pending: (() => void) | undefined;
  private actFileActive = false;

  /** A start failed; `show` tells the user (now, or when an ACT file comes to the front). */
  report(show: () => void): void {
    this.pending = show;
    if (this.actFileActive) {
      this.flush();
    }
  }

  /** A new start begins: an earlier failure no longer needs telling. */
  clear(): void {
    this.pending = undefined;
  }

  /** Whether the active editor holds (or, without a server, may hold) a spec or a kernel. */
  setActFileActive(active: boolean): void {
    this.actFileActive = active;
    if (active) {
      this.flush();
    }
  }

  private flush(): void {
    const show = this.pending;
    this.pending = undefined;
    show?.();
  }
}

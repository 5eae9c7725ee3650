//! When a failed server start is shown to the user. The extension activates on any Python
//! file, and a project that has nothing to do with ACT should not hear that act-backend is
//! missing: the failure waits, once, until a spec or a kernel is in front.

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

  /** Whether the active editor holds a spec or a kernel. */
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

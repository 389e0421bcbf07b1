/**
 * Bytes held across every connection's unfinished question: what a crowd of slow or
 * endless callers can make the agent keep (each connection alone is bounded by the line).
 */
export class HeldBytes {
  held = 0;
  constructor(readonly max: number) {}
}

/**
 * One connection's questions, a line each, as bytes arrive: a line longer than `maxLine`, or
 * one that would take the bytes held across connections past their bound, is refused (the
 * connection is then closed: its plugin does the work itself). Chunks are kept as they came
 * and joined once a line is whole, so a line sent a byte at a time costs no more than one sent at once.
 */
export class AskLines {
  private parts: Buffer[] = [];
  private length = 0;

  constructor(
    private readonly shared: HeldBytes,
    private readonly maxLine: number,
  ) {}

  /** Whether part of a line is held (its deadline runs). */
  get partial(): boolean {
    return this.length > 0;
  }

  /** The lines this chunk completes, or why the connection is refused. */
  push(chunk: Buffer): string[] | { refused: string } {
    const lines: string[] = [];
    let start = 0;
    for (let end = chunk.indexOf(10); end >= 0; end = chunk.indexOf(10, start)) {
      if (this.length + end - start > this.maxLine) return this.refuse(`a question longer than ${this.maxLine} bytes`);
      this.parts.push(chunk.subarray(start, end));
      lines.push(Buffer.concat(this.parts).toString("utf8"));
      this.release();
      start = end + 1;
    }
    const rest = chunk.length - start;
    if (rest === 0) return lines;
    if (this.length + rest > this.maxLine) return this.refuse(`a question longer than ${this.maxLine} bytes`);
    if (this.shared.held + rest > this.shared.max) return this.refuse(`${this.shared.max} bytes of questions held across connections`);
    // A copy: the chunk's own memory may be a slab far larger than the rest kept of it.
    this.parts.push(Buffer.from(chunk.subarray(start)));
    this.length += rest;
    this.shared.held += rest;
    return lines;
  }

  /** Gives back what is held (the line is whole, or the connection gone). */
  release(): void {
    this.shared.held -= this.length;
    this.parts = [];
    this.length = 0;
  }

  private refuse(reason: string): { refused: string } {
    this.release();
    return { refused: reason };
  }
}
